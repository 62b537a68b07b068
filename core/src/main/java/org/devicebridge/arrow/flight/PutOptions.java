package org.devicebridge.arrow.flight;

import java.util.Objects;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ValidationLevel;

/**
 * What a {@link DeviceFlightProducer} accepts on {@code DoPut}: limits on the bytes of a batch, of one put
 * and of all datasets held, on the number of batches of one put, the validation level, and who may create
 * or replace which dataset. A batch's bytes are the sizes of the buffers Flight received for it (read from
 * the message, not from the batch's contents), checked before it is uploaded to the device. A put over a
 * limit is cancelled with Flight's {@code RESOURCE_EXHAUSTED}, naming the limit and the numbers, and
 * everything it had sent is freed.
 *
 * <p>{@link #defaults()} bounds a single-device server holding a few datasets; raise the limits to the
 * device's memory and the clients' needs. Change one part with the {@code with...} methods:
 * {@code PutOptions.defaults().withMaxTotalBytes(32L << 30).withPolicy(PutPolicy.ANY)}.
 *
 * <p>Immutable and thread-safe (as far as {@code policy} is); it owns nothing.
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
 * @param policy who may create or replace which dataset ({@link PutPolicy#CREATE_ONLY} by default)
 */
public record PutOptions(long maxBatchBytes, long maxStreamBytes, long maxTotalBytes, long maxBatches,
                         ValidationLevel validation, PutPolicy policy) {
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
     * @throws NullPointerException if {@code validation} or {@code policy} is null
     * @throws InvalidArgumentException if a limit is not positive, or {@code validation} is below
     *         {@link ValidationLevel#DEFAULT} (the upload needs what DEFAULT establishes)
     */
    public PutOptions {
        positive("maxBatchBytes", maxBatchBytes);
        positive("maxStreamBytes", maxStreamBytes);
        positive("maxTotalBytes", maxTotalBytes);
        positive("maxBatches", maxBatches);
        Objects.requireNonNull(validation, "validation");
        Objects.requireNonNull(policy, "policy");
        if (validation != ValidationLevel.DEFAULT && validation != ValidationLevel.FULL) {
            throw new InvalidArgumentException("validation", "expected DEFAULT or FULL (the upload sizes every "
                    + "buffer with DEFAULT's checks) but found " + validation);
        }
    }

    /**
     * The default options: the {@code DEFAULT_...} limits, {@link ValidationLevel#DEFAULT} and
     * {@link PutPolicy#CREATE_ONLY}.
     *
     * @return the default options
     */
    public static PutOptions defaults() {
        return new PutOptions(DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_STREAM_BYTES, DEFAULT_MAX_TOTAL_BYTES,
                DEFAULT_MAX_BATCHES, ValidationLevel.DEFAULT, PutPolicy.CREATE_ONLY);
    }

    /**
     * These options with another {@link #maxBatchBytes}.
     *
     * @param bytes the most bytes of one batch; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxBatchBytes(long bytes) {
        return new PutOptions(bytes, maxStreamBytes, maxTotalBytes, maxBatches, validation, policy);
    }

    /**
     * These options with another {@link #maxStreamBytes}.
     *
     * @param bytes the most bytes of one put; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxStreamBytes(long bytes) {
        return new PutOptions(maxBatchBytes, bytes, maxTotalBytes, maxBatches, validation, policy);
    }

    /**
     * These options with another {@link #maxTotalBytes}.
     *
     * @param bytes the most bytes held from puts; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code bytes} is not positive
     */
    public PutOptions withMaxTotalBytes(long bytes) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, bytes, maxBatches, validation, policy);
    }

    /**
     * These options with another {@link #maxBatches}.
     *
     * @param count the most batches of one put; positive
     * @return the new options
     * @throws InvalidArgumentException if {@code count} is not positive
     */
    public PutOptions withMaxBatches(long count) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, count, validation, policy);
    }

    /**
     * These options with another {@link #validation} level.
     *
     * @param level {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL}
     * @return the new options
     * @throws InvalidArgumentException if {@code level} is below DEFAULT
     */
    public PutOptions withValidation(ValidationLevel level) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, maxBatches, level, policy);
    }

    /**
     * These options with another {@link #policy}.
     *
     * @param policy who may create or replace which dataset
     * @return the new options
     */
    public PutOptions withPolicy(PutPolicy policy) {
        return new PutOptions(maxBatchBytes, maxStreamBytes, maxTotalBytes, maxBatches, validation, policy);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new InvalidArgumentException(name, "expected a positive limit but found " + value);
        }
    }
}
