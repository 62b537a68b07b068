package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The one reference count: N owners at once, freed exactly once by the last, never revived. */
class RefCountTest {

    @Test
    void theLastOfNOwnersFreesOnce() {
        AtomicInteger frees = new AtomicInteger();
        RefCount refs = new RefCount(3, frees::incrementAndGet);
        assertFalse(refs.release());
        assertFalse(refs.release());
        assertEquals(1, refs.count());
        assertTrue(refs.release(), "the last release says it freed");
        assertEquals(1, frees.get());
        assertEquals(0, refs.count());
    }

    @Test
    void aFreedCountCannotBeRetainedNorReleasedAgain() {
        AtomicInteger frees = new AtomicInteger();
        RefCount refs = new RefCount(frees::incrementAndGet);
        assertTrue(refs.retain());
        assertFalse(refs.release());
        assertTrue(refs.release());
        assertFalse(refs.retain(), "no revival after the free");
        assertThrows(IllegalStateException.class, refs::release);
        assertEquals(1, frees.get(), "freed exactly once");
    }

    @Test
    void aCountStartsWithAtLeastOneOwner() {
        assertThrows(IllegalArgumentException.class, () -> new RefCount(0, () -> { }));
    }
}
