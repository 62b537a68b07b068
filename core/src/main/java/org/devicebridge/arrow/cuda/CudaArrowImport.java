package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.foreign.ForeignImport;

/**
 * Zero-copy import of CUDA {@code ArrowDeviceArray}s (and the batches of a CUDA
 * {@code ArrowDeviceArrayStream}) as {@link CudaArrowBatch}es. The consumer's stream is made to wait on the
 * producer's {@code sync_event} ({@code cuStreamWaitEvent}); the host blocks only for validation at
 * {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL}, which reads the array's own struct with
 * host copies of just the buffers the level reads.
 *
 * <p>Ownership, the same for every import: after a return the caller owns the returned batch; after a
 * throw the input struct has already been released (also when the CUDA driver is missing).
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
final class CudaArrowImport {
    private CudaArrowImport() {}

    /**
     * Imports the CUDA {@code ArrowDeviceArray} at {@code arrowDeviceArrayPtr} (device type
     * {@link DeviceKind#CUDA}, {@link DeviceKind#CUDA_HOST} or {@link DeviceKind#CUDA_MANAGED})
     * of type {@code schema} (borrowed), without copying its buffers. The struct is moved and its structure
     * checked (at MINIMAL; not at NONE; no device memory is read); {@code stream} is made to wait on the
     * producer's {@code sync_event} ({@code cuStreamWaitEvent}, the host does not block); every non-NULL
     * buffer's pointer attributes must show memory of the declared kind on {@code device_id}, and
     * {@code device_id} must be {@code stream}'s device.
     *
     * <p>At {@link ValidationLevel#DEFAULT} and {@link ValidationLevel#FULL} the array is then validated
     * as a host array would be, from host copies of what the level reads, made through {@code transfer}
     * and ordered on {@code stream} after the wait: DEFAULT copies the offsets, view sizes and run ends
     * (one batch of copies, one host synchronisation), FULL then every other buffer (a second batch).
     *
     * <p>Ownership: after a return the caller owns the returned batch; the producer's {@code release} is
     * called once when the batch and every export of it are closed. After a throw the struct has already
     * been released (also when the CUDA driver is missing).
     *
     * <p>See {@link CudaArrow#importDeviceArray}: {@code stream} is {@code copies.stream()}, {@code transfer}
     * {@code copies.transfer()}. A {@link ValidationException} of {@link Category#DEVICE} also names a host
     * pointer labelled CUDA.
     */
    static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                            ValidationLevel level, DeviceCopies copies) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowDeviceArrayPtr, "arrowDeviceArrayPtr");
        Objects.requireNonNull(level, "level");
        try {
            checkArguments(level, copies);
        } catch (RuntimeException | Error e) {
            drop(arrowDeviceArrayPtr, e);
            throw e;
        }
        CudaImport cuda = new CudaImport(level, copies.stream(), copies.transfer());
        ImportedArray imported;
        try {
            imported = ArrowC.importDeviceArray(schema, arrowDeviceArrayPtr, level, null, cuda);
        } catch (RuntimeException | Error e) {
            cuda.abandon(e);
            throw e;
        }
        return cuda.finish(schema, imported);
    }

    /**
     * Pulls the next batch of an imported CUDA {@code ArrowDeviceArrayStream} (see
     * {@link ArrowC#importDeviceStream}) and imports it as
     * {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, DeviceCopies)}
     * does: {@code stream} waits on the batch's sync event, pointers are checked, and DEFAULT/FULL validate
     * from host copies. Returns {@code null} at the end of the stream.
     *
     * <p>Ownership: the caller owns a returned batch and still owns {@code deviceStream}; after a throw the
     * batch the producer handed over (if any) has been released.
     *
     * <p>See {@link CudaArrow#importNext}; without copies, or without a transfer at DEFAULT or FULL, nothing
     * is pulled.
     */
    static CudaArrowBatch importNext(ImportedArrayStream deviceStream, ValidationLevel level, DeviceCopies copies) {
        requireNativeAccess();
        Cuda.require();
        Objects.requireNonNull(deviceStream, "deviceStream");
        Objects.requireNonNull(level, "level");
        checkArguments(level, copies);
        CudaImport cuda = new CudaImport(level, copies.stream(), copies.transfer());
        ImportedArray imported;
        try {
            imported = deviceStream.next(level, null, cuda);
        } catch (RuntimeException | Error e) {
            cuda.abandon(e);
            throw e;
        }
        if (imported == null) {
            cuda.abandon(null); // the end of the stream: nothing was prepared
            return null;
        }
        return cuda.finish(deviceStream.schema(), imported);
    }

    static boolean reads(ValidationLevel level) {
        return level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL;
    }

    /**
     * Refuses what no import can start with: no CUDA driver, no copies, no transfer where the level reads
     * contents (the record checked that its transfer and stream serve one device).
     */
    private static void checkArguments(ValidationLevel level, DeviceCopies copies) {
        Cuda.require();
        Objects.requireNonNull(copies, "copies");
        if (reads(level)) {
            copies.requireTransfer();
        }
    }

    /**
     * Takes the struct at {@code ptr} and releases it at once, for an import refused before it started: so
     * that the caller owns nothing of it after the throw, as after every import. A struct that cannot be
     * taken (NULL, already released) is left alone and the reason added to {@code failure}.
     */
    private static void drop(MemorySegment ptr, Throwable failure) {
        try {
            MemorySegment owned = ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY, ptr, taken -> taken);
            ForeignImport.Kind.ARROW_DEVICE_ARRAY.release(owned);
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }
}
