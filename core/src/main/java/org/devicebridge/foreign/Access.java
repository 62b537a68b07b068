package org.devicebridge.foreign;

/**
 * Where a package's lent plumbing is found (the JDK's "SharedSecrets" pattern): the owning package
 * installs its implementation from a static initialiser, and {@link #arrow()} initialises that class on
 * first use. Nothing here is exported from the module; public API never needs it.
 */
public final class Access {
    /** The class of {@code org.devicebridge.arrow} whose static initialiser installs {@link ArrowAccess}. */
    private static final String ARROW_OWNER = "org.devicebridge.arrow.PackageAccess";

    private static volatile ArrowAccess arrow;

    private Access() {}

    /** Called once, by {@code org.devicebridge.arrow.PackageAccess}'s static initialiser. */
    public static void setArrow(ArrowAccess access) {
        if (arrow != null) {
            throw new IllegalStateException("ArrowAccess is installed already");
        }
        arrow = java.util.Objects.requireNonNull(access, "access");
    }

    /** {@code org.devicebridge.arrow}'s plumbing for its sibling packages. */
    public static ArrowAccess arrow() {
        ArrowAccess a = arrow;
        if (a == null) {
            try {
                Class.forName(ARROW_OWNER, true, Access.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("cannot initialise " + ARROW_OWNER, e);
            }
            a = arrow;
        }
        return a;
    }
}
