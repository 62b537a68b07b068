package org.devicebridge;

/**
 * Arrow Java (or Arrow Flight) is not there: an entry point that takes or returns Arrow Java types ({@code VectorSchemaRoot},
 * {@code FieldVector}, {@code BufferAllocator}, Arrow IPC) was called in a JVM where
 * {@code org.apache.arrow:arrow-vector} cannot be loaded (not on the class path, or on the module path but not
 * resolved). Thrown before anything is allocated or taken over: the caller still owns whatever it passed.
 * The message says what to add. Entry points that need no Arrow Java ({@code org.devicebridge.arrow},
 * {@code dlpack}, {@code cuda}, {@code python}, and {@code CudaArrow.importDeviceArray}) never throw it.
 */
public final class ArrowJavaUnavailableException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * Arrow Java could not be loaded.
     *
     * @param message what is missing and what to add
     * @param cause the {@link ClassNotFoundException} or {@link LinkageError} met, or {@code null}
     */
    public ArrowJavaUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
