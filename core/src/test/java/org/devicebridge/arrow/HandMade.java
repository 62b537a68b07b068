package org.devicebridge.arrow;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * Structs built by hand in an arena, for shapes no producer makes on purpose (cycles, deep nesting, bad
 * metadata). Root releases are counted; a child's release only marks it released, as a parent's release
 * would.
 */
final class HandMade {
    static final AtomicInteger ROOT_RELEASES = new AtomicInteger();
    static final MemorySegment RELEASE_ROOT_SCHEMA = Native.upcallStub(MethodHandles.lookup(), HandMade.class,
            "releaseRootSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment RELEASE_ROOT_ARRAY = Native.upcallStub(MethodHandles.lookup(), HandMade.class,
            "releaseRootArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment RELEASE_CHILD = Native.upcallStub(MethodHandles.lookup(), HandMade.class,
            "releaseChild", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private HandMade() {}

    private static void releaseRootSchema(MemorySegment s) {
        ROOT_RELEASES.incrementAndGet();
        ArrowSchema.release(s.reinterpret(ArrowSchema.sizeof()), MemorySegment.NULL);
    }

    private static void releaseRootArray(MemorySegment a) {
        ROOT_RELEASES.incrementAndGet();
        ArrowArray.release(a.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
    }

    private static void releaseChild(MemorySegment s) {
        // Schema and array both keep release at the same place relative to their size; set it by kind.
    }

    static MemorySegment schema(Arena arena, String format, MemorySegment... children) {
        MemorySegment s = arena.allocate(ArrowSchema.layout());
        ArrowSchema.format(s, arena.allocateFrom(format));
        ArrowSchema.name(s, arena.allocateFrom("f"));
        ArrowSchema.flags(s, SchemaNode.FLAG_NULLABLE);
        ArrowSchema.n_children(s, children.length);
        if (children.length > 0) {
            MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, children.length);
            for (int i = 0; i < children.length; i++) {
                ptrs.setAtIndex(ValueLayout.ADDRESS, i, children[i]);
            }
            ArrowSchema.children(s, ptrs);
        }
        ArrowSchema.release(s, RELEASE_CHILD);
        return s;
    }

    static MemorySegment root(MemorySegment schema) {
        ArrowSchema.release(schema, RELEASE_ROOT_SCHEMA);
        return schema;
    }

    /** An array of {@code length} elements with the given buffers and children. */
    static MemorySegment array(Arena arena, long length, MemorySegment[] buffers, MemorySegment... children) {
        MemorySegment a = arena.allocate(ArrowArray.layout());
        ArrowArray.length(a, length);
        ArrowArray.n_buffers(a, buffers.length);
        if (buffers.length > 0) {
            MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, buffers.length);
            for (int i = 0; i < buffers.length; i++) {
                ptrs.setAtIndex(ValueLayout.ADDRESS, i, buffers[i]);
            }
            ArrowArray.buffers(a, ptrs);
        }
        ArrowArray.n_children(a, children.length);
        if (children.length > 0) {
            MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, children.length);
            for (int i = 0; i < children.length; i++) {
                ptrs.setAtIndex(ValueLayout.ADDRESS, i, children[i]);
            }
            ArrowArray.children(a, ptrs);
        }
        ArrowArray.release(a, RELEASE_CHILD);
        return a;
    }

    static MemorySegment rootArray(MemorySegment array) {
        ArrowArray.release(array, RELEASE_ROOT_ARRAY);
        return array;
    }
}
