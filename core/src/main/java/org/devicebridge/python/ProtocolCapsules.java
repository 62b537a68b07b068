package org.devicebridge.python;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.devicebridge.Device;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.internal.Native;
import org.devicebridge.python.PythonExport.ArrowArrayExporter;

/**
 * What each protocol method of an exporter object ({@link PythonExport}) returns: calls the Java exporter
 * into structs allocated here and wraps them in capsules. Ownership: a struct goes to its capsule once the
 * capsule exists; on every failure before that it is released here (unless the exporter left it with
 * {@code release == NULL}), so Python never holds a half-made export. Stateless; every method needs the GIL
 * and returns a new reference.
 */
final class ProtocolCapsules {
    private ProtocolCapsules() {}

    /** Raises {@code type(message)} in Python and returns the NULL a failing protocol method returns; never throws. */
    static MemorySegment fail(MemorySegment type, String message) {
        Py.setErrorQuietly(type, message);
        return MemorySegment.NULL;
    }

    /** {@code __dlpack__(stream, max_version, dl_device, copy)}: a new capsule, or NULL with a BufferError set. */
    static MemorySegment dlpack(Function<ConsumerStream, MemorySegment> exporter, Device device, MemorySegment params) {
        MemorySegment stream = Py.tupleItem(params, 0);
        MemorySegment maxVersion = Py.tupleItem(params, 1);
        MemorySegment dlDevice = Py.tupleItem(params, 2);
        MemorySegment copy = Py.tupleItem(params, 3);
        if (!Py.isNone(copy) && "True".equals(Py.str(copy))) {
            return fail(PyC.EXC_BUFFER_ERROR, "devicebridge: copy=True is not supported (the export is zero-copy)");
        }
        if (!Py.isNone(dlDevice)) {
            long type = Py.asLong(Py.tupleItem(dlDevice, 0), "dl_device[0]");
            long id = Py.asLong(Py.tupleItem(dlDevice, 1), "dl_device[1]");
            if (type != device.kind().code() || id != device.ordinal()) {
                return fail(PyC.EXC_BUFFER_ERROR, String.format(Locale.ROOT,
                        "devicebridge: dl_device=(%d, %d) asked but the tensor is on (%d, %d); no cross-device copy",
                        type, id, device.kind().code(), device.ordinal()));
            }
        }
        ConsumerStream consumer = ConsumerStream.of(device, Py.isNone(stream) ? null : Py.asLong(stream, "stream"));
        // A consumer that passes no max_version (or a major below 1) predates DLPack 1.0: it takes the legacy struct
        boolean versioned = !Py.isNone(maxVersion) && Py.asLong(Py.tupleItem(maxVersion, 0), "max_version[0]") >= 1;
        MemorySegment tensor = exporter.apply(consumer);
        if (tensor == null || tensor.equals(MemorySegment.NULL)) {
            return fail(PyC.EXC_BUFFER_ERROR, "devicebridge: the DLPack exporter returned NULL");
        }
        CapsuleKind kind = versioned ? CapsuleKind.DLTENSOR_VERSIONED : CapsuleKind.DLTENSOR;
        if (!versioned) {
            tensor = legacy(tensor);
        }
        try {
            return Capsules.newCapsule(tensor, kind);
        } catch (RuntimeException | Error ex) {
            kind.struct().release(tensor.reinterpret(kind.struct().byteSize())); // the capsule never owned it
            throw ex;
        }
    }

    /**
     * Re-exports the exporter's {@code DLManagedTensorVersioned*} as a legacy {@code DLManagedTensor*} whose deleter
     * deletes it: imported into a shared arena (the legacy deleter may run on any thread) that the legacy export
     * owns. After a return the legacy struct owns the versioned one; after a throw the versioned one was deleted.
     * A tensor whose flags a legacy struct cannot carry (read-only, sub-byte padded) is refused.
     */
    private static MemorySegment legacy(MemorySegment versioned) {
        Arena arena = Arena.ofShared();
        try {
            ImportedTensor t = DLPack.importVersioned(versioned, ImportOptions.any(), arena);
            long lowest = t.devicePointer().address() - t.originOffset();
            TensorSpec spec = TensorSpec.of(MemorySegment.ofAddress(lowest).reinterpret(t.byteExtent()), t.dtype(),
                    t.shape()).withStrides(t.strides()).withByteOffset(t.originOffset()).withDevice(t.device());
            if (t.isReadOnly()) {
                spec = spec.withFlags(TensorFlag.READ_ONLY); // exportLegacy refuses it, naming the flag
            }
            ExportedTensor legacy = DLPack.exportLegacy(spec, arena);
            return legacy.transferOwnership();
        } catch (RuntimeException | Error e) {
            arena.close(); // releases the import, deleting the versioned tensor (a failed import released it itself)
            throw e;
        }
    }

    /** {@code __arrow_c_schema__()}: a new capsule. */
    static MemorySegment schema(Consumer<MemorySegment> exporter) {
        return filledCapsule(CapsuleKind.ARROW_SCHEMA, exporter);
    }

    /** {@code __arrow_c_array__} or {@code __arrow_c_device_array__}: a new tuple of two capsules. */
    static MemorySegment array(ArrowArrayExporter exporter, CapsuleKind kind, MemorySegment params) {
        MemorySegment requested = requestedSchema(Py.tupleItem(params, 0));
        MemorySegment schema = Native.calloc(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
        MemorySegment array = Native.calloc(kind.struct().byteSize());
        MemorySegment schemaCapsule;
        try {
            exporter.export(requested, schema, array);
            schemaCapsule = Capsules.newCapsule(schema, CapsuleKind.ARROW_SCHEMA);
        } catch (RuntimeException | Error ex) {
            CapsuleKind.ARROW_SCHEMA.struct().release(schema);
            kind.struct().release(array);
            throw ex;
        }
        MemorySegment arrayCapsule;
        try {
            arrayCapsule = Capsules.newCapsule(array, kind);
        } catch (RuntimeException | Error ex) {
            Py.decRef(schemaCapsule);
            kind.struct().release(array);
            throw ex;
        }
        return Py.tupleStealing(schemaCapsule, arrayCapsule);
    }

    /** {@code __arrow_c_stream__} or {@code __arrow_c_device_stream__}: a new capsule. */
    static MemorySegment stream(BiConsumer<MemorySegment, MemorySegment> exporter, CapsuleKind kind, MemorySegment params) {
        MemorySegment requested = requestedSchema(Py.tupleItem(params, 0));
        return filledCapsule(kind, heap -> exporter.accept(requested, heap));
    }

    /**
     * A capsule of a zeroed struct of {@code kind} that {@code fill} filled; the struct is released (where
     * {@code fill} set its {@code release}) if filling or making the capsule fails.
     */
    private static MemorySegment filledCapsule(CapsuleKind kind, Consumer<MemorySegment> fill) {
        MemorySegment heap = Native.calloc(kind.struct().byteSize());
        try {
            fill.accept(heap);
            return Capsules.newCapsule(heap, kind);
        } catch (RuntimeException | Error ex) {
            kind.struct().release(heap);
            throw ex;
        }
    }

    /** The borrowed {@code ArrowSchema*} of a {@code requested_schema} capsule, or NULL for None. */
    private static MemorySegment requestedSchema(MemorySegment capsule) {
        if (Py.isNone(capsule)) {
            return MemorySegment.NULL;
        }
        return Capsules.pointer(capsule, CapsuleKind.ARROW_SCHEMA).reinterpret(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
    }
}
