package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import org.devicebridge.DeviceKind;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * What the CUDA driver knows about an address ({@code cuPointerGetAttributes}): the kind of memory, the
 * device, and the allocation range it belongs to.
 *
 * <p>{@link #of(long)} answers from a per-allocation cache: memory this library allocates registers
 * itself and leaves when freed; other addresses are queried once and cached by their allocation range.
 * Memory freed by someone else can leave a cached range behind; call {@link #invalidate(long)} when a
 * foreign allocation is freed (an importer does this in its release), or {@link #query(long)} to bypass
 * the cache.
 *
 * <p>Immutable; the static methods and the cache behind them are thread-safe. It owns nothing.
 *
 * @param kind the kind of memory, as {@code CUmemorytype} says: {@link DeviceKind#CPU} for host memory the driver
 *     does not know (neither pinned nor registered), {@link DeviceKind#CUDA_HOST} for pinned or registered host
 *     memory, {@link DeviceKind#CUDA} for device memory (and CUDA arrays), {@link DeviceKind#CUDA_MANAGED} for
 *     unified memory
 * @param deviceOrdinal the device the memory belongs to; -1 for plain (unregistered) host memory
 * @param rangeStart the start of the allocation containing the address (0 when unknown)
 * @param rangeSize the size of that allocation (0 when unknown)
 * @param managed whether the memory is managed (unified) memory
 */
public record PointerAttributes(DeviceKind kind, int deviceOrdinal, long rangeStart, long rangeSize,
                                boolean managed) {

    /** Foreign ranges kept at most; the cache is emptied when it grows past this. */
    static final int MAX_FOREIGN = 4096;

    private static final ConcurrentSkipListMap<Long, PointerAttributes> OWN = new ConcurrentSkipListMap<>();
    private static final ConcurrentSkipListMap<Long, PointerAttributes> FOREIGN = new ConcurrentSkipListMap<>();

    /**
     * {@code true} if {@code address} lies in {@code [rangeStart, rangeStart + rangeSize)}.
     *
     * @param address an address
     * @return whether the range holds it
     */
    public boolean contains(long address) {
        return rangeSize > 0 && address - rangeStart >= 0 && address - rangeStart < rangeSize;
    }

    /**
     * {@return the attributes of {@code address}, from the cache where possible (see the class comment)}
     *
     * @param address a host or device address
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver fails
     */
    public static PointerAttributes of(long address) {
        requireNativeAccess();
        CudaDriver.require();
        PointerAttributes a = lookup(OWN, address);
        if (a != null) {
            return a;
        }
        a = lookup(FOREIGN, address);
        if (a != null) {
            return a;
        }
        a = query(address);
        if (a.rangeSize > 0) {
            if (FOREIGN.size() >= MAX_FOREIGN) {
                FOREIGN.clear();
            }
            FOREIGN.put(a.rangeStart, a);
        }
        return a;
    }

    /**
     * Asks the driver, bypassing and not filling the cache.
     *
     * @param address a host or device address
     * @return its attributes
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver fails
     */
    public static PointerAttributes query(long address) {
        requireNativeAccess();
        CudaDriver.require();
        int[] kinds = {
            cuda_driver_h.CU_POINTER_ATTRIBUTE_MEMORY_TYPE(),
            cuda_driver_h.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL(),
            cuda_driver_h.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR(),
            cuda_driver_h.CU_POINTER_ATTRIBUTE_RANGE_SIZE(),
            cuda_driver_h.CU_POINTER_ATTRIBUTE_IS_MANAGED(),
        };
        long saved = CudaContext.enterAny();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = arena.allocateFrom(JAVA_INT, kinds);
            // One zeroed 8-byte slot per attribute: the widest value (CUdeviceptr, size_t) fits, and the
            // narrower ones (unsigned int, int, bool) are read from the slot's start.
            MemorySegment values = arena.allocate(JAVA_LONG, kinds.length);
            MemorySegment pointers = arena.allocate(ADDRESS, kinds.length);
            for (int i = 0; i < kinds.length; i++) {
                pointers.setAtIndex(ADDRESS, i, values.asSlice(i * 8L, 8));
            }
            CudaDriver.check("cuPointerGetAttributes",
                    cuda_driver_h.cuPointerGetAttributes(kinds.length, attributes, pointers, address));
            int type = values.get(JAVA_INT, 0);
            DeviceKind kind = switch (type) {
                case 0 -> DeviceKind.CPU;
                case 1 -> DeviceKind.CUDA_HOST;
                case 2, 3 -> DeviceKind.CUDA; // device memory, or a CUDA array
                case 4 -> DeviceKind.CUDA_MANAGED;
                default -> throw new CudaException("cuPointerGetAttributes", 0, "CUDA_SUCCESS",
                        String.format(Locale.ROOT, "unknown memory type %d", type));
            };
            int ordinal = kind == DeviceKind.CPU ? -1 : values.get(JAVA_INT, 8);
            return new PointerAttributes(kind, ordinal, values.get(JAVA_LONG, 16), values.get(JAVA_LONG, 24),
                    values.get(JAVA_BYTE, 32) != 0);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * {@code true} if every byte of {@code segment} lies in page-locked host memory the driver knows
     * ({@code cuMemHostAlloc}, {@code cuMemHostRegister}, or a pinned pool built on them), so that the copy
     * engine can read and write it directly; {@code false} for ordinary (pageable) host memory, managed
     * memory, device memory and empty segments. Both ends of the segment are checked: first against the
     * ranges of pinned memory this library allocated ({@link PinnedHostBuffer}, no driver call), otherwise
     * with one {@code cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)} per end (pageable memory
     * answers {@code CUDA_ERROR_INVALID_VALUE} at the first one). Nothing is cached: memory registered or
     * unregistered by someone else is seen as it is now.
     *
     * <p>A wrong "pinned" answer could only cost speed, never correctness: the driver copies from and into
     * pageable memory correctly, synchronously, whatever this method answered.
     *
     * @param segment a native host segment; the caller keeps owning it
     * @return whether the copy engine can reach all of {@code segment} directly
     * @throws org.devicebridge.InvalidArgumentException for a heap segment
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver fails with anything but {@code CUDA_ERROR_INVALID_VALUE}
     */
    public static boolean isPageLocked(MemorySegment segment) {
        CudaCopies.checkHost(segment, "segment");
        long size = segment.byteSize();
        if (size == 0) {
            return false;
        }
        long first = segment.address();
        long last = first + (size - 1);
        PointerAttributes own = lookup(OWN, first);
        if (own != null) {
            return own.kind == DeviceKind.CUDA_HOST && own.contains(last);
        }
        long saved = CudaContext.enterAny();
        try {
            return hostMemoryType(first) && hostMemoryType(last);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /** Whether the driver reports {@code CU_MEMORYTYPE_HOST} for one address (one driver call, no allocation). */
    private static boolean hostMemoryType(long address) {
        MemorySegment out = CudaContext.outSlot();
        out.set(JAVA_INT, 0, 0);
        int r = cuda_driver_h.cuPointerGetAttribute(out, cuda_driver_h.CU_POINTER_ATTRIBUTE_MEMORY_TYPE(), address);
        if (r == cuda_driver_h.CUDA_ERROR_INVALID_VALUE()) {
            return false; // not memory the driver knows: pageable
        }
        CudaDriver.check("cuPointerGetAttribute", r);
        return out.get(JAVA_INT, 0) == cuda_driver_h.CU_MEMORYTYPE_HOST();
    }

    /**
     * Forgets any cached range containing {@code address} (the memory there was freed).
     *
     * @param address an address of the freed memory
     */
    public static void invalidate(long address) {
        requireNativeAccess();
        Map.Entry<Long, PointerAttributes> e = FOREIGN.floorEntry(address);
        if (e != null && e.getValue().contains(address)) {
            FOREIGN.remove(e.getKey(), e.getValue());
        }
    }

    /** Records device memory this library just allocated. */
    static void registerOwn(long address, long bytes, int device) {
        removeForeign(address, bytes);
        OWN.put(address, new PointerAttributes(DeviceKind.CUDA, device, address, bytes, false));
    }

    /** Records pinned host memory this library just allocated, with the driver's own answer. */
    static void registerOwnQueried(long address, long bytes) {
        removeForeign(address, bytes);
        PointerAttributes a = query(address);
        OWN.put(address, new PointerAttributes(a.kind, a.deviceOrdinal, address, bytes, a.managed));
    }

    /** Called before memory this library allocated is freed. */
    static void unregisterOwn(long address) {
        OWN.remove(address);
    }

    /** The cached attributes of memory this library allocated that contains {@code address}, or null. */
    static PointerAttributes cachedOwn(long address) {
        return lookup(OWN, address);
    }

    /** Drops foreign ranges overlapping {@code [start, start + bytes)}: that memory was freed and reused. */
    private static void removeForeign(long start, long bytes) {
        invalidate(start);
        FOREIGN.subMap(start, true, start + bytes, false).clear();
    }

    private static PointerAttributes lookup(ConcurrentSkipListMap<Long, PointerAttributes> map, long address) {
        Map.Entry<Long, PointerAttributes> e = map.floorEntry(address);
        return e != null && e.getValue().contains(address) ? e.getValue() : null;
    }
}
