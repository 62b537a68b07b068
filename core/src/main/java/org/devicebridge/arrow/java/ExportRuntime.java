package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.ArrowBuf;
import org.devicebridge.foreign.LocalCallbacks;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;
import org.devicebridge.internal.RefCount;

/**
 * What exported ArrowSchema/ArrowArray trees hold, and their release callbacks (one upcall stub per
 * kind, made once in the global arena).
 *
 * <p>One export is one malloc block (child structs, buffer and child pointer arrays, strings, variadic
 * sizes) shared by its nodes. Every node - the root and each child or dictionary struct - has its own
 * {@code private_data} key, so a consumer may move a child out and release it after the parent, as the
 * C Data Interface allows; the block is freed when its last node is released. A node holds one
 * reference to each Arrow buffer it exports and drops it in its release.
 */
final class ExportRuntime {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    static final ExportRegistry<Node> SCHEMAS = new ExportRegistry<>();
    static final ExportRegistry<Node> ARRAYS = new ExportRegistry<>();
    /** Release calls that found no export under their private_data (a second release, a forged struct). */
    static final AtomicLong STALE_RELEASES = new AtomicLong();
    /** Release callbacks that ran (each node counts once); tests compare it with what they exported. */
    static final AtomicLong SCHEMA_RELEASES = new AtomicLong();
    static final AtomicLong ARRAY_RELEASES = new AtomicLong();

    static final long SCHEMA_SIZE = ArrowSchema.sizeof();
    static final long ARRAY_SIZE = ArrowArray.sizeof();
    static final long SCHEMA_RELEASE_OFF = ArrowSchema.release$offset();
    static final long SCHEMA_PRIVATE_OFF = ArrowSchema.private_data$offset();
    static final long ARRAY_RELEASE_OFF = ArrowArray.release$offset();
    static final long ARRAY_PRIVATE_OFF = ArrowArray.private_data$offset();

    /** 64 zero bytes: the target of every exported buffer that has no bytes (never NULL, see the spec's note). */
    static final MemorySegment ZEROS = Arena.global().allocate(64, 64);

    static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), ExportRuntime.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), ExportRuntime.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    static {
        // A struct exported here and imported here is released by a Java call, not a native round trip.
        LocalCallbacks.register(RELEASE_SCHEMA, ExportRuntime::releaseSchema);
        LocalCallbacks.register(RELEASE_ARRAY, ExportRuntime::releaseArray);
    }
    private static final long RELEASE_SCHEMA_ADDRESS = RELEASE_SCHEMA.address();
    private static final long RELEASE_ARRAY_ADDRESS = RELEASE_ARRAY.address();

    private ExportRuntime() {}

    /** The malloc block of one export tree; freed when the last of its nodes is released. */
    static final class Block {
        private final RefCount liveNodes;

        Block(long address, int nodes) {
            this.liveNodes = new RefCount(nodes, () -> Native.free(MemorySegment.ofAddress(address)));
        }

        void nodeReleased() {
            liveNodes.release();
        }
    }

    /** One exported struct: the Arrow buffers it retained and the addresses of its child/dictionary structs. */
    static final class Node {
        final Block block;
        final ArrowBuf[] retained;
        final long[] dependents;

        Node(Block block, ArrowBuf[] retained, long[] dependents) {
            this.block = block;
            this.retained = retained;
            this.dependents = dependents;
        }

        void free() {
            if (retained != null) {
                for (ArrowBuf b : retained) {
                    try {
                        b.getReferenceManager().release();
                    } catch (Throwable t) {
                        LOG.log(System.Logger.Level.ERROR, "devicebridge: dropping an exported Arrow buffer failed", t);
                    }
                }
            }
            block.nodeReleased();
        }
    }

    // ---- upcalls: never throw ----

    private static void releaseSchema(MemorySegment schema) {
        try {
            release(true, schema.reinterpret(SCHEMA_SIZE), 0);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported ArrowSchema failed", t);
        }
    }

    private static void releaseArray(MemorySegment array) {
        try {
            release(false, array.reinterpret(ARRAY_SIZE), 0);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported ArrowArray failed", t);
        }
    }

    /**
     * Releases the node in {@code struct} (already sized), then marks it released. Children and the
     * dictionary still live in place are released first; ones the consumer moved away (release NULL in
     * place) are left to their own release.
     */
    static void release(boolean schema, MemorySegment struct, int depth) {
        long releaseOff = schema ? SCHEMA_RELEASE_OFF : ARRAY_RELEASE_OFF;
        long privateOff = schema ? SCHEMA_PRIVATE_OFF : ARRAY_PRIVATE_OFF;
        long key = struct.get(ValueLayout.JAVA_LONG, privateOff);
        Node node = (schema ? SCHEMAS : ARRAYS).remove(key);
        if (node == null) {
            STALE_RELEASES.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "devicebridge: release called on an exported "
                    + (schema ? "ArrowSchema" : "ArrowArray") + " that was already released (or not exported by devicebridge)");
            struct.set(ValueLayout.JAVA_LONG, releaseOff, 0L);
            return;
        }
        (schema ? SCHEMA_RELEASES : ARRAY_RELEASES).incrementAndGet();
        long ownStub = schema ? RELEASE_SCHEMA_ADDRESS : RELEASE_ARRAY_ADDRESS;
        long size = schema ? SCHEMA_SIZE : ARRAY_SIZE;
        try {
            for (long dependent : node.dependents) {
                try {
                    MemorySegment d = MemorySegment.ofAddress(dependent).reinterpret(size);
                    long fn = d.get(ValueLayout.JAVA_LONG, releaseOff);
                    if (fn == 0) {
                        continue; // moved out by the consumer, or released already
                    }
                    if (fn == ownStub && depth < 1024) {
                        release(schema, d, depth + 1); // ours: no native round trip
                    } else {
                        Callbacks.invokeVoidPointer(MemorySegment.ofAddress(fn), d);
                    }
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported child struct failed", t);
                }
            }
        } finally {
            node.free();
            struct.set(ValueLayout.JAVA_LONG, releaseOff, 0L);
        }
    }

    /** Exports not released yet (schema and array nodes); tests assert this returns to its baseline. */
    static int liveNodes() {
        return SCHEMAS.size() + ARRAYS.size();
    }
}
