package org.devicebridge.probe;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.ArrowJavaUnavailableException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;

/**
 * A user's program, run in a forked JVM by {@code ArrowMemoryForkedTest} with only {@code arrow-vector},
 * {@code arrow-memory-core} and their dependencies (no Netty), on the class path or the module path. In a
 * package of its own, so that it stays outside the {@code org.devicebridge.core} module on the module path.
 * Prints one line starting with {@code RESULT} and exits 0 when the scenario behaved as a user expects.
 */
public final class ArrowMemoryProbe {
    private ArrowMemoryProbe() {}

    public static void main(String[] args) {
        switch (args[0]) {
            case "bridge" -> {
                ArrowMemory.installAsDefault();
                bridge();
            }
            case "late" -> {
                try {
                    new RootAllocator().close();
                    System.out.println("RESULT unexpected: Arrow Java initialised without an allocation manager");
                    System.exit(1);
                } catch (Throwable expected) {
                    // Arrow Java's own failure: no default allocation manager on the class path
                }
                try {
                    ArrowMemory.installAsDefault();
                    System.out.println("RESULT unexpected: installAsDefault() did not throw");
                    System.exit(1);
                } catch (ArrowJavaUnavailableException e) {
                    System.out.println("RESULT typed " + e.getMessage());
                }
            }
            case "not-open" -> {
                try {
                    ArrowMemory.installAsDefault();
                    System.out.println("RESULT unexpected: installAsDefault() did not throw");
                    System.exit(1);
                } catch (ArrowJavaUnavailableException e) {
                    System.out.println("RESULT typed " + e.getMessage());
                }
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    /** Builds a root with new RootAllocator(), exports it through the bridge, imports it back, compares. */
    private static void bridge() {
        try (BufferAllocator allocator = new RootAllocator();
             BigIntVector ids = new BigIntVector("id", allocator);
             VarCharVector names = new VarCharVector("name", allocator)) {
            ids.allocateNew(100);
            names.allocateNew(100);
            for (int i = 0; i < 100; i++) {
                if (i % 7 == 0) {
                    ids.setNull(i);
                    names.setNull(i);
                } else {
                    ids.set(i, i * 3L);
                    names.setSafe(i, ("v" + i).getBytes(StandardCharsets.UTF_8));
                }
            }
            ids.setValueCount(100);
            names.setValueCount(100);
            VectorSchemaRoot table = VectorSchemaRoot.of(ids, names);
            long live = ArrowMemory.liveBytes();
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment schema = ArrowC.allocateSchema(structs);
                MemorySegment array = ArrowC.allocateArray(structs);
                ArrowJava.exportRoot(table, null, array, schema);
                try (ImportedSchema s = ArrowC.importSchema(schema);
                     VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator,
                             ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                    if (!table.contentToTSVString().equals(back.contentToTSVString())) {
                        System.out.println("RESULT mismatch");
                        System.exit(1);
                    }
                }
            }
            System.out.println("RESULT ok liveBytes=" + live + " module=" + ArrowMemory.class.getModule().getName());
        }
        if (ArrowMemory.liveBytes() != 0) {
            System.out.println("RESULT leaked " + ArrowMemory.liveBytes());
            System.exit(1);
        }
    }
}
