package org.devicebridge.dlpack;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ForeignImport;

/**
 * DLPack export and import (DLPack 1.3, {@code DLManagedTensorVersioned} and the legacy
 * {@code DLManagedTensor}).
 *
 * {@snippet lang=c :
 * typedef struct DLManagedTensorVersioned {
 *   DLPackVersion version;
 *   void* manager_ctx;
 *   void (*deleter)(struct DLManagedTensorVersioned* self);
 *   uint64_t flags;
 *   DLTensor dl_tensor;
 * } DLManagedTensorVersioned;
 * }
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
public final class DLPack {
    // The header's values, written here so that this class loads without native access (the generated
    // header class cannot): HeaderConstantsTest pins each to the generated header.
    /** The DLPack ABI version this library implements ({@code DLPACK_MAJOR_VERSION} of the header). */
    public static final int MAJOR_VERSION = 1;
    /** {@code DLPACK_MINOR_VERSION} of the header. */
    public static final int MINOR_VERSION = 3;

    /** {@code DLPACK_FLAG_BITMASK_READ_ONLY}; see {@link TensorFlag#READ_ONLY}. */
    public static final long FLAG_READ_ONLY = 1L << 0;
    /** {@code DLPACK_FLAG_BITMASK_IS_COPIED}; see {@link TensorFlag#IS_COPIED}. */
    public static final long FLAG_IS_COPIED = 1L << 1;
    /** {@code DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED}. */
    public static final long FLAG_IS_SUBBYTE_TYPE_PADDED = 1L << 2;
    static final long KNOWN_FLAGS = FLAG_READ_ONLY | FLAG_IS_COPIED | FLAG_IS_SUBBYTE_TYPE_PADDED;

    private DLPack() {}

    // ------------------------------------------------------------------------------------------ export

    /**
     * Exports the tensor {@code spec} describes as a {@code DLManagedTensorVersioned} (version 1.3) without
     * copying, after making the data ready on the spec's consumer stream if it has one. The flags are the
     * spec's ({@code IS_COPIED} only if the spec says so), plus {@code IS_SUBBYTE_TYPE_PADDED} for sub-byte
     * types, which are exported padded to a byte per element.
     *
     * @param spec the tensor: its memory (borrowed), dtype, shape, strides and device
     * @return a live handle that owns the struct. After a throw nothing was exported.
     * @throws ValidationException if the tensor reaches outside the spec's data, or the consumer stream belongs
     *         to another device ({@link TensorSpec} checks the rest when it is made)
     * @throws org.devicebridge.DeviceBridgeException from the spec's consumer-stream synchroniser ({@link TensorSpec#withConsumerStream}) (e.g. a CUDA
     *         error); nothing was exported then
     */
    public static ExportedTensor exportVersioned(TensorSpec spec) {
        requireNativeAccess();
        return export(true, spec, null);
    }

    /**
     * Like {@link #exportVersioned(TensorSpec)}, and the export also takes {@code owner}, which keeps the
     * data alive until the consumer is done: the deleter closes it.
     *
     * @param spec the tensor: its memory (borrowed), dtype, shape, strides and device
     * @param owner keeps the data alive; the export takes it and the deleter closes it
     * @return a live handle. After a return the handle owns the struct and {@code owner} (closing the handle,
     *         or the consumer's deleter call after {@link ExportedTensor#transferOwnership()}, closes
     *         {@code owner}). After a throw nothing was exported and the caller still owns {@code owner}.
     */
    public static ExportedTensor exportVersioned(TensorSpec spec, AutoCloseable owner) {
        requireNativeAccess();
        return export(true, spec, Objects.requireNonNull(owner, "owner"));
    }

    /**
     * Exports the tensor {@code spec} describes as a legacy {@code DLManagedTensor} (no version, no flags: a
     * legacy consumer assumes it may write) for consumers that do not speak DLPack 1.x; strides are always
     * written (never NULL). Stream synchronisation and ownership as in {@link #exportVersioned(TensorSpec)}.
     *
     * @param spec the tensor: its memory (borrowed), dtype, shape, strides and device
     * @return the exported tensor, owned by the caller
     * @throws UnsupportedFeatureException if the spec has flags (a read-only segment included) or a sub-byte
     *         dtype, which a legacy consumer cannot be told
     */
    public static ExportedTensor exportLegacy(TensorSpec spec) {
        requireNativeAccess();
        return export(false, spec, null);
    }

    /**
     * Like {@link #exportLegacy(TensorSpec)}, and the export also takes {@code owner} (closed by the deleter).
     * After a return the handle owns the struct and {@code owner}; after a throw nothing was exported and the
     * caller still owns {@code owner}.
     *
     * @param spec the tensor: its memory (borrowed), dtype, shape, strides and device
     * @param owner keeps the data alive; the export takes it and the deleter closes it
     * @return the exported tensor, owned by the caller
     */
    public static ExportedTensor exportLegacy(TensorSpec spec, AutoCloseable owner) {
        requireNativeAccess();
        return export(false, spec, Objects.requireNonNull(owner, "owner"));
    }

    private static ExportedTensor export(boolean versioned, TensorSpec spec, AutoCloseable owner) {
        Objects.requireNonNull(spec, "spec");
        DType dtype = spec.dtype();
        if (!versioned && !spec.flags().isEmpty()) {
            throw new UnsupportedFeatureException("flags", (spec.data().isReadOnly() ? "a read-only segment" : "flags "
                    + spec.flags()) + " cannot be exported as a legacy DLManagedTensor (no flags); use exportVersioned");
        }
        if (!versioned && dtype.isSubByte()) {
            // a legacy consumer cannot be told that sub-byte elements are padded
            throw new UnsupportedFeatureException("dtype", "sub-byte type " + dtype
                    + " cannot be exported as a legacy DLManagedTensor (no padding flag); use exportVersioned");
        }
        Geometry g = spec.checkedGeometry();
        spec.makeReady(); // the last step that can fail for a reason other than memory
        long[] shape = g.shape();
        Device device = spec.device();
        int ndim = shape.length;
        // one block: the struct, then shape, then strides; written in place (no slice per nested struct).
        // Not zeroed (calloc costs more than the writes): every field is written below
        long header = versioned ? TensorStruct.VERSIONED_SIZE : TensorStruct.LEGACY_SIZE;
        long t = versioned ? TensorStruct.V_TENSOR : TensorStruct.L_TENSOR;
        MemorySegment m = StructBlocks.allocate(header + 16L * ndim);
        long[] strides = g.strides();
        for (int i = 0; i < ndim; i++) {
            m.set(ValueLayout.JAVA_LONG, header + 8L * i, shape[i]);
            m.set(ValueLayout.JAVA_LONG, header + 8L * (ndim + i), strides[i]);
        }
        // a 0-d tensor has NULL shape and strides
        TensorStruct.pointer(m, t + TensorStruct.SHAPE, ndim == 0 ? 0 : m.address() + header);
        TensorStruct.pointer(m, t + TensorStruct.STRIDES, ndim == 0 ? 0 : m.address() + header + 8L * ndim);
        TensorStruct.pointer(m, t + TensorStruct.DATA, spec.data().address());
        m.set(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_TYPE, device.kind().code());
        m.set(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_ID, device.ordinal());
        m.set(ValueLayout.JAVA_INT, t + TensorStruct.NDIM, ndim);
        m.set(ValueLayout.JAVA_BYTE, t + TensorStruct.CODE, (byte) dtype.code());
        m.set(ValueLayout.JAVA_BYTE, t + TensorStruct.BITS, (byte) dtype.bits());
        m.set(ValueLayout.JAVA_SHORT, t + TensorStruct.LANES, (short) dtype.lanes());
        m.set(ValueLayout.JAVA_LONG, t + TensorStruct.BYTE_OFFSET, spec.byteOffset());
        // manager_ctx is NULL until a consumer takes the tensor (see Exports)
        if (versioned) {
            m.set(ValueLayout.JAVA_INT, TensorStruct.V_MAJOR, MAJOR_VERSION);
            m.set(ValueLayout.JAVA_INT, TensorStruct.V_MINOR, MINOR_VERSION);
            TensorStruct.pointer(m, TensorStruct.V_MANAGER_CTX, 0);
            m.set(ValueLayout.ADDRESS, TensorStruct.V_DELETER, Exports.Deleters.VERSIONED);
            m.set(ValueLayout.JAVA_LONG, TensorStruct.V_FLAGS, spec.flagBits());
        } else {
            TensorStruct.pointer(m, TensorStruct.L_MANAGER_CTX, 0);
            m.set(ValueLayout.ADDRESS, TensorStruct.L_DELETER, Exports.Deleters.LEGACY);
        }
        String what = versioned ? "DLManagedTensorVersioned" : "DLManagedTensor";
        return new ExportedTensor(new Exports.State(m, owner, what), versioned);
    }

    // ------------------------------------------------------------------------------------------ import

    /**
     * Imports a {@code DLManagedTensorVersioned} produced by native code. The version is checked first: a
     * major version other than 1 is rejected after calling the deleter, without reading any other field.
     * Then flags, device (against {@code options}), dtype, ndim, shape, strides (NULL strides are accepted
     * only for ndim 0, or for producers older than 1.2) and byte offset are validated with exact arithmetic.
     *
     * @param tensor  the struct's address
     * @param options what the caller expects (device)
     * @return a handle that owns the tensor and calls its deleter exactly once when closed (on the thread that
     *         took its segment first, if any: see {@link ImportedTensor}). After a return the handle owns the tensor;
     *         after a throw the deleter has already been called (except for a NULL pointer, which owns nothing).
     * @throws ValidationException for any malformed field (category and field path say which), or
     *         {@code DEVICE} where {@code options} asks for {@link ImportOptions#confirmingPointers()} and the
     *         driver's pointer attributes contradict the device label
     * @throws UnsupportedFeatureException for a valid tensor this library cannot represent (e.g. lanes != 1)
     * @throws org.devicebridge.cuda.CudaUnavailableException where {@code DRIVER} is asked for a CUDA-labelled
     *         tensor and no CUDA driver is loaded (the deleter has run)
     */
    public static ImportedTensor importVersioned(MemorySegment tensor, ImportOptions options) {
        requireNativeAccess();
        return importVersioned(tensor, options, null);
    }

    /**
     * As {@link #importVersioned(MemorySegment, ImportOptions)}, with the deleter bound to {@code arena}: the
     * tensor's segment belongs to it and its {@code close()} calls the deleter (a confined arena per tensor
     * costs no handshake; one arena may hold many tensors). {@code null} means a handle-owned confined arena.
     *
     * <p>Ownership: after a return {@code arena} owns the tensor (the handle's {@code close()} does nothing);
     * after a throw the deleter has already been called (except for a NULL pointer).
     *
     * @param tensor the producer's {@code DLManagedTensorVersioned*} or {@code DLManagedTensor*}; this call takes ownership
     * @param options what to accept and how to check it
     * @param arena the arena whose closing calls the deleter (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported tensor
     */
    public static ImportedTensor importVersioned(MemorySegment tensor, ImportOptions options, Arena arena) {
        requireNativeAccess();
        return importVersioned(tensor, options, arena, null);
    }

    /** {@code local}: null for a foreign tensor (its release is the deleter), else see {@link #importTensor}. */
    private static ImportedTensor importVersioned(MemorySegment tensor, ImportOptions options, Arena arena,
                                                  Exports.LocalRelease local) {
        Objects.requireNonNull(options, "options");
        return ForeignImport.take(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, tensor, owned ->
                TensorReader.wrap(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, owned, options, arena, local));
    }

    /**
     * Imports a legacy {@code DLManagedTensor} produced by native code (no version, no flags: writable, NULL
     * strides mean compact row-major, sub-byte types packed). Validation and ownership as in
     * {@link #importVersioned}: after a return the handle owns the tensor; after a throw its deleter has
     * already been called (except for a NULL pointer).
     *
     * @param tensor the producer's {@code DLManagedTensorVersioned*} or {@code DLManagedTensor*}; this call takes ownership
     * @param options what to accept and how to check it
     * @return the imported tensor
     */
    public static ImportedTensor importLegacy(MemorySegment tensor, ImportOptions options) {
        requireNativeAccess();
        return importLegacy(tensor, options, null);
    }

    /**
     * As {@link #importLegacy(MemorySegment, ImportOptions)}, with the deleter bound to {@code arena} as in
     * {@link #importVersioned(MemorySegment, ImportOptions, Arena)}. After a return {@code arena} owns the
     * tensor; after a throw its deleter has already been called (except for a NULL pointer).
     *
     * @param tensor the producer's {@code DLManagedTensorVersioned*} or {@code DLManagedTensor*}; this call takes ownership
     * @param options what to accept and how to check it
     * @param arena the arena whose closing calls the deleter (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported tensor
     */
    public static ImportedTensor importLegacy(MemorySegment tensor, ImportOptions options, Arena arena) {
        requireNativeAccess();
        return importLegacy(tensor, options, arena, null);
    }

    /** {@code local}: as in {@link #importVersioned(MemorySegment, ImportOptions, Arena, Exports.LocalRelease)}. */
    private static ImportedTensor importLegacy(MemorySegment tensor, ImportOptions options, Arena arena,
                                               Exports.LocalRelease local) {
        Objects.requireNonNull(options, "options");
        return ForeignImport.take(ForeignImport.Kind.DL_MANAGED_TENSOR, tensor, owned ->
                TensorReader.wrap(ForeignImport.Kind.DL_MANAGED_TENSOR, owned, options, arena, local));
    }

    /**
     * Imports a tensor this library exported, as a consumer would: {@code exported} is transferred first
     * (it becomes CONSUMED), then its struct is read and validated as a foreign one would be. The struct
     * never reaches native code, so it is freed as soon as it has been read; what the deleter would still
     * release (the owner given at export, if any) is released when the result is. After a return the result
     * owns the tensor; after a throw its deleter has been called and the owner closed.
     *
     * @param exported a tensor this library exported; this call takes ownership
     * @param options what to accept and how to check it
     * @return the imported tensor
     */
    public static ImportedTensor importTensor(ExportedTensor exported, ImportOptions options) {
        requireNativeAccess();
        return importTensor(exported, options, null);
    }

    /**
     * As {@link #importTensor(ExportedTensor, ImportOptions)}, with the deleter bound to {@code arena} as in
     * {@link #importVersioned(MemorySegment, ImportOptions, Arena)}. After a return {@code arena} owns the
     * tensor; after a throw its deleter has been called and the owner closed.
     *
     * @param exported a tensor this library exported; this call takes ownership
     * @param options what to accept and how to check it
     * @param arena the arena whose closing calls the deleter (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported tensor
     */
    public static ImportedTensor importTensor(ExportedTensor exported, ImportOptions options, Arena arena) {
        requireNativeAccess();
        Objects.requireNonNull(exported, "exported");
        Objects.requireNonNull(options, "options");
        boolean versioned = exported.isVersioned();
        // The struct never reaches native code: it is read and checked as a foreign one would be, then freed
        // at once (nothing reads it again), and the tensor's release closes only the exporter's owner.
        Exports.State st = exported.transferToImport();
        Exports.LocalRelease local = Exports.LocalRelease.of(st);
        ImportedTensor t;
        try {
            t = versioned ? importVersioned(st.block(), options, arena, local)
                    : importLegacy(st.block(), options, arena, local);
        } catch (RuntimeException | Error e) {
            local.run(); // the failed import called the deleter, which freed the block
            throw e;
        }
        StructBlocks.free(st.block());
        return t;
    }

    static String describe(Device d) {
        return d.toString();
    }
}
