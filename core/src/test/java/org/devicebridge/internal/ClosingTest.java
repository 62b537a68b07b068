package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** Closing a group: every item is tried, the first failure is thrown, a partial take is given back. */
class ClosingTest {
    @Test
    void everyItemIsClosedAndTheFirstFailureCarriesTheLaterOnes() {
        List<Integer> closed = new ArrayList<>();
        IllegalStateException first = new IllegalStateException("1");
        IllegalStateException third = new IllegalStateException("3");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> Closing.closeAll(List.of(0, 1, 2, 3),
                i -> {
                    closed.add(i);
                    if (i == 1) {
                        throw first;
                    }
                    if (i == 3) {
                        throw third;
                    }
                }));
        assertSame(first, thrown);
        assertEquals(List.of(third), List.of(thrown.getSuppressed()));
        assertEquals(List.of(0, 1, 2, 3), closed);
    }

    @Test
    void aTakeThatFailsGivesBackWhatWasTakenAndThrowsItsFailure() {
        List<String> released = new ArrayList<>();
        IllegalStateException boom = new IllegalStateException("no third");
        IllegalStateException releaseFailure = new IllegalStateException("release b");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> Closing.takeAll(List.of("a", "b", "c"),
                s -> {
                    if (s.equals("c")) {
                        throw boom;
                    }
                    return s.toUpperCase(Locale.ROOT);
                }, t -> {
                    released.add(t);
                    if (t.equals("B")) {
                        throw releaseFailure;
                    }
                }));
        assertSame(boom, thrown);
        assertEquals(List.of("A", "B"), released);
        assertEquals(List.of(releaseFailure), List.of(thrown.getSuppressed()));
    }

    @Test
    void aTakeThatSucceedsKeepsEveryItemInOrder() {
        assertEquals(List.of(2, 4, 6), Closing.takeAll(List.of(1, 2, 3), i -> 2 * i, i -> {
            throw new AssertionError("nothing is given back");
        }));
    }
}
