package org.devicebridge.internal;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;

/**
 * The safety net behind every owning handle: runs an action once the handle has become phantom reachable,
 * unless it was unregistered first. It does what {@link java.lang.ref.Cleaner} does, without its one
 * lock: a {@code Cleaner} links every registration into one list under one monitor, entered twice per
 * handle (register and clean), which handles opened and closed on many threads at once all contend on.
 *
 * <p>Here a registration is a phantom reference kept reachable by a stripe: each platform thread has its
 * own, which only it adds to (no lock, no atomic operation), virtual threads share a few, each under its
 * monitor. Unregistering only clears the reference (no lock, nothing run), and a stripe drops cleared
 * references when it fills up: a cleared reference is never enqueued, and one the GC enqueued is held by
 * the queue, so a stripe may drop both. The stripe of a thread that ended is adopted into a shared one
 * when the next thread makes its own. One daemon thread runs the actions of the references the GC enqueues.
 */
public final class HandleCleaner {
    private static final System.Logger LOG = System.getLogger("org.devicebridge");
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /** Stripes shared by virtual threads and inheriting those of ended threads; each under its monitor. */
    private static final Stripe[] SHARED;
    /** The stripe of every platform thread that registered; guarded by itself. */
    private static final List<Stripe> OWNED = new ArrayList<>();
    private static final ThreadLocal<Stripe> OWN = ThreadLocal.withInitial(HandleCleaner::newOwnStripe);

    static {
        int n = Integer.highestOneBit(Math.min(64, Math.max(4, Runtime.getRuntime().availableProcessors())));
        SHARED = new Stripe[n];
        for (int i = 0; i < n; i++) {
            SHARED[i] = new Stripe(null);
        }
        // like the JDK's Cleaner thread: a daemon that inherits no thread-locals and pins no class loader
        Thread t = new Thread(null, HandleCleaner::drain, "devicebridge-cleaner", 0, false);
        t.setDaemon(true);
        t.setContextClassLoader(null);
        t.start();
    }

    /**
     * A registration: {@link #unregister()} it once the handle released its resources another way. A handle's
     * own state may extend it (one object instead of two per handle); {@link #clean()} runs on the cleaner
     * thread, at most once, when the GC found the referent unreachable.
     */
    public abstract static class Registration extends PhantomReference<Object> {
        private boolean unregistered;

        /** @param referent the object whose unreachability runs {@link #clean()}; {@code null}: never runs */
        protected Registration(Object referent) {
            super(referent, QUEUE);
        }

        /** The action: must not refer to the referent. */
        protected abstract void clean();

        /**
         * The action will not run (unless the GC already found the referent unreachable, which a caller that
         * still holds the referent rules out). Does not run it. Any thread; repeated calls do nothing.
         */
        public final void unregister() {
            clear(); // a cleared reference is never enqueued
            unregistered = true;
        }
    }

    /** A registration whose action is {@code action} applied to {@code target}: a method reference costs nothing. */
    private static final class Action<T> extends Registration {
        private final T target;
        private final Consumer<? super T> action;

        Action(Object referent, T target, Consumer<? super T> action) {
            super(referent);
            this.target = target;
            this.action = action;
        }

        @Override
        protected void clean() {
            action.accept(target);
        }
    }

    private HandleCleaner() {}

    /**
     * Runs {@code action} on the cleaner thread once {@code referent} has become phantom reachable, unless
     * the returned registration was unregistered first. {@code action} must not refer to {@code referent}.
     */
    public static Registration register(Object referent, Runnable action) {
        return register(referent, action, Runnable::run);
    }

    /**
     * {@link #register(Object, Runnable)} of {@code action} applied to {@code target}, in one object when
     * {@code action} is a method reference that captures nothing (e.g. {@code Lifecycle::releaseUnreachable}).
     * Neither may refer to {@code referent}.
     */
    public static <T> Registration register(Object referent, T target, Consumer<? super T> action) {
        return track(new Action<>(referent, target, action));
    }

    /** Keeps {@code r} reachable until it is unregistered or has run, and returns it. */
    public static <R extends Registration> R track(R r) {
        Thread t = Thread.currentThread();
        if (t.isVirtual()) {
            Stripe s = SHARED[(int) t.threadId() & (SHARED.length - 1)];
            synchronized (s) {
                s.add(r);
            }
        } else {
            OWN.get().add(r); // only this thread adds to its own stripe while it runs
        }
        return r;
    }

    private static Stripe newOwnStripe() {
        Stripe own = new Stripe(Thread.currentThread());
        synchronized (OWNED) {
            adoptEnded();
            OWNED.add(own);
        }
        return own;
    }

    /**
     * Moves what the stripes of ended threads still hold into the shared stripes. Holds {@code OWNED}; an
     * ended thread's writes are visible to whoever saw it ended ({@link Thread#isAlive()}).
     */
    private static void adoptEnded() {
        for (Iterator<Stripe> it = OWNED.iterator(); it.hasNext(); ) {
            Stripe ended = it.next();
            if (ended.owner.isAlive()) {
                continue;
            }
            it.remove();
            Stripe heir = SHARED[(int) ended.owner.threadId() & (SHARED.length - 1)];
            synchronized (heir) {
                for (int i = 0; i < ended.size; i++) {
                    if (!ended.refs[i].refersTo(null)) {
                        heir.add(ended.refs[i]);
                    }
                }
            }
        }
    }

    /** The fields of a stripe, after the padding of its superclass (a superclass's fields are laid out first). */
    private static class StripeFields extends CacheLinePadding {
        Registration[] refs; // allocated by the first registering thread, in its own allocation buffer
        int size;
    }

    /**
     * Keeps registrations reachable until they are cleared; padded on both sides. A thread's own stripe is
     * touched by that thread alone while it runs; a shared one under its monitor.
     */
    @SuppressWarnings("unused")
    private static final class Stripe extends StripeFields {
        private static final int MIN_CAPACITY = 16;
        final Thread owner; // null for a shared stripe
        long q0, q1, q2, q3, q4, q5, q6, q7;

        Stripe(Thread owner) {
            this.owner = owner;
        }

        void add(Registration r) {
            Registration[] a = refs;
            if (a == null) {
                a = refs = new Registration[MIN_CAPACITY];
            } else if (size == a.length) {
                a = compact(a);
            }
            a[size++] = r;
        }

        /**
         * Copies the references not cleared into a new array (grown when more than half are live, shrunk when
         * few are). Always a new one: an array just allocated is in the young generation, so the stores of
         * the next registrations into it skip the GC's card marking, which on a long-lived array costs a
         * fence per store and contends with every other thread's marks (bench/RESULTS.md, issue 28, fifth
         * pass).
         */
        private Registration[] compact(Registration[] a) {
            int live = 0;
            for (int i = 0; i < size; i++) {
                if (!a[i].refersTo(null)) {
                    live++;
                }
            }
            int capacity = live > a.length / 2 ? a.length * 2
                    : a.length > MIN_CAPACITY && live < a.length / 8 ? Math.max(MIN_CAPACITY, a.length / 4) : a.length;
            Registration[] fresh = new Registration[capacity];
            int n = 0;
            for (int i = 0; i < size; i++) {
                if (!a[i].refersTo(null)) {
                    fresh[n++] = a[i];
                }
            }
            refs = fresh;
            size = n;
            return fresh;
        }
    }

    private static void drain() {
        while (true) {
            try {
                Registration r = (Registration) QUEUE.remove();
                if (!r.unregistered) {
                    r.clean();
                }
            } catch (InterruptedException e) {
                // a daemon: keep serving
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "devicebridge: a cleanup action failed", t);
            }
        }
    }
}
