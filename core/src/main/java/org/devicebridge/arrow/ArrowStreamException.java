package org.devicebridge.arrow;

import org.devicebridge.DeviceBridgeException;
import org.devicebridge.internal.Errno;

/**
 * A stream producer's {@code get_schema} or {@code get_next} returned a non-zero {@code errno}. Carries
 * the errno value and the producer's {@code get_last_error} text (empty where it gave none). The message
 * reads {@code get_next failed with errno 5 (EIO): disk gone}.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class ArrowStreamException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    /** The errno value the callback returned. */
    private final int errno;
    /** The producer's {@code get_last_error} text, or {@code ""}. */
    private final String producerMessage;

    ArrowStreamException(String callback, int errno, String producerMessage) {
        super(callback + " failed with errno " + errno + Errno.nameSuffix(errno)
                + (producerMessage == null || producerMessage.isEmpty() ? "" : ": " + producerMessage));
        this.errno = errno;
        this.producerMessage = producerMessage == null ? "" : producerMessage;
    }

    /** {@return the errno-compatible code the producer returned (never 0)} */
    public int errno() {
        return errno;
    }

    /** {@return the producer's {@code get_last_error} text, or {@code ""}} */
    public String producerMessage() {
        return producerMessage;
    }
}
