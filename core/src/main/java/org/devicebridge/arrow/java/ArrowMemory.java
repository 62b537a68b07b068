package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.DefaultAllocationManagerOption;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.ArrowJavaUnavailableException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;

/**
 * Arrow Java memory on the FFM API: an {@code AllocationManager} that needs neither
 * {@code arrow-memory-netty} nor {@code arrow-memory-unsafe}, and the one call that makes it Arrow Java's
 * default.
 *
 * <h2>Why a call is needed</h2>
 * Arrow Java 19 resolves a <em>default</em> allocation manager in {@code BaseAllocator}'s static
 * initialiser, by class name (Netty's or Unsafe's factory, found on the class path by
 * {@code CheckAllocator}); the {@code arrow.allocation.manager.type} property accepts only {@code Netty}
 * and {@code Unsafe}. With neither jar present that initialisation fails, once and for the JVM's life, even
 * for a {@code RootAllocator} given another factory in its configuration. So:
 * <ul>
 *   <li>{@link #installAsDefault()} makes the FFM manager that default. Call it once at start-up, before
 *       anything creates a {@code RootAllocator} (or otherwise initialises {@code BaseAllocator}); after
 *       it, {@code new RootAllocator()} anywhere in the process uses FFM memory.</li>
 *   <li>{@link #newRootAllocator()} needs no earlier call: it installs the FFM default itself when Arrow
 *       Java has not chosen one yet, and otherwise passes {@link #factory()} through the allocator's
 *       configuration (so it also works beside Netty).</li>
 *   <li>{@link #factory()} can be passed through {@code BaseAllocator.configBuilder()
 *       .allocationManagerFactory(...)} by code that builds its own allocators, once {@code BaseAllocator}
 *       can initialise (another manager on the class path, or one of the two calls above).</li>
 * </ul>
 * On the module path the default is set by reflection into {@code org.apache.arrow.memory}, which Arrow
 * does not open: add {@code --add-opens=org.apache.arrow.memory.core/org.apache.arrow.memory=org.devicebridge.core}
 * (on the class path nothing is needed). {@link ArrowJavaUnavailableException} names the flag when it is missing.
 *
 * <h2>The memory</h2>
 * Each Arrow allocation is one {@code aligned_alloc} downcall (alignment 64 bytes, Arrow's
 * recommendation; the size padded to a multiple of 64) and one {@code free} when Arrow releases its last
 * reference: no arena per buffer, no handshake. The allocator's accounting is exact: an allocation's
 * {@code getSize()} is the size Arrow asked for (after Arrow's rounding policy, which rounds requests below
 * 16 MiB up to a power of two). Access to a buffer after its release fails in Arrow's own reference-count
 * check ({@code IllegalStateException}), which is on unless {@code arrow.enable_unsafe_memory_access=true}.
 *
 * <h2>Pooled memory</h2>
 * The static methods are the plain FFM memory, one for the process. {@link #pooled(long)} makes an instance:
 * FFM memory that keeps freed large blocks for reuse (for batches moved to and from a GPU again and again), a
 * handle the caller closes; its allocators come from {@link #newPooledRootAllocator()}.
 *
 * <p>Thread-safe: every method may be called from any thread; {@link #installAsDefault()} should still run
 * before other threads start using Arrow Java (Arrow reads its default without synchronisation). The
 * factory and its buffers are as thread-safe as Arrow's own.
 */
public final class ArrowMemory extends NativeHandle {
    private static final String DEFAULT_FIELD = "DEFAULT_ALLOCATION_MANAGER_FACTORY";

    /** Set once Arrow Java is known to initialise (its default is resolved and BaseAllocator initialised). */
    private static volatile boolean ready;

    // the state of a pooled instance (pooled(capacity)); the static methods are the plain FFM memory's
    private final HostBlockCache cache;
    private final AllocationManager.Factory pooledFactory;
    private final long capacity;

    private ArrowMemory(HostBlockCache cache, long capacity) {
        super("pooled Arrow memory (" + capacity + " bytes kept at most)", cache::close);
        this.cache = cache;
        this.capacity = capacity;
        this.pooledFactory = FfmAllocationManager.factory(cache);
    }

    /**
     * Arrow Java memory on FFM, as the plain one, that keeps freed large blocks (2 MiB and more) for the next
     * buffers of the same size, up to {@code capacity} bytes, instead of giving them back to the OS at once. A
     * buffer made from a kept block was touched before, so filling it costs no page faults: downloading a large
     * batch from the GPU into a fresh root of such an allocator runs at the speed of the copy, not of the
     * kernel's page-fault path (see bench/RESULTS.md). It is what Netty's pooled allocator does for small
     * buffers, for the large ones that batches moved to and from a GPU are made of. Small blocks behave exactly
     * as with the plain memory (libc's heap reuses them).
     *
     * <p>The memory a batch used stays with the returned object (at most {@link #capacity()} bytes, oldest given
     * back first) until {@link #trim()} or {@link #close()}; the allocators' accounting counts only buffers in
     * use, exactly as with the plain memory.
     *
     * <p>Ownership: the caller owns the returned object and closes it, typically after the allocators made from
     * it; closing gives the kept blocks back to the OS, and from then on its allocators still work but keep
     * nothing (each buffer's memory goes back when Arrow releases it). A forgotten object is reported as a leak
     * and its blocks are given back by the library's Cleaner. Thread-safe.
     *
     * @param capacity the most bytes kept for reuse, {@code >= 0} (0 keeps nothing)
     * @return pooled memory the caller owns and closes
     * @throws InvalidArgumentException if {@code capacity} is negative
     */
    public static ArrowMemory pooled(long capacity) {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.pooled");
        if (capacity < 0) {
            throw new InvalidArgumentException("capacity", "expected a byte capacity >= 0 but found " + capacity);
        }
        return new ArrowMemory(new HostBlockCache(capacity), capacity);
    }

    /**
     * The allocation manager factory of this pooled memory, for
     * {@code RootAllocator.configBuilder().allocationManagerFactory(...)}.
     *
     * @return this memory's factory
     */
    public AllocationManager.Factory pooledFactory() {
        return pooledFactory;
    }

    /**
     * A root allocator over this pooled memory with no limit (Arrow Java is made ready first, as by
     * {@link #newRootAllocator()}).
     *
     * @return a new allocator the caller owns and closes
     * @throws ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newPooledRootAllocator() {
        return newRootAllocator(pooledFactory, Long.MAX_VALUE);
    }

    /**
     * A root allocator over this pooled memory, limited to {@code limit} bytes.
     *
     * @param limit the most bytes the allocator may hold at once, {@code > 0}
     * @return a new allocator the caller owns and closes
     * @throws InvalidArgumentException if {@code limit <= 0}
     * @throws ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newPooledRootAllocator(long limit) {
        return newRootAllocator(pooledFactory, limit);
    }

    /** {@return the most bytes of freed blocks this pooled memory keeps} */
    public long capacity() {
        return capacity;
    }

    /** {@return the bytes of freed blocks this pooled memory keeps now, ready for reuse} */
    public long keptBytes() {
        return cache.cachedBytes();
    }

    /** Gives every block this pooled memory keeps back to the OS now; later frees are kept again. */
    public void trim() {
        cache.trim();
    }

    /**
     * The FFM allocation manager factory, for {@code BaseAllocator.configBuilder().allocationManagerFactory(...)}.
     *
     * @return the process-wide factory (stateless apart from its counters)
     */
    public static AllocationManager.Factory factory() {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.factory");
        return FfmAllocationManager.FACTORY;
    }

    /**
     * Makes the FFM manager Arrow Java's default allocation manager, so that {@code new RootAllocator()}
     * (and every allocator made without a factory of its own) allocates FFM memory, with no other
     * allocation manager on the class path. Must run before {@code BaseAllocator} initialises, that is
     * before the first {@code RootAllocator}; a second call does nothing.
     *
     * @throws ArrowJavaUnavailableException if Arrow Java already chose another default (it is kept: pass
     *         {@link #factory()} through the allocator's configuration or use {@link #newRootAllocator()}
     *         instead), if {@code BaseAllocator} failed to initialise earlier (nothing can repair that in this
     *         JVM), or, on the module path, if {@code org.apache.arrow.memory} is not open to this library
     *         (the message names the flag)
     */
    public static synchronized void installAsDefault() {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.installAsDefault");
        VarHandle slot = defaultSlot();
        Object current = slot.getVolatile();
        if (current != null && current != FfmAllocationManager.FACTORY) {
            throw new ArrowJavaUnavailableException("Arrow Java chose its default allocation manager already (" + current
                    + "): ArrowMemory.installAsDefault() must run before the first RootAllocator (or anything else "
                    + "that initialises BaseAllocator). Kept the current default; pass ArrowMemory.factory() "
                    + "through BaseAllocator.configBuilder().allocationManagerFactory(...) or use "
                    + "ArrowMemory.newRootAllocator() instead", null);
        }
        if (current == null) {
            slot.setVolatile(FfmAllocationManager.FACTORY);
        }
        initialiseBaseAllocator();
        ready = true;
    }

    /**
     * A root allocator over FFM memory with no limit. Installs the FFM manager as Arrow Java's default first
     * if Arrow Java has not chosen one yet (see the class comment); otherwise leaves the default as it is.
     *
     * @return a new allocator the caller owns and closes (closing it reports leaked buffers, as Arrow does)
     * @throws ArrowJavaUnavailableException if Arrow Java cannot initialise (see {@link #installAsDefault()})
     */
    public static RootAllocator newRootAllocator() {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.newRootAllocator");
        return newRootAllocator(FfmAllocationManager.FACTORY, Long.MAX_VALUE);
    }

    /**
     * A root allocator over FFM memory, as {@link #newRootAllocator()}, limited to {@code limit} bytes.
     *
     * @param limit the most bytes the allocator may hold at once, {@code > 0}
     * @return a new allocator the caller owns and closes
     * @throws InvalidArgumentException if {@code limit <= 0}
     * @throws ArrowJavaUnavailableException if Arrow Java cannot initialise (see {@link #installAsDefault()})
     */
    public static RootAllocator newRootAllocator(long limit) {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.newRootAllocator");
        return newRootAllocator(FfmAllocationManager.FACTORY, limit);
    }

    /**
     * A root allocator over {@code factory} (this class's or another, such as the pinned one of
     * {@code org.devicebridge.arrow.cuda.PinnedArrowMemory}), making sure first that Arrow Java can
     * initialise: the FFM manager becomes Arrow Java's default if it has not chosen one yet.
     *
     * @param factory the allocation manager factory of the new allocator
     * @param limit the most bytes the allocator may hold at once, {@code > 0}
     * @return a new allocator the caller owns and closes
     * @throws InvalidArgumentException if {@code limit <= 0}
     * @throws ArrowJavaUnavailableException if Arrow Java cannot initialise (see {@link #installAsDefault()})
     */
    public static RootAllocator newRootAllocator(AllocationManager.Factory factory, long limit) {
        requireNativeAccess();
        requireArrowJava("ArrowMemory.newRootAllocator");
        Objects.requireNonNull(factory, "factory");
        if (limit <= 0) {
            throw new InvalidArgumentException("limit", "expected a byte limit > 0 but found " + limit);
        }
        ensureArrowInitialises();
        return FfmAllocationManager.newRootAllocator(factory, limit);
    }

    /**
     * Bytes held by live FFM allocations in this process (the sum of their {@code getSize()}s, the same
     * numbers Arrow's allocators account): zero once every buffer was released. Exact when no other thread
     * allocates or frees meanwhile.
     *
     * @return the live bytes
     */
    public static long liveBytes() {
        requireArrowJava("ArrowMemory.liveBytes");
        return FfmAllocationManager.liveBytes();
    }

    /**
     * Live FFM allocations in this process (each one {@code aligned_alloc} not yet freed).
     *
     * @return the live allocations
     */
    public static long liveAllocations() {
        requireArrowJava("ArrowMemory.liveAllocations");
        return FfmAllocationManager.liveAllocations();
    }

    /**
     * The state {@link #newRootAllocator} needs: BaseAllocator initialises. Installs the FFM default where
     * none was chosen; where the default cannot be read (the module path without the flag) tries anyway,
     * since another manager may be present.
     */
    private static void ensureArrowInitialises() {
        if (ready) {
            return;
        }
        synchronized (ArrowMemory.class) {
            ArrowJavaUnavailableException inaccessible = null;
            try {
                VarHandle slot = defaultSlot();
                if (slot.getVolatile() == null) {
                    slot.setVolatile(FfmAllocationManager.FACTORY);
                }
            } catch (ArrowJavaUnavailableException e) {
                inaccessible = e;
            }
            try {
                initialiseBaseAllocator();
            } catch (ArrowJavaUnavailableException e) {
                if (inaccessible != null) {
                    inaccessible.addSuppressed(e);
                    throw inaccessible;
                }
                throw e;
            }
            ready = true;
        }
    }

    /** Initialises BaseAllocator (a no-op once done), reporting an earlier failed initialisation typed. */
    private static void initialiseBaseAllocator() {
        try {
            // RootAllocator's initialisation is BaseAllocator's (its superclass, not public)
            Class.forName(RootAllocator.class.getName(), true, RootAllocator.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new ArrowJavaUnavailableException("Arrow Java's BaseAllocator is missing: " + e, e);
        } catch (LinkageError e) {
            throw new ArrowJavaUnavailableException("Arrow Java's BaseAllocator failed to initialise (" + e
                    + "); a class initialisation fails once and for the JVM's life, so call "
                    + "ArrowMemory.installAsDefault() (or ArrowMemory.newRootAllocator()) before anything else "
                    + "creates a RootAllocator", e);
        }
    }

    /** Arrow Java's private default-factory field, or the flag that opens it. */
    private static VarHandle defaultSlot() {
        try {
            return MethodHandles.privateLookupIn(DefaultAllocationManagerOption.class, MethodHandles.lookup())
                    .findStaticVarHandle(DefaultAllocationManagerOption.class, DEFAULT_FIELD,
                            AllocationManager.Factory.class);
        } catch (IllegalAccessException | RuntimeException e) { // RuntimeException: InaccessibleObjectException
            throw new ArrowJavaUnavailableException("cannot set Arrow Java's default allocation manager: "
                    + "org.apache.arrow.memory is not open to devicebridge; start the JVM with " + opensFlag()
                    + " (or pass ArrowMemory.factory() to an allocator's configuration, which still needs "
                    + "another allocation manager on the module path for BaseAllocator to initialise)", e);
        } catch (NoSuchFieldException e) {
            throw new ArrowJavaUnavailableException("this Arrow Java has no DefaultAllocationManagerOption."
                    + DEFAULT_FIELD + " (written for Arrow Java 19): " + e, e);
        }
    }

    /** The exact {@code --add-opens} flag this library needs on the module path. */
    static String opensFlag() {
        Module arrow = DefaultAllocationManagerOption.class.getModule();
        Module self = ArrowMemory.class.getModule();
        return "--add-opens=" + (arrow.isNamed() ? arrow.getName() : "org.apache.arrow.memory.core")
                + "/org.apache.arrow.memory=" + (self.isNamed() ? self.getName() : "ALL-UNNAMED");
    }
}
