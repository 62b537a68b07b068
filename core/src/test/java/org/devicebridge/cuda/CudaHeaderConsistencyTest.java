package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * headers/cuda_driver.h agrees with the toolkit's cuda.h (prototypes, constants, type sizes) wherever a
 * CUDA toolkit and a C compiler are installed; the check is headers/check-cuda-header.sh.
 */
class CudaHeaderConsistencyTest {

    @Test
    void declarationsAgreeWithTheToolkitsCudaH() throws IOException, InterruptedException {
        Path script = Path.of(System.getProperty("user.dir")).getParent().resolve("headers/check-cuda-header.sh");
        Process p = new ProcessBuilder("bash", script.toString()).redirectErrorStream(true).start();
        assumeTrue(p.waitFor(120, TimeUnit.SECONDS), "check-cuda-header.sh did not finish");
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.println(output);
        assumeTrue(p.exitValue() != 77, output);
        assertEquals(0, p.exitValue(), output);
    }
}
