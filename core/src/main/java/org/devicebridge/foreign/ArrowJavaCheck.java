package org.devicebridge.foreign;

import org.devicebridge.ArrowJavaUnavailableException;

/**
 * Whether Arrow Java (an optional dependency) can be loaded: checked once, by name, so that an entry point that
 * needs it fails with {@link ArrowJavaUnavailableException} before any class that links against Arrow Java is
 * loaded, instead of a {@link NoClassDefFoundError} from deep inside. Thread-safe: the result is a constant.
 */
public final class ArrowJavaCheck {
    /** A class of {@code arrow-vector} and one of {@code arrow-memory-core}: the bridge needs both. */
    private static final String[] REQUIRED = {
        "org.apache.arrow.vector.VectorSchemaRoot", "org.apache.arrow.memory.BufferAllocator"};

    /** {@code null} where Arrow Java loads; otherwise what was missing. */
    private static final Throwable MISSING = probe(REQUIRED);

    private ArrowJavaCheck() {}

    /** Arrow Flight's {@code flight-core}, probed on first use by a Flight entry point only. */
    private static final class Flight {
        static final Throwable MISSING = probe("org.apache.arrow.flight.FlightStream");
    }

    private static Throwable probe(String... required) {
        for (String name : required) {
            try {
                Class.forName(name, false, ArrowJavaCheck.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                return e;
            }
        }
        return null;
    }

    /** {@code true} where Arrow Java's {@code arrow-vector} and {@code arrow-memory-core} can be loaded. */
    public static boolean present() {
        return MISSING == null;
    }

    /**
     * The second line of every entry point that needs Arrow Java (after the native-access check).
     *
     * @param entryPoint the class and method, for the message, e.g. {@code "CudaArrow.download"}
     * @throws ArrowJavaUnavailableException where Arrow Java cannot be loaded
     */
    public static void requireArrowJava(String entryPoint) {
        if (MISSING != null) {
            boolean modulePath = ArrowJavaCheck.class.getModule().isNamed();
            throw new ArrowJavaUnavailableException(entryPoint + " needs Arrow Java, and this JVM cannot load it ("
                    + MISSING + "): add org.apache.arrow:arrow-vector (it brings arrow-memory-core) and an "
                    + "Arrow allocation manager " + (modulePath
                            ? "to the module path, and resolve it (a module of yours that requires org.apache.arrow.vector, "
                                    + "or --add-modules org.apache.arrow.vector)"
                            : "to the class path"), MISSING);
        }
    }

    /**
     * The second line of every entry point of {@code org.devicebridge.arrow.flight} (after the native-access
     * check): Arrow Java, then Arrow Flight.
     *
     * @param entryPoint the class and method, for the message, e.g. {@code "DeviceFlight.receive"}
     * @throws ArrowJavaUnavailableException where Arrow Java or {@code flight-core} cannot be loaded
     */
    public static void requireFlight(String entryPoint) {
        requireArrowJava(entryPoint);
        Throwable missing = Flight.MISSING;
        if (missing != null) {
            boolean modulePath = ArrowJavaCheck.class.getModule().isNamed();
            throw new ArrowJavaUnavailableException(entryPoint + " needs Arrow Flight, and this JVM cannot load it ("
                    + missing + "): add org.apache.arrow:flight-core (it brings gRPC and Netty) " + (modulePath
                            ? "to the module path, and resolve it (--add-modules org.apache.arrow.flight.core)"
                            : "to the class path"), missing);
        }
    }
}
