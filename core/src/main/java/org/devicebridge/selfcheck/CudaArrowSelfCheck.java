package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.devicebridge.arrow.ArrowDeviceType;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.CudaArrowDownload;
import org.devicebridge.arrow.cuda.CudaArrowExport;
import org.devicebridge.arrow.cuda.CudaArrowImport;
import org.devicebridge.arrow.cuda.CudaArrowUpload;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.StreamKind;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.CudaCounters;

/**
 * Self-check section "Arrow on CUDA": where a device exists, uploads a sample table (integers with nulls,
 * doubles, booleans, strings, lists), exports it as a CUDA {@code ArrowDeviceArray}, imports that at FULL,
 * downloads it and compares the values; prints the upload and download bandwidth next to a raw
 * {@code cuMemcpyHtoD}/{@code cuMemcpyDtoH} of the same number of bytes from pinned memory, measured in
 * the same run. Without a device it reports "skipped: reason".
 */
final class CudaArrowSelfCheck implements SelfCheckSection {
    private static final int ROWS = 1 << 20;
    private static final int ROUNDS = 5;

    @Override
    public String name() {
        return "Arrow on CUDA (device arrays)";
    }

    @Override
    public void run(Report report) throws Exception {
        if (!Cuda.isAvailable()) {
            report.line("status", "skipped: " + Cuda.unavailableReason());
            return;
        }
        if (Cuda.deviceCount() == 0) {
            report.line("status", "skipped: the CUDA driver reports no device");
            return;
        }
        int device = 0;
        report.line("device", Cuda.device(device).toString());
        long deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot table = sample(allocator);
             CudaStream stream = CudaStream.create(device, StreamKind.NON_BLOCKING);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(device, 64L << 20)) {
            long bytes;
            try (CudaArrowBatch batch = CudaArrowUpload.upload(table, transfer, stream)) {
                // one packed device allocation per uploaded batch: the device bytes the upload added
                bytes = CudaCounters.snapshot().deviceBytesOutstanding() - deviceBytesBefore;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
                    CudaArrowExport.exportDeviceArray(batch, stream, out);
                    report.check("export: device type CUDA with a sync event",
                            ArrowDeviceArray.device_type(out) == ArrowDeviceType.CUDA.code()
                                    && ArrowDeviceArray.device_id(out) == device
                                    && !ArrowDeviceArray.sync_event(out).equals(MemorySegment.NULL), "");
                    try (CudaArrowBatch imported = CudaArrowImport.importDeviceArray(batch.schema(), out,
                            ValidationLevel.FULL, stream, transfer);
                         VectorSchemaRoot back = CudaArrowDownload.download(imported, allocator, transfer, stream)) {
                        report.check("upload -> export -> import (FULL) -> download keeps every value",
                                back.getRowCount() == table.getRowCount() && table.equals(back),
                                ROWS + " rows, " + table.getFieldVectors().size() + " columns");
                    }
                }
            }
            // Bandwidth: the library's paths and raw copies of the same bytes, same run, best of ROUNDS.
            long up = Long.MAX_VALUE;
            long down = Long.MAX_VALUE;
            for (int r = 0; r < ROUNDS; r++) {
                long t0 = System.nanoTime();
                try (CudaArrowBatch batch = CudaArrowUpload.upload(table, transfer, stream)) {
                    stream.synchronize();
                    long t1 = System.nanoTime();
                    try (VectorSchemaRoot back = CudaArrowDownload.download(batch, allocator, transfer, stream)) {
                        long t2 = System.nanoTime();
                        up = Math.min(up, t1 - t0);
                        down = Math.min(down, t2 - t1);
                    }
                }
            }
            long rawUp = Long.MAX_VALUE;
            long rawDown = Long.MAX_VALUE;
            try (PinnedHostBuffer pinned = PinnedHostBuffer.allocate(bytes);
                 DeviceBuffer dev = DeviceBuffer.allocate(device, bytes)) {
                for (int r = 0; r < ROUNDS; r++) {
                    long t0 = System.nanoTime();
                    CudaCopies.hostToDevice(pinned.segment(), dev, 0);
                    long t1 = System.nanoTime();
                    CudaCopies.deviceToHost(dev, 0, pinned.segment());
                    long t2 = System.nanoTime();
                    rawUp = Math.min(rawUp, t1 - t0);
                    rawDown = Math.min(rawDown, t2 - t1);
                }
            }
            report.line("batch bytes", Long.toString(bytes));
            report.line("upload (VectorSchemaRoot -> device)", rate(bytes, up) + "  vs raw cuMemcpyHtoD " + rate(bytes, rawUp));
            report.line("download (device -> VectorSchemaRoot)", rate(bytes, down) + "  vs raw cuMemcpyDtoH "
                    + rate(bytes, rawDown));
        }
        long left = CudaCounters.snapshot().deviceBytesOutstanding() - deviceBytesBefore;
        report.check("device memory back to its level before the section", left == 0, left + " bytes outstanding");
    }

    private static String rate(long bytes, long nanos) {
        return String.format(Locale.ROOT, "%.2f GB/s", bytes / (double) Math.max(1, nanos));
    }

    /** Integers with nulls, doubles, booleans, strings with nulls, lists of integers. */
    static VectorSchemaRoot sample(BufferAllocator allocator) {
        IntVector ints = new IntVector("ints", allocator);
        Float8Vector doubles = new Float8Vector("doubles", allocator);
        BitVector bools = new BitVector("bools", allocator);
        VarCharVector text = new VarCharVector("text", allocator);
        ListVector lists = ListVector.empty("lists", allocator);
        List<FieldVector> vectors = List.of(ints, doubles, bools, text, lists);
        try {
            ints.allocateNew(ROWS);
            doubles.allocateNew(ROWS);
            bools.allocateNew(ROWS);
            text.allocateNew(ROWS * 8L, ROWS);
            UnionListWriter w = lists.getWriter();
            for (int i = 0; i < ROWS; i++) {
                if (i % 7 == 0) {
                    ints.setNull(i);
                    text.setNull(i);
                } else {
                    ints.set(i, i * 31);
                    text.setSafe(i, ("row" + i).getBytes(StandardCharsets.UTF_8));
                }
                doubles.set(i, i * 0.5);
                bools.set(i, i % 3 == 0 ? 1 : 0);
                w.setPosition(i);
                w.startList();
                for (int k = 0; k < i % 4; k++) {
                    w.integer().writeInt(i + k);
                }
                w.endList();
            }
            for (FieldVector v : vectors) {
                v.setValueCount(ROWS);
            }
            VectorSchemaRoot root = new VectorSchemaRoot(vectors);
            root.setRowCount(ROWS);
            return root;
        } catch (RuntimeException | Error e) {
            vectors.forEach(FieldVector::close);
            throw e;
        }
    }
}
