package org.devicebridge.fuzz;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;

/**
 * Deterministic structure-aware generator of DLManagedTensorVersioned / DLManagedTensor values: mostly
 * valid tensors (random dtype, device, ndim, shape, compact or random strides, byte offset) with random
 * mutations (version, flags, ndim, dtype, extreme shapes/strides/offsets, NULL pointers, no deleter).
 *
 * <p>Memory-safety contract: the data pointer is NULL or {@link #HALF} bytes into a {@code 2 * HALF} byte
 * buffer; a tensor whose exact byte range (computed here with BigInteger) fits a long but not that buffer
 * is never generated (a too-small buffer is undetectable); one whose range does not fit a long must be
 * rejected, and the oracle checks that it is. Shape and strides arrays have 70 slots (ndim may claim up to
 * 64 and must be rejected above that), the slots past ndim hold 1.
 */
final class DLPackFuzz {
    static final long HALF = 16_384;

    static final class Input {
        MemorySegment tensor;
        boolean versioned;
        boolean hasDeleter;
        MemorySegment dataBuffer;  // the whole 2 * HALF buffer, or null
        boolean rangeOverflows;    // the exact byte range does not fit a long: must be rejected
        final List<String> mutations = new ArrayList<>();
    }

    private final Fuzz.Mem mem;
    private final SplittableRandom r;

    DLPackFuzz(Fuzz.Mem mem) {
        this.mem = mem;
        this.r = mem.r;
    }

    private static final int[] BITS = {8, 16, 32, 64, 1, 4, 128, 2, 6, 0, 7, 255};
    private static final int[] DEVICES = {1, 1, 1, 1, 2, 3, 13, 11, 4, 0, 99, 19};

    Input generate() {
        Input in = new Input();
        in.versioned = r.nextInt(3) != 0;
        int ndim = r.nextInt(0, 5);
        long[] shape = new long[70];
        long[] strides = new long[70];
        java.util.Arrays.fill(shape, 1);
        java.util.Arrays.fill(strides, 1);
        for (int i = 0; i < ndim; i++) {
            shape[i] = r.nextInt(0, 6);
        }
        int code = r.nextInt(8) == 0 ? r.nextInt(0, 20) : new int[] {0, 1, 2, 6, 5, 4}[r.nextInt(6)];
        int bits = r.nextInt(3) == 0 ? BITS[r.nextInt(BITS.length)] : new int[] {8, 16, 32, 64}[r.nextInt(4)];
        int lanes = r.nextInt(10) == 0 ? new int[] {0, 2, 4, 65535}[r.nextInt(4)] : 1;
        boolean compact = r.nextInt(3) != 0;
        long step = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            strides[i] = compact ? step : r.nextInt(-6, 7);
            step *= Math.max(shape[i], 1);
        }
        long byteOffset = r.nextInt(4) == 0 ? 8L * r.nextInt(0, 8) : 0;
        int deviceType = DEVICES[r.nextInt(DEVICES.length)];
        int deviceId = r.nextInt(8) == 0 ? r.nextInt(-1, 3) : 0;
        int major = 1;
        int minor = r.nextInt(4) == 0 ? r.nextInt(0, 4) : 3;
        long flags = r.nextInt(4) == 0 ? r.nextInt(0, 8) : 0;
        boolean nullData = r.nextInt(20) == 0;
        boolean nullShape = false;
        boolean nullStrides = r.nextInt(8) == 0;
        in.hasDeleter = r.nextInt(15) != 0;
        int mutations = r.nextInt(10) < 4 ? 0 : r.nextInt(1, 4);
        for (int m = 0; m < mutations; m++) {
            switch (r.nextInt(10)) {
                case 0 -> { ndim = new int[] {-1, 0, 5, 64, 65, Integer.MAX_VALUE, Integer.MIN_VALUE}[r.nextInt(7)]; in.mutations.add("ndim=" + ndim); }
                case 1 -> { int i = r.nextInt(0, 4); shape[i] = extreme(); in.mutations.add("shape[" + i + "]=" + shape[i]); }
                case 2 -> { int i = r.nextInt(0, 4); strides[i] = extreme(); in.mutations.add("strides[" + i + "]=" + strides[i]); }
                case 3 -> { byteOffset = new long[] {-1, Long.MAX_VALUE, 1L << 62, 3, 1}[r.nextInt(5)]; in.mutations.add("byte_offset=" + byteOffset); }
                case 4 -> { major = new int[] {0, 2, -1}[r.nextInt(3)]; minor = r.nextInt(-1, 9); in.mutations.add("version=" + major + "." + minor); }
                case 5 -> { flags = r.nextBoolean() ? r.nextLong() : 1L << r.nextInt(64); in.mutations.add("flags=" + flags); }
                case 6 -> { nullShape = true; in.mutations.add("shape=NULL"); }
                case 7 -> { code = r.nextInt(-1, 256); bits = r.nextInt(0, 256); in.mutations.add("dtype=" + code + "/" + bits); }
                case 8 -> { nullData = true; in.mutations.add("data=NULL"); }
                default -> { deviceType = r.nextInt(-2, 40); in.mutations.add("device_type=" + deviceType); }
            }
        }
        in.rangeOverflows = false;
        Range range = range(ndim, shape, strides, nullStrides, bits, lanes, byteOffset);
        if (range != null && !range.overflows && (range.lo < -HALF || range.hi > HALF)) {
            // a range that fits a long but not the buffer: the importer cannot know the buffer is smaller
            for (int i = 0; i < 70; i++) {
                shape[i] = Math.min(Math.max(shape[i], 0), 1);
                strides[i] = 1;
            }
            byteOffset = 0;
            lanes = Math.min(lanes, 4);
            in.mutations.add("(shrunk to fit the buffer)");
            range = range(ndim, shape, strides, nullStrides, bits, lanes, byteOffset);
        }
        in.rangeOverflows = range != null && range.overflows;

        MemorySegment shapeArr = mem.struct(70 * 8);
        MemorySegment stridesArr = mem.struct(70 * 8);
        for (int i = 0; i < 70; i++) {
            shapeArr.setAtIndex(ValueLayout.JAVA_LONG, i, shape[i]);
            stridesArr.setAtIndex(ValueLayout.JAVA_LONG, i, strides[i]);
        }
        MemorySegment t;
        MemorySegment dl;
        if (in.versioned) {
            t = mem.struct(DLManagedTensorVersioned.sizeof());
            MemorySegment v = DLManagedTensorVersioned.version(t);
            DLPackVersion.major(v, major);
            DLPackVersion.minor(v, minor);
            DLManagedTensorVersioned.flags(t, flags);
            DLManagedTensorVersioned.deleter(t, in.hasDeleter ? Fuzz.DELETER : MemorySegment.NULL);
            DLManagedTensorVersioned.manager_ctx(t, MemorySegment.ofAddress(0x1234));
            dl = DLManagedTensorVersioned.dl_tensor(t);
        } else {
            t = mem.struct(DLManagedTensor.sizeof());
            DLManagedTensor.deleter(t, in.hasDeleter ? Fuzz.DELETER : MemorySegment.NULL);
            dl = DLManagedTensor.dl_tensor(t);
        }
        if (!nullData) {
            in.dataBuffer = mem.struct(2 * HALF);
            for (long p = 0; p < 2 * HALF; p += 64) {
                in.dataBuffer.set(ValueLayout.JAVA_LONG, p, r.nextLong());
            }
            DLTensor.data(dl, in.dataBuffer.asSlice(HALF));
        }
        MemorySegment dev = DLTensor.device(dl);
        DLDevice.device_type(dev, deviceType);
        DLDevice.device_id(dev, deviceId);
        DLTensor.ndim(dl, ndim);
        MemorySegment dt = DLTensor.dtype(dl);
        DLDataType.code(dt, (byte) code);
        DLDataType.bits(dt, (byte) bits);
        DLDataType.lanes(dt, (short) lanes);
        DLTensor.shape(dl, nullShape ? MemorySegment.NULL : shapeArr);
        DLTensor.strides(dl, nullStrides ? MemorySegment.NULL : stridesArr);
        DLTensor.byte_offset(dl, byteOffset);
        in.tensor = t;
        return in;
    }

    private long extreme() {
        return new long[] {-1, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 32, 1L << 62, 0, 3, -4}[r.nextInt(8)];
    }

    /** The exact byte range relative to data, or null if the tensor is invalid before any range arithmetic. */
    private record Range(long lo, long hi, boolean overflows) {}

    private static Range range(int ndim, long[] shape, long[] strides, boolean nullStrides, int bits, int lanes,
                               long byteOffset) {
        if (ndim < 0 || ndim > 64) {
            return null;
        }
        BigInteger elem = BigInteger.valueOf(Math.max(1, ((bits & 0xFF) * (long) (lanes & 0xFFFF) + 7) / 8));
        BigInteger lo = BigInteger.ZERO;
        BigInteger hi = BigInteger.ZERO;
        BigInteger count = BigInteger.ONE;
        BigInteger step = BigInteger.ONE;
        for (int i = ndim - 1; i >= 0; i--) {
            if (shape[i] < 0) {
                return null;
            }
            BigInteger n = BigInteger.valueOf(shape[i]);
            BigInteger s = nullStrides ? step : BigInteger.valueOf(strides[i]);
            count = count.multiply(n);
            step = step.multiply(n);
            BigInteger span = n.subtract(BigInteger.ONE).max(BigInteger.ZERO).multiply(s);
            if (span.signum() < 0) {
                lo = lo.add(span);
            } else {
                hi = hi.add(span);
            }
        }
        if (count.signum() == 0) {
            return new Range(0, 0, false);
        }
        BigInteger off = new BigInteger(Long.toUnsignedString(byteOffset));
        lo = lo.multiply(elem).add(off);
        hi = hi.add(BigInteger.ONE).multiply(elem).add(off);
        boolean overflows = lo.bitLength() > 63 || hi.bitLength() > 63;
        return new Range(overflows ? 0 : lo.longValue(), overflows ? 0 : hi.longValue(), overflows);
    }
}
