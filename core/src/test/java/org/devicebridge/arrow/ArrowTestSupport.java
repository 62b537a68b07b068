package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * Each test owns an allocator and must leave it, and the live-handle count, as it found them. Public for
 * the tests of {@code arrow.java}, which import through this package.
 */
public abstract class ArrowTestSupport {
    protected BufferAllocator allocator;
    private long handlesBefore;

    @BeforeEach
    protected void openAllocator() {
        allocator = new RootAllocator();
        handlesBefore = HandleTracker.liveHandles();
    }

    @AfterEach
    protected void checkNothingLeaked() {
        assertEquals(handlesBefore, HandleTracker.liveHandles(), "live devicebridge handles");
        assertEquals(0, allocator.getAllocatedMemory(), () -> "Arrow memory still allocated: " + allocator.toVerboseString());
        allocator.close();
    }

    /** A vector exported by arrow-c-data (the independent producer) into structs it allocated. */
    public static final class Exported implements AutoCloseable {
        final org.apache.arrow.c.ArrowSchema schema;
        final org.apache.arrow.c.ArrowArray array;

        public Exported(BufferAllocator allocator, FieldVector vector, DictionaryProvider provider) {
            schema = org.apache.arrow.c.ArrowSchema.allocateNew(allocator);
            array = org.apache.arrow.c.ArrowArray.allocateNew(allocator);
            Data.exportVector(allocator, vector, provider, array, schema);
        }

        public MemorySegment schemaPtr() {
            return MemorySegment.ofAddress(schema.memoryAddress());
        }

        public MemorySegment arrayPtr() {
            return MemorySegment.ofAddress(array.memoryAddress());
        }

        /** The producer's struct, writable, for crafting offsets and corruptions before import. */
        public MemorySegment arrayStruct() {
            return arrayPtr().reinterpret(org.devicebridge.generated.arrow.ArrowArray.sizeof());
        }

        @Override
        public void close() {
            // Releases what was not moved out (release() skips structs whose release is NULL: imported
            // ones), then frees the struct memory; close() alone would not release.
            array.release();
            array.close();
            schema.release();
            schema.close();
        }
    }

    protected Exported export(FieldVector v) {
        return new Exported(allocator, v, null);
    }

    /** A parsed field of type {@code format} without children, as an import would give it. */
    protected static SchemaNode field(String name, String format, long flags) {
        return new SchemaNode("", new SchemaNode.Fields(name, ArrowFormat.parse(format, ""), flags, java.util.Map.of(),
                java.util.List.of(), null));
    }
}
