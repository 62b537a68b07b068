package org.devicebridge.testing;

import java.text.MessageFormat;
import java.util.ResourceBundle;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The tests' {@link System.LoggerFinder} (registered in {@code META-INF/services}): every logger logs through
 * {@code java.util.logging} as the JDK's default would, and every ERROR the library's own code logs (a call
 * from a class of {@code org.devicebridge} loaded from the main classes, not the test classes) is counted,
 * whatever the level the logger is set to. The library logs an ERROR where it swallows a failure it cannot
 * throw: a release or deleter callback that failed, a release step of a handle that threw, a Cleaner action
 * that failed. {@link NoLeaksExtension} fails a test class during which that count grew beyond what the
 * class {@linkplain #acknowledge acknowledged}. Thread-safe.
 */
public final class CountingLoggerFinder extends System.LoggerFinder {
    private static final LongAdder LIBRARY_ERRORS = new LongAdder();
    private static final LongAdder ACKNOWLEDGED = new LongAdder();
    private static final StackWalker WALKER = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);
    private static volatile String lastError;

    /** Errors the library logged since the JVM started, less those tests {@linkplain #acknowledge acknowledged}. */
    public static long libraryErrors() {
        return LIBRARY_ERRORS.sum() - ACKNOWLEDGED.sum();
    }

    /**
     * Errors the library logged since the JVM started, acknowledged or not: a test that provokes one reads
     * this before and after, asserts the difference, then {@linkplain #acknowledge acknowledges} it.
     *
     * @return the count
     */
    public static long loggedErrors() {
        return LIBRARY_ERRORS.sum();
    }

    /**
     * Declares {@code n} logged errors expected: a test that makes a callback fail on purpose (to check the
     * failure is logged, never thrown into native code) calls this after checking they were logged.
     *
     * @param n how many
     */
    public static void acknowledge(long n) {
        ACKNOWLEDGED.add(n);
    }

    /** The message of the last error the library logged, or null. */
    public static String lastError() {
        return lastError;
    }

    @Override
    public System.Logger getLogger(String name, Module module) {
        return new JulLogger(name);
    }

    /** A System.Logger over java.util.logging, counting the library's errors. */
    private static final class JulLogger implements System.Logger {
        private final String name;
        private final java.util.logging.Logger jul;
        private final boolean library;

        JulLogger(String name) {
            this.name = name;
            this.jul = java.util.logging.Logger.getLogger(name);
            this.library = name.startsWith("org.devicebridge");
        }

        @Override
        public String getName() {
            return name;
        }

        @Override
        public boolean isLoggable(Level level) {
            return jul.isLoggable(jul(level));
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            count(level, msg, thrown);
            if (isLoggable(level)) {
                jul.logrb(jul(level), (String) null, null, bundle, msg, thrown);
            }
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            String msg = params == null || params.length == 0 ? format : MessageFormat.format(format, params);
            count(level, msg, null);
            if (isLoggable(level)) {
                jul.logrb(jul(level), (String) null, null, bundle, msg);
            }
        }

        @Override
        public void log(Level level, Supplier<String> msgSupplier) {
            if (library && level == Level.ERROR) {
                count(level, msgSupplier.get(), null);
            }

            if (isLoggable(level)) {
                jul.log(jul(level), msgSupplier);
            }
        }

        private void count(Level level, String msg, Throwable thrown) {
            if (library && level == Level.ERROR && calledFromLibrary()) {
                LIBRARY_ERRORS.increment();
                lastError = name + ": " + msg + (thrown == null ? "" : ": " + thrown);
            }
        }

        /** Whether the first caller outside the JDK and this class is library code (not a test fixture). */
        private static boolean calledFromLibrary() {
            return WALKER.walk(frames -> frames.map(StackWalker.StackFrame::getDeclaringClass)
                    .filter(c -> c != JulLogger.class && c != CountingLoggerFinder.class && c.getClassLoader() != null
                            && !c.getName().startsWith("java.") && !c.getName().startsWith("jdk.") && !c.getName().startsWith("sun."))
                    .findFirst()
                    .map(c -> {
                        java.security.CodeSource source = c.getProtectionDomain().getCodeSource();
                        return c.getName().startsWith("org.devicebridge.") && (source == null
                                || !String.valueOf(source.getLocation()).contains("test-classes"));
                    })
                    .orElse(false));
        }

        private static java.util.logging.Level jul(Level level) {
            return switch (level) {
                case ALL -> java.util.logging.Level.ALL;
                case TRACE -> java.util.logging.Level.FINER;
                case DEBUG -> java.util.logging.Level.FINE;
                case INFO -> java.util.logging.Level.INFO;
                case WARNING -> java.util.logging.Level.WARNING;
                case ERROR -> java.util.logging.Level.SEVERE;
                case OFF -> java.util.logging.Level.OFF;
            };
        }
    }
}
