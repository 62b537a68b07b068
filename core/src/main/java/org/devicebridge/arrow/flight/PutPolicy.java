package org.devicebridge.arrow.flight;

/**
 * Decides whether a {@code DoPut} to a {@link DeviceFlightProducer} may create or replace a dataset. The
 * producer asks before it receives the first batch, and again when it installs the finished put (another
 * call may have created or taken the dataset in between); a refusal cancels the put with Flight's
 * {@code PERMISSION_DENIED}, and nothing it sent is kept.
 *
 * <p>Called on Flight's call threads, concurrently: an implementation is thread-safe, quick (it runs inside
 * the call) and does not call back into the producer. One that throws refuses the put (Flight's
 * {@code INTERNAL}, with its message).
 */
@FunctionalInterface
public interface PutPolicy {
    /** Any caller may create a dataset; nobody may replace one. The default. */
    PutPolicy CREATE_ONLY = (peerIdentity, dataset, exists) -> !exists;

    /** Any caller may create or replace any dataset (a server whose every client is trusted). */
    PutPolicy ANY = (peerIdentity, dataset, exists) -> true;

    /**
     * Whether the put may go on.
     *
     * @param peerIdentity the caller's identity as Flight's authentication established it
     *     ({@code CallContext.peerIdentity()}); empty when the server authenticates nobody
     * @param dataset the dataset's name, as the put's descriptor gives it (client input: compare, do not trust)
     * @param exists whether the producer holds a dataset of that name now (the put would replace it)
     * @return {@code true} to let the put create or replace the dataset, {@code false} to refuse it
     */
    boolean allows(String peerIdentity, String dataset, boolean exists);
}
