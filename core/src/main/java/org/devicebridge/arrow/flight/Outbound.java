package org.devicebridge.arrow.flight;

import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.OutboundStreamListener;

/**
 * Flow control for one outbound stream. A server listener's {@code putNext} does not wait for the client, so
 * before each batch the listener's own state is polled ({@code isReady}, {@code isCancelled}: both read the
 * transport's state from any thread) with short pauses between looks; a client listener's {@code putNext}
 * waits for the transport itself.
 *
 * <p>Why not Flight's {@code BackpressureStrategy.CallbackBackpressureStrategy}: it sleeps until the
 * listener's ready handler runs, but gRPC runs that handler on the call's serialising executor, the very one
 * a {@code DoGet} body occupies until {@code getStream} returns (Flight says so at
 * {@code OutboundStreamListener.setOnReadyHandler}). Inside a blocking {@code DoGet} the handler never comes,
 * and every wait ran to its timeout: B9's DoGet took 4 s where Flight alone took 40 ms. The handlers are
 * still set here, to end a pause early where they do run (a body that handed the listener to its own
 * thread and returned).
 *
 * <p>A pause grows with the time already waited (a quarter of it, between {@link #MIN_PAUSE_NANOS} and
 * {@link #MAX_PAUSE_NANOS}): a wait overshoots the moment the client is ready by at most about a quarter, or
 * {@code MAX_PAUSE_NANOS} once it is long, and a stalled client costs at most a look per millisecond.
 *
 * <p>One instance per stream, used by the sending thread only (the handlers may run on any thread).
 */
final class Outbound {
    /** The shortest pause between two looks at the listener. */
    static final long MIN_PAUSE_NANOS = 10_000;
    /** The longest pause between two looks at the listener. */
    static final long MAX_PAUSE_NANOS = 1_000_000;

    /** Pauses the calling thread for up to the given nanoseconds (returning early on an unpark or interrupt). */
    @FunctionalInterface
    interface Pause {
        void pause(Object blocker, long nanos);
    }

    private final ServerStreamListener server;
    private final Pause pause;
    private final LongSupplier clock;
    private volatile Thread waiter;

    Outbound(ServerStreamListener server, Pause pause, LongSupplier clock) {
        this.server = server;
        this.pause = pause;
        this.clock = clock;
        if (server != null) {
            try {
                server.setOnReadyHandler(this::wake);
            } catch (UnsupportedOperationException e) {
                // OutboundStreamListener's default (a caller's own wrapper may keep it): the looks suffice
            }
            server.setOnCancelHandler(this::wake);
        }
    }

    /** Flow control for {@code out}; sets a server listener's ready (where it has one) and cancel handlers. */
    static Outbound of(OutboundStreamListener out) {
        return new Outbound(out instanceof ServerStreamListener s ? s : null, LockSupport::parkNanos,
                System::nanoTime);
    }

    /** Whether the client cancelled the call (always {@code false} for a client's stream). */
    boolean cancelled() {
        return server != null && server.isCancelled();
    }

    /**
     * Waits until the peer can take another batch: returns at once when it can (or on a client's stream).
     *
     * @return {@code false} if the client cancelled the call (send nothing more)
     * @throws org.apache.arrow.flight.FlightRuntimeException ({@code CANCELLED}) if the thread was interrupted
     *         (its interrupt status stays set)
     */
    boolean awaitReady() {
        if (server == null) {
            return true;
        }
        waiter = Thread.currentThread();
        try {
            boolean waiting = false;
            long start = 0;
            while (true) {
                // Looked at after the waiter is set: a handler that runs from here on leaves the pause a
                // permit, so no signal is lost.
                if (server.isCancelled()) {
                    return false;
                }
                if (server.isReady()) {
                    return true;
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw CallStatus.CANCELLED.withDescription("interrupted while waiting for the client")
                            .toRuntimeException();
                }
                long now = clock.getAsLong();
                if (!waiting) {
                    waiting = true;
                    start = now;
                }
                pause.pause(this, Math.clamp((now - start) / 4, MIN_PAUSE_NANOS, MAX_PAUSE_NANOS));
            }
        } finally {
            waiter = null;
        }
    }

    private void wake() {
        Thread t = waiter;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }
}
