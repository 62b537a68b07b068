package org.devicebridge.arrow.flight;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A producer's named datasets, each with its readers counted, and the bytes they hold from puts. Generic in
 * the batch type so that the put admission runs on host batches in the CPU tests exactly as it runs on
 * device batches in {@link DeviceFlightProducer}.
 *
 * <p>Ownership: the store owns the batches of its datasets until they are taken, replaced or closed; a
 * dataset's batches are closed (with {@code closer}) when its last use ends. The byte count is reserved by
 * puts before a batch is uploaded and given back when the batch is freed or handed over. Thread-safe.
 */
final class Datasets<B> {
    private final Map<String, Dataset<B>> map = new ConcurrentHashMap<>();
    private final AtomicLong bytes = new AtomicLong();
    private final Consumer<? super B> closer;

    Datasets(Consumer<? super B> closer) {
        this.closer = Objects.requireNonNull(closer, "closer");
    }

    boolean exists(String name) {
        return map.containsKey(name);
    }

    /** The names of the datasets now held, sorted. */
    Set<String> names() {
        return new TreeSet<>(map.keySet());
    }

    /** The bytes now held by put datasets and reserved by puts in progress. */
    long bytesHeld() {
        return bytes.get();
    }

    /** Reserves {@code n} bytes unless that would bring the count above {@code max}; atomic across callers. */
    boolean reserve(long n, long max) {
        long now;
        do {
            now = bytes.get();
            if (n > max - now) {
                return false;
            }
        } while (!bytes.compareAndSet(now, now + n));
        return true;
    }

    void giveBack(long n) {
        bytes.addAndGet(-n);
    }

    /** Adds or replaces {@code name} unconditionally (the server's own datasets, counted as 0 bytes). */
    void put(String name, Schema schema, List<B> batches) {
        Dataset<B> old = map.put(name, new Dataset<>(this, schema, batches, 0));
        if (old != null) {
            old.release();
        }
    }

    /**
     * Installs a finished put as {@code name}, if {@code allowed} accepts whether it exists now: created if it
     * does not, replaced (the old one closed after its readers) if it does, atomically with that check.
     *
     * @return whether it was installed; if not, the caller still owns the batches and the reserved bytes
     */
    boolean install(String name, Schema schema, List<B> batches, long reserved, Predicate<Boolean> allowed) {
        Dataset<B> fresh = new Dataset<>(this, schema, batches, reserved);
        while (true) {
            Dataset<B> old = map.get(name);
            if (!allowed.test(old != null)) {
                return false;
            }
            if (old == null ? map.putIfAbsent(name, fresh) == null : map.replace(name, old, fresh)) {
                if (old != null) {
                    old.release();
                }
                return true;
            }
        }
    }

    /** A use of the dataset {@code name} for reading, or {@code null} if there is none; end it with {@code release}. */
    Dataset<B> acquire(String name) {
        Dataset<B> d = map.get(name);
        return d != null && d.acquire() ? d : null;
    }

    /** Removes {@code name} and hands its batches over once no reader uses them; empty if there is none. */
    List<B> take(String name) {
        Dataset<B> d = map.remove(Objects.requireNonNull(name, "name"));
        return d == null ? List.of() : d.take();
    }

    /** Closes every dataset, each once no reader uses it. */
    void close() {
        for (String name : List.copyOf(map.keySet())) {
            Dataset<B> d = map.remove(name);
            if (d != null) {
                d.release();
            }
        }
    }

    /** Closes every batch of {@code batches}, all of them even if one fails (the first failure is thrown). */
    void discard(List<? extends B> batches) {
        RuntimeException failure = null;
        for (B b : batches) {
            try {
                closer.accept(b);
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * One dataset and its users: the store's map holds one use, each reading call one more; the batches are
     * closed (or handed over by {@link #take}) when the last use ends, and their bytes given back.
     */
    static final class Dataset<B> {
        private final Datasets<B> owner;
        private final Schema schema;
        private final List<B> batches;
        private final long bytes;
        private int uses = 1;
        private boolean handedOver;

        private Dataset(Datasets<B> owner, Schema schema, List<B> batches, long bytes) {
            this.owner = owner;
            this.schema = schema;
            this.batches = List.copyOf(batches);
            this.bytes = bytes;
        }

        Schema schema() {
            return schema;
        }

        List<B> batches() {
            return batches;
        }

        private synchronized boolean acquire() {
            if (uses == 0) {
                return false;
            }
            uses++;
            return true;
        }

        void release() {
            boolean last;
            synchronized (this) {
                last = --uses == 0 && !handedOver;
                notifyAll();
            }
            if (last) {
                try {
                    owner.discard(batches);
                } finally {
                    owner.giveBack(bytes);
                }
            }
        }

        /** Ends the map's use and waits for the readers; the batches are then the caller's. */
        private List<B> take() {
            synchronized (this) {
                uses--;
                boolean interrupted = false;
                while (uses > 0) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                        break;
                    }
                }
                if (interrupted) {
                    uses++;
                    Thread.currentThread().interrupt();
                } else {
                    handedOver = true;
                    owner.giveBack(bytes);
                    return batches;
                }
            }
            release();
            throw CallStatus.CANCELLED.withDescription("interrupted while waiting for readers").toRuntimeException();
        }
    }
}
