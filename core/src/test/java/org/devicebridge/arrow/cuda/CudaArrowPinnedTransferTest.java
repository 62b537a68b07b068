package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.Device;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferCounts;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Arrow Java roots in pinned host memory go to the device and back with no staging copy and one host wait
 * per batch; roots in pageable memory go through the staging ring; the values survive either way. The
 * pinned roots come from {@link PinnedArrowMemory}, the pinned allocation manager.
 */
@RequiresCuda
class CudaArrowPinnedTransferTest {
    private static final Device DEVICE = Device.cuda(0);
    private static final int ROWS = 50_000;
    /** Families whose values take 256 KiB or more at {@link #ROWS} rows (64-bit integers, string data, list children). */
    private static final java.util.Set<String> LARGE_VALUES = java.util.Set.of("integers", "strings", "lists");

    private BufferAllocator pageable;
    private PinnedArrowMemory pinnedMemory;
    private BufferAllocator pinned;
    private ExportTestSupport.Baseline baseline;
    private long deviceBytesBefore;
    private int downloadsBefore;
    private CudaStream stream;
    private HostDeviceTransfer transfer;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        pageable = ExportTestSupport.allocator();
        pinnedMemory = PinnedArrowMemory.create();
        pinned = pinnedMemory.newRootAllocator();
        downloadsBefore = DownloadedBuffers.LIVE.get();
        stream = CudaStream.create(DEVICE);
        transfer = HostDeviceTransfer.create(DEVICE, TransferOptions.defaults()
                .withStagingBytes(4L << 20).withChunkBytes(256L << 10));
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
    }

    @AfterEach
    void tearDown() {
        transfer.close();
        stream.synchronize();
        stream.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
        assertEquals(downloadsBefore, DownloadedBuffers.LIVE.get(), "every downloaded block freed");
        assertEquals(0, pinned.getAllocatedMemory(), "pinned Arrow memory released");
        pinned.close();
        pinnedMemory.close();
        baseline.assertNothingLeaked(pageable);
        pageable.close();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"integers", "strings", "lists", "struct", "nested", "dictionary"})
    void aPinnedRootGoesUpWithOneHostWaitAndComesBackWithoutStaging(String family) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, pinned, ROWS, true, dictionaries);
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
            root.setRowCount(ROWS);
            FieldVector first = root.getVector(0);
            assertTrue(PointerAttributes.isPageLocked(java.lang.foreign.MemorySegment.ofAddress(
                    first.getValidityBuffer().memoryAddress()).reinterpret(Math.max(1, first.getValidityBuffer().capacity()))),
                    "the test allocator gives pinned memory");
            TransferCounts s0 = TransferCounts.of(transfer);
            try (CudaArrowBatch batch = CudaArrow.upload(root, dictionaries, DeviceCopies.of(transfer, stream))) {
                TransferCounts s1 = TransferCounts.of(transfer);
                assertEquals(s0.stagedBytes(), s1.stagedBytes(), "nothing staged on the way up");
                assertTrue(s1.directCopies() > s0.directCopies(), "every buffer copied directly");
                assertEquals(s0.hostWaits() + 1, s1.hostWaits(), "one host wait for the upload");
                CudaArrowRoundTripTest.assertSameNullCounts(root, dictionaries, batch);
                DictionaryProvider.MapDictionaryProvider back = new DictionaryProvider.MapDictionaryProvider();
                try (VectorSchemaRoot down = CudaArrow.download(batch, back, new DeviceCopies(pinned, transfer, stream))) {
                    TransferCounts s2 = TransferCounts.of(transfer);
                    assertEquals(s1.stagedBytes(), s2.stagedBytes(), "nothing staged on the way down");
                    long copies = s2.directCopies() - s1.directCopies();
                    long waits = s2.hostWaits() - s1.hostWaits();
                    if (LARGE_VALUES.contains(family)) {
                        // bitmaps and offsets first, then values of 256 KiB or more, checked and loaded meanwhile
                        assertEquals(2, waits, "one host wait for what the checks read, one for the values");
                        assertTrue(copies >= 2, "the values come in copies of their own: " + copies);
                    } else {
                        assertTrue(waits == 1 && copies == 1 || waits == 2 && copies >= 2, copies + " copies, " + waits
                                + " waits: one copy and one wait, or the values after the rest");
                    }
                    assertSameValues(root, down);
                } finally {
                    ExportTestSupport.closeDictionaries(back);
                }
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"integers", "strings", "lists", "nested"})
    void aPageableRootIsStagedBothWaysAndSurvives(String family) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, pageable, ROWS, true, dictionaries);
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
            root.setRowCount(ROWS);
            TransferCounts s0 = TransferCounts.of(transfer);
            try (CudaArrowBatch batch = CudaArrow.upload(root, dictionaries, DeviceCopies.of(transfer, stream))) {
                TransferCounts s1 = TransferCounts.of(transfer);
                assertEquals(s0.directCopies(), s1.directCopies(), "nothing copied directly");
                CudaArrowRoundTripTest.assertSameNullCounts(root, dictionaries, batch);
                assertTrue(s1.stagedBytes() > s0.stagedBytes());
                try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(pageable, transfer, stream))) {
                    TransferCounts s2 = TransferCounts.of(transfer);
                    assertEquals(s1.directCopies(), s2.directCopies(), "a pageable block is staged");
                    assertSameValues(root, down);
                }
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"integers", "strings"})
    void uploadAsyncOfAPinnedRootWaitsForNothingAndTheCallersEventOrdersIt(String family) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, pinned, ROWS, false, dictionaries);
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors);
             CudaEvent done = CudaEvent.acquire(DEVICE)) {
            root.setRowCount(ROWS);
            long waits = TransferCounts.of(transfer).hostWaits();
            try (CudaArrowBatch batch = CudaArrow.uploadAsync(root, dictionaries, DeviceCopies.of(transfer, stream))) {
                assertEquals(waits, TransferCounts.of(transfer).hostWaits(), "no host wait");
                CudaArrowRoundTripTest.assertSameNullCounts(root, dictionaries, batch);
                done.record(stream);
                done.synchronize();
                try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(pageable, transfer, stream))) {
                    assertSameValues(root, down);
                }
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    /** Value equality vector by vector (the TSV form prints binary values as array identities). */
    private static void assertSameValues(VectorSchemaRoot expected, VectorSchemaRoot actual) {
        assertEquals(expected.getRowCount(), actual.getRowCount(), "rows");
        for (int i = 0; i < expected.getFieldVectors().size(); i++) {
            FieldVector e = expected.getVector(i);
            FieldVector a = actual.getVector(i);
            assertEquals(e.getValueCount(), a.getValueCount(), e.getName());
            for (int row = 0; row < e.getValueCount(); row++) {
                Object x = e.getObject(row);
                Object y = a.getObject(row);
                boolean same = x instanceof byte[] bx && y instanceof byte[] by ? java.util.Arrays.equals(bx, by)
                        : java.util.Objects.equals(x, y);
                int r = row;
                assertTrue(same, () -> e.getName() + " row " + r + ": " + x + " vs " + y);
            }
        }
    }
}
