package org.devicebridge.testing;

import java.util.List;
import java.util.Map;

/**
 * Which JVM flags this JDK takes, for tests that start child JVMs: a JDK refuses to start on a flag it does not
 * know, and two that the tests use are newer than the class files' 22 ({@code --sun-misc-unsafe-memory-access}
 * from 23, {@code --illegal-native-access} from 24). The child runs on the JDK running the tests. Maven's own
 * test flags follow the same table (profiles {@code jdk23-flags} and {@code jdk24-flags}).
 */
public final class JdkFlags {
    /** {@code --illegal-native-access=deny}: native access without a grant fails instead of warning (24+). */
    public static final String DENY = "--illegal-native-access=deny";
    /** {@code --sun-misc-unsafe-memory-access=allow}: Netty's {@code Unsafe} without a warning (23+). */
    public static final String UNSAFE = "--sun-misc-unsafe-memory-access=allow";

    /** Each flag this table knows (by its name before {@code =}), and the first JDK feature release with it. */
    private static final Map<String, Integer> SINCE = Map.of(
            "--illegal-native-access", 24,
            "--sun-misc-unsafe-memory-access", 23);

    private JdkFlags() {}

    /**
     * {@code args} without the flags this JDK does not have (every other argument kept, in order).
     *
     * @param args a child JVM's arguments
     * @return the arguments this JDK takes
     */
    public static List<String> taken(List<String> args) {
        return taken(args, Runtime.version().feature());
    }

    /** {@link #taken(List)} for the JDK of feature release {@code feature}: the pure decision, for a test. */
    public static List<String> taken(List<String> args, int feature) {
        return args.stream().filter(a -> feature >= SINCE.getOrDefault(a.split("=", 2)[0], 0)).toList();
    }

    /** {@return {@code true} where this JDK has {@code --illegal-native-access}, so that access can be denied} */
    public static boolean canDeny() {
        return !taken(List.of(DENY)).isEmpty();
    }
}
