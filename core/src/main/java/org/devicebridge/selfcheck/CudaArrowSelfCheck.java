package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.NonTemporalCopy;

/**
 * Self-check section "Arrow on CUDA": where a device exists, uploads a sample table (integers with nulls,
 * doubles, booleans, strings with nulls, lists; about 36 MB), exports it as a CUDA {@code ArrowDeviceArray},
 * imports that at FULL, downloads it and compares the values, from a root in ordinary (pageable) memory and
 * from one in pinned memory; then prints the upload and download bandwidth of each (the whole call: buffers
 * gathered, copies queued, synchronised) next to a raw {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync}
 * of the same number of bytes from pinned memory, measured in the same run. Without a device it reports
 * "skipped: reason". The pinned root comes from {@link org.devicebridge.arrow.cuda.PinnedArrowMemory}, the
 * pageable one from a {@link ArrowMemory#pooled pooled ArrowMemory} (freed blocks reused, as for repeated transfers); during the
 * section the device's default pool keeps freed memory ({@link Cuda#setMemoryPoolThreshold}), and its threshold
 * is put back afterwards.
 */
final class CudaArrowSelfCheck implements SelfCheckSection {
    private static final int ROWS = 1 << 20;
    private static final int ROUNDS = 30;
    /** Host memory a pooled allocator keeps, and device memory the default pool keeps, during the section. */
    private static final long POOL_BYTES = 1L << 30;

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
        Device device = Device.cuda(0);
        report.line("device", Cuda.properties(device).toString());
        long deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        long threshold = Cuda.memoryPoolThreshold(device);
        Cuda.setMemoryPoolThreshold(device, Math.max(threshold, POOL_BYTES));
        try (PinnedArrowMemory pinnedMemory = PinnedArrowMemory.create();
             ArrowMemory pooledMemory = ArrowMemory.pooled(POOL_BYTES);
             BufferAllocator pageable = pooledMemory.newRootAllocator();
             BufferAllocator pinned = pinnedMemory.newRootAllocator();
             VectorSchemaRoot table = sample(pageable);
             VectorSchemaRoot pinnedTable = sample(pinned);
             CudaStream stream = CudaStream.create(device);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(device, TransferOptions.defaults())) {
            roundTrip(report, "pageable root", table, new DeviceCopies(pageable, transfer, stream));
            roundTrip(report, "pinned root", pinnedTable, new DeviceCopies(pinned, transfer, stream));
            long bytes;
            long deviceBytes = CudaCounters.snapshot().deviceBytesOutstanding();
            try (CudaArrowBatch batch = CudaArrow.upload(table, DeviceCopies.of(transfer, stream))) {
                // one packed device allocation per uploaded batch: the device bytes the upload added
                bytes = CudaCounters.snapshot().deviceBytesOutstanding() - deviceBytes;
            }
            Timing fromPageable = measure(table, pageable, transfer, stream);
            long stagedBefore = transfer.stagedBytes();
            Timing fromPinned = measure(pinnedTable, pinned, transfer, stream);
            long staged = transfer.stagedBytes() - stagedBefore;
            Timing raw = raw(device, bytes, stream);
            report.line("batch bytes", bytes + " (" + ROWS + " rows, " + table.getFieldVectors().size() + " columns)");
            report.line("memory", "pageable root: pooled ArrowMemory (" + (POOL_BYTES >> 20) + " MiB kept); device pool: "
                    + "Cuda.setMemoryPoolThreshold(" + device + ", " + Math.max(threshold, POOL_BYTES) + ") during the section");
            report.line("staging packing", NonTemporalCopy.available()
                    ? "an upload's last chunks with non-temporal stores (x86-64 loop)"
                    : "MemorySegment.copy only (non-temporal stores are opt-in: -D" + NonTemporalCopy.PROPERTY + "=true)");
            report.line("raw pinned cuMemcpyHtoDAsync / DtoHAsync", rate(bytes, raw.up) + " / " + rate(bytes, raw.down));
            report.line("upload, pageable root (staged)", ratio(bytes, fromPageable.up, raw.up));
            report.line("upload, pinned root (direct)", ratio(bytes, fromPinned.up, raw.up));
            report.line("download, into pageable root (staged)", ratio(bytes, fromPageable.down, raw.down));
            report.line("download, into pinned root (direct)", ratio(bytes, fromPinned.down, raw.down));
            report.check("pinned roots move without staging", staged == 0,
                    String.format(Locale.ROOT, "%d staged bytes in %d pinned round trips", staged, ROUNDS));
        } finally {
            Cuda.setMemoryPoolThreshold(device, threshold);
        }
        long left = CudaCounters.snapshot().deviceBytesOutstanding() - deviceBytesBefore;
        report.check("device memory back to its level before the section", left == 0, left + " bytes outstanding");
    }

    /** upload -> export -> import (FULL) -> download into {@code allocator}, values compared. */
    private static void roundTrip(Report report, String what, VectorSchemaRoot table, DeviceCopies copies) {
        int device = copies.device().ordinal();
        try (CudaArrowBatch batch = CudaArrow.upload(table, copies);
             Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, copies, out);
            report.check(what + ": export: device type CUDA with a sync event",
                    ArrowDeviceArray.device_type(out) == DeviceKind.CUDA.code()
                            && ArrowDeviceArray.device_id(out) == device
                            && !ArrowDeviceArray.sync_event(out).equals(MemorySegment.NULL), "");
            try (CudaArrowBatch imported = CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.FULL, copies);
                 VectorSchemaRoot back = CudaArrow.download(imported, copies)) {
                report.check(what + ": upload -> export -> import (FULL) -> download keeps every value",
                        back.getRowCount() == table.getRowCount() && table.equals(back),
                        ROWS + " rows, " + table.getFieldVectors().size() + " columns");
            }
        }
    }

    /** Best-of-ROUNDS nanoseconds of one upload and one download (the first rounds warm the JIT up). */
    private record Timing(long up, long down) {}

    /** The library's whole calls: upload + synchronise, download into a fresh root of {@code allocator}. */
    private static Timing measure(VectorSchemaRoot table, BufferAllocator allocator, HostDeviceTransfer transfer,
                                  CudaStream stream) {
        long up = Long.MAX_VALUE;
        long down = Long.MAX_VALUE;
        DeviceCopies copies = new DeviceCopies(allocator, transfer, stream);
        for (int r = 0; r < ROUNDS; r++) {
            long t0 = System.nanoTime();
            try (CudaArrowBatch batch = CudaArrow.upload(table, copies)) {
                stream.synchronize();
                long t1 = System.nanoTime();
                try (VectorSchemaRoot back = CudaArrow.download(batch, copies)) {
                    long t2 = System.nanoTime();
                    if (back.getRowCount() == table.getRowCount()) { // compared in roundTrip; here only timed
                        up = Math.min(up, t1 - t0);
                        down = Math.min(down, t2 - t1);
                    }
                }
            }
        }
        return new Timing(up, down);
    }

    /** Raw cuMemcpyHtoDAsync / cuMemcpyDtoHAsync of {@code bytes} from pinned memory, each synchronised. */
    private static Timing raw(Device device, long bytes, CudaStream stream) {
        long up = Long.MAX_VALUE;
        long down = Long.MAX_VALUE;
        MemorySegment s = MemorySegment.ofAddress(stream.address());
        try (PinnedHostBuffer pinned = PinnedHostBuffer.allocate(bytes);
             DeviceBuffer dev = DeviceBuffer.allocate(device, bytes)) {
            MemorySegment host = pinned.segment();
            host.fill((byte) 1);
            for (int r = 0; r < ROUNDS; r++) {
                long t0 = System.nanoTime();
                Cuda.check("cuMemcpyHtoDAsync_v2", cuda_driver_h.cuMemcpyHtoDAsync_v2(dev.address(), host, bytes, s));
                Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(s));
                long t1 = System.nanoTime();
                Cuda.check("cuMemcpyDtoHAsync_v2", cuda_driver_h.cuMemcpyDtoHAsync_v2(host, dev.address(), bytes, s));
                Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(s));
                long t2 = System.nanoTime();
                up = Math.min(up, t1 - t0);
                down = Math.min(down, t2 - t1);
            }
        }
        return new Timing(up, down);
    }

    private static String rate(long bytes, long nanos) {
        return String.format(Locale.ROOT, "%.2f GB/s", bytes / (double) Math.max(1, nanos));
    }

    private static String ratio(long bytes, long nanos, long rawNanos) {
        return String.format(Locale.ROOT, "%s (%.2f of raw pinned)", rate(bytes, nanos), rawNanos / (double) Math.max(1, nanos));
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
