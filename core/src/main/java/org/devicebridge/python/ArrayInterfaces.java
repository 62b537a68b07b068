package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.Device;
import org.devicebridge.dlpack.DeviceType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.StreamSynchronizer;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.foreign.NativeCalls;

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
 * <p><b>Export</b>: {@link PythonExport.Builder#arrayInterface} and
 * {@link PythonExport.Builder#cudaArrayInterface} give the library's exporter objects these attributes.
 *
 * <p>Stateless and thread-safe: each method takes the GIL itself.
 */
public final class ArrayInterfaces {
    /** {@code __array_interface__}. */
    static final String HOST = "__array_interface__";
    /** {@code __cuda_array_interface__}. */
    static final String CUDA = "__cuda_array_interface__";
    /** The version this library exports and the highest it imports (both interfaces). */
    public static final int VERSION = 3;

    private ArrayInterfaces() {}

    // ---------------------------------------------------------------------------------- the Python side

    private static final String CODE = """
            import operator as _ai_op
            class _AIError(Exception):
                pass
            def _ai_int(v, path):
                if isinstance(v, bool) or v is None:
                    raise _AIError('FORMAT', path, 'expected an int but found %r' % (v,))
                try:
                    return _ai_op.index(v)
                except TypeError:
                    raise _AIError('FORMAT', path, 'expected an int but found a ' + type(v).__name__) from None
            def _ai_ints(v, path):
                if not isinstance(v, (tuple, list)):
                    raise _AIError('FORMAT', path, 'expected a tuple of ints but found a ' + type(v).__name__)
                return tuple(_ai_int(x, '%s[%d]' % (path, i)) for i, x in enumerate(v))
            def _ai_read(obj, name):
                try:
                    try:
                        d = getattr(obj, name)
                    except AttributeError:
                        raise _AIError('SCHEMA', name, 'expected an object exposing %s but found a %s'
                                       % (name, type(obj).__name__)) from None
                    if not isinstance(d, dict):
                        raise _AIError('FORMAT', name, 'expected a dict but found a ' + type(d).__name__)
                    p = name + '.'
                    for k in ('version', 'shape', 'typestr') + (('data',) if name == '__cuda_array_interface__' else ()):
                        if k not in d:
                            raise _AIError('STRUCTURE', p + k, 'expected the required key %r but found none' % k)
                    version = _ai_int(d['version'], p + 'version')
                    shape = _ai_ints(d['shape'], p + 'shape')
                    typestr = d['typestr']
                    if not isinstance(typestr, str):
                        raise _AIError('FORMAT', p + 'typestr', 'expected a str but found a ' + type(typestr).__name__)
                    descr = d.get('descr')
                    if descr is not None:
                        ok = (isinstance(descr, (list, tuple)) and len(descr) == 1 and isinstance(descr[0], (list, tuple))
                              and len(descr[0]) == 2 and descr[0][0] == '' and descr[0][1] == typestr)
                        descr = None if ok else repr(descr)[:160]
                    data = d.get('data')
                    buffer = None
                    if isinstance(data, (tuple, list)):
                        if len(data) != 2:
                            raise _AIError('STRUCTURE', p + 'data', 'expected a (pointer, read_only) pair but found %d items'
                                           % len(data))
                        ptr = _ai_int(data[0], p + 'data[0]')
                        if not isinstance(data[1], (bool, int)):
                            raise _AIError('FORMAT', p + 'data[1]', 'expected a bool but found a ' + type(data[1]).__name__)
                        ro = bool(data[1])
                    else:
                        ptr, ro, buffer = 0, False, ('None' if data is None else type(data).__name__)
                    strides = d.get('strides')
                    if strides is not None:
                        strides = _ai_ints(strides, p + 'strides')
                    offset = _ai_int(d.get('offset', 0), p + 'offset')
                    mask = d.get('mask')
                    stream = d.get('stream')
                    if stream is not None:
                        stream = _ai_int(stream, p + 'stream')
                except _AIError as e:
                    return ('ERR',) + e.args
                return ('OK', version, shape, typestr, descr, buffer, ptr, ro, strides, offset, mask, stream)
            def _ai_dict(version, shape, typestr, ptr, read_only, strides, mask, *stream):
                d = {'version': version, 'shape': shape, 'typestr': typestr, 'descr': [('', typestr)],
                     'data': (ptr, read_only), 'strides': strides}
                if mask is not None:
                    d['mask'] = mask
                if stream:
                    d['stream'] = stream[0]
                return d
            """;

    /** A borrowed reference to a helper defined by {@link #CODE} (GIL held). */
    private static MemorySegment helper(String name) {
        MemorySegment ns = PythonRuntime.get().internalNamespace();
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            return Py.check((MemorySegment) PyC.PyDict_GetItemString.invokeExact(ns, arena.allocateFrom(name)), name);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(name, t);
        }
    }

    /** Defines the helpers in the runtime's private namespace (GIL held; called once while it initialises). */
    static void install(MemorySegment namespace) {
        Py.decRef(Py.run(CODE, PyC.Py_file_input, namespace));
    }

    // ---------------------------------------------------------------------------------------- import

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
     * @param options what to accept (device; {@link ImportOptions.PointerCheck#DRIVER} confirms the pointer)
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
        if (expected != null && !expected.type().isHostAccessible()) {
            throw new ValidationException(Category.DEVICE, HOST, "__array_interface__ describes host memory but "
                    + expected.type() + ":" + expected.id() + " was expected");
        }
        return importInterface(producer, HOST, null, options);
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
     * {@code consumer} is {@link ConsumerStream.Kind#NO_SYNC} or the same stream. None needs no
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
        if (expected != null && !isCudaReachable(expected.type())) {
            throw new ValidationException(Category.DEVICE, CUDA, "__cuda_array_interface__ describes CUDA memory but "
                    + expected.type() + ":" + expected.id() + " was expected");
        }
        return importInterface(producer, CUDA, consumer, options);
    }

    private static boolean isCudaReachable(DeviceType t) {
        return t == DeviceType.CUDA || t == DeviceType.CUDA_HOST || t == DeviceType.CUDA_MANAGED;
    }

    /** What {@code _ai_read} found, checked in Java. {@code mask} is a new reference or null. */
    private record Parsed(int version, long[] shape, DType dtype, long pointer, boolean readOnly, long[] byteStrides,
                          long offset, PyObjectRef mask, Long stream) {}

    private static InterfaceArray importInterface(PyObjectRef producer, String name, ConsumerStream consumer,
                                                  ImportOptions options) {
        Parsed data = parse(producer, name);
        ImportedTensor tensor = null;
        try {
            Device device = deviceOf(data, name, options);
            MemorySegment stream = sync(data, name, device, consumer);
            tensor = view(producer, data, name, device, options);
            ImportedTensor mask = data.mask == null ? null : importMask(data.mask, name, device, consumer, options,
                    tensor.shape());
            return new InterfaceArray(tensor, mask, data.version, stream);
        } catch (RuntimeException | Error e) {
            if (tensor != null) {
                tensor.close();
            }
            throw e;
        } finally {
            if (data.mask != null) {
                data.mask.close(); // the mask tensor, if made, holds its own reference
            }
        }
    }

    private static ImportedTensor importMask(PyObjectRef maskObject, String name, Device device, ConsumerStream consumer,
                                             ImportOptions options, long[] dataShape) {
        String path = name + ".mask";
        Parsed m = parse(maskObject, name);
        try {
            if (m.mask != null) {
                throw new UnsupportedFeatureException(path + ".mask", "a mask with its own mask is not supported");
            }
            DType t = m.dtype;
            if (t.code() != DType.KDL_BOOL && t.code() != DType.KDL_INT && t.code() != DType.KDL_UINT) {
                throw new UnsupportedFeatureException(path + ".typestr", "expected a bool or integer mask but found "
                        + InterfaceTypes.typestrOf(t, path));
            }
            checkBroadcastable(m.shape, dataShape, path + ".shape");
            Device maskDevice = device;
            if (name.equals(CUDA) && options.expectedDevice() == null && m.pointer != 0) {
                maskDevice = deviceOf(m, path, options);
            }
            if (!maskDevice.equals(device)) {
                throw new ValidationException(Category.DEVICE, path, "expected the mask on " + device.type() + ":"
                        + device.id() + " like the data but found " + maskDevice.type() + ":" + maskDevice.id());
            }
            sync(m, path, device, consumer);
            return view(maskObject, m, path, device, options);
        } finally {
            if (m.mask != null) {
                m.mask.close();
            }
        }
    }

    /** NumPy broadcasting: aligned from the last dimension, each mask extent 1 or equal; no more dimensions. */
    private static void checkBroadcastable(long[] mask, long[] data, String path) {
        boolean ok = mask.length <= data.length;
        for (int i = 1; ok && i <= mask.length; i++) {
            long m = mask[mask.length - i];
            ok = m == 1 || m == data[data.length - i];
        }
        if (!ok) {
            throw new ValidationException(Category.LENGTH, path, "expected a mask shape broadcastable to "
                    + Arrays.toString(data) + " but found " + Arrays.toString(mask));
        }
    }

    /** Reads the dictionary through {@code _ai_read} and checks every field's value. */
    private static Parsed parse(PyObjectRef producer, String name) {
        try (Gil ignored = Gil.acquire()) {
            MemorySegment t = Py.call(helper("_ai_read"), List.of(producer, name), null, name);
            try {
                return parseTuple(t, name);
            } finally {
                Py.decRef(t);
            }
        }
    }

    private static Parsed parseTuple(MemorySegment t, String name) {
        String tag = Py.utf8(Py.tupleItem(t, 0));
        if (tag.equals("ERR")) {
            throw new ValidationException(Category.valueOf(Py.utf8(Py.tupleItem(t, 1))), Py.utf8(Py.tupleItem(t, 2)),
                    Py.utf8(Py.tupleItem(t, 3)));
        }
        String p = name + ".";
        long version = asLong(Py.tupleItem(t, 1), p + "version");
        int maxVersion = VERSION;
        int minVersion = name.equals(HOST) ? 3 : 0;
        if (version < minVersion || version > maxVersion) {
            throw new ValidationException(Category.VERSION, p + "version", String.format(Locale.ROOT,
                    "expected version %s but found %d", minVersion == maxVersion ? "3" : minVersion + " to " + maxVersion,
                    version));
        }
        long[] shape = longs(Py.tupleItem(t, 2), p + "shape");
        String typestr = Py.utf8(Py.tupleItem(t, 3));
        MemorySegment descr = Py.tupleItem(t, 4);
        boolean structured = !Py.isNone(descr) && typestr.length() >= 2 && typestr.charAt(1) == 'V';
        DType dtype = structured ? null : InterfaceTypes.dtypeOf(typestr, p + "typestr");
        if (!Py.isNone(descr)) {
            throw new UnsupportedFeatureException(p + "descr", "expected descr [('', '" + typestr
                    + "')] (one unnamed field, as typestr) but found " + Py.utf8(descr)
                    + "; structured types are not supported");
        }
        MemorySegment buffer = Py.tupleItem(t, 5);
        if (!Py.isNone(buffer)) {
            throw new UnsupportedFeatureException(p + "data", "expected data as a (pointer, read_only) pair but found "
                    + Py.utf8(buffer) + " (the buffer protocol is not supported; use the producer's buffer or DLPack)");
        }
        long pointer = asLong(Py.tupleItem(t, 6), p + "data[0]");
        boolean readOnly = "True".equals(Py.str(Py.tupleItem(t, 7)));
        MemorySegment stridesObject = Py.tupleItem(t, 8);
        long[] strides = Py.isNone(stridesObject) ? null : longs(stridesObject, p + "strides");
        long offset = asLong(Py.tupleItem(t, 9), p + "offset");
        MemorySegment mask = Py.tupleItem(t, 10);
        MemorySegment streamObject = Py.tupleItem(t, 11);
        Long stream = Py.isNone(streamObject) ? null : asLong(streamObject, p + "stream");
        if (stream != null && name.equals(HOST)) {
            throw new UnsupportedFeatureException(p + "stream", "__array_interface__ has no stream but found " + stream);
        }
        if (stream != null && stream <= 0) {
            throw new ValidationException(Category.STREAM, p + "stream", "expected None, 1 (legacy default), "
                    + "2 (per-thread default) or a stream handle but found " + stream
                    + (stream == 0 ? " (0 is disallowed: ambiguous)" : ""));
        }
        return new Parsed((int) version, shape, dtype, pointer, readOnly, strides, offset,
                Py.isNone(mask) ? null : PyObjectRef.borrowed(mask), stream);
    }

    private static long asLong(MemorySegment o, String path) {
        try {
            return Py.asLong(o, path);
        } catch (PythonException e) {
            throw new ValidationException(Category.SIZE, path, "expected a value in int64 range but found " + Py.repr(o));
        }
    }

    private static long[] longs(MemorySegment tuple, String path) {
        long n = Py.tupleSize(tuple);
        if (n > 64) {
            throw new ValidationException(Category.SIZE, path, "expected at most 64 dimensions but found " + n);
        }
        long[] v = new long[(int) n];
        for (int i = 0; i < n; i++) {
            v[i] = asLong(Py.tupleItem(tuple, i), path + "[" + i + "]");
        }
        return v;
    }

    /** The device the data is labelled with: the expected one, CPU for host data, else the driver's answer. */
    private static Device deviceOf(Parsed data, String path, ImportOptions options) {
        Device expected = options.expectedDevice();
        if (expected != null) {
            return expected;
        }
        if (path.startsWith(HOST)) {
            return Device.CPU;
        }
        if (data.pointer == 0) {
            return Device.cuda(0); // an empty array: nothing to find
        }
        PointerAttributes a = PointerAttributes.of(data.pointer);
        int ordinal = Math.max(0, a.deviceOrdinal());
        return switch (a.memoryType()) {
            case DEVICE -> a.managed() ? new Device(DeviceType.CUDA_MANAGED, ordinal) : Device.cuda(ordinal);
            case UNIFIED -> new Device(DeviceType.CUDA_MANAGED, ordinal);
            case HOST -> Device.cudaHost(ordinal);
            default -> throw new ValidationException(Category.DEVICE, path + ".data[0]", "expected memory the GPU can"
                    + " reach (device, pinned or managed) but found " + a.memoryType() + " at 0x"
                    + Long.toHexString(data.pointer));
        };
    }

    /** Makes {@code consumer} wait on the producer's stream (v3 semantics); returns that stream, or null. */
    private static MemorySegment sync(Parsed data, String path, Device device, ConsumerStream consumer) {
        if (data.stream == null) {
            return null;
        }
        MemorySegment producerStream = MemorySegment.ofAddress(data.stream);
        if (consumer.needsSync()) {
            if (!consumer.device().equals(device)) {
                throw new ValidationException(Category.DEVICE, path + ".stream", "the consumer stream belongs to "
                        + consumer.device().type() + ":" + consumer.device().id() + " but the data lives on "
                        + device.type() + ":" + device.id());
            }
            StreamSynchronizer.cuda(producerStream).makeReady(consumer);
        }
        return producerStream;
    }

    /** Describes the memory as a DLPack tensor (the checks of a DLPack export and import run) and imports it. */
    private static ImportedTensor view(PyObjectRef producer, Parsed data, String path, Device device,
                                       ImportOptions options) {
        String p = path + ".";
        int ndim = data.shape.length;
        int itemSize = data.dtype.bits() / 8;
        long[] elementStrides = null;
        if (data.byteStrides != null) {
            if (data.byteStrides.length != ndim) {
                throw new ValidationException(Category.STRUCTURE, p + "strides", "expected " + ndim
                        + " strides (one per dimension) but found " + data.byteStrides.length);
            }
            elementStrides = new long[ndim];
            for (int i = 0; i < ndim; i++) {
                if (data.byteStrides[i] % itemSize != 0) {
                    throw new UnsupportedFeatureException(p + "strides[" + i + "]", "byte stride " + data.byteStrides[i]
                            + " is not a multiple of the item size " + itemSize + " (DLPack strides count elements)");
                }
                elementStrides[i] = data.byteStrides[i] / itemSize;
            }
        }
        for (int i = 0; i < ndim; i++) {
            if (data.shape[i] < 0) {
                throw new ValidationException(Category.SIZE, p + "shape[" + i + "]", "expected an extent >= 0 but found "
                        + data.shape[i]);
            }
        }
        if (data.offset < 0) {
            throw new ValidationException(Category.SIZE, p + "offset", "expected an offset >= 0 but found " + data.offset);
        }
        ByteRange r = ByteRange.of(data.shape, data.byteStrides, itemSize, p + "strides");
        long origin;
        try {
            origin = Math.addExact(data.pointer, data.offset);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, p + "offset", "data[0] + offset overflows the address space");
        }
        MemorySegment segment;
        long byteOffset;
        if (r.extent() == 0) {
            segment = MemorySegment.ofAddress(origin);
            byteOffset = 0;
        } else {
            if (data.pointer == 0) {
                throw new ValidationException(Category.NULL_POINTER, p + "data[0]", "expected a data pointer for "
                        + "a non-empty array but found NULL");
            }
            long first = origin + r.low(); // r.low() <= 0
            if (first < 0 || first > Long.MAX_VALUE - r.extent()) {
                throw new ValidationException(Category.SIZE, p + "strides", "the array's bytes reach outside the address space");
            }
            segment = MemorySegment.ofAddress(first).reinterpret(r.extent()); // sized from the checked range
            byteOffset = -r.low();
        }
        TensorSpec spec = TensorSpec.of(segment, data.dtype, data.shape).withByteOffset(byteOffset).withDevice(device);
        if (elementStrides != null) {
            spec = spec.withStrides(elementStrides);
        }
        if (data.readOnly) {
            spec = spec.withFlags(TensorFlag.READ_ONLY);
        }
        PyObjectRef owner = producer.newReference();
        org.devicebridge.dlpack.ExportedTensor exported;
        try {
            exported = DLPack.exportVersioned(spec, owner);
        } catch (RuntimeException | Error e) {
            owner.close();
            throw e;
        }
        return DLPack.importTensor(exported, options); // closes owner on a throw
    }

    // ---------------------------------------------------------------------------------------- export

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
        DeviceType t = spec.device().type();
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
                PythonExport.Builder b = PythonExport.builder();
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

    /**
     * The bytes an array spans relative to element {@code [0, ..., 0]}: from {@code low} ({@code <= 0}) for
     * {@code extent} bytes; both 0 for an empty array.
     */
    private record ByteRange(long low, long extent) {
        static ByteRange of(long[] shape, long[] byteStrides, int itemSize, String path) {
            long elements = 1;
            for (long n : shape) {
                elements = n == 0 ? 0 : elements;
            }
            if (elements == 0) {
                return new ByteRange(0, 0);
            }
            try {
                long low = 0;
                long high = 0;
                long step = itemSize;
                for (int i = shape.length - 1; i >= 0; i--) {
                    long s = byteStrides == null ? step : byteStrides[i];
                    long span = Math.multiplyExact(s, shape[i] - 1);
                    if (span < 0) {
                        low = Math.addExact(low, span);
                    } else {
                        high = Math.addExact(high, span);
                    }
                    step = Math.multiplyExact(step, shape[i]);
                }
                return new ByteRange(low, Math.addExact(Math.subtractExact(high, low), itemSize));
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, path, "the array's byte range overflows int64");
            }
        }
    }
}
