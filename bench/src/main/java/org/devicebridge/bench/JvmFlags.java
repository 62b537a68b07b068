package org.devicebridge.bench;

/** JVM flags every fork needs: native access, and what Arrow Java 19's netty allocator needs on JDK 25. */
final class JvmFlags {
    static final String NATIVE = "--enable-native-access=ALL-UNNAMED";
    static final String OPENS = "--add-opens=java.base/java.nio=ALL-UNNAMED";
    static final String UNSAFE = "--sun-misc-unsafe-memory-access=allow";
    static final String NETTY = "-Dio.netty.tryReflectionSetAccessible=true";

    private JvmFlags() {}
}
