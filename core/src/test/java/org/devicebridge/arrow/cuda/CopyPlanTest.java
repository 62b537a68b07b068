package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.devicebridge.ValidationException;
import org.junit.jupiter.api.Test;

/**
 * The planning of one batch of device-to-host copies, without a GPU: every range found in exactly one
 * allocation, ranges merged only inside one allocation, host copies that keep the device alignment and
 * never overlap, and a lookup that finds every requested range (and nothing else).
 */
class CopyPlanTest {
    private static final long A = 0x7f00_0000_0000L; // two allocations, 4096 bytes apart
    private static final long B = A + 4096 + 64;
    private static final long[] STARTS = {A, B};
    private static final long[] SIZES = {4096, 1000};

    @Test
    void overlappingAndTouchingRangesOfOneAllocationBecomeOneCopy() {
        CopyPlan plan = CopyPlan.of(STARTS, SIZES, new long[] {A + 130, A, A + 40, A + 230},
                new long[] {100, 50, 20, 8});
        // [A, A+50) + [A+40, A+60) overlap; [A+130, A+230) touches [A+230, A+238); the gap [A+60, A+130) stays
        assertEquals(2, plan.count());
        assertEquals(A, plan.address(0));
        assertEquals(60, plan.size(0));
        assertEquals(A + 130, plan.address(1));
        assertEquals(108, plan.size(1));
        assertEquals(0, plan.allocation(0));
        assertEquals(0, plan.allocation(1));
    }

    @Test
    void rangesOfOneAllocationLessThan64BytesApartBecomeOneCopyOverTheGap() {
        // a packed upload: buffers at 64-byte aligned offsets with padding between them
        CopyPlan plan = CopyPlan.of(STARTS, SIZES, new long[] {A, A + 64, A + 192, A + 320},
                new long[] {60, 100, 1, 64});
        assertEquals(2, plan.count(), "gaps of 4 and 28 bytes are copied over; the gap of 127 bytes is not");
        assertEquals(A, plan.address(0));
        assertEquals(193, plan.size(0));
        assertEquals(plan.find(A, 60) + 192, plan.find(A + 192, 1), "the device distances are kept on the host");
        assertEquals(A + 320, plan.address(1));
    }

    @Test
    void rangesOfDifferentAllocationsAreNeverMergedEvenWhenAdjacent() {
        long[] starts = {A, A + 64};
        long[] sizes = {64, 64};
        CopyPlan plan = CopyPlan.of(starts, sizes, new long[] {A, A + 64}, new long[] {64, 64});
        assertEquals(2, plan.count());
        assertEquals(0, plan.allocation(0));
        assertEquals(1, plan.allocation(1));
    }

    @Test
    void aRangeOutsideEveryAllocationIsADeviceError() {
        for (long[] range : new long[][] {{A + 4090, 7}, {A - 8, 8}, {B + 999, 2}, {A + 4096, 8}}) {
            ValidationException e = assertThrows(ValidationException.class,
                    () -> CopyPlan.of(STARTS, SIZES, new long[] {range[0]}, new long[] {range[1]}));
            assertEquals(ValidationException.Category.DEVICE, e.category(), e.getMessage());
            assertTrue(e.getMessage().contains("within one device allocation"), e.getMessage());
        }
        // the last byte of each allocation is fine
        assertEquals(2, CopyPlan.of(STARTS, SIZES, new long[] {A + 4095, B + 999}, new long[] {1, 1}).count());
    }

    @Test
    void emptyRangesAreSkippedAndNotFound() {
        CopyPlan plan = CopyPlan.of(STARTS, SIZES, new long[] {A, 0, B}, new long[] {0, 0, 0});
        assertEquals(0, plan.count());
        assertEquals(0, plan.hostBytes());
        assertEquals(-1, plan.find(A, 1));
    }

    @Test
    void aRangeInOverlappingAllocationsIsFoundInTheOneThatHoldsIt() {
        // buffers whose allocation the driver does not know are their own "allocations" and may overlap
        long[] starts = {A, A + 16};
        long[] sizes = {4096, 8};
        CopyPlan plan = CopyPlan.of(starts, sizes, new long[] {A + 16, A + 100}, new long[] {64, 8});
        assertEquals(0, plan.allocation(0), "only the large allocation holds 64 bytes at A + 16");
        assertTrue(plan.find(A + 16, 64) >= 0);
        assertTrue(plan.find(A + 100, 8) >= 0);
    }

    @Test
    void randomRangesLandAtDisjointHostPlacesThatKeepTheirAlignmentAndAreAllFound() {
        Random r = new Random(42);
        for (int round = 0; round < 500; round++) {
            int n = r.nextInt(12);
            long[] addresses = new long[n];
            long[] sizes = new long[n];
            for (int i = 0; i < n; i++) {
                int k = r.nextInt(2);
                sizes[i] = r.nextInt(4) == 0 ? 0 : 1 + r.nextInt((int) SIZES[k] / 4);
                addresses[i] = STARTS[k] + r.nextLong(SIZES[k] - sizes[i] + 1);
            }
            CopyPlan plan = CopyPlan.of(STARTS, SIZES, addresses, sizes);
            long end = 0;
            for (int k = 0; k < plan.count(); k++) {
                assertTrue(plan.hostOffset(k) >= end, "copies are disjoint and in order on the host");
                assertEquals(plan.address(k) % CopyPlan.ALIGNMENT, plan.hostOffset(k) % CopyPlan.ALIGNMENT,
                        "a copy keeps its device address modulo 64");
                long start = STARTS[plan.allocation(k)];
                assertTrue(plan.address(k) >= start
                        && plan.address(k) + plan.size(k) <= start + SIZES[plan.allocation(k)], "inside its allocation");
                if (k > 0 && plan.allocation(k) == plan.allocation(k - 1)) {
                    assertTrue(plan.address(k) >= plan.address(k - 1) + plan.size(k - 1) + CopyPlan.ALIGNMENT,
                            "merged where they lie less than 64 bytes apart");
                }
                end = plan.hostOffset(k) + plan.size(k);
            }
            assertEquals(end, plan.hostBytes());
            for (int i = 0; i < n; i++) {
                if (sizes[i] == 0) {
                    continue;
                }
                long at = plan.find(addresses[i], sizes[i]);
                assertTrue(at >= 0 && at + sizes[i] <= plan.hostBytes(), "range " + i + " is found");
                assertEquals(addresses[i] % CopyPlan.ALIGNMENT, at % CopyPlan.ALIGNMENT, "at its device alignment");
            }
        }
    }

    @Test
    void findRejectsRangesNoCopyCovers() {
        CopyPlan plan = CopyPlan.of(STARTS, SIZES, new long[] {A + 64, B}, new long[] {64, 10});
        assertEquals(-1, plan.find(A, 8), "before the first copy");
        assertEquals(-1, plan.find(A + 120, 16), "past the end of a copy");
        assertEquals(-1, plan.find(A + 200, 1), "between copies");
        assertEquals(-1, plan.find(A + 64, -1), "a negative size");
        assertTrue(plan.find(A + 100, 28) >= 0, "inside a copy");
        assertEquals(plan.find(A + 64, 64) + 36, plan.find(A + 100, 28), "at its distance from the copy's start");
    }

    @Test
    void piecesCoverEveryPlannedByteOnceWithTheBytesOnlyLateRangesHoldLast() {
        Random r = new Random(21);
        for (int round = 0; round < 500; round++) {
            int n = 1 + r.nextInt(8);
            long[] addresses = new long[n];
            long[] sizes = new long[n];
            boolean[] late = new boolean[n];
            for (int i = 0; i < n; i++) {
                int holder = r.nextInt(2);
                long size = r.nextInt(holder == 0 ? 1200 : 300);
                addresses[i] = STARTS[holder] + r.nextLong(SIZES[holder] - size + 1);
                sizes[i] = size;
                late[i] = r.nextBoolean();
            }
            CopyPlan plan = CopyPlan.of(STARTS, SIZES, addresses, sizes);
            long minLate = r.nextBoolean() ? 1 : 1 + r.nextInt(200);
            CopyPlan.Pieces pieces = plan.pieces(addresses, sizes, late, minLate);
            // every planned device byte lands once, where the plan puts it
            java.util.Map<Long, Long> where = new java.util.HashMap<>();
            java.util.Map<Long, Boolean> lateByte = new java.util.HashMap<>();
            for (int k = 0; k < pieces.count(); k++) {
                assertTrue(pieces.sizes()[k] > 0, "no empty piece");
                for (long b = 0; b < pieces.sizes()[k]; b++) {
                    long device = pieces.addresses()[k] + b;
                    assertEquals(null, where.put(device, pieces.hostOffsets()[k] + b), "byte copied once");
                    lateByte.put(device, k >= pieces.leading());
                    assertEquals(pieces.allocations()[k], plan.allocation(copyOf(plan, device)));
                }
            }
            long planned = 0;
            for (int k = 0; k < plan.count(); k++) {
                planned += plan.size(k);
                for (long b = 0; b < plan.size(k); b++) {
                    assertEquals(plan.hostOffset(k) + b, where.get(plan.address(k) + b), "at the plan's host offset");
                }
            }
            assertEquals(planned, where.size());
            // a byte is late only if a late range holds it and no other range does
            for (var e : lateByte.entrySet()) {
                if (!e.getValue()) {
                    continue;
                }
                boolean inLate = false;
                for (int i = 0; i < n; i++) {
                    boolean holds = e.getKey() >= addresses[i] && e.getKey() < addresses[i] + sizes[i];
                    assertTrue(!holds || late[i], "a byte an early range holds is never late");
                    inLate |= holds;
                }
                assertTrue(inLate, "a late byte belongs to a late range");
            }
            for (int k = pieces.leading(); k < pieces.count(); k++) {
                assertTrue(pieces.sizes()[k] >= minLate, "late pieces are at least minLateBytes");
            }
        }
    }

    @Test
    void aPackedBatchComesBackAsLeadingBitmapsAndOffsetsThenItsValues() {
        // validity [A, A+64), values [A+64, A+1064), offsets [A+1088, A+1188), data [A+1216, A+3216): one copy
        long[] addresses = {A, A + 64, A + 1088, A + 1216};
        long[] sizes = {64, 1000, 100, 2000};
        CopyPlan plan = CopyPlan.of(STARTS, SIZES, addresses, sizes);
        assertEquals(1, plan.count());
        CopyPlan.Pieces pieces = plan.pieces(addresses, sizes, new boolean[] {false, true, false, true}, 512);
        assertEquals(4, pieces.count());
        assertEquals(2, pieces.leading());
        assertEquals(A, pieces.addresses()[0]);
        assertEquals(64, pieces.sizes()[0]);
        assertEquals(A + 1064, pieces.addresses()[1], "the padding after the values and the offsets lead");
        assertEquals(1216 - 1064, pieces.sizes()[1]);
        assertEquals(A + 64, pieces.addresses()[2]);
        assertEquals(A + 1216, pieces.addresses()[3]);
        CopyPlan.Pieces fewer = plan.pieces(addresses, sizes, new boolean[] {false, true, false, true}, 1001);
        assertEquals(2, fewer.count(), "the values are too small to come on their own");
        assertEquals(1, fewer.leading());
        assertEquals(A, fewer.addresses()[0]);
        assertEquals(1216, fewer.sizes()[0]);
        assertEquals(A + 1216, fewer.addresses()[1]);
    }

    /** The plan's copy that holds {@code device}. */
    private static int copyOf(CopyPlan plan, long device) {
        for (int k = 0; k < plan.count(); k++) {
            if (device >= plan.address(k) && device < plan.address(k) + plan.size(k)) {
                return k;
            }
        }
        throw new AssertionError("no copy holds 0x" + Long.toHexString(device));
    }
}
