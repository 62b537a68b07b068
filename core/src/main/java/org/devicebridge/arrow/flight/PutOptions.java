package org.devicebridge.arrow.flight;

import java.util.Objects;
import java.util.function.BiPredicate;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ValidationLevel;

/**
 * What a {@link DeviceFlightProducer} accepts on {@code DoPut}: limits on the bytes of a batch, of one put
 * and of all datasets held, on the number of batches of one put, the validation level, and the policy of who
 * may create or replace which dataset. A batch's bytes are the sizes of the buffers Flight received for it (read from
 * the message, not from the batch's contents), checked before it is uploaded to the device. A put over a
 * limit is cancelled with Flight's {@code RESOURCE_EXHAUSTED}, naming the limit and the numbers, and
 * everything it had sent is freed.
 *
 * <p>{@link #defaults()} bounds a single-device server holding a few datasets; raise the limits to the
 * device's memory and the clients' needs. Change one part with the {@code with...} methods:
 * {@code PutOptions.defaults().withMaxTotalBytes(32L << 30).withPolicy((peer, name) -> true,
 * (peer, name) -> true)}.
 *
 * <p>The policy is two predicates over the caller's identity as Flight's authentication established it
 * ({@code CallContext.peerIdentity()}; empty when the server authenticates nobody) and the dataset's name, as
 * the put's descriptor gives it (client input: compare, do not trust): {@code mayCreate} is asked when the
 * producer holds no dataset of that name, {@code mayReplace} when it does. The producer asks before it
 * receives the first batch, and again when it installs the finished put (another call may have created or
 * taken the dataset in between); a {@code false} cancels the put with Flight's {@code UNAUTHORIZED} (gRPC's
 * {@code PERMISSION_DENIED}), and nothing it sent is kept. The predicates are called on Flight's call threads,
 * concurrently: they are thread-safe, quick (they run inside the call) and do not call back into the producer;
 * one that throws refuses the put (Flight's {@code INTERNAL}, with its message).
 *
 * <p>Immutable and thread-safe (as far as the predicates are); it owns nothing.
 *
 * @param maxBatchBytes the most bytes one batch may have ({@value #DEFAULT_MAX_BATCH_BYTES} by default)
 * @param maxStreamBytes the most bytes of all batches of one put ({@value #DEFAULT_MAX_STREAM_BYTES} by default)
 * @param maxTotalBytes the most bytes the producer holds from puts, in all its datasets and the puts in
 *     progress together ({@value #DEFAULT_MAX_TOTAL_BYTES} by default); datasets given with
 *     {@link DeviceFlightProducer#add} are not counted
 * @param maxBatches the most batches of one put ({@value #DEFAULT_MAX_BATCHES} by default)
 * @param validation {@link ValidationLevel#DEFAULT} (the upload's own check, which sizes every buffer; the
 *     default) or {@link ValidationLevel#FULL} (every batch is also checked as Arrow C++'s
 *     {@code ValidateFull} does, on the host, before it is uploaded)
 * @param mayCreate whether a caller (its identity, then the dataset's name) may create a dataset (anyone by
 *     default)
 * @param mayReplace whether a caller may replace a dataset the producer holds (nobody by default)
 */
public record PutOptions(long maxBatchBytes, long maxStreamBytes, long maxTotalBytes, long maxBatches,
                         ValidationLevel validation, BiPredicate<String, String> mayCreate,
                         BiPredicate<String, String> mayReplace) {
    /** The default {@link #maxBatchBytes}: 512 MiB. */
    public static final long DEFAULT_MAX_BATCH_BYTES = 512L << 20;
    /** The default {@link #maxStreamBytes}: 4 GiB. */
    public static final long DEFAULT_MAX_STREAM_BYTES = 4L << 30;
    /** The default {@link #maxTotalBytes}: 8 GiB. */
    public static final long DEFAULT_MAX_TOTAL_BYTES = 8L << 30;
    /** The default {@link #maxBatches}: 65,536. */
    public static final long DEFAULT_MAX_BATCHES = 65_536;

    /**
     * Checks the parts.
     *
     * @throws NullPointerException if {@code validation}, {@code mayCreate} or {@code mayReplace} is null
     * @throws InvalidArgumentException if a limit is not positive, or {@code validation} is below
     *         {@link ValidationLevel#DEFAULT} (the upload needs what DEFAULT establishes)
     */
    public PutOptions {
        positive("maxBatchBytes", maxBatchBytes);
        positive("maxStreamBytes", maxStreamBytes);
        positive("maxTotalBytes", maxTotalBytes);
        positive("maxBatches", maxBatches);
        Objects.requireNonNull(validation, "validation");
        Objects.requireNonNull(mayCreate, "mayCreate");
        Objects.requireNonNull(mayReplace, "mayReplace");
        if (validation != ValidationLevel.DEFAULT && validation != ValidationLevel.FULL) {
            throw new InvalidArgumentException("validation", "expected DEFAULT or FULL (the upload sizes every "
                    + "buffer with DEFAULT's checks) but found " + validation);
        }
    }

    /**
     * The default options: the {@code DEFAULT_...} limits, {@link ValidationLevel#DEFAULT}, and a policy that
     * lets any caller create a dataset and nobody replace one.
     *
     * @return the default options
     */
    public static PutOptions defaults() {
        return new PutOptions(DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_STREAM_BYTES, DEFAULT_MAX_TOTAL_BYTES,
                DEFAULT_MAX_BATCHES, ValidationLevel.DEFAULT, (peer, name) -> true, (peer, name) -> false);
    }

    /**
     * These options with another {@link #maxBatchBytes}.
     *
     * @param bytes the most bytes of one batch; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxBatchBytes(long bytes) {
        return new PutOptions(bytes, maxStreamBytes, maxTotalBytes, maxBatches, validation, mayCreate, mayReplace);
    }

    /**
     * These options with another {@link #maxStreamBytes}.
     *
     * @param bytes the most bytes of one put; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxStreamBytes(long bytes) {
        return new PutOptions(maxBatchBytes, bytes, maxTotalBytes, maxBatches, validation, mayCreate, mayReplace);
    }

    /**
     * These options with another {@link #maxTotalBytes}.
     *
     * @param bytes the most bytes held from puts; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxTotalBytes(long bytes) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, bytes, maxBatches, validation, mayCreate, mayReplace);
    }

    /**
     * These options with another {@link #maxBatches}.
     *
     * @param count the most batches of one put; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code count} is not positive
     */
    public PutOptions withMaxBatches(long count) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, count, validation, mayCreate, mayReplace);
    }

    /**
     * These options with another {@link #validation} level.
     *
     * @param level {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL}
     * @return the new options
     * @throws InvalidArgumentException if {@code level} is below DEFAULT
     */
    public PutOptions withValidation(ValidationLevel level) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, maxBatches, level, mayCreate, mayReplace);
    }

    /**
     * These options with another policy.
     *
     * @param mayCreate whether a caller (its identity, then the dataset's name) may create a dataset
     * @param mayReplace whether a caller may replace a dataset the producer holds
     * @return the new options
     * @throws NullPointerException if a predicate is null
     */
    public PutOptions withPolicy(BiPredicate<String, String> mayCreate, BiPredicate<String, String> mayReplace) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, maxBatches, validation, mayCreate,
                mayReplace);
    }

    /**
     * Whether the put of {@code peerIdentity} may go on, as the policy says: {@link #mayReplace} where the
     * producer holds the dataset, {@link #mayCreate} where it does not.
     *
     * @param peerIdentity the caller's identity ({@code ""} when the server authenticates nobody)
     * @param dataset the dataset's name
     * @param exists whether the producer holds a dataset of that name now
     * @return {@code true} to let the put create or replace the dataset
     */
    boolean allows(String peerIdentity, String dataset, boolean exists) {
        return (exists ? mayReplace : mayCreate).test(peerIdentity, dataset);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new InvalidArgumentException(name, "expected a positive limit but found " + value);
        }
    }
}
