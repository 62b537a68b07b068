package org.devicebridge.cuda;

/**
 * No usable CUDA driver: {@code libcuda.so.1} is missing, is only a stub, or found no device. Thrown by
 * every CUDA entry point on such a machine; nothing else in the library depends on CUDA.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class CudaUnavailableException extends CudaException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception saying why there is no usable driver.
     *
     * @param reason what is missing, e.g. which library could not be loaded
     * @param cause the underlying failure, or {@code null}
     */
    public CudaUnavailableException(String reason, Throwable cause) {
        super("CUDA driver not available: " + reason, cause);
    }
}
