package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.FieldPath;

/**
 * Copies device batches into Arrow Java: every buffer goes to one host block allocated in the caller's
 * allocator, straight from the copy engine where that memory is page-locked, through a
 * {@link HostDeviceTransfer}'s pinned staging ring otherwise, ordered on the caller's stream; the batch's own
 * struct is then validated from those very copies, which Arrow Java gets without a further copy.
 * Stateless; thread-safe as far as its arguments are (a transfer serialises its batches).
 */
final class CudaArrowDownload {
    private CudaArrowDownload() {}

    /**
     * Copies {@code batch} (a struct array: a record batch) into a new {@link VectorSchemaRoot} whose memory
     * is allocated in {@code allocator}: every buffer is copied into one host block allocated there, in one
     * batch of copies ordered on {@code stream}. Where that block is page-locked (an allocator of pinned
     * memory), the copy engine writes it directly, and the host waits twice: once for the bitmaps, offsets
     * and other buffers the checks and Arrow Java's import read (queued first), then, after checking them and
     * building the vectors while the values still arrive, for the rest. Otherwise the copies go through
     * {@code transfer}'s ring of pinned staging chunks (one host wait per chunk, unpacking overlapping the
     * next chunk's copy), and the checks follow. Ranges of one device allocation less than 64 bytes apart are
     * copied together, so an uploaded batch comes back in few copies. An imported batch is then
     * validated at {@link ValidationLevel#DEFAULT} by reading its own struct again with those copies as the
     * contents (no further device copy, no second struct), and Arrow Java gets the validated view moved to
     * the copies, without a further copy: what it reads is exactly what was validated, even if the producer
     * changes the device memory meanwhile. A batch imported below DEFAULT does not know the sizes of its
     * variable-size data buffers: its struct is first read at DEFAULT from host copies of its offsets (one
     * more batch of copies before the other; the download then validates the offsets it copied itself,
     * since they may have changed in between). A batch built by {@link CudaArrowUpload} has no struct and
     * knows every size: its view is moved to the copies as it is. Either way the copies are checked again
     * at DEFAULT where Arrow Java will read them (every read bounded by the known buffer sizes), so device
     * memory changed since validation, by the producer or by the caller's own work, cannot reach Arrow Java
     * unchecked.
     *
     * <p>Ownership (as {@link CudaArrow#download}): after a return the caller owns the root (and the
     * dictionaries added to {@code dictionaries}); the host block is released to the allocator when the last
     * Arrow buffer is released (until then the allocator counts its bytes twice: as the block, and as the
     * foreign allocation the root's vectors are slices of). After a throw nothing new is held. A
     * {@link ValidationException} ({@code DEVICE}) also reports a batch imported below DEFAULT whose buffers
     * changed between the two batches of copies so that they no longer hold what the copied offsets describe.
     */
    static VectorSchemaRoot download(CudaArrowBatch batch, DictionaryProvider.MapDictionaryProvider dictionaries,
                                     DeviceCopies copies) {
        requireNativeAccess();
        requireArrowJava("CudaArrow.download");
        Cuda.require();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(copies, "copies");
        BufferAllocator allocator = copies.requireAllocator();
        HostDeviceTransfer transfer = copies.requireTransfer();
        CudaStream stream = copies.stream();
        try (HostCopier copier = new HostCopier(transfer, stream, batch.memory())) {
            return toHost(new Source(batch.root(), batch.imported(), copier), allocator, new BatchCopier() {
                @Override
                public CopyPlan plan(long[] addresses, long[] byteSizes) {
                    return copier.plan(addresses, byteSizes);
                }

                @Override
                public void copy(CopyPlan.Pieces pieces, MemorySegment block, Runnable whileRestArrives) {
                    copier.copy(pieces, block, whileRestArrives);
                }
            }, host -> ArrowJava.importVectorSchemaRoot(allocator, host, dictionaries)); // releases host on a throw
        }
    }

    /** {@code true} if every non-NULL buffer under {@code root} has a known length. */
    private static boolean sized(ArrayNode root) {
        for (ArrayNode node : Nodes.collect(root)) {
            for (int i = 0; i < node.bufferCount(); i++) {
                if (node.bufferLength(i) < 0 && !node.isBufferNull(i)) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * One batch of device-to-host copies: a {@link HostCopier} over the batch's allocations (host memory
     * standing in for device memory in CPU tests).
     */
    interface BatchCopier {
        /** Plans copies of these ranges. */
        CopyPlan plan(long[] addresses, long[] byteSizes);

        /**
         * Runs {@code pieces} (a plan's bytes cut so that the leading pieces come first) into {@code block} (see
         * {@link HostCopier#copy}); {@code whileRestArrives} runs once the leading pieces arrived, while the
         * others may still be arriving. Returns when the data arrived; returns or throws only once no copy
         * writes into {@code block}.
         */
        void copy(CopyPlan.Pieces pieces, MemorySegment block, Runnable whileRestArrives);

        /** The smallest stretch of late bytes worth a copy of its own. */
        default long minLateBytes() {
            return CopyPlan.MIN_LATE_BYTES;
        }
    }

    /**
     * The host array Arrow Java reads for the batch whose view is {@code root}: for an imported batch
     * ({@code imported} not null) whose view lacks buffer sizes, first its struct read again at DEFAULT
     * through {@code sizing} (host copies of its offsets); then every buffer copied in one batch through
     * {@code copier} into one {@link DownloadedBuffers} block; for an imported batch its struct read again at
     * DEFAULT with those copies as the contents, for a batch built here ({@code imported} null: an upload,
     * which validated its source at DEFAULT and knows every size) the view as it is; then that view moved to
     * the copies ({@link ImportedArray#ofHostCopies}) and given to {@code consume}.
     *
     * <p>The buffers that no check at DEFAULT reads and Arrow Java's import only wraps ({@link #onlyWrapped})
     * are copied last, and, into page-locked memory, the checks and {@code consume} run while they may still
     * be arriving: the copy engine moves the bulk of a batch while the host checks its offsets and builds the
     * vectors (into pageable memory every byte arrives first). The result is returned once every byte arrived.
     *
     * <p>Ownership: after a return the result owns the copies (freed when it is closed, or the last Arrow
     * buffer is released), never before every copy finished; {@code imported} stays the caller's. After a
     * throw nothing new is held ({@code consume}'s result, if any, was closed).
     */
    static <T extends AutoCloseable> T toHost(Source source, BufferAllocator allocator, BatchCopier copier,
                                              Function<ImportedArray, T> consume) {
        ArrayNode root = source.root();
        ImportedArray imported = source.imported();
        DeviceCopier sizing = source.sizing();
        boolean lengthsKnown = sized(root);
        if (!lengthsKnown && imported == null) {
            throw new UnsupportedFeatureException("", "expected known buffer lengths in a batch built here");
        }
        ArrayNode sized = lengthsKnown ? root : imported.view(ValidationLevel.DEFAULT, sizing);
        List<ArrayNode> nodes = Nodes.collect(sized);
        Set<ArrayNode> runEnds = new HashSet<>();
        for (ArrayNode node : nodes) {
            if (node.type().layout() == Layout.RUN_END_ENCODED) {
                runEnds.add(node.children().get(0));
            }
        }
        long[] addresses = new long[16];
        long[] sizes = new long[16];
        boolean[] late = new boolean[16];
        int count = 0;
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++) {
                if (node.isBufferNull(i)) {
                    continue;
                }
                if (node.bufferLength(i) < 0) {
                    throw new UnsupportedFeatureException(FieldPath.join(node.path(), "buffers[" + i + "]"),
                            "expected a known buffer length but found none");
                }
                if (count == addresses.length) {
                    addresses = Arrays.copyOf(addresses, count * 2);
                    sizes = Arrays.copyOf(sizes, count * 2);
                    late = Arrays.copyOf(late, count * 2);
                }
                addresses[count] = Nodes.address(node, i);
                sizes[count] = node.bufferLength(i);
                late[count] = !runEnds.contains(node) && onlyWrapped(node, i);
                count++;
            }
        }
        addresses = Arrays.copyOf(addresses, count);
        sizes = Arrays.copyOf(sizes, count);
        CopyPlan plan = copier.plan(addresses, sizes);
        CopyPlan.Pieces pieces = plan.pieces(addresses, sizes, Arrays.copyOf(late, count), copier.minLateBytes());
        DownloadedBuffers copies = DownloadedBuffers.allocate(plan, allocator);
        List<T> result = new ArrayList<>(1);
        try {
            try {
                copier.copy(pieces, copies.data(), () -> {
                    // The offsets the copies hold may differ from those that sized the download (the producer
                    // may write device memory meanwhile): the view Arrow Java gets is validated from the copies.
                    ArrayNode validated = imported == null ? sized
                            : imported.view(ValidationLevel.DEFAULT, copies);
                    result.add(consume.apply(ImportedArray.ofHostCopies(validated, ValidationLevel.DEFAULT, copies, copies::free)));
                });
            } finally {
                copies.arrived();
            }
            return result.get(0);
        } catch (RuntimeException | Error e) {
            for (T r : result) {
                try {
                    r.close();
                } catch (Exception more) {
                    e.addSuppressed(more);
                }
            }
            copies.free(); // once: a view given to consume freed it already, or will when its release runs
            throw e;
        }
    }

    /**
     * The batch a download reads: its view, its import ({@code null} for a batch built here) and the copier that
     * sizes a view lacking buffer sizes from host copies of its offsets.
     */
    record Source(ArrayNode root, ImportedArray imported, DeviceCopier sizing) {}

    /**
     * {@code true} for buffer {@code i} of {@code node} if no check at DEFAULT reads it ({@link ImportedArray#ofHostCopies})
     * and Arrow Java's import ({@link ArrowJava}) only wraps it, whatever the node's offset: the values of
     * fixed-width types (not decimal32 and decimal64, which the import widens; not dictionary indices, which it
     * checks; not run ends, which the caller excludes) and of fixed-size binaries, the data of strings and
     * binaries. Never a bitmap, offsets, views, type ids or sizes. A download may still be copying these
     * while the host works; {@code CudaArrowDownloadHostTest} fills them only after it, so a check or an
     * import that starts reading one of them fails there.
     */
    private static boolean onlyWrapped(ArrayNode node, int i) {
        if (node.schema().dictionary() != null) {
            return false;
        }
        TypeId id = node.type().id();
        return switch (node.type().layout()) {
            case FIXED_WIDTH -> i == 1 && id != TypeId.DECIMAL32 && id != TypeId.DECIMAL64;
            case FIXED_SIZE_BINARY -> i == 1;
            case VARIABLE, LARGE_VARIABLE -> i == 2;
            default -> false;
        };
    }
}
