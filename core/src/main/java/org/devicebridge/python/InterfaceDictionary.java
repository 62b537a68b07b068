package org.devicebridge.python;

import static org.devicebridge.python.ArrayInterfaces.HOST;
import static org.devicebridge.python.ArrayInterfaces.VERSION;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Locale;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.DType;

/**
 * One {@code __array_interface__} or {@code __cuda_array_interface__} dictionary as {@code _ai_read} found it,
 * every value checked in Java ({@link #read}): version, shape, dtype (from {@code typestr}), data pointer and
 * read-only flag, byte strides (null: compact), offset, mask and stream (null: None). Nothing about the
 * memory it describes is checked here ({@link InterfaceImport} does that).
 *
 * <p>Ownership: {@code mask} is a new reference, or null; whoever read the dictionary closes it. Not
 * thread-safe to share while the mask is open; the arrays are never modified after construction.
 */
record InterfaceDictionary(int version, long[] shape, DType dtype, long pointer, boolean readOnly, long[] byteStrides,
                           long offset, PyObjectRef mask, Long stream) {
    /**
     * Reads {@code producer}'s dictionary {@code name} through {@code _ai_read} and checks every field's value.
     * Takes the GIL. The caller owns the returned {@link #mask()} reference (close it); after a throw, nothing.
     */
    static InterfaceDictionary read(PyObjectRef producer, String name) {
        try (Gil ignored = Gil.acquire()) {
            MemorySegment t = Py.call(InterfaceScript.helper("_ai_read"), List.of(producer, name), null, name);
            try {
                return parseTuple(t, name);
            } finally {
                Py.decRef(t);
            }
        }
    }

    private static InterfaceDictionary parseTuple(MemorySegment t, String name) {
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
        return new InterfaceDictionary((int) version, shape, dtype, pointer, readOnly, strides, offset,
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
}
