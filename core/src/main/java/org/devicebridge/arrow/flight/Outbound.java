package org.devicebridge.arrow.flight;

import org.apache.arrow.flight.BackpressureStrategy;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.OutboundStreamListener;

/**
 * Flow control for one outbound stream. A server listener's {@code putNext} does not wait for the client,
 * so Flight's own {@link BackpressureStrategy.CallbackBackpressureStrategy} is registered on it and waited
 * on before each batch (stopping when the client cancels); a client listener's {@code putNext} waits for
 * the transport itself.
 */
final class Outbound {
    /** How long one wait lasts before the call's state is looked at again. */
    private static final long WAIT_MILLIS = 1000;

    private final ServerStreamListener server;
    private final BackpressureStrategy strategy;

    private Outbound(ServerStreamListener server, BackpressureStrategy strategy) {
        this.server = server;
        this.strategy = strategy;
    }

    /** Flow control for {@code out}; registers Flight's strategy (its ready and cancel handlers) on a server listener. */
    static Outbound of(OutboundStreamListener out) {
        if (out instanceof ServerStreamListener s) {
            BackpressureStrategy strategy = new BackpressureStrategy.CallbackBackpressureStrategy();
            strategy.register(s);
            return new Outbound(s, strategy);
        }
        return new Outbound(null, null);
    }

    /**
     * Waits until the peer can take another batch.
     *
     * @return {@code false} if the client cancelled the call (send nothing more)
     * @throws org.apache.arrow.flight.FlightRuntimeException ({@code CANCELLED}) if the thread was interrupted
     */
    boolean awaitReady() {
        if (strategy == null) {
            return true;
        }
        while (true) {
            switch (strategy.waitForListener(WAIT_MILLIS)) {
                case READY:
                    return true;
                case CANCELLED:
                    return false;
                default:
                    if (server.isCancelled()) {
                        return false;
                    }
                    if (Thread.currentThread().isInterrupted()) {
                        throw CallStatus.CANCELLED.withDescription("interrupted while waiting for the client")
                                .toRuntimeException();
                    }
            }
        }
    }
}
