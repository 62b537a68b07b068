package org.devicebridge.arrow.malformed;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * One malformed-input case's fixture: a Java "producer" that builds Arrow C structs in an arena. Every
 * root struct gets a release callback (a Java upcall) that counts its calls in this fixture's counter
 * (found through {@code private_data}) and, as a real producer does, marks its children released; children
 * get a callback that counts separately, since a consumer must never call a child's release itself.
 */
final class Fx implements AutoCloseable {
    static final int EIO = 5;
    private static final AtomicLong IDS = new AtomicLong(1);
    private static final Map<Long, Fx> LIVE = new ConcurrentHashMap<>();
    private static final System.Logger LOG = System.getLogger(Fx.class.getName());

    static final MemorySegment SCHEMA_RELEASE = stub("releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment ARRAY_RELEASE = stub("releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment CHILD_RELEASE = stub("releaseChild", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment STREAM_RELEASE = stub("releaseStream", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment DSTREAM_RELEASE = stub("releaseDeviceStream", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment GET_SCHEMA = stub("getSchema",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_NEXT = stub("getNext",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment DGET_SCHEMA = stub("getSchemaDevice",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment DGET_NEXT = stub("getNextDevice",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_LAST_ERROR = stub("getLastError", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment DGET_LAST_ERROR = stub("getLastErrorDevice",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));

    private static MemorySegment stub(String name, FunctionDescriptor fd) {
        return Native.upcallStub(MethodHandles.lookup(), Fx.class, name, fd);
    }

    final Arena arena = Arena.ofShared();
    final long id = IDS.getAndIncrement();
    /** Releases of the root struct handed to the importer. */
    final AtomicInteger releases = new AtomicInteger();
    /** Releases of structs a stream callback handed out (schemas, batches). */
    final AtomicInteger producedReleases = new AtomicInteger();
    /** The stream's callbacks: (fixture, out) -> errno. */
    BiFunction<Fx, MemorySegment, Integer> onGetSchema = (f, out) -> EIO;
    BiFunction<Fx, MemorySegment, Integer> onGetNext = (f, out) -> EIO;
    MemorySegment lastError = MemorySegment.NULL;
    /** A Java producer whose release throws after doing its work (the stub must swallow and log it). */
    volatile boolean releaseThrows;
    /** The id written into structs a stream hands out, so their releases count in producedReleases. */
    final long producedId = IDS.getAndIncrement();

    Fx() {
        LIVE.put(id, this);
        LIVE.put(producedId, this);
    }

    @Override
    public void close() {
        LIVE.remove(id);
        LIVE.remove(producedId);
        arena.close();
    }

    // ---- schemas ----

    MemorySegment cstr(String s) {
        return arena.allocateFrom(s);
    }

    /** A child schema (children's release counts in childReleases). */
    MemorySegment schema(String format, MemorySegment... children) {
        return schemaF(format, SchemaNode.FLAG_NULLABLE, children);
    }

    MemorySegment schemaF(String format, long flags, MemorySegment... children) {
        MemorySegment s = arena.allocate(ArrowSchema.layout());
        ArrowSchema.format(s, format == null ? MemorySegment.NULL : cstr(format));
        ArrowSchema.name(s, cstr("f"));
        ArrowSchema.flags(s, flags);
        ArrowSchema.n_children(s, children.length);
        ArrowSchema.children(s, children.length == 0 ? MemorySegment.NULL : pointers(children));
        ArrowSchema.release(s, CHILD_RELEASE);
        return s;
    }

    /** Makes {@code s} a root: its release counts in {@link #releases}. */
    MemorySegment rootSchema(MemorySegment s) {
        ArrowSchema.release(s, SCHEMA_RELEASE);
        ArrowSchema.private_data(s, MemorySegment.ofAddress(id));
        return s;
    }

    MemorySegment dict(MemorySegment s, MemorySegment dictionary) {
        ArrowSchema.dictionary(s, dictionary);
        return s;
    }

    /** Imports {@code tree} (as a root counted apart) and returns its plain-data root node. */
    SchemaNode type(MemorySegment tree) {
        ArrowSchema.release(tree, SCHEMA_RELEASE);
        ArrowSchema.private_data(tree, MemorySegment.ofAddress(producedId));
        try (ImportedSchema s = ArrowC.importSchema(tree)) {
            return s.root();
        } finally {
            producedReleases.set(0);
        }
    }

    SchemaNode type(String format) {
        return type(schema(format));
    }

    /** The metadata blob: int32 count, then (int32 length, bytes) per key and value; raw ints for corruption. */
    MemorySegment metadata(Object... parts) {
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.nativeOrder());
        for (Object p : parts) {
            if (p instanceof Integer i) {
                b.putInt(i);
            } else {
                b.put(((String) p).getBytes(StandardCharsets.UTF_8));
            }
        }
        MemorySegment m = arena.allocate(b.position() + 8);
        MemorySegment.copy(b.array(), 0, m, ValueLayout.JAVA_BYTE, 0, b.position());
        return m;
    }

    // ---- arrays ----

    MemorySegment pointers(MemorySegment... ps) {
        MemorySegment a = arena.allocate(ValueLayout.ADDRESS, Math.max(1, ps.length));
        for (int i = 0; i < ps.length; i++) {
            a.setAtIndex(ValueLayout.ADDRESS, i, ps[i]);
        }
        return a;
    }

    static MemorySegment[] bufs(MemorySegment... b) {
        return b;
    }

    /** A child array (release counts in childReleases). */
    MemorySegment array(long length, long nullCount, long offset, MemorySegment[] buffers, MemorySegment... children) {
        MemorySegment a = arena.allocate(ArrowArray.layout());
        ArrowArray.length(a, length);
        ArrowArray.null_count(a, nullCount);
        ArrowArray.offset(a, offset);
        ArrowArray.n_buffers(a, buffers.length);
        ArrowArray.buffers(a, buffers.length == 0 ? MemorySegment.NULL : pointers(buffers));
        ArrowArray.n_children(a, children.length);
        ArrowArray.children(a, children.length == 0 ? MemorySegment.NULL : pointers(children));
        ArrowArray.release(a, CHILD_RELEASE);
        return a;
    }

    /** Makes {@code a} a root array (or the array inside a device array): its release counts in {@link #releases}. */
    MemorySegment root(MemorySegment a) {
        ArrowArray.release(a, ARRAY_RELEASE);
        ArrowArray.private_data(a, MemorySegment.ofAddress(id));
        return a;
    }

    MemorySegment adict(MemorySegment a, MemorySegment dictionary) {
        ArrowArray.dictionary(a, dictionary);
        return a;
    }

    MemorySegment ints(int... v) {
        return v.length == 0 ? arena.allocate(8) : arena.allocateFrom(ValueLayout.JAVA_INT, v);
    }

    MemorySegment longs(long... v) {
        return v.length == 0 ? arena.allocate(8) : arena.allocateFrom(ValueLayout.JAVA_LONG, v);
    }

    MemorySegment shorts(short... v) {
        return arena.allocateFrom(ValueLayout.JAVA_SHORT, v);
    }

    MemorySegment bytes(int... v) {
        MemorySegment m = arena.allocate(Math.max(8, v.length), 8);
        for (int i = 0; i < v.length; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) v[i]);
        }
        return m;
    }

    MemorySegment zeros(long n) {
        return arena.allocate(Math.max(8, n), 16);
    }

    /** A copy of {@code src} starting at an odd address (misaligned for every type wider than a byte). */
    MemorySegment misaligned(MemorySegment src) {
        MemorySegment m = arena.allocate(src.byteSize() + 16, 16).asSlice(1, src.byteSize());
        MemorySegment.copy(src, 0, m, 0, src.byteSize());
        return m;
    }

    /** A 16-byte view: length, then 12 inline bytes or (prefix, buffer index, offset). */
    MemorySegment views(int[][] v) {
        MemorySegment m = arena.allocate(16L * Math.max(1, v.length), 16);
        for (int i = 0; i < v.length; i++) {
            for (int k = 0; k < 4; k++) {
                m.setAtIndex(ValueLayout.JAVA_INT, i * 4L + k, v[i][k]);
            }
        }
        return m;
    }

    /** An ArrowDeviceArray holding a copy of {@code array} (whose release should come from {@link #root}). */
    MemorySegment device(MemorySegment array, int deviceType, long deviceId, MemorySegment sync) {
        MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
        MemorySegment.copy(array, 0, d, ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ArrowDeviceArray.device_type(d, deviceType);
        ArrowDeviceArray.device_id(d, deviceId);
        ArrowDeviceArray.sync_event(d, sync);
        return d;
    }

    // ---- streams ----

    MemorySegment stream() {
        MemorySegment s = arena.allocate(ArrowArrayStream.layout());
        ArrowArrayStream.get_schema(s, GET_SCHEMA);
        ArrowArrayStream.get_next(s, GET_NEXT);
        ArrowArrayStream.get_last_error(s, GET_LAST_ERROR);
        ArrowArrayStream.release(s, STREAM_RELEASE);
        ArrowArrayStream.private_data(s, MemorySegment.ofAddress(id));
        return s;
    }

    MemorySegment deviceStream(int deviceType) {
        MemorySegment s = arena.allocate(ArrowDeviceArrayStream.layout());
        ArrowDeviceArrayStream.device_type(s, deviceType);
        ArrowDeviceArrayStream.get_schema(s, DGET_SCHEMA);
        ArrowDeviceArrayStream.get_next(s, DGET_NEXT);
        ArrowDeviceArrayStream.get_last_error(s, DGET_LAST_ERROR);
        ArrowDeviceArrayStream.release(s, DSTREAM_RELEASE);
        ArrowDeviceArrayStream.private_data(s, MemorySegment.ofAddress(id));
        return s;
    }

    /** Writes {@code schema} into {@code out} as a stream's get_schema does; its release counts in producedReleases. */
    int handOutSchema(MemorySegment schema, MemorySegment out) {
        ArrowSchema.release(schema, SCHEMA_RELEASE);
        ArrowSchema.private_data(schema, MemorySegment.ofAddress(producedId));
        MemorySegment.copy(schema, 0, out.reinterpret(ArrowSchema.sizeof()), 0, ArrowSchema.sizeof());
        return 0;
    }

    /** Writes {@code array} (or device array, by size) into {@code out}; its release counts in producedReleases. */
    int handOutArray(MemorySegment array, MemorySegment out) {
        ArrowArray.release(array, ARRAY_RELEASE);
        ArrowArray.private_data(array, MemorySegment.ofAddress(producedId));
        MemorySegment.copy(array, 0, out.reinterpret(array.byteSize()), 0, array.byteSize());
        return 0;
    }

    // ---- the upcalls (each catches everything: an exception escaping an upcall ends the JVM) ----

    private static AtomicInteger counter(MemorySegment privateData) {
        Fx f = LIVE.get(privateData.address());
        if (f == null) {
            throw new IllegalStateException("release of a struct whose fixture is closed: id " + privateData.address());
        }
        return privateData.address() == f.id ? f.releases : f.producedReleases;
    }

    private static void releaseSchema(MemorySegment p) {
        try {
            MemorySegment s = p.reinterpret(ArrowSchema.sizeof());
            counter(ArrowSchema.private_data(s)).incrementAndGet();
            long n = ArrowSchema.n_children(s);
            MemorySegment children = ArrowSchema.children(s);
            if (n > 0 && n <= 64 && !children.equals(MemorySegment.NULL)) {
                children = children.reinterpret(n * 8);
                for (int i = 0; i < n; i++) {
                    markReleased(children.getAtIndex(ValueLayout.ADDRESS_UNALIGNED, i), ArrowSchema.release$offset());
                }
            }
            markReleased(ArrowSchema.dictionary(s), ArrowSchema.release$offset());
            ArrowSchema.release(s, MemorySegment.NULL);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "test schema release failed", t);
        }
    }

    private static void releaseArray(MemorySegment p) {
        try {
            MemorySegment a = p.reinterpret(ArrowArray.sizeof());
            counter(ArrowArray.private_data(a)).incrementAndGet();
            long n = ArrowArray.n_children(a);
            MemorySegment children = ArrowArray.children(a);
            if (n > 0 && n <= 64 && !children.equals(MemorySegment.NULL)) {
                children = children.reinterpret(n * 8);
                for (int i = 0; i < n; i++) {
                    markReleased(children.getAtIndex(ValueLayout.ADDRESS_UNALIGNED, i), ArrowArray.release$offset());
                }
            }
            markReleased(ArrowArray.dictionary(a), ArrowArray.release$offset());
            ArrowArray.release(a, MemorySegment.NULL);
            Fx f = LIVE.get(ArrowArray.private_data(a).address());
            if (f != null && f.releaseThrows) {
                throw new IllegalStateException("producer release failed after releasing");
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "test array release failed", t);
        }
    }

    private static void markReleased(MemorySegment child, long releaseOffset) {
        if (!child.equals(MemorySegment.NULL)) {
            child.reinterpret(releaseOffset + 8).set(ValueLayout.ADDRESS_UNALIGNED, releaseOffset, MemorySegment.NULL);
        }
    }

    /** Direct releases of child/dictionary structs (a consumer must never make one): checked per case. */
    static final AtomicInteger CHILD_RELEASES = new AtomicInteger();

    private static void releaseChild(MemorySegment p) {
        CHILD_RELEASES.incrementAndGet();
    }

    private static void releaseStream(MemorySegment p) {
        try {
            MemorySegment s = p.reinterpret(ArrowArrayStream.sizeof());
            counter(ArrowArrayStream.private_data(s)).incrementAndGet();
            ArrowArrayStream.release(s, MemorySegment.NULL);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "test stream release failed", t);
        }
    }

    private static void releaseDeviceStream(MemorySegment p) {
        try {
            MemorySegment s = p.reinterpret(ArrowDeviceArrayStream.sizeof());
            counter(ArrowDeviceArrayStream.private_data(s)).incrementAndGet();
            ArrowDeviceArrayStream.release(s, MemorySegment.NULL);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "test device stream release failed", t);
        }
    }

    private static Fx streamFx(MemorySegment privateData) {
        return LIVE.get(privateData.address());
    }

    /** A Java producer's callback: whatever the body throws becomes EIO with the text in get_last_error. */
    private static int call(Fx f, BiFunction<Fx, MemorySegment, Integer> body, MemorySegment out) {
        try {
            return body.apply(f, out);
        } catch (Throwable t) {
            f.lastError = f.arena.allocateFrom("callback threw " + t.getClass().getSimpleName() + ": " + t.getMessage());
            return EIO;
        }
    }

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        Fx f = streamFx(ArrowArrayStream.private_data(stream.reinterpret(ArrowArrayStream.sizeof())));
        return f == null ? EIO : call(f, f.onGetSchema, out);
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        Fx f = streamFx(ArrowArrayStream.private_data(stream.reinterpret(ArrowArrayStream.sizeof())));
        return f == null ? EIO : call(f, f.onGetNext, out);
    }

    private static int getSchemaDevice(MemorySegment stream, MemorySegment out) {
        Fx f = streamFx(ArrowDeviceArrayStream.private_data(stream.reinterpret(ArrowDeviceArrayStream.sizeof())));
        return f == null ? EIO : call(f, f.onGetSchema, out);
    }

    private static int getNextDevice(MemorySegment stream, MemorySegment out) {
        Fx f = streamFx(ArrowDeviceArrayStream.private_data(stream.reinterpret(ArrowDeviceArrayStream.sizeof())));
        return f == null ? EIO : call(f, f.onGetNext, out);
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        try {
            Fx f = streamFx(ArrowArrayStream.private_data(stream.reinterpret(ArrowArrayStream.sizeof())));
            return f == null ? MemorySegment.NULL : f.lastError;
        } catch (Throwable t) {
            return MemorySegment.NULL;
        }
    }

    private static MemorySegment getLastErrorDevice(MemorySegment stream) {
        try {
            Fx f = streamFx(ArrowDeviceArrayStream.private_data(stream.reinterpret(ArrowDeviceArrayStream.sizeof())));
            return f == null ? MemorySegment.NULL : f.lastError;
        } catch (Throwable t) {
            return MemorySegment.NULL;
        }
    }
}
