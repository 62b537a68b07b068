package org.devicebridge.testing;

import org.devicebridge.arrow.java.ArrowMemory;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Registered for every test run (service file): when the system property
 * {@code devicebridge.test.arrowMemory} is {@code ffm} (the Surefire execution without Netty sets it),
 * makes the FFM allocation manager Arrow Java's default before any test class loads, as an application
 * calls {@link ArrowMemory#installAsDefault()} at start-up. Otherwise it does nothing.
 */
public final class ArrowMemorySessionListener implements LauncherSessionListener {
    /** The property, and the value that selects the FFM manager. */
    public static final String PROPERTY = "devicebridge.test.arrowMemory";

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        if ("ffm".equals(System.getProperty(PROPERTY))) {
            ArrowMemory.installAsDefault();
        }
    }
}
