package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * Self-check of the Arrow import path without Arrow Java: a hand-built sliced int32 array is imported at
 * FULL and read at its offset, a malformed one is refused, and each struct is released exactly once.
 */
final class ArrowImportSelfCheck implements SelfCheckSection {
    private static final System.Logger LOG = System.getLogger("org.devicebridge");
    private static final AtomicInteger RELEASES = new AtomicInteger();

    /** Made on first use: this class must load (and report) where native access is denied. */
    private static final class Stubs {
        static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(),
                ArrowImportSelfCheck.class, "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(),
                ArrowImportSelfCheck.class, "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    }

    private static void releaseSchema(MemorySegment s) {
        try {
            RELEASES.incrementAndGet();
            ArrowSchema.release(s.reinterpret(ArrowSchema.sizeof()), MemorySegment.NULL);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "self-check release failed", t);
        }
    }

    private static void releaseArray(MemorySegment a) {
        try {
            RELEASES.incrementAndGet();
            ArrowArray.release(a.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "self-check release failed", t);
        }
    }

    @Override
    public String name() {
        return "Arrow C Data import";
    }

    @Override
    public void run(Report report) {
        RELEASES.set(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowSchema.format(schema, arena.allocateFrom("i"));
            ArrowSchema.release(schema, Stubs.RELEASE_SCHEMA);
            MemorySegment values = arena.allocate(ValueLayout.JAVA_INT, 6);
            for (int i = 0; i < 6; i++) {
                values.setAtIndex(ValueLayout.JAVA_INT, i, 10 * i);
            }
            MemorySegment buffers = arena.allocate(ValueLayout.ADDRESS, 2);
            buffers.setAtIndex(ValueLayout.ADDRESS, 1, values);
            MemorySegment array = arena.allocate(ArrowArray.layout());
            ArrowArray.length(array, 3);
            ArrowArray.offset(array, 2);
            ArrowArray.n_buffers(array, 2);
            ArrowArray.buffers(array, buffers);
            ArrowArray.release(array, Stubs.RELEASE_ARRAY);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 ImportedArray a = ArrowC.importArray(s.root(), array, ValidationLevel.FULL)) {
                MemorySegment data = a.root().buffer(1);
                report.check("sliced int32 read at its offset", data.byteSize() == 20
                        && data.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, a.root().offset()) == 20,
                        "bytes " + data.byteSize() + ", first value " + data.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, 2));
            }
            report.check("schema and array released once each", RELEASES.get() == 2, "releases: " + RELEASES.get());

            ArrowArray.release(array, Stubs.RELEASE_ARRAY);
            ArrowArray.n_buffers(array, 3);
            ArrowSchema.release(schema, Stubs.RELEASE_SCHEMA);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                ArrowC.importArray(s.root(), array, ValidationLevel.MINIMAL).close();
                report.check("malformed array refused", false, "n_buffers 3 for int32 was accepted");
            } catch (ValidationException e) {
                report.check("malformed array refused", e.category() == ValidationException.Category.STRUCTURE,
                        e.getMessage());
            }
            report.check("refused array released once", RELEASES.get() == 4, "releases: " + RELEASES.get());
        }
    }
}
