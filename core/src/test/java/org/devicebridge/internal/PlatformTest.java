package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.devicebridge.testing.JdkFlags;
import org.junit.jupiter.api.Test;

/** The platform decision and the JDK-flag table, asked about platforms and JDKs this machine is not. */
class PlatformTest {
    @Test
    void linuxOnX8664IsSupportedUnderBothArchitectureNames() {
        assertNull(Platform.unsupported("Linux", "amd64"));
        assertNull(Platform.unsupported("Linux", "x86_64"));
    }

    @Test
    void anotherOsOrCpuIsRefusedNamingWhatDiffersAndWhatIsSupported() {
        String mac = Platform.unsupported("Mac OS X", "aarch64");
        assertTrue(mac.contains("os.name=Mac OS X, os.arch=aarch64") && mac.contains("neither the operating system nor the CPU")
                && mac.contains(Platform.SUPPORTED), mac);
        assertTrue(Platform.unsupported("Windows 11", "amd64").contains("the operating system is not"));
        assertTrue(Platform.unsupported("Linux", "aarch64").contains("the CPU is not"));
    }

    @Test
    void childJvmFlagsFollowTheJdkThatHasThem() {
        List<String> args = List.of("--enable-native-access=ALL-UNNAMED", JdkFlags.DENY, JdkFlags.UNSAFE, "-cp", "x");
        assertEquals(List.of("--enable-native-access=ALL-UNNAMED", "-cp", "x"), JdkFlags.taken(args, 22));
        assertEquals(List.of("--enable-native-access=ALL-UNNAMED", JdkFlags.UNSAFE, "-cp", "x"), JdkFlags.taken(args, 23));
        assertEquals(args, JdkFlags.taken(args, 24));
    }
}
