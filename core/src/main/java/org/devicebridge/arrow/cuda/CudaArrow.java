package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import java.util.Iterator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowStreamException;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * Arrow on CUDA in one class: Arrow Java batches to the device and back ({@link #upload}, {@link #download}),
 * device batches to and from CUDA consumers as {@code ArrowDeviceArray}s and streams ({@link #exportDeviceArray},
 * {@link #importDeviceArray}), Arrow Java batches in pinned memory as {@code ARROW_DEVICE_CUDA_HOST}
 * ({@link #exportPinnedHost}), and device batches to another device ({@link #copy}). Every call takes a
 * {@link DeviceCopies}: the caller's stream (whose device is the device), the staging transfer and the host
 * allocator, of which each call reads what it names; the caller keeps owning all three. The one handle for an
 * Arrow array on a device is {@link CudaArrowBatch}.
 *
 * <p>Stateless and thread-safe: calls may run concurrently on any threads, as far as their arguments allow
 * (a transfer serialises its batches). Every stream named is the consumer's: data a call makes is ready for
 * work queued on {@code copies.stream()} afterwards.
 */
public final class CudaArrow {
    private CudaArrow() {}

    /**
     * Uploads the batch in {@code root} to {@code copies}' device: every buffer lands in one device allocation
     * ({@value HostDeviceTransfer#ALIGNMENT}-byte aligned), copied on {@code copies.stream()}: page-locked buffers
     * (a root in {@link PinnedArrowMemory}) directly, the others through {@code copies.transfer()}'s staging
     * ring. Offsets, null counts and slices are kept. When this returns the root's buffers may be changed.
     *
     * <p>Ownership: after a return the caller owns the returned batch and still owns {@code root},
     * {@code provider} and {@code copies}' parts (the stream must stay open until the batch is freed: its
     * allocation is freed stream-ordered on it). After a throw nothing new is held.
     *
     * @param root the batch; borrowed
     * @param provider the dictionaries of dictionary-encoded columns; may be null if there are none
     * @param copies the stream and the transfer (needed); borrowed
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws InvalidArgumentException if {@code copies} has no transfer
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, DeviceCopies copies) {
        return CudaArrowUpload.upload(root, provider, copies, false);
    }

    /**
     * {@link #upload(VectorSchemaRoot, DictionaryProvider, DeviceCopies)} without dictionaries; ownership as
     * there: after a return the caller owns the batch, after a throw nothing new is held.
     *
     * @param root the batch; borrowed
     * @param copies the stream and the transfer (needed); borrowed
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch upload(VectorSchemaRoot root, DeviceCopies copies) {
        return CudaArrowUpload.upload(root, null, copies, false);
    }

    /**
     * As {@link #upload(VectorSchemaRoot, DictionaryProvider, DeviceCopies)}, without any host wait: the copy
     * engine reads page-locked buffers after this returns, until the stream reaches the upload; pageable buffers
     * have been read into staging chunks when this returns.
     *
     * <p>What it keeps alive: the view of {@code root} (an arena holding a reference to every buffer of the root
     * and its dictionaries, as {@link org.devicebridge.arrow.java.ArrowJava#viewRoot} takes them) is handed to
     * {@code copies.stream()} ({@link CudaStream#closeAfterQueuedWork}) and closed only once an event recorded
     * after the copies completed; none of those buffers goes back to its allocator
     * or pool before that; staging chunks are reused only after their own events. What the caller may touch
     * before that event: it may close {@code root} and {@code provider}, but must not change the contents of
     * their buffers.
     *
     * <p>Ownership as in the synchronous form; besides, after a return the stream owns the view until the
     * event (keep the stream open, or synchronize it, before closing the root's allocator). After a throw no
     * copy reads the root any more, or the view is held by the stream as above.
     *
     * @param root the batch; borrowed, and read by the device until the stream reaches the upload
     * @param provider the dictionaries of dictionary-encoded columns; may be null if there are none
     * @param copies the stream and the transfer (needed); borrowed
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws InvalidArgumentException if {@code copies} has no transfer
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch uploadAsync(VectorSchemaRoot root, DictionaryProvider provider, DeviceCopies copies) {
        return CudaArrowUpload.upload(root, provider, copies, true);
    }

    /**
     * {@link #uploadAsync(VectorSchemaRoot, DictionaryProvider, DeviceCopies)} without dictionaries; what it keeps
     * alive and ownership as there: after a return the caller owns the batch, after a throw nothing new is held.
     *
     * @param root the batch; borrowed, and read by the device until the stream reaches the upload
     * @param copies the stream and the transfer (needed); borrowed
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch uploadAsync(VectorSchemaRoot root, DeviceCopies copies) {
        return CudaArrowUpload.upload(root, null, copies, true);
    }

    /**
     * Copies {@code batch} (a record batch) into a new {@link VectorSchemaRoot} in {@code copies.allocator()}:
     * every buffer into one host block, in one batch of copies ordered on {@code copies.stream()}, by the copy
     * engine directly where that block is page-locked ({@link PinnedArrowMemory}), through the transfer's staging
     * ring otherwise. Everything Arrow Java reads is validated at {@link ValidationLevel#DEFAULT} from the copies
     * themselves, so device memory changed since the batch was made cannot reach Arrow Java unchecked.
     *
     * <p>Ownership: after a return the caller owns the root (and the dictionaries added to {@code dictionaries});
     * the host block goes back to the allocator when the last Arrow buffer is released. The caller still owns
     * {@code batch} and {@code copies}' parts. After a throw nothing new is held.
     *
     * @param batch the device batch; borrowed
     * @param dictionaries receives the dictionaries; may be null if the schema has none
     * @param copies the stream, the transfer and the allocator (all needed), of the batch's device; borrowed
     * @return the root, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws InvalidArgumentException if {@code copies} lacks the transfer or the allocator
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly
     * @throws ValidationException if the copied data is malformed (an import at MINIMAL did not read it; the
     *         producer may also have changed it since)
     */
    public static VectorSchemaRoot download(CudaArrowBatch batch, DictionaryProvider.MapDictionaryProvider dictionaries,
                                            DeviceCopies copies) {
        return CudaArrowDownload.download(batch, dictionaries, copies);
    }

    /**
     * {@link #download(CudaArrowBatch, DictionaryProvider.MapDictionaryProvider, DeviceCopies)} without
     * dictionaries; ownership as there: after a return the caller owns the root, after a throw nothing new is held.
     *
     * @param batch the device batch; borrowed
     * @param copies the stream, the transfer and the allocator (all needed); borrowed
     * @return the root, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws ValidationException if the copied data is malformed
     */
    public static VectorSchemaRoot download(CudaArrowBatch batch, DeviceCopies copies) {
        return CudaArrowDownload.download(batch, null, copies);
    }

    /**
     * Exports {@code batch} as an {@code ArrowDeviceArray} into {@code outDeviceArray}, without copying: the
     * batch's device type and device, its device addresses, and a {@code sync_event} (a pooled {@code CUevent})
     * recorded on {@code copies.stream()} now, which the consumer waits on before reading. The export holds its own
     * reference to the device memory; the consumer's {@code release} (any thread, once) drops it and returns the
     * event to its pool, after the consumer ordered its own use of the buffers.
     *
     * <p>Ownership: after a return the consumer owns the struct, and the caller still owns {@code batch} (closing
     * it does not invalidate the export) and {@code copies}' parts. After a throw {@code outDeviceArray} is
     * untouched and nothing is held.
     *
     * @param batch the device batch; borrowed
     * @param copies the stream (all it needs), of the batch's device; borrowed
     * @param outDeviceArray an {@code ArrowDeviceArray} (a zero-length segment is taken to point at a whole one)
     * @throws CudaUnavailableException without a CUDA driver
     * @throws IllegalArgumentException if the stream is of another device than the batch
     * @throws ValidationException if {@code outDeviceArray} is not a native, aligned, large enough segment
     * @throws org.devicebridge.HandleClosedException if the batch was closed
     */
    public static void exportDeviceArray(CudaArrowBatch batch, DeviceCopies copies, MemorySegment outDeviceArray) {
        CudaArrowExport.exportDeviceArray(batch, copies, outDeviceArray);
    }

    /**
     * Exports device batches as a CUDA {@code ArrowDeviceArrayStream} into {@code outStream}: {@code get_schema}
     * exports {@code schema}; {@code get_next} takes the next batch from {@code batches}, exports it as
     * {@link #exportDeviceArray} does and closes it (the export keeps its memory); an exception becomes an errno
     * with its message from {@code get_last_error}, and a batch of another device type than
     * {@link DeviceKind#CUDA} is refused that way ({@code EINVAL}).
     *
     * <p>Ownership: after a return the consumer owns the stream; the stream owns {@code batches} (closed on release
     * if it is {@link AutoCloseable}) and every batch it yields. The caller keeps {@code copies}' parts, and the
     * stream open until the consumer released the stream. After a throw {@code outStream} is untouched and nothing
     * is held.
     *
     * @param schema the Arrow Java schema; only read
     * @param batches the batches the stream yields, in order; the stream takes ownership
     * @param copies the stream (all it needs); borrowed
     * @param outStream an {@code ArrowDeviceArrayStream}: native memory of at least its size, owned by the caller
     * @throws CudaUnavailableException without a CUDA driver
     * @throws ValidationException if {@code outStream} is not a native, aligned, large enough segment
     */
    public static void exportDeviceStream(Schema schema, Iterator<? extends CudaArrowBatch> batches,
                                          DeviceCopies copies, MemorySegment outStream) {
        CudaArrowExport.exportDeviceStream(schema, batches, copies, outStream);
    }

    /**
     * Exports the batch in {@code root}, whose buffers are pinned host memory (of {@link PinnedArrowMemory}, or
     * registered with the driver), as an {@code ArrowDeviceArray} of {@code device_type = ARROW_DEVICE_CUDA_HOST},
     * without copying. {@code device_id} is the device the driver names for that memory (0 without bytes),
     * {@code sync_event} is NULL (the host data is ready). Every buffer with bytes, and the narrowed copy an export
     * makes of decimal32/decimal64 values, is checked with the driver's pointer attributes: ordinary host memory
     * is refused. The consumer's {@code release} (any thread, once) drops the export's references.
     *
     * <p>Ownership: after a return the consumer owns the struct; the caller still owns {@code root}. After a throw
     * {@code outDeviceArray} is untouched and nothing is held.
     *
     * @param root the batch; borrowed
     * @param provider the dictionaries of dictionary-encoded vectors; may be null if there are none
     * @param outDeviceArray an {@code ArrowDeviceArray} (a zero-length segment is taken to point at a whole one)
     * @throws CudaUnavailableException without a CUDA driver
     * @throws ValidationException ({@code DEVICE}) naming the first buffer that is not pinned host memory, or as
     *         {@link org.devicebridge.arrow.java.ArrowJava#exportDeviceArray} for a batch that cannot be exported
     * @throws UnsupportedFeatureException as {@link org.devicebridge.arrow.java.ArrowJava#exportDeviceArray}
     */
    public static void exportPinnedHost(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment outDeviceArray) {
        CudaArrowExport.exportPinnedHost(root, provider, outDeviceArray);
    }

    /**
     * Imports the CUDA {@code ArrowDeviceArray} at {@code arrowDeviceArrayPtr} (device type {@link DeviceKind#CUDA},
     * {@link DeviceKind#CUDA_HOST} or {@link DeviceKind#CUDA_MANAGED}) of type {@code schema}, without copying its
     * buffers. The struct is moved and its structure checked (at MINIMAL; not at NONE; no device memory read);
     * {@code copies.stream()} is made to wait on the producer's {@code sync_event} (the host does not block);
     * every non-NULL buffer's pointer attributes must show memory of the declared kind on {@code device_id},
     * which must be the stream's device. At {@link ValidationLevel#DEFAULT} and {@link ValidationLevel#FULL} the
     * array is then validated as a host array would be, from host copies of what the level reads, made through
     * {@code copies.transfer()} after the wait (DEFAULT: offsets, view sizes and run ends; FULL: every buffer).
     *
     * <p>Ownership: after a return the caller owns the returned batch; the producer's {@code release} is called
     * once when the batch and every export of it are closed. After a throw the struct has already been released
     * (also when the CUDA driver is missing, or {@code copies} lacks what the level needs).
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root); borrowed
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param level how much of the foreign structure to check before it is used
     * @param copies the stream, and at DEFAULT and FULL the transfer; borrowed
     * @return the device batch, owned by the caller
     * @throws ValidationException {@code DEVICE} for a non-CUDA device type, a wrong {@code device_id}, or a buffer
     *         that is not memory of the declared kind on that device; other categories for malformed arrays
     * @throws InvalidArgumentException if {@code copies} has no transfer at DEFAULT or FULL
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   ValidationLevel level, DeviceCopies copies) {
        return CudaArrowImport.importDeviceArray(schema, arrowDeviceArrayPtr, level, copies);
    }

    /**
     * Pulls the next batch of an imported CUDA {@code ArrowDeviceArrayStream} (see
     * {@link org.devicebridge.arrow.ArrowC#importDeviceStream}) and imports it as
     * {@link #importDeviceArray} does. Returns {@code null} at the end of the stream.
     *
     * <p>Ownership: the caller owns a returned batch and still owns {@code deviceStream}; after a throw the batch
     * the producer handed over (if any) has been released.
     *
     * @param deviceStream the imported CUDA device stream; borrowed
     * @param level how much of the foreign structure to check before it is used
     * @param copies the stream, and at DEFAULT and FULL the transfer; borrowed
     * @return the device batch, owned by the caller, or {@code null} at the end of the stream
     * @throws ArrowStreamException if the producer's {@code get_next} returned an errno
     * @throws ValidationException as {@link #importDeviceArray}
     * @throws InvalidArgumentException if {@code deviceStream} is an {@code ArrowArrayStream}, or {@code copies}
     *         has no transfer at DEFAULT or FULL (nothing is pulled then)
     * @throws CudaUnavailableException without a CUDA driver (nothing is pulled then)
     */
    public static CudaArrowBatch importNext(ImportedArrayStream deviceStream, ValidationLevel level, DeviceCopies copies) {
        return CudaArrowImport.importNext(deviceStream, level, copies);
    }

    /**
     * Queues the copy of {@code batch} to {@code copies}' device (or into a fresh allocation of its own device):
     * an event recorded on {@code sourceStream} (where the batch is ready) makes {@code copies.stream()} wait (no
     * host block), then every buffer is copied with {@code cuMemcpyPeerAsync} into one new allocation, packed as an
     * upload packs it. Nothing goes through the host but what the driver stages itself.
     *
     * <p>What it keeps alive: a reference to every source allocation a copy reads is handed to the destination
     * stream ({@link CudaStream#closeAfterQueuedWork}) and dropped once an event recorded after the copies
     * completed. What the caller may touch before that event: it may close the source batch at once, but must not
     * queue work that changes the source's bytes unless it is ordered after the destination stream.
     *
     * @param batch a batch of {@link DeviceKind#CUDA} or {@link DeviceKind#CUDA_MANAGED} memory whose buffer
     *     lengths are known (an upload, or an import at DEFAULT or above); borrowed
     * @param sourceStream a stream of the batch's device on which the batch is ready; borrowed
     * @param copies the destination stream (all it needs); borrowed, open until the returned batch's memory is freed
     * @return a batch on the destination device that the caller owns. After a throw the caller owns nothing new
     *     (an allocation made before the failure is freed on the destination stream)
     * @throws InvalidArgumentException if {@code sourceStream} is not of the batch's device
     * @throws UnsupportedFeatureException for pinned host batches, or a buffer whose byte length is unknown
     * @throws org.devicebridge.HandleClosedException if the batch or a stream is closed
     * @throws CudaException if a driver call fails
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch copyAsync(CudaArrowBatch batch, CudaStream sourceStream, DeviceCopies copies) {
        return CudaArrowPeerCopy.copyAsync(batch, sourceStream, copies);
    }

    /**
     * As {@link #copyAsync}, then waits for the destination stream to finish the copies: when this returns the
     * source batch may be changed or closed. Ownership: after a return the caller owns the returned batch; after
     * a throw nothing new.
     *
     * @param batch the batch to copy; borrowed (see {@link #copyAsync})
     * @param sourceStream a stream of the batch's device on which the batch is ready; borrowed
     * @param copies the destination stream; borrowed, open until the returned batch is freed
     * @return a batch on the destination device that the caller owns
     * @throws InvalidArgumentException if {@code sourceStream} is not of the batch's device
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch copy(CudaArrowBatch batch, CudaStream sourceStream, DeviceCopies copies) {
        return CudaArrowPeerCopy.copy(batch, sourceStream, copies);
    }
}
