package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * The array interfaces of the Python GPU and CPU world, beside DLPack: NumPy's {@code __array_interface__}
 * (version 3) and {@code __cuda_array_interface__} (version 3, with {@code stream} and {@code mask}), spoken
 * by NumPy, CuPy, Numba, cuDF, UCXX and PyTorch.
 *
 * <p><b>Import</b> ({@link #importArrayInterface}, {@link #importCudaArrayInterface}) reads the dictionary of
 * any Python object that exposes it and views its memory zero-copy as a DLPack {@link ImportedTensor}, with
 * the same validation and typed errors as a DLPack import: {@code typestr} (and a {@code descr} that must
 * agree with it) maps to a {@link DType} or is refused by name ({@link UnsupportedFeatureException} for
 * non-native byte order, datetimes, objects, strings, structured types); {@code shape}, {@code strides}
 * (bytes, which must be multiples of the item size, as DLPack's strides are in elements) and
 * {@code offset} are checked with exact arithmetic; {@code data: (ptr, read_only)} gives a read-only
 * tensor when {@code read_only} is true ({@link InterfaceArray#writableSegment()} then throws). A
 * {@code mask} is imported as a second tensor (bool or integer, broadcastable to the data's shape,
 * on the same device). {@code __cuda_array_interface__}'s {@code stream} is honoured as the protocol
 * defines: the consumer's stream is made to wait on the producer's (an event, no host block).
 *
 * <p><b>Export</b>: {@link PythonExport#arrayInterface} and
 * {@link PythonExport#cudaArrayInterface} give the library's exporter objects these attributes.
 *
 * <p>Stateless and thread-safe: each method takes the GIL itself.
 */
final class ArrayInterfaces {
    // The work is done by InterfaceImport (with InterfaceDictionary), InterfaceExport and InterfaceScript.

    /** {@code __array_interface__}. */
    static final String HOST = "__array_interface__";
    /** {@code __cuda_array_interface__}. */
    static final String CUDA = "__cuda_array_interface__";
    /** The version this library exports and the highest it imports (both interfaces). */
    public static final int VERSION = 3;

    private ArrayInterfaces() {}

    /**
     * Views the memory behind {@code producer.__array_interface__} (version 3) as a DLPack tensor on the CPU
     * (or on the host-accessible device {@code options} expects, e.g. {@code Device.cudaHost(0)} for pinned
     * memory), with its mask, if any, as a second tensor. Zero-copy: the tensor holds a reference to
     * {@code producer}, which keeps the memory alive.
     *
     * <p>Ownership: after a return the caller owns the returned array (close it); {@code producer} stays the
     * caller's. After a throw the caller owns nothing new.
     *
     * @param producer any Python object exposing {@code __array_interface__} (borrowed)
     * @param options what to accept (device; {@link ImportOptions#confirmingPointers()} confirms the pointer)
     * @return the imported array
     * @throws ValidationException for a malformed or inconsistent dictionary (category and path say which:
     *         {@code __array_interface__.strides[1]}, ...), or a device other than expected
     * @throws UnsupportedFeatureException for a valid array this library cannot view (a typestr with no DLPack
     *         type, big-endian data, byte strides that are not multiples of the item size, {@code data} given
     *         as a buffer object or None, a structured {@code descr})
     * @throws PythonException if reading the attribute raised in Python (other than AttributeError)
     * @throws PythonUnavailableException where there is no Python
     */
    public static InterfaceArray importArrayInterface(PyObjectRef producer, ImportOptions options) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(options, "options");
        Device expected = options.expectedDevice();
        if (expected != null && !expected.kind().isHostAccessible()) {
            throw new ValidationException(Category.DEVICE, HOST, "__array_interface__ describes host memory but "
                    + expected.kind() + ":" + expected.ordinal() + " was expected");
        }
        return InterfaceImport.importInterface(producer, HOST, null, options);
    }

    /**
     * Views the device memory behind {@code producer.__cuda_array_interface__} (versions 0 to 3) as a DLPack
     * tensor, with its mask, if any, as a second tensor. Zero-copy: the tensor holds a reference to
     * {@code producer}. The device is the one {@code options} expects where it names one (the label is then
     * trusted unless {@link ImportOptions#confirmingPointers()}), else the CUDA driver's pointer attributes
     * say which (device, pinned host or managed memory, and the ordinal).
     *
     * <p>Streams, as version 3 defines them: where the dictionary's {@code stream} is an integer (1 legacy
     * default, 2 per-thread default, else a {@code cudaStream_t}), an event is recorded on it and
     * {@code consumer} is made to wait on it ({@code cuStreamWaitEvent}; the host does not block), unless
     * {@code consumer} is a stream that needs no synchronisation (-1) or the same stream. None needs no
     * synchronisation. A {@code stream} of 0 is refused, as the protocol forbids it.
     *
     * <p>Ownership: after a return the caller owns the returned array (close it); {@code producer} and both
     * streams stay their owners'. After a throw the caller owns nothing new.
     *
     * @param producer any Python object exposing {@code __cuda_array_interface__} (borrowed), e.g. a CuPy
     *        array, a Numba device array, a PyTorch CUDA tensor
     * @param consumer the stream the caller will use the data on ({@link ConsumerStream#of}; its device must
     *        be the data's)
     * @param options what to accept (device, pointer check)
     * @return the imported array
     * @throws ValidationException as {@link #importArrayInterface}, {@code STREAM} for a forbidden stream
     *         value, {@code DEVICE} for a consumer stream on another device or host memory the GPU cannot reach
     * @throws UnsupportedFeatureException as {@link #importArrayInterface}
     * @throws org.devicebridge.cuda.CudaUnavailableException where the driver is needed (no expected device, a
     *         pointer check, a stream to wait on) and absent
     * @throws PythonException if reading the attribute raised in Python (other than AttributeError)
     */
    public static InterfaceArray importCudaArrayInterface(PyObjectRef producer, ConsumerStream consumer,
                                                          ImportOptions options) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(options, "options");
        Device expected = options.expectedDevice();
        if (expected != null && !isCudaReachable(expected.kind())) {
            throw new ValidationException(Category.DEVICE, CUDA, "__cuda_array_interface__ describes CUDA memory but "
                    + expected.kind() + ":" + expected.ordinal() + " was expected");
        }
        return InterfaceImport.importInterface(producer, CUDA, consumer, options);
    }

    /** Whether the CUDA interface can describe memory on {@code t}: device, pinned host or managed memory. */
    static boolean isCudaReachable(DeviceKind t) {
        return t == DeviceKind.CUDA || t == DeviceKind.CUDA_HOST || t == DeviceKind.CUDA_MANAGED;
    }
}
