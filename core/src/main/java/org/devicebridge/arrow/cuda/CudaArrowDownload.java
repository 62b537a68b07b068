package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJavaImport;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowAccess;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;

/**
 * Copies device batches into Arrow Java: every buffer goes to host memory through a
 * {@link HostDeviceTransfer}'s pinned staging memory, ordered on the caller's stream, is validated, and is
 * handed to Arrow Java without a further copy.
 */
public final class CudaArrowDownload {
    private static final ArrowAccess ARROW = Access.arrow();

    private CudaArrowDownload() {}

    /**
     * Copies {@code batch} (a struct array: a record batch) into a new {@link VectorSchemaRoot}: every
     * buffer is copied to host memory through {@code transfer}'s pinned staging memory, ordered on
     * {@code stream}, in one batch of copies and one host synchronisation, then the host copy is checked at
     * {@link ValidationLevel#DEFAULT} and handed to Arrow Java without a further copy. A batch imported below
     * DEFAULT does not know the sizes of its variable-size data buffers: its struct is first read again at
     * DEFAULT, from host copies of its offsets (one more batch of copies before the other).
     *
     * <p>Ownership: after a return the caller owns the root (and the dictionaries added to
     * {@code dictionaries}); the host memory is freed when the last Arrow buffer is released. The caller
     * still owns {@code batch}. After a throw nothing new is held.
     *
     * @param dictionaries receives the dictionaries; may be null if the schema has none
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly
     * @throws ValidationException if the device data is malformed (an import at MINIMAL did not read it)
     */
    public static VectorSchemaRoot download(CudaArrowBatch batch, BufferAllocator allocator,
                                            DictionaryProvider.MapDictionaryProvider dictionaries,
                                            HostDeviceTransfer transfer, CudaStream stream) {
        Cuda.require();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(transfer, "transfer");
        Objects.requireNonNull(stream, "stream");
        CudaArrowSupport.sameDevice(transfer, stream);
        ArrayNode root = batch.root();
        ImportedArray host;
        try (HostCopier copier = new HostCopier(transfer, stream, batch.memory())) {
            if (!sized(root)) {
                ImportedArray imported = batch.imported();
                if (imported == null) {
                    throw new UnsupportedFeatureException("", "expected known buffer lengths in a batch built here");
                }
                root = ARROW.reread(imported, ValidationLevel.DEFAULT, copier);
            }
            host = copyToHost(batch.schema(), root, copier);
        }
        return ArrowJavaImport.importVectorSchemaRoot(allocator, host, dictionaries); // releases host on a throw
    }

    /**
     * {@link #download(CudaArrowBatch, BufferAllocator, DictionaryProvider.MapDictionaryProvider, HostDeviceTransfer,
     * CudaStream)} without dictionaries.
     */
    public static VectorSchemaRoot download(CudaArrowBatch batch, BufferAllocator allocator, HostDeviceTransfer transfer,
                                            CudaStream stream) {
        return download(batch, allocator, null, transfer, stream);
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

    /** Buffer {@code buffer} of {@code node}: one range a download copies. */
    private record BufferSlot(ArrayNode node, int buffer) {}

    /**
     * Copies every buffer under {@code root} (all sized) into one malloc'ed host block, in one batch of
     * copies, writes an {@code ArrowArray} tree over the copies for Arrow Java and imports it at DEFAULT
     * (what Arrow Java reads is checked on the very bytes it reads). The returned array owns the block.
     */
    private static ImportedArray copyToHost(SchemaNode schema, ArrayNode root, HostCopier copier) {
        List<ArrayNode> nodes = Nodes.collect(root);
        List<BufferSlot> slots = new ArrayList<>();
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++) {
                if (node.isBufferNull(i)) {
                    continue;
                }
                if (node.bufferLength(i) < 0) {
                    throw new UnsupportedFeatureException(FieldPath.join(node.path(), "buffers[" + i + "]"),
                            "expected a known buffer length but found none");
                }
                slots.add(new BufferSlot(node, i));
            }
        }
        long[] addresses = new long[slots.size()];
        long[] sizes = new long[slots.size()];
        for (int k = 0; k < addresses.length; k++) {
            BufferSlot s = slots.get(k);
            addresses[k] = Nodes.address(s.node(), s.buffer());
            sizes[k] = s.node().bufferLength(s.buffer());
        }
        CopyPlan plan = copier.plan(addresses, sizes);
        long total = plan.hostBytes();
        // 64 spare bytes for alignment and 64 zero bytes that zero-length buffers point at.
        long blockBytes = Math.addExact(total, 2L * CopyPlan.ALIGNMENT);
        // malloc, not calloc: every byte a buffer exposes is overwritten by the copy below, so zeroing the
        // whole block first would only add a pass over memory; just the shared zero block is cleared.
        MemorySegment block = Native.malloc(blockBytes);
        MemorySegment rootStruct = MemorySegment.NULL;
        boolean handedOver = false;
        try {
            long skew = (-block.address()) & (CopyPlan.ALIGNMENT - 1);
            MemorySegment data = block.asSlice(skew, total + CopyPlan.ALIGNMENT);
            long zeros = data.address() + total;
            data.asSlice(total, CopyPlan.ALIGNMENT).fill((byte) 0);
            copier.copy(plan, data);
            Map<ArrayNode, long[]> hostAddresses = new IdentityHashMap<>();
            for (ArrayNode node : nodes) {
                hostAddresses.put(node, new long[node.bufferCount()]);
            }
            for (int k = 0; k < addresses.length; k++) {
                BufferSlot s = slots.get(k);
                hostAddresses.get(s.node())[s.buffer()] = sizes[k] == 0 ? zeros
                        : data.address() + plan.find(addresses[k], sizes[k]);
            }
            rootStruct = Native.calloc(ArrowArray.sizeof());
            CudaStructs.write(root, (node, i) -> hostAddresses.get(node)[i], rootStruct, () -> Native.free(block));
            handedOver = true;
            return ArrowImport.importArray(schema, rootStruct, ValidationLevel.DEFAULT);
        } finally {
            if (!handedOver) {
                Native.free(block);
            }
            Native.free(rootStruct);
        }
    }
}
