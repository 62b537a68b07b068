package org.devicebridge.python;

import static org.devicebridge.python.ArrayInterfaces.CUDA;
import static org.devicebridge.python.ArrayInterfaces.HOST;
import static org.devicebridge.python.ArrayInterfaces.VERSION;
import static org.devicebridge.python.ArrayInterfaces.isCudaReachable;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;

/**
 * The export side of the array interfaces ({@link ArrayInterfaces}): checks a {@link TensorSpec} for
 * {@code __array_interface__} or {@code __cuda_array_interface__} when an exporter object is built
 * ({@link #describe}), and hands out the dictionary's values on each attribute access ({@link #fields}).
 * Stateless; the records are immutable (their arrays are never modified after construction).
 */
final class InterfaceExport {
    private InterfaceExport() {}

    /**
     * What an exporter object exposes through the interfaces: the host and/or CUDA description (checked when
     * the object is built), the CUDA producer stream, the mask, and what to close when Python collects it.
     */
    record Exported(Described host, Described cuda, TensorSpec hostMask, TensorSpec cudaMask, AutoCloseable owner) {
        boolean any() {
            return host != null || cuda != null;
        }
    }

    /** One interface dictionary's values, computed once (the spec's checks run then). */
    record Described(long[] shape, String typestr, long pointer, boolean readOnly, long[] byteStrides, Long stream) {}

    /**
     * Checks {@code spec} for an interface and computes its dictionary's values.
     *
     * @param producerStream for the CUDA interface, the {@code CUstream} the data is produced on (NULL: the
     *        legacy default stream, exported as 1); null for {@code stream: None}
     */
    static Described describe(TensorSpec spec, boolean cuda, MemorySegment producerStream, String path) {
        Objects.requireNonNull(spec, "spec");
        DeviceKind t = spec.device().kind();
        if (cuda ? !isCudaReachable(t) : !t.isHostAccessible()) {
            throw new UnsupportedFeatureException(path + ".device", (cuda ? CUDA : HOST) + " cannot describe memory on "
                    + t + (cuda ? " (it describes CUDA device, pinned or managed memory)" : " (it describes host memory)"));
        }
        if (spec.consumerStream().isPresent()) {
            throw new UnsupportedFeatureException(path + ".consumerStream", "the array interfaces export the producer's "
                    + "stream (cudaArrayInterface(spec, producerStream)); a spec with a consumer stream is refused");
        }
        String typestr = InterfaceTypes.typestrOf(spec.dtype(), path + ".dtype");
        int itemSize = spec.dtype().bits() / 8;
        long[] shape = spec.shape();
        long[] strides = spec.strides();
        long[] byteStrides = new long[strides.length];
        boolean compact = true;
        long step = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            byteStrides[i] = Math.multiplyExact(strides[i], (long) itemSize);
            if (shape[i] != 1 && strides[i] != step) {
                compact = false;
            }
            step = Math.multiplyExact(step, Math.max(1, shape[i]));
        }
        ByteRange r = ByteRange.of(shape, byteStrides, itemSize, path + ".strides");
        long origin = Math.addExact(spec.data().address(), spec.byteOffset());
        if (r.extent() > 0 && (spec.byteOffset() + r.low() < 0
                || spec.byteOffset() + r.low() + r.extent() > spec.data().byteSize())) {
            throw new ValidationException(Category.LENGTH, path + ".data", String.format(Locale.ROOT,
                    "the array spans bytes [%d, %d) of data but data has %d bytes", spec.byteOffset() + r.low(),
                    spec.byteOffset() + r.low() + r.extent(), spec.data().byteSize()));
        }
        Long stream = null;
        if (producerStream != null) {
            stream = producerStream.address() == 0 ? 1L : producerStream.address();
        }
        return new Described(shape, typestr, r.extent() == 0 && cuda ? 0 : origin, // CAI: 0 for an empty array
                spec.flags().contains(TensorFlag.READ_ONLY), compact ? null : byteStrides, stream);
    }

    /**
     * New reference: the values of the interface dictionary of {@code e} as a tuple, which the exporter
     * object's attribute turns into the dictionary ({@code _ai_dict}). GIL held.
     *
     * @throws DeviceBridgeException if the object does not expose that interface
     */
    static MemorySegment fields(Exported e, boolean cuda) {
        Described d = cuda ? e.cuda : e.host;
        if (d == null) {
            throw new DeviceBridgeException("this exporter object has no " + (cuda ? CUDA : HOST));
        }
        TensorSpec maskSpec = cuda ? e.cudaMask : e.hostMask;
        PyObjectRef mask = null;
        try {
            if (maskSpec != null) {
                PythonExport b = PythonExport.builder();
                mask = (cuda ? b.cudaArrayInterface(maskSpec) : b.arrayInterface(maskSpec)).build();
            }
            return Py.fromJava(cuda
                    ? Arrays.asList(VERSION, d.shape, d.typestr, d.pointer, d.readOnly, d.byteStrides, mask, d.stream)
                    : Arrays.asList(VERSION, d.shape, d.typestr, d.pointer, d.readOnly, d.byteStrides, mask));
        } finally {
            if (mask != null) {
                mask.close();
            }
        }
    }
}
