package org.devicebridge.internal;

/**
 * The errno values the C Stream Interface documents as typical for {@code get_schema} / {@code get_next}
 * (Linux numbering): the one home of these numbers for the stream exporter and for naming a producer's
 * error. The Arrow header defines none of them, so they are not in {@code generated}.
 */
public final class Errno {
    /** I/O error: the source of the batches failed. */
    public static final int EIO = 5;
    /** Out of memory. */
    public static final int ENOMEM = 12;
    /** Invalid argument: the data cannot be exported as asked. */
    public static final int EINVAL = 22;
    /** Function not implemented. */
    public static final int ENOSYS = 38;
    /** Timed out: an async stream's wait for its producer. */
    public static final int ETIMEDOUT = 110;
    /** Cancelled: an async stream that its consumer cancelled or closed. */
    public static final int ECANCELED = 125;

    private Errno() {}

    /** {@code " (EIO)"} and the like for the values above, {@code ""} for any other. */
    public static String nameSuffix(int errno) {
        return switch (errno) {
            case EIO -> " (EIO)";
            case ENOMEM -> " (ENOMEM)";
            case EINVAL -> " (EINVAL)";
            case ENOSYS -> " (ENOSYS)";
            case ETIMEDOUT -> " (ETIMEDOUT)";
            case ECANCELED -> " (ECANCELED)";
            default -> "";
        };
    }
}
