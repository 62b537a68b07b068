package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.ArrowJavaUnavailableException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.testing.ArrowMemorySessionListener;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The FFM allocation manager ({@link ArrowMemory}): exact accounting, 64-byte alignment, Arrow's own checks
 * (double release, use after release, leaks at allocator close) with no double free, memory returned, and
 * the bridge on top of it. Runs in both Surefire executions: beside Netty (the factory passed through the
 * allocator's configuration) and without Netty (the FFM manager installed as Arrow's default).
 */
class ArrowMemoryTest {
    private RootAllocator allocator;
    private long liveBefore;

    @BeforeEach
    void setUp() {
        liveBefore = ArrowMemory.liveBytes();
        allocator = ArrowMemory.newRootAllocator();
    }

    @AfterEach
    void tearDown() {
        allocator.close();
        assertEquals(liveBefore, ArrowMemory.liveBytes(), "FFM bytes still live after the allocator closed");
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 63, 64, 65, 1000, 4096, 100_000, 16L << 20, (16L << 20) + 1, 40_000_001})
    void accountingIsExactAndEqualsArrowsRoundedRequest(long request) {
        long rounded = allocator.getRoundingPolicy().getRoundedSize(request);
        try (ArrowBuf buf = allocator.buffer(request)) {
            assertEquals(rounded, buf.capacity());
            assertEquals(rounded, allocator.getAllocatedMemory());
            assertEquals(liveBefore + rounded, ArrowMemory.liveBytes());
            assertEquals(0, buf.memoryAddress() % 64, "64-byte alignment");
            buf.setByte(rounded - 1, 7); // the last byte is ours
            assertEquals(7, buf.getByte(rounded - 1));
        }
        assertEquals(0, allocator.getAllocatedMemory());
        assertEquals(liveBefore, ArrowMemory.liveBytes());
    }

    @Test
    void everyBufferOfAManyBufferBatchIsAlignedTo64Bytes() {
        List<ArrowBuf> buffers = new ArrayList<>();
        try {
            for (int size = 1; size < 5000; size += 37) {
                ArrowBuf b = allocator.buffer(size);
                buffers.add(b);
                assertEquals(0, b.memoryAddress() % 64, "buffer of " + size + " bytes");
            }
        } finally {
            buffers.forEach(ArrowBuf::close);
        }
    }

    @Test
    void theAllocatorsFactoryIsTheFfmOne() {
        try (ArrowBuf buf = allocator.buffer(128)) {
            assertEquals(128, buf.capacity());
            assertTrue(ArrowMemory.liveAllocations() > 0);
            assertEquals(liveBefore + 128, ArrowMemory.liveBytes());
        }
        assertSame(ArrowMemory.factory(), ArrowMemory.factory());
    }

    @Test
    void aSecondReleaseIsArrowsErrorAndFreesNothingTwice() {
        ArrowBuf buf = allocator.buffer(256);
        assertEquals(liveBefore + 256, ArrowMemory.liveBytes());
        buf.close();
        assertEquals(liveBefore, ArrowMemory.liveBytes());
        assertThrows(IllegalStateException.class, buf::close);
        assertEquals(liveBefore, ArrowMemory.liveBytes());
        assertEquals(0, allocator.getAllocatedMemory());
    }

    @Test
    void useAfterReleaseFailsInArrowsReferenceCheckNotInTheJvm() {
        ArrowBuf buf = allocator.buffer(64);
        buf.setLong(0, 42);
        buf.close();
        assertThrows(IllegalStateException.class, () -> buf.getLong(0));
        assertThrows(IllegalStateException.class, () -> buf.setLong(0, 1));
    }

    @Test
    @org.devicebridge.testing.AllowsLeaks("Arrow Java keeps a buffer leaked into a closed allocator: its block cannot be freed")
    void closingAnAllocatorWithALiveBufferReportsTheLeak() {
        BufferAllocator child = allocator.newChildAllocator("leaky", 0, Long.MAX_VALUE);
        ArrowBuf leaked = child.buffer(512);
        IllegalStateException e = assertThrows(IllegalStateException.class, child::close);
        assertTrue(e.getMessage().contains("Memory was leaked"), e.getMessage());
        // Arrow keeps a leaked buffer's memory (its allocator is closed, so the release cannot account it):
        // take it out of this test's balance.
        assertTrue(leaked.refCnt() > 0);
        liveBefore += 512;
        // the root still counts the child's leaked bytes: close it here, expecting the same report
        IllegalStateException rootLeak = assertThrows(IllegalStateException.class, allocator::close);
        assertTrue(rootLeak.getMessage().contains("leaked"), rootLeak.getMessage());
        allocator = ArrowMemory.newRootAllocator();
    }

    @Test
    void manyAllocateFreeCyclesGiveTheMemoryBack() throws IOException {
        long rssBefore = residentBytes();
        for (int i = 0; i < 24; i++) {
            try (ArrowBuf big = allocator.buffer(32L << 20)) {
                for (long off = 0; off < big.capacity(); off += 4096) {
                    big.setByte(off, 1); // touch every page: resident until freed
                }
            }
        }
        for (int i = 0; i < 5_000; i++) {
            allocator.buffer(1000 + (i % 7) * 100).close();
        }
        assertEquals(liveBefore, ArrowMemory.liveBytes());
        long rssAfter = residentBytes();
        if (rssBefore > 0) {
            // 24 x 32 MiB touched: without the frees the RSS would have grown by 768 MiB
            assertTrue(rssAfter - rssBefore < (128L << 20), "RSS grew by " + (rssAfter - rssBefore) + " bytes");
        }
    }

    @Test
    void aLimitIsHonouredAndABadOneRefused() {
        try (RootAllocator limited = ArrowMemory.newRootAllocator(1024)) {
            limited.buffer(1024).close();
            assertThrows(org.apache.arrow.memory.OutOfMemoryException.class, () -> limited.buffer(2048));
        }
        assertThrows(InvalidArgumentException.class, () -> ArrowMemory.newRootAllocator(0));
    }

    @Test
    void installAsDefaultIsANoOpOnceInstalledAndTypedWhenArrowChoseAnotherDefault() {
        // Which default this JVM has depends on what made its first allocator: the Netty-free execution's
        // listener or ArrowMemory.newRootAllocator() (FFM), or a plain new RootAllocator() beside Netty.
        boolean ffmDefault;
        long before = ArrowMemory.liveBytes();
        try (RootAllocator plain = new RootAllocator(); ArrowBuf buf = plain.buffer(4096)) {
            ffmDefault = ArrowMemory.liveBytes() == before + 4096;
            assertEquals(4096, buf.capacity());
        }
        if (ffmDefault) {
            ArrowMemory.installAsDefault(); // installed already: a second call changes nothing
        } else {
            ArrowJavaUnavailableException e = assertThrows(ArrowJavaUnavailableException.class, ArrowMemory::installAsDefault);
            assertTrue(e.getMessage().contains("chose its default allocation manager already"), e.getMessage());
        }
        if ("ffm".equals(System.getProperty(ArrowMemorySessionListener.PROPERTY))) {
            assertTrue(ffmDefault, "the Netty-free execution installs the FFM default before any test");
        }
    }

    @Test
    void theBridgeExportsAndImportsRootsBuiltInFfmMemory() {
        try (BigIntVector ids = new BigIntVector("id", allocator);
             VarCharVector names = new VarCharVector("name", allocator)) {
            ids.allocateNew(1000);
            names.allocateNew(1000);
            for (int i = 0; i < 1000; i++) {
                if (i % 13 == 0) {
                    ids.setNull(i);
                    names.setNull(i);
                } else {
                    ids.set(i, i * 31L);
                    names.setSafe(i, ("n" + i).getBytes(StandardCharsets.UTF_8));
                }
            }
            ids.setValueCount(1000);
            names.setValueCount(1000);
            VectorSchemaRoot table = VectorSchemaRoot.of(ids, names);
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment schema = ArrowC.allocateSchema(structs);
                MemorySegment array = ArrowC.allocateArray(structs);
                ArrowJava.exportRoot(table, null, array, schema);
                try (ImportedSchema s = ArrowC.importSchema(schema);
                     VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator,
                             ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                    assertEquals(table.contentToTSVString(), back.contentToTSVString());
                    assertNotEquals(0, allocator.getAllocatedMemory());
                }
            }
        }
    }

    /** The resident set size from /proc (0 where there is none). */
    private static long residentBytes() throws IOException {
        Path statm = Path.of("/proc/self/statm");
        if (!Files.isReadable(statm)) {
            return 0;
        }
        String[] fields = Files.readString(statm).trim().split(" ");
        return Long.parseLong(fields[1]) * 4096;
    }
}
