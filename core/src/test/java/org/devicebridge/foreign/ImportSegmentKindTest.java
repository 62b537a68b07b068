package org.devicebridge.foreign;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Stream;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every import entry point that takes a struct segment refuses a read-only segment and a heap segment with
 * an {@link InvalidArgumentException} naming its parameter, before anything is allocated: the producer's
 * struct is left as it was (not released, not marked), and the library holds nothing more than before.
 */
class ImportSegmentKindTest {
    static final AtomicInteger RELEASES = new AtomicInteger();
    static final MemorySegment RELEASE = Native.upcallStub(MethodHandles.lookup(), ImportSegmentKindTest.class,
            "release", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private static void release(MemorySegment s) {
        RELEASES.incrementAndGet();
    }

    private static ImportedSchema int32;

    @BeforeAll
    static void importAnInt32Field() {
        Arena global = Arena.global();
        MemorySegment s = global.allocate(ArrowSchema.layout());
        ArrowSchema.format(s, global.allocateFrom("i"));
        ArrowSchema.name(s, global.allocateFrom("x"));
        ArrowSchema.release(s, RELEASE);
        int32 = ArrowC.importSchema(s);
    }

    @AfterAll
    static void closeTheField() {
        int32.close();
    }

    /** An import entry point, the C struct it takes, and the name of its struct parameter. */
    private record EntryPoint(String name, ForeignImport.Kind kind, String parameter,
                              Function<MemorySegment, ? extends AutoCloseable> call) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<EntryPoint> entryPoints() {
        return List.of(
                new EntryPoint("ArrowC.importSchema", ForeignImport.Kind.ARROW_SCHEMA, "arrowSchemaPtr",
                        ArrowC::importSchema),
                new EntryPoint("ArrowC.importArray", ForeignImport.Kind.ARROW_ARRAY, "arrowArrayPtr",
                        s -> ArrowC.importArray(int32.root(), s, ValidationLevel.DEFAULT)),
                new EntryPoint("ArrowC.importArray(arena)", ForeignImport.Kind.ARROW_ARRAY, "arrowArrayPtr",
                        s -> ArrowC.importArray(int32.root(), s, ValidationLevel.DEFAULT, Arena.ofAuto())),
                new EntryPoint("ArrowC.importDeviceArray", ForeignImport.Kind.ARROW_DEVICE_ARRAY,
                        "arrowDeviceArrayPtr", s -> ArrowC.importDeviceArray(int32.root(), s, ValidationLevel.MINIMAL)),
                new EntryPoint("ArrowC.importDeviceArray(arena)", ForeignImport.Kind.ARROW_DEVICE_ARRAY,
                        "arrowDeviceArrayPtr",
                        s -> ArrowC.importDeviceArray(int32.root(), s, ValidationLevel.MINIMAL, Arena.ofAuto())),
                new EntryPoint("ArrowC.importStream", ForeignImport.Kind.ARROW_ARRAY_STREAM, "arrowArrayStreamPtr",
                        ArrowC::importStream),
                new EntryPoint("ArrowC.importDeviceStream", ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM,
                        "arrowDeviceArrayStreamPtr", ArrowC::importDeviceStream),
                new EntryPoint("DLPack.importVersioned", ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, "tensor",
                        s -> DLPack.importVersioned(s, ImportOptions.any())),
                new EntryPoint("DLPack.importVersioned(arena)", ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, "tensor",
                        s -> DLPack.importVersioned(s, ImportOptions.any(), Arena.ofAuto())),
                new EntryPoint("DLPack.importLegacy", ForeignImport.Kind.DL_MANAGED_TENSOR, "tensor",
                        s -> DLPack.importLegacy(s, ImportOptions.any())),
                new EntryPoint("DLPack.importLegacy(arena)", ForeignImport.Kind.DL_MANAGED_TENSOR, "tensor",
                        s -> DLPack.importLegacy(s, ImportOptions.any(), Arena.ofAuto())));
    }

    static Stream<Arguments> cases() {
        return entryPoints().stream().flatMap(e -> Stream.of(Arguments.of(e, true), Arguments.of(e, false)));
    }

    @ParameterizedTest(name = "{0}, read-only {1}")
    @MethodSource("cases")
    void aReadOnlyOrHeapStructIsRefusedTypedBeforeAnythingIsAllocated(EntryPoint entry, boolean readOnly) {
        RELEASES.set(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment struct;
            MemorySegment producers = null;
            if (readOnly) {
                producers = arena.allocate(entry.kind.byteSize(), 8);
                // a live struct: its release (or deleter) callback is set, so an import would take it
                producers.set(ValueLayout.ADDRESS, releaseOffset(entry.kind), RELEASE);
                struct = producers.asReadOnly();
            } else {
                byte[] bytes = new byte[Math.toIntExact(entry.kind.byteSize())];
                struct = MemorySegment.ofArray(bytes);
            }
            Allocations.Snapshot before = Allocations.inUse();
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> entry.call.apply(struct));
            assertEquals(entry.parameter, e.parameter(), e.getMessage());
            assertTrue(e.getMessage().contains(readOnly ? "read-only" : "heap segment"), e.getMessage());
            assertTrue(Allocations.inUse().minus(before).isZero(), () -> Allocations.inUse().minus(before).toString());
            assertEquals(0, RELEASES.get(), "the producer's release must not run");
            if (producers != null) {
                assertNotEquals(MemorySegment.NULL, producers.get(ValueLayout.ADDRESS, releaseOffset(entry.kind)),
                        "the producer's struct must not be marked released");
            }
        }
    }

    private static long releaseOffset(ForeignImport.Kind kind) {
        MemorySegment probe = MemorySegment.ofArray(new long[Math.toIntExact(kind.byteSize() / 8)]);
        // the kind knows where its callback lies: find it by writing one and reading it back
        for (long off = 0; off < kind.byteSize(); off += 8) {
            probe.set(ValueLayout.JAVA_LONG, off, 0x1234L);
            if (kind.releaseCallback(probe).address() == 0x1234L) {
                return off;
            }
            probe.set(ValueLayout.JAVA_LONG, off, 0);
        }
        throw new AssertionError("no release field in " + kind);
    }
}
