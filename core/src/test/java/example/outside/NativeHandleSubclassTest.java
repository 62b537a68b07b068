package example.outside;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.Test;

/** Users cannot extend the handle type: a subclass outside the library is refused at construction. */
class NativeHandleSubclassTest {
    static final class Forged extends NativeHandle {
        Forged() {
            super("forged handle", () -> { });
        }
    }

    @Test
    void aSubclassOutsideTheLibraryIsRefusedAndCountsNothing() {
        long live = HandleTracker.liveHandles();
        UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class, Forged::new);
        assertEquals(true, e.getMessage().contains(Forged.class.getName()), e.getMessage());
        assertEquals(live, HandleTracker.liveHandles(), "nothing was registered");
    }
}
