package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ArrowStreamException;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.HostDeviceTransfer;
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
public final class CudaArrowImport {
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
     * @param transfer needed at DEFAULT and FULL; may be null at NONE and MINIMAL
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param level how much of the foreign structure to check before it is used
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     * @return the device batch, owned by the caller
     * @throws ValidationException {@link Category#DEVICE} for a non-CUDA device type, a wrong
     *         {@code device_id}, or a buffer that is not memory of the declared kind on that device (for
     *         example a host pointer labelled CUDA); other categories for malformed arrays
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   ValidationLevel level, CudaStream stream,
                                                   HostDeviceTransfer transfer) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowDeviceArrayPtr, "arrowDeviceArrayPtr");
        Objects.requireNonNull(level, "level");
        try {
            checkArguments(level, stream, transfer);
        } catch (RuntimeException | Error e) {
            drop(arrowDeviceArrayPtr, e);
            throw e;
        }
        CudaImport cuda = new CudaImport(level, stream, transfer);
        ImportedArray imported;
        try {
            imported = ArrowImport.importDeviceArray(schema, arrowDeviceArrayPtr, level, null, cuda);
        } catch (RuntimeException | Error e) {
            cuda.abandon(e);
            throw e;
        }
        return cuda.finish(schema, imported);
    }

    /**
     * {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, CudaStream, HostDeviceTransfer)} at
     * MINIMAL. Ownership as there: after a throw the struct has already been released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     * @return the device batch, owned by the caller
     */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   CudaStream stream) {
        requireNativeAccess();
        return importDeviceArray(schema, arrowDeviceArrayPtr, ValidationLevel.MINIMAL, stream, null);
    }

    /**
     * Pulls the next batch of an imported CUDA {@code ArrowDeviceArrayStream} (see
     * {@link ArrowImport#importDeviceStream}) and imports it as
     * {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, CudaStream, HostDeviceTransfer)}
     * does: {@code stream} waits on the batch's sync event, pointers are checked, and DEFAULT/FULL validate
     * from host copies. Returns {@code null} at the end of the stream.
     *
     * <p>Ownership: the caller owns a returned batch and still owns {@code deviceStream}; after a throw the
     * batch the producer handed over (if any) has been released.
     *
     * @param deviceStream the imported CUDA device stream; the caller keeps owning it
     * @param level how much of the foreign structure to check before it is used
     * @param stream the stream that waits on the batch's sync event; the caller keeps owning it
     * @param transfer the staging transfer for the host copies DEFAULT and FULL validate; the caller keeps owning it
     * @return the device batch, owned by the caller, or {@code null} at the end of the stream
     * @throws ArrowStreamException if the producer's {@code get_next} returned an errno
     * @throws ValidationException as for a single import
     * @throws org.devicebridge.InvalidArgumentException if {@code deviceStream} is an {@code ArrowArrayStream}
     *         (nothing is pulled then)
     * @throws CudaUnavailableException without a CUDA driver (nothing is pulled then)
     * @throws NullPointerException without a stream, or without a transfer at DEFAULT or FULL (nothing is
     *         pulled then)
     */
    public static CudaArrowBatch importNext(ImportedArrayStream deviceStream, ValidationLevel level, CudaStream stream,
                                            HostDeviceTransfer transfer) {
        requireNativeAccess();
        Cuda.require();
        Objects.requireNonNull(deviceStream, "deviceStream");
        Objects.requireNonNull(level, "level");
        checkArguments(level, stream, transfer);
        CudaImport cuda = new CudaImport(level, stream, transfer);
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
     * Refuses what no import can start with: no CUDA driver, no stream, no transfer where the level reads
     * contents, a transfer of another device than the stream's.
     */
    private static void checkArguments(ValidationLevel level, CudaStream stream, HostDeviceTransfer transfer) {
        Cuda.require();
        Objects.requireNonNull(stream, "stream");
        if (reads(level)) {
            Objects.requireNonNull(transfer, "transfer (needed to validate at " + level + ")");
            CudaArrowSupport.sameDevice(transfer, stream);
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
