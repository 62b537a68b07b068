package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.ADDRESS_UNALIGNED;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.Objects;
import java.util.function.Function;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;

/**
 * PyCapsules of the Arrow PyCapsule interface and of DLPack, made from and taken into raw C structs.
 *
 * <p>Every capsule made here has a destructor (one Java upcall per protocol, created once) that frees
 * what no consumer took: for an Arrow capsule it calls {@code release} if it is not NULL and frees the
 * capsule's heap struct; for a DLPack capsule still named {@code dltensor[_versioned]} it calls the
 * tensor's deleter, and for one renamed {@code used_...} it does nothing (the consumer owns the tensor).
 *
 * <p>Stateless and thread-safe: each method takes the GIL itself where it touches Python objects; each
 * says who owns the struct and the capsule after a return and after a throw.
 */
final class Capsules {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");

    private Capsules() {}

    /** The destructor stubs, made once, after libpython is loaded. */
    private static final class Destructors {
        static final MemorySegment DLPACK = Native.upcallStub(MethodHandles.lookup(), Capsules.class,
                "dlpackDestructor", FunctionDescriptor.ofVoid(ADDRESS));
        static final MemorySegment ARROW = Native.upcallStub(MethodHandles.lookup(), Capsules.class,
                "arrowDestructor", FunctionDescriptor.ofVoid(ADDRESS));
    }

    /**
     * Exports a struct as a new capsule of {@code kind}; the capsule (and whoever consumes it) owns the
     * data from then on. The struct may sit at any address (misaligned included).
     *
     * <p>Arrow kinds: {@code struct} is an {@code ArrowSchema}, {@code ArrowArray}, ... whose contents are
     * moved into a heap struct that the capsule owns; the caller's struct is marked released
     * ({@code release = NULL}) and its memory stays the caller's. DLPack kinds: {@code struct} is the
     * {@code DLManagedTensor*} ({@code DLManagedTensorVersioned*} for {@link CapsuleKind#DLTENSOR_VERSIONED})
     * itself, whose deleter the capsule calls unless a consumer took it.
     *
     * <p>After a return the caller owns the returned reference and no longer owns the data (an Arrow
     * {@code struct} reads as released); after a throw the caller still owns {@code struct}, unchanged, and
     * no capsule refers to it.
     *
     * @param struct the struct to wrap: an Arrow C struct or a DLPack tensor, as {@code kind} says
     * @param kind the kind of capsule
     * @return a new reference, owned by the caller (close it)
     * @throws ValidationException {@code NULL_POINTER} if {@code struct} is NULL, {@code RELEASED} if it is an
     *         already released Arrow struct
     * @throws InvalidArgumentException if an Arrow {@code struct} is a read-only segment (it cannot be marked
     *         released)
     * @throws PythonException if Python could not create the capsule
     */
    public static PyObjectRef export(MemorySegment struct, CapsuleKind kind) {
        requireNativeAccess();
        return export(struct, kind, PyObjectRef::own);
    }

    /**
     * {@link #export(MemorySegment, CapsuleKind)}, with the step that wraps the new capsule reference given
     * (tests make it fail). Every step that can fail runs before the capsule owns the data, or is undone:
     * marking an Arrow source released comes first (an unaligned write, so a misaligned struct cannot make
     * it throw), and a capsule whose wrapping fails is disarmed before it is dropped.
     */
    static PyObjectRef export(MemorySegment struct, CapsuleKind kind, Function<MemorySegment, PyObjectRef> wrap) {
        Objects.requireNonNull(struct, "struct");
        Objects.requireNonNull(kind, "kind");
        if (struct.equals(MemorySegment.NULL)) {
            throw new ValidationException(ValidationException.Category.NULL_POINTER, "",
                    "expected a " + kind.structName() + " but found a NULL pointer");
        }
        PythonRuntime.get();
        long size = kind.struct().byteSize();
        MemorySegment source = struct.reinterpret(size);
        if (kind.isDLPack()) {
            return ownedCapsule(source, kind, wrap); // the capsule takes the pointer; the struct is not touched
        }
        if (source.isReadOnly()) {
            throw new InvalidArgumentException("struct", "expected a writable " + kind.structName()
                    + " (export marks it released) but found a read-only segment");
        }
        MemorySegment release = kind.struct().releaseCallback(source);
        if (release.equals(MemorySegment.NULL)) {
            throw new ValidationException(ValidationException.Category.RELEASED, "",
                    "expected a live " + kind.structName() + " but found a released one (release is NULL)");
        }
        long releaseOffset = releaseOffset(kind);
        MemorySegment heap = Native.malloc(size);
        try {
            MemorySegment.copy(source, 0, heap, 0, size);
            source.set(ADDRESS_UNALIGNED, releaseOffset, MemorySegment.NULL); // moved: the copy holds the callbacks
        } catch (RuntimeException | Error e) {
            Native.free(heap); // the source's release was not cleared: nothing moved
            throw e;
        }
        try {
            return ownedCapsule(heap, kind, wrap);
        } catch (RuntimeException | Error e) {
            // no capsule owns the copy: give the callbacks back to the caller's struct, free the copy
            source.set(ADDRESS_UNALIGNED, releaseOffset, release);
            Native.free(heap);
            throw e;
        }
    }

    /**
     * A new capsule of {@code kind} around {@code pointer}, owned by the returned reference. After a throw no
     * capsule refers to {@code pointer}: one made before {@code wrap} failed is disarmed (its destructor
     * removed) and dropped.
     */
    private static PyObjectRef ownedCapsule(MemorySegment pointer, CapsuleKind kind,
                                            Function<MemorySegment, PyObjectRef> wrap) {
        try (Gil ignored = Gil.ensure()) {
            MemorySegment capsule = newCapsule(pointer, kind);
            try {
                return wrap.apply(capsule);
            } catch (RuntimeException | Error e) {
                try {
                    int r = (int) PyC.PyCapsule_SetDestructor.invokeExact(capsule, MemorySegment.NULL);
                    if (r != 0) {
                        throw Py.fetchError("PyCapsule_SetDestructor");
                    }
                    Py.decRef(capsule);
                } catch (Throwable t) {
                    e.addSuppressed(t); // a capsule we cannot disarm is leaked rather than left to release
                }
                throw e;
            }
        }
    }

    /**
     * New reference: a capsule of {@code kind} around {@code pointer} (an Arrow heap struct allocated with
     * malloc, or a DLPack tensor) with the kind's destructor. Requires the GIL. On a throw nothing was
     * taken: the caller still owns {@code pointer}.
     */
    static MemorySegment newCapsule(MemorySegment pointer, CapsuleKind kind) {
        MemorySegment destructor = kind.isDLPack() ? Destructors.DLPACK : Destructors.ARROW;
        try {
            return Py.check((MemorySegment) PyC.PyCapsule_New.invokeExact(pointer, kind.cName(), destructor),
                    "PyCapsule_New(" + kind.capsuleName() + ")");
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_New", t);
        }
    }

    /**
     * Imports the struct in a capsule of {@code kind}, handing it to {@code importer}.
     *
     * <p>DLPack kinds: the capsule is renamed {@code used_dltensor[_versioned]} first, then
     * {@code importer} receives the tensor pointer and owns it: it must call the deleter exactly once,
     * also when it throws (the DLPack import API does). Arrow kinds: the struct is moved out of the capsule
     * into a temporary that {@code importer} receives and must move in turn (set its {@code release} to
     * NULL), as the Arrow import API does; whatever it did not move is released when it returns or throws.
     * Neither holds the GIL while {@code importer} runs.
     *
     * <p>After a return or a throw the caller still owns its reference to the capsule (an emptied one
     * once this method got past validation); the data belongs to {@code importer}, or was released.
     *
     * @param <T> what {@code importer} returns
     * @param capsule the capsule (borrowed)
     * @param kind the kind of capsule
     * @param importer takes the struct (see above) and returns the import
     * @return what {@code importer} returned
     * @throws ValidationException {@code FORMAT} if {@code capsule} is not a capsule named for {@code kind},
     *         {@code RELEASED} if it is a DLPack capsule that was consumed already ({@code used_...}) or an
     *         Arrow capsule whose struct was released; nothing is released then
     */
    public static <T> T take(PyObjectRef capsule, CapsuleKind kind, Function<MemorySegment, T> importer) {
        requireNativeAccess();
        Objects.requireNonNull(capsule, "capsule");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(importer, "importer");
        long size = kind.struct().byteSize();
        MemorySegment data;
        try (Gil ignored = Gil.acquire()) {
            MemorySegment cap = capsule.borrowAddress();
            MemorySegment p = pointer(cap, kind);
            if (kind.isDLPack()) {
                // Renamed before anything that can fail: from here on the capsule's destructor never deletes.
                int r = (int) PyC.PyCapsule_SetName.invokeExact(cap, kind.cUsedName());
                if (r != 0) {
                    throw Py.fetchError("PyCapsule_SetName");
                }
                data = p.reinterpret(size);
            } else {
                MemorySegment inCapsule = p.reinterpret(size);
                if (kind.struct().releaseCallback(inCapsule).equals(MemorySegment.NULL)) {
                    throw new ValidationException(ValidationException.Category.RELEASED, "",
                            "expected a live " + kind.structName() + " in the '" + kind.capsuleName()
                                    + "' capsule but found a released one (release is NULL)");
                }
                data = Native.malloc(size);
                try {
                    MemorySegment.copy(inCapsule, 0, data, 0, size);
                    inCapsule.set(ADDRESS_UNALIGNED, releaseOffset(kind), MemorySegment.NULL);
                } catch (RuntimeException | Error e) {
                    Native.free(data); // the capsule still holds the callbacks
                    throw e;
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_SetName", t);
        }
        if (kind.isDLPack()) {
            return importer.apply(data);
        }
        try {
            return importer.apply(data);
        } finally {
            // Releases what the importer did not move (release still set), then frees the temporary.
            kind.struct().release(data);
        }
    }

    /**
     * Borrows the struct in a capsule without taking it (for a {@code requested_schema} capsule, for
     * instance): the segment is valid only while the capsule lives and nobody consumes it.
     *
     * @param capsule the capsule (borrowed)
     * @param kind the kind of capsule
     * @return the struct, borrowed from the capsule
     * @throws ValidationException {@code FORMAT} if {@code capsule} is not a live capsule of {@code kind}
     */
    public static MemorySegment borrow(PyObjectRef capsule, CapsuleKind kind) {
        requireNativeAccess();
        Objects.requireNonNull(capsule, "capsule");
        Objects.requireNonNull(kind, "kind");
        try (Gil ignored = Gil.acquire()) {
            return pointer(capsule.borrowAddress(), kind).reinterpret(kind.struct().byteSize());
        }
    }

    /**
     * The kind of a capsule by its current name (a consumed DLPack capsule reports its kind too: see
     * {@link #isConsumed}); null when {@code object} is not a capsule or has a name of no known protocol.
     *
     * @param object the Python object (borrowed)
     * @return the capsule's kind, or {@code null}
     */
    public static CapsuleKind kindOf(PyObjectRef object) {
        requireNativeAccess();
        String name = nameOf(object);
        return name == null ? null : CapsuleKind.byName(name);
    }

    /**
     * {@return {@code true} if {@code capsule} is a DLPack capsule renamed {@code used_...} by a consumer}
     *
     * @param capsule the capsule (borrowed)
     */
    public static boolean isConsumed(PyObjectRef capsule) {
        requireNativeAccess();
        String name = nameOf(capsule);
        return name != null && name.startsWith("used_");
    }

    /**
     * {@return the capsule's name; null when {@code object} is not a capsule or has no name}
     *
     * @param object the Python object (borrowed)
     */
    public static String nameOf(PyObjectRef object) {
        requireNativeAccess();
        Objects.requireNonNull(object, "object");
        try (Gil ignored = Gil.acquire()) {
            return nameOf(object.borrowAddress());
        }
    }

    /** Requires the GIL. */
    static String nameOf(MemorySegment cap) {
        try {
            if ((int) PyC.PyCapsule_IsValid.invokeExact(cap, MemorySegment.NULL) == 1) {
                return null; // a capsule without a name
            }
            MemorySegment n = (MemorySegment) PyC.PyCapsule_GetName.invokeExact(cap);
            if (n.equals(MemorySegment.NULL)) {
                Py.clearError(); // not a capsule
                return null;
            }
            return Native.string(n);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_GetName", t);
        }
    }

    /** The capsule's pointer after checking its name against {@code kind}. Requires the GIL. */
    static MemorySegment pointer(MemorySegment cap, CapsuleKind kind) {
        try {
            if ((int) PyC.PyCapsule_IsValid.invokeExact(cap, kind.cName()) != 1) {
                String actual = nameOf(cap);
                if (actual != null && actual.equals(kind.usedName())) {
                    throw new ValidationException(ValidationException.Category.RELEASED, "",
                            "expected an unconsumed '" + kind.capsuleName() + "' capsule but found '" + actual
                                    + "': a consumer took this tensor already");
                }
                throw new ValidationException(ValidationException.Category.FORMAT, "",
                        "expected a PyCapsule named '" + kind.capsuleName() + "' but found "
                                + (actual == null ? "an object that is not a named capsule (" + Py.repr(cap) + ")"
                                : "one named '" + actual + "'"));
            }
            return Py.check((MemorySegment) PyC.PyCapsule_GetPointer.invokeExact(cap, kind.cName()),
                    "PyCapsule_GetPointer");
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_GetPointer", t);
        }
    }

    private static long releaseOffset(CapsuleKind kind) {
        // The release callback's offset, derived the way ForeignImport.Kind reads it (which offers no write).
        return switch (kind) {
            case ARROW_SCHEMA -> org.devicebridge.generated.arrow.ArrowSchema.release$offset();
            case ARROW_ARRAY -> org.devicebridge.generated.arrow.ArrowArray.release$offset();
            case ARROW_DEVICE_ARRAY -> org.devicebridge.generated.arrow.ArrowDeviceArray.array$offset()
                    + org.devicebridge.generated.arrow.ArrowArray.release$offset();
            case ARROW_ARRAY_STREAM -> org.devicebridge.generated.arrow.ArrowArrayStream.release$offset();
            case ARROW_DEVICE_ARRAY_STREAM -> org.devicebridge.generated.arrow.ArrowDeviceArrayStream.release$offset();
            default -> throw new DeviceBridgeException("not an Arrow capsule kind: " + kind);
        };
    }

    // ---- destructors: called by CPython with the GIL held; must never throw ----

    @SuppressWarnings("unused")
    private static void dlpackDestructor(MemorySegment capsule) {
        destroy(capsule, true);
    }

    @SuppressWarnings("unused")
    private static void arrowDestructor(MemorySegment capsule) {
        destroy(capsule, false);
    }

    private static void destroy(MemorySegment capsule, boolean dlpack) {
        try (Arena arena = Arena.ofConfined()) {
            // A destructor may run while an exception is being raised: keep it intact.
            MemorySegment saved = arena.allocate(ADDRESS, 3);
            PyC.PyErr_Fetch.invokeExact(saved, saved.asSlice(ADDRESS.byteSize()), saved.asSlice(2 * ADDRESS.byteSize()));
            try {
                MemorySegment n = (MemorySegment) PyC.PyCapsule_GetName.invokeExact(capsule);
                String name = Native.string(n);
                CapsuleKind kind = name == null ? null : CapsuleKind.byName(name);
                if (kind == null || kind.isDLPack() != dlpack) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: capsule destructor saw an unexpected capsule name {0}", name);
                } else if (!dlpack || name.equals(kind.capsuleName())) {
                    // Arrow: release what no consumer moved, then free the heap struct; DLPack: not consumed.
                    MemorySegment p = (MemorySegment) PyC.PyCapsule_GetPointer.invokeExact(capsule, n);
                    if (!p.equals(MemorySegment.NULL)) {
                        kind.struct().release(p.reinterpret(kind.struct().byteSize()));
                    }
                }
            } finally {
                PyC.PyErr_Restore.invokeExact(saved.get(ADDRESS, 0), saved.get(ADDRESS, ADDRESS.byteSize()),
                        saved.get(ADDRESS, 2 * ADDRESS.byteSize()));
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: a PyCapsule destructor failed", t);
        }
    }
}
