package org.devicebridge.bench;

/** JVM flags every fork needs: native access, and what Arrow Java 19's netty allocator needs on JDK 25. */
final class JvmFlags {
    static final String NATIVE = "--enable-native-access=ALL-UNNAMED";
    static final String OPENS = "--add-opens=java.base/java.nio=ALL-UNNAMED";
    /**
     * What {@code --sun-misc-unsafe-memory-access=allow} sets (Netty's allocator reads it on JDK 24+), as a
     * property: JMH's annotations need a constant, and a JDK 22 refuses to start on the flag (23+).
     */
    static final String UNSAFE = "-Dsun.misc.unsafe.memory.access=allow";
    static final String NETTY = "-Dio.netty.tryReflectionSetAccessible=true";

    private JvmFlags() {}
}
