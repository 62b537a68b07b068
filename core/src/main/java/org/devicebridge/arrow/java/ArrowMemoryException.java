package org.devicebridge.arrow.java;

import org.devicebridge.DeviceBridgeException;

/**
 * Arrow Java's default allocation manager could not be made the FFM one ({@link ArrowMemory}): Arrow Java
 * chose another default already, its {@code BaseAllocator} failed to initialise earlier (no default manager
 * could be found then, and a failed class initialisation is final for the JVM's life), or, on the module
 * path, {@code org.apache.arrow.memory} is not open to this library. The message says which, and what to
 * do. Nothing was changed when this is thrown, except that a default left unresolved may now be the FFM one.
 */
public final class ArrowMemoryException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what went wrong and what to do
     * @param cause the underlying failure, or {@code null}
     */
    public ArrowMemoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
