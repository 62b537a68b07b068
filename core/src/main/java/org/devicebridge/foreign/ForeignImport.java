package org.devicebridge.foreign;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.function.Function;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.Native;

/**
 * The one place that takes ownership of a foreign struct: <em>move, then validate, release on
 * failure</em>, for every struct kind.
 *
 * <p>Arrow structs are moved as the specification allows: the bytes are copied into memory this library
 * owns and the source's {@code release} is set to NULL, so the producer's struct is marked released and
 * the consumer owns the copy. DLPack tensors cannot be moved (their deleter receives the original
 * pointer), so taking one means keeping its pointer. After {@link #take} returns or throws, the input is
 * either owned by the returned object or already released; never both, never neither.
 */
public final class ForeignImport {

    /** One kind of foreign struct with its own release callback. */
    public enum Kind {
        ARROW_SCHEMA("ArrowSchema", "arrowSchemaPtr", ArrowSchema.sizeof(), ArrowSchema.release$offset(), true),
        ARROW_ARRAY("ArrowArray", "arrowArrayPtr", ArrowArray.sizeof(), ArrowArray.release$offset(), true),
        ARROW_DEVICE_ARRAY("ArrowDeviceArray", "arrowDeviceArrayPtr", ArrowDeviceArray.sizeof(),
                ArrowDeviceArray.array$offset() + ArrowArray.release$offset(), true),
        ARROW_ARRAY_STREAM("ArrowArrayStream", "arrowArrayStreamPtr", ArrowArrayStream.sizeof(),
                ArrowArrayStream.release$offset(), true),
        ARROW_DEVICE_ARRAY_STREAM("ArrowDeviceArrayStream", "arrowDeviceArrayStreamPtr", ArrowDeviceArrayStream.sizeof(),
                ArrowDeviceArrayStream.release$offset(), true),
        DL_MANAGED_TENSOR("DLManagedTensor", "tensor", DLManagedTensor.sizeof(), DLManagedTensor.deleter$offset(), false),
        DL_MANAGED_TENSOR_VERSIONED("DLManagedTensorVersioned", "tensor", DLManagedTensorVersioned.sizeof(),
                DLManagedTensorVersioned.deleter$offset(), false);

        private final String cName;
        private final String parameter; // the name the public import methods give the struct's segment
        private final long size;
        private final long releaseOffset;
        private final boolean movable;

        Kind(String cName, String parameter, long size, long releaseOffset, boolean movable) {
            this.cName = cName;
            this.parameter = parameter;
            this.size = size;
            this.releaseOffset = releaseOffset;
            this.movable = movable;
        }

        /** The C struct name. */
        public String cName() {
            return cName;
        }

        /** Bytes of the struct. */
        public long byteSize() {
            return size;
        }

        /**
         * The release (or deleter) callback stored in {@code s}, possibly NULL. Read unaligned: the
         * producer's struct may sit at any address, and a misaligned one must not throw here.
         */
        public MemorySegment releaseCallback(MemorySegment s) {
            return s.get(ValueLayout.ADDRESS_UNALIGNED, releaseOffset);
        }

        /**
         * Calls the struct's release callback, if it has one, then frees the moved copy. For Arrow kinds a
         * conforming callback sets {@code release} to NULL itself; it is cleared here too so that a buggy
         * producer's struct cannot be released twice through this copy.
         */
        public void release(MemorySegment owned) {
            MemorySegment fn = releaseCallback(owned);
            try {
                if (!fn.equals(MemorySegment.NULL)) {
                    java.util.function.Consumer<MemorySegment> local = LocalCallbacks.find(fn.address());
                    if (local != null) {
                        local.accept(owned); // exported by this library: its release, without the native round trip
                    } else {
                        Callbacks.invokeVoidPointer(fn, owned);
                    }
                }
            } finally {
                if (movable) {
                    owned.set(ValueLayout.ADDRESS_UNALIGNED, releaseOffset, MemorySegment.NULL);
                    Native.free(owned);
                }
            }
        }
    }

    private ForeignImport() {}

    /**
     * Takes ownership of the struct at {@code source}, then hands the owned struct to
     * {@code validateAndWrap}, whose result owns it from then on (typically a handle whose release action
     * calls {@link Kind#release}). If {@code validateAndWrap} throws, the struct is released before the
     * exception propagates; an unexpected exception is reported as a {@link DeviceBridgeException}.
     *
     * @throws InvalidArgumentException (naming the import's struct parameter) if {@code source} is a heap
     *         segment or read-only: the struct must be native memory the import may mark released (or hand to
     *         its deleter); nothing was allocated, read or released then
     * @throws ValidationException {@code RELEASED} if {@code source} is NULL or (Arrow) already released;
     *         nothing is released then, since nothing was owned
     */
    public static <T> T take(Kind kind, MemorySegment source, Function<MemorySegment, T> validateAndWrap) {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(validateAndWrap, "validateAndWrap");
        // before anything is allocated: a read-only struct cannot be marked released (its moved copy would
        // leak), and a heap segment is no C struct at all
        if (!source.isNative()) {
            throw new InvalidArgumentException(kind.parameter, "expected native memory holding a " + kind.cName
                    + " but found a heap segment");
        }
        if (source.isReadOnly()) {
            throw new InvalidArgumentException(kind.parameter, "expected a writable " + kind.cName
                    + " (importing it marks it released) but found a read-only segment");
        }
        if (source.equals(MemorySegment.NULL)) {
            throw new ValidationException(ValidationException.Category.RELEASED, "",
                    "expected a " + kind.cName + " but found a NULL pointer");
        }
        MemorySegment s = source.reinterpret(kind.size);
        MemorySegment owned;
        if (kind.movable) {
            if (kind.releaseCallback(s).equals(MemorySegment.NULL)) {
                throw new ValidationException(ValidationException.Category.RELEASED, "",
                        "expected a live " + kind.cName + " but found a released one (release is NULL)");
            }
            owned = Native.malloc(kind.size);
            MemorySegment.copy(s, 0, owned, 0, kind.size);
            if (!clearRelease(s, kind.releaseOffset, owned.get(ValueLayout.ADDRESS_UNALIGNED, kind.releaseOffset))) {
                Native.free(owned);
                throw new ValidationException(ValidationException.Category.RELEASED, "", "expected a live "
                        + kind.cName + " but found one that another import took at the same time");
            }
        } else {
            owned = s;
        }
        try {
            return validateAndWrap.apply(owned);
        } catch (Throwable t) {
            try {
                kind.release(owned);
            } catch (Throwable r) {
                t.addSuppressed(r);
            }
            if (t instanceof DeviceBridgeException | t instanceof Error) {
                throw sneaky(t);
            }
            throw new DeviceBridgeException("internal error while importing a " + kind.cName
                    + " (it was released): " + t, t);
        }
    }

    private static final VarHandle ADDRESS_FIELD = ValueLayout.ADDRESS.varHandle();

    /**
     * Marks the producer's struct released, atomically where the field is aligned, so that two imports of
     * one struct racing on two threads cannot both take it: only the one that saw {@code release} equal to
     * the callback it copied wins. A misaligned field cannot be updated atomically; it is cleared plainly.
     */
    private static boolean clearRelease(MemorySegment s, long offset, MemorySegment copied) {
        if (((s.address() + offset) & (ValueLayout.ADDRESS.byteAlignment() - 1)) != 0) {
            s.set(ValueLayout.ADDRESS_UNALIGNED, offset, MemorySegment.NULL);
            return !copied.equals(MemorySegment.NULL);
        }
        return ADDRESS_FIELD.compareAndSet(s, offset, copied, MemorySegment.NULL) && !copied.equals(MemorySegment.NULL);
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
        throw (E) t;
    }
}
