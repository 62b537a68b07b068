package org.devicebridge.lifetime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.devicebridge.NativeHandle;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.python.PyObjectRef;
import org.devicebridge.python.PythonRuntime;
import org.devicebridge.python.PythonTesting;

/**
 * One kind of handle that hands out segments, made from a producer whose releases are counted exactly:
 * the C producers of {@code hold_segment.c} (which also poison their bytes on release), the same structs
 * handed over through Python capsules, NumPy (counted by a {@code weakref.finalize} on the array), and the
 * CUDA driver's pinned memory (counted by the library's pinned-byte counter).
 */
abstract class Subject {
    /**
     * Bytes of data in every subject: not a multiple of 256, so that every seed gives its own sum, and small
     * enough for malloc's heap (not a private mmap), so that native code reading data a buggy release
     * already freed (NumPy frees, the C producer only poisons) reads stale bytes instead of crashing.
     */
    static final long N = 4099;

    private final String name;
    final int seed;

    Subject(String name, int seed) {
        this.name = name;
        this.seed = seed;
    }

    /** Makes a live handle over fresh data, with its segment already handed out (skips where a prerequisite is missing). */
    final Opened open() {
        return openIn(null);
    }

    /**
     * As {@link #open()}, with the import's release bound to the caller's {@code arena} (the import overloads
     * that take an {@code Arena}); {@code null} for the overloads without one (a handle-owned arena).
     *
     * @throws UnsupportedOperationException if this kind of handle has no import that takes an arena
     */
    abstract Opened openIn(Arena arena);

    /** {@code true} if {@link #openIn} accepts an arena. */
    boolean takesArena() {
        return true;
    }

    @Override
    public String toString() {
        return name;
    }

    /**
     * A live handle, the segment of its data it handed out, and how to count the data's releases.
     *
     * @param handle the handle under test
     * @param data a segment of the handle's data, obtained from the handle's public API
     * @param expectedSum the sum of the bytes of {@code data} while it is live
     * @param releases releases of the data since {@link #open()} (must not refer to the handle)
     * @param rest what else the subject opened (a stream, a Python namespace), closed after the handle
     */
    record Opened(NativeHandle handle, MemorySegment data, long expectedSum, LongSupplier releases, AutoCloseable rest)
            implements AutoCloseable {
        long released() {
            return releases.getAsLong();
        }

        /**
         * The same, without the handle and with the segment in {@code data}, for a test that must leave the
         * handle (and, for a confined scope, the segment too) only weakly reachable.
         */
        Detached detach(AtomicReference<MemorySegment> data) {
            data.set(this.data);
            return new Detached(expectedSum, releases, rest);
        }

        @Override
        public void close() throws Exception {
            try {
                handle.close();
            } finally {
                if (rest != null) {
                    rest.close();
                }
            }
        }
    }

    /** {@link Opened} without its handle and its segment. */
    record Detached(long expectedSum, LongSupplier releases, AutoCloseable rest) {
        long released() {
            return releases.getAsLong();
        }
    }

    // ---------------------------------------------------------------- the subjects

    /** The subjects that run on the CPU (the Python ones skip where CPython or NumPy is missing). */
    static List<Subject> cpu() {
        return List.of(ARROW_ARRAY, ARROW_DEVICE_ARRAY_CPU, ARROW_STREAM_BATCH, DLPACK_VERSIONED, DLPACK_LEGACY,
                CAPSULE_ARROW_ARRAY, CAPSULE_ARROW_DEVICE_ARRAY, CAPSULE_DLPACK_VERSIONED, CAPSULE_DLPACK_LEGACY,
                NUMPY_DLPACK);
    }

    /** A C-produced uint8 array through {@link ArrowC#importArray}; segment: buffer 1 of the root. */
    static final Subject ARROW_ARRAY = new CProduced("ImportedArray (importArray)", 11) {
        @Override
        NativeHandle importData(Arena arena) {
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment array = structs.allocate(ArrowArray.layout());
                HoldSegment.makeArray(array, N, seed);
                return importArray(array, arena);
            }
        }
    };

    /** A C-produced CPU {@code ArrowDeviceArray} through {@link ArrowC#importDeviceArray}. */
    static final Subject ARROW_DEVICE_ARRAY_CPU = new CProduced("ImportedArray (importDeviceArray, CPU)", 23) {
        @Override
        NativeHandle importData(Arena arena) {
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment array = structs.allocate(ArrowDeviceArray.layout());
                HoldSegment.makeCpuDeviceArray(array, N, seed);
                return importDeviceArray(array, arena);
            }
        }
    };

    /**
     * The first batch of a C-produced {@code ArrowArrayStream} ({@link ImportedArrayStream#next}); the stream
     * stays open. {@code next} takes no arena: batches always own theirs.
     */
    static final Subject ARROW_STREAM_BATCH = new Subject("ImportedArray (batch of an ImportedArrayStream)", 37) {
        @Override
        boolean takesArena() {
            return false;
        }

        @Override
        Opened openIn(Arena arena) {
            if (arena != null) {
                throw new UnsupportedOperationException("ImportedArrayStream.next takes no arena");
            }
            HoldSegment.require();
            ImportedArrayStream stream;
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment s = structs.allocate(ArrowArrayStream.layout());
                HoldSegment.makeStream(s, 2, N, seed);
                stream = ArrowC.importStream(s);
            }
            long before = HoldSegment.releasesOf(seed);
            long streams = HoldSegment.streamReleases();
            AutoCloseable closeStream = () -> {
                stream.close();
                if (HoldSegment.streamReleases() != streams + 1) {
                    throw new AssertionError("expected the stream to be released once but found "
                            + (HoldSegment.streamReleases() - streams) + " releases");
                }
            };
            ImportedArray batch = null;
            try {
                batch = stream.next(ValidationLevel.FULL);
                return new Opened(batch, batch.root().buffer(1), HoldSegment.expectedSum(N, seed),
                        () -> HoldSegment.releasesOf(seed) - before, closeStream);
            } catch (RuntimeException | Error e) {
                if (batch != null) {
                    batch.close();
                }
                stream.close();
                throw e;
            }
        }
    };

    /** A C-produced {@code DLManagedTensorVersioned} through {@link DLPack#importVersioned}; segment: {@link ImportedTensor#segment()}. */
    static final Subject DLPACK_VERSIONED = new CProduced("ImportedTensor (importVersioned)", 41) {
        @Override
        NativeHandle importData(Arena arena) {
            return importVersioned(HoldSegment.makeVersioned(N, seed), arena);
        }
    };

    /** A C-produced legacy {@code DLManagedTensor} through {@link DLPack#importLegacy}. */
    static final Subject DLPACK_LEGACY = new CProduced("ImportedTensor (importLegacy)", 53) {
        @Override
        NativeHandle importData(Arena arena) {
            return importLegacy(HoldSegment.makeLegacy(N, seed), arena);
        }
    };

    /** The C array, exported as an {@code arrow_array} capsule, taken with {@code Capsules.take} into {@code importArray}. */
    static final Subject CAPSULE_ARROW_ARRAY = new CProduced("ImportedArray (arrow_array capsule)", 67) {
        @Override
        NativeHandle importData(Arena arena) {
            PythonTesting.runtime();
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment array = structs.allocate(ArrowArray.layout());
                HoldSegment.makeArray(array, N, seed);
                return throughCapsule(array, "ARROW_ARRAY", p -> importArray(p, arena));
            }
        }
    };

    /** The C CPU device array as an {@code arrow_device_array} capsule, taken into {@code importDeviceArray}. */
    static final Subject CAPSULE_ARROW_DEVICE_ARRAY = new CProduced("ImportedArray (arrow_device_array capsule, CPU)", 79) {
        @Override
        NativeHandle importData(Arena arena) {
            PythonTesting.runtime();
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment array = structs.allocate(ArrowDeviceArray.layout());
                HoldSegment.makeCpuDeviceArray(array, N, seed);
                return throughCapsule(array, "ARROW_DEVICE_ARRAY", p -> importDeviceArray(p, arena));
            }
        }
    };

    /** The C versioned tensor as a {@code dltensor_versioned} capsule, taken into {@code importVersioned}. */
    static final Subject CAPSULE_DLPACK_VERSIONED = new CProduced("ImportedTensor (dltensor_versioned capsule)", 83) {
        @Override
        NativeHandle importData(Arena arena) {
            PythonTesting.runtime();
            return throughCapsule(HoldSegment.makeVersioned(N, seed), "DLTENSOR_VERSIONED",
                    p -> importVersioned(p, arena));
        }
    };

    /** The C legacy tensor as a {@code dltensor} capsule, taken into {@code importLegacy}. */
    static final Subject CAPSULE_DLPACK_LEGACY = new CProduced("ImportedTensor (dltensor capsule)", 97) {
        @Override
        NativeHandle importData(Arena arena) {
            PythonTesting.runtime();
            return throughCapsule(HoldSegment.makeLegacy(N, seed), "DLTENSOR", p -> importLegacy(p, arena));
        }
    };

    /**
     * A NumPy uint8 array's {@code __dlpack__} capsule, taken into {@code importVersioned} (or
     * {@code importLegacy} for a NumPy older than 2.1). The only Python reference left to the array is the
     * one its DLPack deleter drops, so a {@code weakref.finalize} on it counts the deleter's calls exactly.
     * NumPy frees rather than poisons: the sums then show nothing, the counts still do.
     */
    static final Subject NUMPY_DLPACK = new Subject("ImportedTensor (NumPy __dlpack__ capsule)", 101) {
        @Override
        Opened openIn(Arena arena) {
            HoldSegment.require();
            PythonRuntime py = PythonTesting.runtimeWith("numpy");
            PyObjectRef ns = py.newNamespace();
            try {
                py.exec("import numpy as np, weakref\n"
                        + "released = []\n"
                        + "a = (np.arange(" + N + ", dtype=np.int64) * 7 + " + seed + ").astype(np.uint8)\n"
                        + "finalizer = weakref.finalize(a, released.append, 1)\n", ns);
                ImportedTensor t;
                try (PyObjectRef a = py.eval("a", ns)) {
                    py.exec("del a", ns);
                    t = PythonTesting.takeDLPack(a, p -> importVersioned(p, arena), p -> importLegacy(p, arena));
                }
                LongSupplier releases = () -> {
                    try (PyObjectRef n = py.eval("len(released)", ns)) {
                        return n.toLong();
                    }
                };
                try {
                    return new Opened(t, t.segment(), HoldSegment.expectedSum(N, seed), releases, ns);
                } catch (RuntimeException | Error e) {
                    t.close();
                    throw e;
                }
            } catch (RuntimeException | Error e) {
                ns.close();
                throw e;
            }
        }
    };

    /**
     * {@link PinnedHostBuffer#allocate} (GPU machines only); releases are {@code cuMemFreeHost} calls, read
     * from the library's count of outstanding pinned bytes.
     */
    static final Subject PINNED_HOST_BUFFER = new Subject("PinnedHostBuffer", 113) {
        @Override
        boolean takesArena() {
            return false;
        }

        @Override
        Opened openIn(Arena arena) {
            if (arena != null) {
                throw new UnsupportedOperationException("PinnedHostBuffer.allocate takes no arena");
            }
            HoldSegment.require();
            PinnedHostBuffer b = PinnedHostBuffer.allocate(N);
            long outstanding = CudaCounters.snapshot().pinnedBytesOutstanding();
            try {
                MemorySegment data = b.segment();
                HoldSegment.fill(data, seed);
                return new Opened(b, data, HoldSegment.expectedSum(N, seed),
                        () -> (outstanding - CudaCounters.snapshot().pinnedBytesOutstanding()) / N, null);
            } catch (RuntimeException | Error e) {
                b.close();
                throw e;
            }
        }
    };

    // ---------------------------------------------------------------- helpers

    /** A subject whose data comes from the counting, poisoning C producer. */
    private abstract static class CProduced extends Subject {
        CProduced(String name, int seed) {
            super(name, seed);
        }

        /** Makes the producer's struct and imports it (into {@code arena} if not null); after a throw nothing is left to release. */
        abstract NativeHandle importData(Arena arena);

        @Override
        final Opened openIn(Arena arena) {
            HoldSegment.require();
            long before = HoldSegment.releasesOf(seed);
            NativeHandle h = importData(arena);
            try {
                MemorySegment data = switch (h) {
                    case ImportedArray a -> a.root().buffer(1);
                    case ImportedTensor t -> t.segment();
                    default -> throw new AssertionError("no segment accessor for " + h);
                };
                return new Opened(h, data, HoldSegment.expectedSum(N, seed), () -> HoldSegment.releasesOf(seed) - before, null);
            } catch (RuntimeException | Error e) {
                h.close();
                throw e;
            }
        }
    }

    /** The schema of every C array: uint8 ("C"), imported from the C producer once per call (plain Java data). */
    static SchemaNode uint8() {
        try (Arena structs = Arena.ofConfined()) {
            MemorySegment schema = structs.allocate(ArrowSchema.layout());
            HoldSegment.makeSchema(schema);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                return s.root();
            }
        }
    }

    // The public import overloads: without an arena where none is given, with the caller's arena otherwise.

    static ImportedArray importArray(MemorySegment array, Arena arena) {
        return arena == null ? ArrowC.importArray(uint8(), array, ValidationLevel.FULL)
                : ArrowC.importArray(uint8(), array, ValidationLevel.FULL, arena);
    }

    static ImportedArray importDeviceArray(MemorySegment array, Arena arena) {
        return arena == null ? ArrowC.importDeviceArray(uint8(), array, ValidationLevel.FULL)
                : ArrowC.importDeviceArray(uint8(), array, ValidationLevel.FULL, arena);
    }

    static ImportedTensor importVersioned(MemorySegment tensor, Arena arena) {
        return arena == null ? DLPack.importVersioned(tensor, ImportOptions.any())
                : DLPack.importVersioned(tensor, ImportOptions.any(), arena);
    }

    static ImportedTensor importLegacy(MemorySegment tensor, Arena arena) {
        return arena == null ? DLPack.importLegacy(tensor, ImportOptions.any())
                : DLPack.importLegacy(tensor, ImportOptions.any(), arena);
    }

    /** Exports {@code struct} as a capsule of {@code kind} and takes it straight back into {@code importer}. */
    static <T> T throughCapsule(MemorySegment struct, String kind, Function<MemorySegment, T> importer) {
        return PythonTesting.throughCapsule(struct, kind, importer);
    }
}
