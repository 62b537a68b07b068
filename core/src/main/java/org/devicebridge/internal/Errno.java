package org.devicebridge.internal;

/**
 * The errno values this library uses or names (Linux numbering): those the C Stream Interface documents as
 * typical for {@code get_schema} / {@code get_next}, for the stream exporter and for naming a producer's error,
 * and those the socket calls of {@link UnixFds} report. The one home of these numbers: neither header the
 * bindings come from defines them, so they are not in {@code generated}.
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

    /** {@code " (EIO)"} and the like for the values above and the socket calls' usual ones, {@code ""} for any other. */
    public static String nameSuffix(int errno) {
        return switch (errno) {
            case 1 -> " (EPERM)";
            case 2 -> " (ENOENT)";
            case 4 -> " (EINTR)";
            case EIO -> " (EIO)";
            case 9 -> " (EBADF)";
            case 11 -> " (EAGAIN)";
            case 13 -> " (EACCES)";
            case 24 -> " (EMFILE)";
            case 32 -> " (EPIPE)";
            case 88 -> " (ENOTSOCK)";
            case 111 -> " (ECONNREFUSED)";
            case ENOMEM -> " (ENOMEM)";
            case EINVAL -> " (EINVAL)";
            case ENOSYS -> " (ENOSYS)";
            case ETIMEDOUT -> " (ETIMEDOUT)";
            case ECANCELED -> " (ECANCELED)";
            default -> "";
        };
    }
}
