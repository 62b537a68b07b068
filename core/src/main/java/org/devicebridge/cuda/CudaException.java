package org.devicebridge.cuda;

import java.util.Locale;
import org.devicebridge.DeviceBridgeException;

/**
 * A CUDA driver call failed. The message reads
 * {@code [cuMemcpyDtoHAsync_v2] CUDA_ERROR_INVALID_VALUE: invalid argument}. Immutable once thrown (safe
 * to share between threads); it owns no native resources.
 */
public class CudaException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    /** The driver function that failed; empty when no driver call failed. */
    private final String function;
    /** The {@code CUresult} value; {@code -1} when no driver call failed. */
    private final int result;
    /** The {@code CUresult} name; empty when no driver call failed. */
    private final String resultName;

    /**
     * An exception for a failed driver call.
     *
     * @param function the driver function that failed, e.g. {@code cuMemAlloc_v2}
     * @param result the {@code CUresult} it returned
     * @param resultName the {@code CUresult} name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     * @param description the driver's description of the result
     */
    public CudaException(String function, int result, String resultName, String description) {
        super(String.format(Locale.ROOT, "[%s] %s: %s", function, resultName, description));
        this.function = function;
        this.result = result;
        this.resultName = resultName;
    }

    /**
     * An exception that no single driver call caused (such as a missing driver).
     *
     * @param message what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    protected CudaException(String message, Throwable cause) {
        super(message, cause);
        this.function = "";
        this.result = -1;
        this.resultName = "";
    }

    /** {@return the driver function that failed, e.g. {@code cuMemAlloc_v2}} */
    public String function() {
        return function;
    }

    /** {@return the {@code CUresult} value} */
    public int result() {
        return result;
    }

    /** {@return the {@code CUresult} name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}} */
    public String resultName() {
        return resultName;
    }
}
