package org.devicebridge.testing;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * The CPython interpreter that tests start as a peer process: {@code $DEVICEBRIDGE_PYTHON}, else
 * {@code python3}; and whether it can run a probe, so that a test without its modules (or a GPU) skips.
 */
public final class PythonProcess {
    /** A probe that CuPy imports and sees a GPU. */
    public static final String CUPY_WITH_GPU = "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0";

    private PythonProcess() {}

    /** {@return the interpreter's command} */
    public static String python() {
        String p = System.getenv("DEVICEBRIDGE_PYTHON");
        return p == null || p.isBlank() ? "python3" : p;
    }

    /** {@return whether {@code python -c code} exits 0 within two minutes (a missing interpreter: false)} */
    public static boolean runs(String code) {
        try {
            Process p = new ProcessBuilder(python(), "-c", code)
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
