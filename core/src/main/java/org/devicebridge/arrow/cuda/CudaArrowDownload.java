package org.devicebridge.arrow.cuda;

import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJavaImport;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * Copies device batches into Arrow Java: every buffer goes to host memory through a
 * {@link HostDeviceTransfer}'s pinned staging memory, ordered on the caller's stream, is validated, and is
 * handed to Arrow Java without a further copy.
 */
public final class CudaArrowDownload {
    private CudaArrowDownload() {}

    /**
     * Copies {@code batch} (a struct array: a record batch) into a new {@link VectorSchemaRoot}: every
     * buffer is copied to host memory through {@code transfer}'s pinned staging memory, ordered on
     * {@code stream}, then checked at {@link ValidationLevel#DEFAULT} and handed to Arrow Java without a
     * further copy. One host synchronisation per device allocation (one for an uploaded batch), plus one
     * before it when variable-size data buffers must first be sized from their last offsets.
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
        ArrayNode root = CudaArrowImport.resolveLengths(batch.root(), batch.memory(), transfer, stream);
        ImportedArray host = CudaArrowImport.mirror(batch.schema(), root, batch.memory(), transfer, stream,
                ValidationLevel.DEFAULT);
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
}
