package org.devicebridge.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Self-check section for the Arrow export direction: exports a small Arrow Java vector (when Arrow Java
 * is on the class path), reads the struct back at the C level, releases it through its function pointer
 * and checks that every buffer reference was dropped.
 */
public final class ArrowExportSelfCheck implements SelfCheckSection {

    @Override
    public String name() {
        return "Arrow C Data export (CPU)";
    }

    @Override
    public void run(Report report) throws Exception {
        try {
            Class.forName("org.apache.arrow.vector.IntVector", false, ArrowExportSelfCheck.class.getClassLoader());
            Class.forName("org.apache.arrow.memory.RootAllocator", false, ArrowExportSelfCheck.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            report.line("Arrow Java", "not on the class path: export check skipped");
            return;
        }
        WithArrow.run(report);
    }

    /** Loaded only when Arrow Java is present. */
    private static final class WithArrow {
        static void run(Report report) {
            try (org.apache.arrow.memory.BufferAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                 Arena arena = Arena.ofConfined()) {
                MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
                MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
                try (org.apache.arrow.vector.IntVector v = new org.apache.arrow.vector.IntVector("x", allocator)) {
                    v.allocateNew(3);
                    v.set(0, 7);
                    v.setNull(1);
                    v.set(2, 9);
                    v.setValueCount(3);
                    org.devicebridge.arrow.ArrowExport.exportVector(v, null, array, schema);
                }
                String format = Native.string(org.devicebridge.generated.arrow.ArrowSchema.format(schema));
                report.check("schema format", "i".equals(format), "format " + format);
                long length = org.devicebridge.generated.arrow.ArrowArray.length(array);
                long nulls = org.devicebridge.generated.arrow.ArrowArray.null_count(array);
                MemorySegment data = org.devicebridge.generated.arrow.ArrowArray.buffers(array).reinterpret(16)
                        .get(ValueLayout.ADDRESS, 8).reinterpret(12);
                boolean values = data.get(ValueLayout.JAVA_INT, 0) == 7 && data.get(ValueLayout.JAVA_INT, 8) == 9;
                report.check("array survives closing the vector", length == 3 && nulls == 1 && values,
                        "length " + length + ", null_count " + nulls);
                Callbacks.invokeVoidPointer(org.devicebridge.generated.arrow.ArrowArray.release(array), array);
                Callbacks.invokeVoidPointer(org.devicebridge.generated.arrow.ArrowSchema.release(schema), schema);
                boolean released = org.devicebridge.generated.arrow.ArrowArray.release(array).address() == 0
                        && org.devicebridge.generated.arrow.ArrowSchema.release(schema).address() == 0;
                report.check("release callbacks", released && allocator.getAllocatedMemory() == 0,
                        "Arrow memory left: " + allocator.getAllocatedMemory());
            }
        }
    }
}
