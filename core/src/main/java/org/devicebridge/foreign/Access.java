package org.devicebridge.foreign;

/**
 * Where a package's lent plumbing is found (the JDK's "SharedSecrets" pattern): the owning package
 * installs its implementation from a static initialiser, and {@link #arrow()} (or {@link #arrowJava()})
 * initialises that class on first use. Nothing here is exported from the module; public API never needs it.
 */
public final class Access {
    /** The class of {@code org.devicebridge.arrow} whose static initialiser installs {@link ArrowAccess}. */
    private static final String ARROW_OWNER = "org.devicebridge.arrow.PackageAccess";

    /** The class of {@code org.devicebridge.arrow.java} whose static initialiser installs {@link ArrowJavaAccess}. */
    private static final String ARROW_JAVA_OWNER = "org.devicebridge.arrow.java.PackageAccess";

    private static volatile ArrowAccess arrow;
    private static volatile ArrowJavaAccess arrowJava;

    private Access() {}

    /** Called once, by {@code org.devicebridge.arrow.PackageAccess}'s static initialiser. */
    public static void setArrow(ArrowAccess access) {
        if (arrow != null) {
            throw new IllegalStateException("ArrowAccess is installed already");
        }
        arrow = java.util.Objects.requireNonNull(access, "access");
    }

    /** Called once, by {@code org.devicebridge.arrow.java.PackageAccess}'s static initialiser. */
    public static void setArrowJava(ArrowJavaAccess access) {
        if (arrowJava != null) {
            throw new IllegalStateException("ArrowJavaAccess is installed already");
        }
        arrowJava = java.util.Objects.requireNonNull(access, "access");
    }

    /** {@code org.devicebridge.arrow}'s plumbing for its sibling packages. */
    public static ArrowAccess arrow() {
        ArrowAccess a = arrow;
        if (a == null) {
            initialise(ARROW_OWNER);
            a = arrow;
        }
        return a;
    }

    /** {@code org.devicebridge.arrow.java}'s plumbing for {@code arrow.cuda}; only where Arrow Java loads. */
    public static ArrowJavaAccess arrowJava() {
        ArrowJavaAccess a = arrowJava;
        if (a == null) {
            initialise(ARROW_JAVA_OWNER);
            a = arrowJava;
        }
        return a;
    }

    private static void initialise(String owner) {
        try {
            Class.forName(owner, true, Access.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("cannot initialise " + owner, e);
        }
    }
}
