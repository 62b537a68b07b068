package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * C structs written by hand, as a C producer would (no Arrow Java, no arrow-c-data on the producer side),
 * in an arena the test closes after the import is done. Root releases are counted per struct kind: a
 * root's release marks it released; children are released with their root.
 */
final class HandBuilt implements AutoCloseable {
    static final AtomicInteger SCHEMA_RELEASES = new AtomicInteger();
    static final AtomicInteger ARRAY_RELEASES = new AtomicInteger();
    private static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), HandBuilt.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), HandBuilt.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final MemorySegment RELEASE_CHILD = Native.upcallStub(MethodHandles.lookup(), HandBuilt.class,
            "releaseChild", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    final Arena arena = Arena.ofShared();

    private static void releaseSchema(MemorySegment s) {
        SCHEMA_RELEASES.incrementAndGet();
        ArrowSchema.release(s.reinterpret(ArrowSchema.sizeof()), MemorySegment.NULL);
    }

    private static void releaseArray(MemorySegment a) {
        ARRAY_RELEASES.incrementAndGet();
        ArrowArray.release(a.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
    }

    private static void releaseChild(MemorySegment s) {
        // a child is released with its root
    }

    /** A nullable schema node named {@code name}. */
    MemorySegment schema(String format, String name, MemorySegment... children) {
        return schema(format, name, 2L, Map.of(), children);
    }

    MemorySegment schema(String format, String name, long flags, Map<String, String> metadata,
                         MemorySegment... children) {
        MemorySegment s = arena.allocate(ArrowSchema.layout());
        ArrowSchema.format(s, arena.allocateFrom(format));
        ArrowSchema.name(s, name == null ? MemorySegment.NULL : arena.allocateFrom(name));
        ArrowSchema.flags(s, flags);
        ArrowSchema.metadata(s, metadata.isEmpty() ? MemorySegment.NULL : metadataBlob(metadata));
        ArrowSchema.n_children(s, children.length);
        ArrowSchema.children(s, pointers(children));
        ArrowSchema.release(s, RELEASE_CHILD);
        return s;
    }

    /** Sets {@code dictionary} as the dictionary of {@code schema} (both already made). */
    static MemorySegment withDictionary(MemorySegment schema, MemorySegment dictionary) {
        ArrowSchema.dictionary(schema, dictionary);
        return schema;
    }

    /** Makes {@code schema} a root: its release is counted. */
    static MemorySegment rootSchema(MemorySegment schema) {
        ArrowSchema.release(schema, RELEASE_SCHEMA);
        return schema;
    }

    /** An array of {@code length} elements at {@code offset}, with the given buffers (NULL allowed) and children. */
    MemorySegment array(long length, long nullCount, long offset, MemorySegment[] buffers, MemorySegment... children) {
        MemorySegment a = arena.allocate(ArrowArray.layout());
        ArrowArray.length(a, length);
        ArrowArray.null_count(a, nullCount);
        ArrowArray.offset(a, offset);
        ArrowArray.n_buffers(a, buffers.length);
        ArrowArray.buffers(a, pointers(buffers));
        ArrowArray.n_children(a, children.length);
        ArrowArray.children(a, pointers(children));
        ArrowArray.release(a, RELEASE_CHILD);
        return a;
    }

    /** Sets {@code dictionary} as the dictionary of {@code array} (both already made). */
    static MemorySegment withArrayDictionary(MemorySegment array, MemorySegment dictionary) {
        ArrowArray.dictionary(array, dictionary);
        return array;
    }

    /** Makes {@code array} a root: its release is counted. */
    static MemorySegment rootArray(MemorySegment array) {
        ArrowArray.release(array, RELEASE_ARRAY);
        return array;
    }

    static boolean released(MemorySegment struct, boolean schema) {
        return (schema ? ArrowSchema.release(struct) : ArrowArray.release(struct)).address() == 0;
    }

    private MemorySegment pointers(MemorySegment[] items) {
        if (items.length == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, items.length);
        for (int i = 0; i < items.length; i++) {
            ptrs.setAtIndex(ValueLayout.ADDRESS, i, items[i] == null ? MemorySegment.NULL : items[i]);
        }
        return ptrs;
    }

    // ---- buffers

    MemorySegment ints(int... v) {
        MemorySegment s = arena.allocate(Math.max(4L * v.length, 8), 64);
        for (int i = 0; i < v.length; i++) {
            s.setAtIndex(ValueLayout.JAVA_INT, i, v[i]);
        }
        return s;
    }

    MemorySegment longs(long... v) {
        MemorySegment s = arena.allocate(Math.max(8L * v.length, 8), 64);
        for (int i = 0; i < v.length; i++) {
            s.setAtIndex(ValueLayout.JAVA_LONG, i, v[i]);
        }
        return s;
    }

    MemorySegment bytes(int... v) {
        MemorySegment s = arena.allocate(Math.max(v.length, 8), 64);
        for (int i = 0; i < v.length; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) v[i]);
        }
        return s;
    }

    /** A validity bitmap: element i is valid where {@code valid[i]}. */
    MemorySegment bits(boolean... valid) {
        MemorySegment s = arena.allocate(Math.max((valid.length + 7) / 8, 8), 64);
        for (int i = 0; i < valid.length; i++) {
            if (valid[i]) {
                s.set(ValueLayout.JAVA_BYTE, i >>> 3, (byte) (s.get(ValueLayout.JAVA_BYTE, i >>> 3) | (1 << (i & 7))));
            }
        }
        return s;
    }

    MemorySegment utf8(String all) {
        byte[] b = all.getBytes(StandardCharsets.UTF_8);
        MemorySegment s = arena.allocate(Math.max(b.length, 8), 64);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    private MemorySegment metadataBlob(Map<String, String> md) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.nio.ByteBuffer n = java.nio.ByteBuffer.allocate(4).order(ByteOrder.nativeOrder());
        out.writeBytes(n.putInt(md.size()).array());
        for (Map.Entry<String, String> e : md.entrySet()) {
            for (String part : new String[] {e.getKey(), e.getValue()}) {
                byte[] b = part.getBytes(StandardCharsets.UTF_8);
                out.writeBytes(java.nio.ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(b.length).array());
                out.writeBytes(b);
            }
        }
        byte[] all = out.toByteArray();
        MemorySegment s = arena.allocate(all.length, 8);
        MemorySegment.copy(all, 0, s, ValueLayout.JAVA_BYTE, 0, all.length);
        return s;
    }

    @Override
    public void close() {
        arena.close();
    }
}
