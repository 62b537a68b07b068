package org.devicebridge.cuda;

import java.util.Locale;
import org.devicebridge.DeviceBridgeException;

/**
 * A CUDA driver call failed. The message reads
 * {@code [cuMemcpyDtoHAsync_v2] CUDA_ERROR_INVALID_VALUE: invalid argument}.
 */
public class CudaException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    private final String function;
    private final int result;
    private final String resultName;

    public CudaException(String function, int result, String resultName, String description) {
        super(String.format(Locale.ROOT, "[%s] %s: %s", function, resultName, description));
        this.function = function;
        this.result = result;
        this.resultName = resultName;
    }

    protected CudaException(String message, Throwable cause) {
        super(message, cause);
        this.function = "";
        this.result = -1;
        this.resultName = "";
    }

    /** The driver function that failed, e.g. {@code cuMemAlloc_v2}. */
    public String function() {
        return function;
    }

    /** The {@code CUresult} value. */
    public int result() {
        return result;
    }

    /** The {@code CUresult} name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String resultName() {
        return resultName;
    }
}
