package org.devicebridge.fuzz;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.fuzz.FuzzOracle.Check;
import org.devicebridge.fuzz.FuzzOracle.Outcome;
import org.devicebridge.fuzz.MalformedArrow.Malformation;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;

/**
 * The oracle of the Arrow targets: the schema is imported once and the same array (its root struct restored
 * between imports) at several levels - FULL and DEFAULT for {@link ArrowFuzz} inputs, MINIMAL, DEFAULT and
 * FULL for {@link MalformedArrow} ones - and at each level:
 * <ul>
 *   <li>a rejection is typed (a {@link ValidationException}, or {@link UnsupportedFeatureException}), the
 *       array released exactly once, and every level above rejects too;</li>
 *   <li>an accepted array's segments lie inside the generator's buffers, and closing it releases it once;</li>
 *   <li>a host array accepted at DEFAULT or FULL goes through the Arrow Java bridge, which either loads it
 *       with exactly the values the {@link ReferenceDecoder} reads from the C structs, or refuses it: at FULL
 *       only with the documented {@link UnsupportedFeatureException}, at DEFAULT with that or a
 *       {@link ValidationException} - any other exception, a value that differs, or values loaded from
 *       contents that have none is a failure; an array that loads at FULL loads at DEFAULT with the same
 *       values;</li>
 *   <li>for malformed inputs, the level the {@link Malformation} table names, and every level above it,
 *       rejects.</li>
 * </ul>
 * No child release is ever called and the Arrow allocator returns to zero. One per thread (keeps counts).
 */
final class ArrowOracle {
    private static final ValidationLevel[] RANDOM_LEVELS = {ValidationLevel.FULL, ValidationLevel.DEFAULT};
    private static final ValidationLevel[] MALFORMED_LEVELS = {ValidationLevel.MINIMAL, ValidationLevel.DEFAULT, ValidationLevel.FULL};

    private final BufferAllocator allocator;
    final Stats stats = new Stats();

    /** What the Arrow targets saw; merged over threads by the test. */
    static final class Stats {
        long acceptedNested;
        long acceptedDictionary;
        /** Bridge outcomes at FULL and at DEFAULT: loaded with right values, refused typed (by kind). */
        long bridgeLoadedFull;
        long bridgeUnsupportedFull;
        long bridgeLoadedDefault;
        long bridgeUnsupportedDefault;
        long bridgeRefusedDefault;
        /** FULL-loaded vectors exported back (own field) and re-imported with the same values; export unsupported. */
        long exportedBack;
        long exportUnsupported;
        /** Inputs whose values were only right read with the other null-count convention (see ReferenceDecoder). */
        long nullCountConvention;
        /** Per malformation row: inputs, and rejections at a level below the row's (allowed, counted). */
        final Map<Malformation, long[]> malformations = new EnumMap<>(Malformation.class);

        void add(Stats o) {
            acceptedNested += o.acceptedNested;
            acceptedDictionary += o.acceptedDictionary;
            bridgeLoadedFull += o.bridgeLoadedFull;
            bridgeUnsupportedFull += o.bridgeUnsupportedFull;
            bridgeLoadedDefault += o.bridgeLoadedDefault;
            bridgeUnsupportedDefault += o.bridgeUnsupportedDefault;
            bridgeRefusedDefault += o.bridgeRefusedDefault;
            exportedBack += o.exportedBack;
            exportUnsupported += o.exportUnsupported;
            nullCountConvention += o.nullCountConvention;
            o.malformations.forEach((m, v) -> {
                long[] mine = malformations.computeIfAbsent(m, x -> new long[3]);
                for (int i = 0; i < v.length; i++) {
                    mine[i] += v[i];
                }
            });
        }
    }

    ArrowOracle(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    Outcome random(long seed) {
        Fuzz.Counters k = Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            ArrowFuzz.Input in = new ArrowFuzz(mem).generate();
            Check c = new Check("arrow", seed, in.mutations);
            Outcome o = run(mem, in, null, RANDOM_LEVELS, c, k);
            c.equal("child release calls", 0, k.childReleases);
            c.equal("Arrow allocator bytes", 0, allocator.getAllocatedMemory());
            return o;
        }
    }

    Outcome malformed(long seed) {
        Fuzz.Counters k = Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            MalformedArrow.Input m = MalformedArrow.generate(mem);
            Check c = new Check("malformed", seed, m.arrow().mutations);
            c.malformation = m.malformation();
            long[] counts = stats.malformations.computeIfAbsent(m.malformation(), x -> new long[3]);
            counts[0]++;
            Outcome o = run(mem, m.arrow(), m.malformation(), MALFORMED_LEVELS, c, k);
            c.equal("child release calls", 0, k.childReleases);
            c.equal("Arrow allocator bytes", 0, allocator.getAllocatedMemory());
            return o;
        }
    }

    /** What one import level did. */
    private record Result(ValidationLevel level, RuntimeException rejection, Bridge bridge) {
        boolean accepted() {
            return rejection == null;
        }
    }

    /** What the Arrow Java bridge did with an accepted host array: loaded values, or a typed refusal. */
    private record Bridge(List<String> values, DeviceBridgeException refusal) {}

    private Outcome run(Fuzz.Mem mem, ArrowFuzz.Input in, Malformation m, ValidationLevel[] levels, Check c,
                        Fuzz.Counters k) {
        ImportedSchema schema;
        try {
            schema = ArrowC.importSchema(in.schema);
        } catch (ValidationException | UnsupportedFeatureException e) {
            c.equal("schema release calls after rejection", in.schemaReleased ? 0 : 1, k.schemaReleases);
            c.check("schema of a malformed-content input rejected: " + e, m == null);
            return Outcome.REJECTED;
        } catch (RuntimeException | Error e) {
            throw c.fail("importSchema threw an untyped exception", e);
        }
        c.check("accepted a released schema", !in.schemaReleased);
        Result[] results = new Result[levels.length];
        List<String> reference = null;
        try {
            walk(schema.root(), 0, c);
            c.shape = shape(schema.root(), 0);
            long structSize = in.device ? ArrowDeviceArray.sizeof() : ArrowArray.sizeof();
            MemorySegment snapshot = mem.allocate(structSize, 16).copyFrom(in.array.asSlice(0, structSize));
            for (int i = 0; i < levels.length; i++) {
                if (i > 0) {
                    in.array.asSlice(0, structSize).copyFrom(snapshot); // the same input again
                }
                results[i] = importAt(mem, in, schema, levels[i], c, k);
            }
            ReferenceDecoder.Undecodable undecodable = null;
            for (Result r : results) {
                if (r.bridge != null && r.bridge.values != null && reference == null && undecodable == null) {
                    try {
                        reference = new ReferenceDecoder(mem, false).decode(schema.root(), snapshot);
                    } catch (ReferenceDecoder.Undecodable e) {
                        undecodable = e;
                    }
                }
            }
            check(results, reference, undecodable, mem, schema.root(), snapshot, m, c);
        } finally {
            schema.close();
        }
        c.equal("schema release calls after close", 1, k.schemaReleases);
        for (Result r : results) {
            if (r.level == ValidationLevel.FULL) {
                return r.accepted() ? Outcome.ACCEPTED : Outcome.REJECTED;
            }
        }
        throw new IllegalStateException("no FULL import");
    }

    private void check(Result[] results, List<String> reference, ReferenceDecoder.Undecodable undecodable,
                       Fuzz.Mem mem, SchemaNode schema, MemorySegment snapshot, Malformation m, Check c) {
        for (Result a : results) {
            for (Result b : results) {
                if (!a.accepted() && b.accepted() && b.level.compareTo(a.level) > 0) {
                    throw c.fail(a.level + " rejected what " + b.level + " accepted", a.rejection);
                }
            }
            if (m != null) {
                if (m.mustReject(a.level) && a.accepted()) {
                    throw c.fail(FuzzOracle.Kind.LEVEL_TABLE, a.level, m + " accepted at " + a.level + " (the table says " + m.level + " rejects it)", null);
                }
                if (m.level == null && !a.accepted()) {
                    throw c.fail("a valid tree rejected at " + a.level, a.rejection);
                }
                if (!a.accepted() && !m.mustReject(a.level)) {
                    stats.malformations.get(m)[1]++; // caught below the table's level: allowed
                }
            }
            Bridge br = a.bridge;
            if (br == null || br.values == null) {
                continue;
            }
            if (undecodable != null) {
                throw c.fail(FuzzOracle.Kind.BRIDGE, a.level, "the Arrow Java bridge at " + a.level + " returned values for contents that have none ("
                        + undecodable.getMessage() + "): " + br.values, null);
            }
            if (!br.values.equals(reference)) {
                List<String> alternative;
                try {
                    alternative = new ReferenceDecoder(mem, true).decode(schema, snapshot);
                } catch (ReferenceDecoder.Undecodable e) {
                    alternative = null;
                }
                if (!br.values.equals(alternative)) {
                    throw c.fail(FuzzOracle.Kind.BRIDGE, a.level, "the Arrow Java bridge at " + a.level + " returned wrong values:\n  bridge    " + br.values
                            + "\n  reference " + reference, null);
                }
                stats.nullCountConvention++;
            }
        }
        Result full = find(results, ValidationLevel.FULL);
        Result def = find(results, ValidationLevel.DEFAULT);
        if (full.bridge != null && full.bridge.values != null
                && (def.bridge == null || def.bridge.values == null)) {
            throw c.fail(FuzzOracle.Kind.BRIDGE, ValidationLevel.DEFAULT, "the Arrow Java bridge loads at FULL but refuses at DEFAULT",
                    def.bridge == null ? def.rejection : def.bridge.refusal);
        }
    }

    private static Result find(Result[] results, ValidationLevel level) {
        for (Result r : results) {
            if (r.level == level) {
                return r;
            }
        }
        throw new IllegalStateException(level.toString());
    }

    private Result importAt(Fuzz.Mem mem, ArrowFuzz.Input in, ImportedSchema schema, ValidationLevel level,
                            Check c, Fuzz.Counters k) {
        long releasesBefore = k.rootReleases;
        ImportedArray array;
        try {
            array = in.device ? ArrowC.importDeviceArray(schema.root(), in.array, level)
                    : ArrowC.importArray(schema.root(), in.array, level);
        } catch (ValidationException | UnsupportedFeatureException e) {
            c.equal("array release calls after rejection at " + level, in.arrayReleased ? 0 : 1, k.rootReleases - releasesBefore);
            return new Result(level, e, null);
        } catch (RuntimeException | Error e) {
            throw c.fail("importArray at " + level + " threw an untyped exception", e);
        }
        c.check("accepted a released array at " + level, !in.arrayReleased);
        Bridge bridge = null;
        try {
            if (level == ValidationLevel.FULL) {
                if (!array.root().children().isEmpty()) {
                    stats.acceptedNested++;
                }
                if (hasDictionary(array.root())) {
                    stats.acceptedDictionary++;
                }
            }
            if (level.compareTo(ValidationLevel.DEFAULT) >= 0) {
                read(array.root(), mem, 0, c);
                if (array.root().isHostAccessible()) {
                    bridge = bridge(array, level, c);
                }
            }
        } finally {
            array.close();
        }
        c.equal("array release calls after close at " + level, 1, k.rootReleases - releasesBefore);
        return new Result(level, null, bridge);
    }

    private Bridge bridge(ImportedArray array, ValidationLevel level, Check c) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        FieldVector vector;
        try {
            vector = ArrowJava.importFieldVector(allocator, array, dictionaries);
        } catch (UnsupportedFeatureException e) {
            closeDictionaries(dictionaries);
            if (level == ValidationLevel.FULL) {
                stats.bridgeUnsupportedFull++;
            } else {
                stats.bridgeUnsupportedDefault++;
            }
            c.check("ArrowJava threw but left its input live", !array.isLive());
            return new Bridge(null, e);
        } catch (ValidationException e) {
            closeDictionaries(dictionaries);
            if (level == ValidationLevel.FULL) {
                throw c.fail(FuzzOracle.Kind.BRIDGE, level, "the Arrow Java bridge refused an input FULL accepted", e);
            }
            stats.bridgeRefusedDefault++;
            c.check("ArrowJava threw but left its input live", !array.isLive());
            return new Bridge(null, e);
        } catch (RuntimeException | Error e) {
            closeDictionaries(dictionaries);
            throw c.fail(FuzzOracle.Kind.BRIDGE, level, "the Arrow Java bridge at " + level + " threw an untyped exception", e);
        }
        try {
            List<String> values;
            try {
                values = ArrowJavaValues.of(vector, dictionaries);
            } catch (RuntimeException e) {
                throw c.fail(FuzzOracle.Kind.BRIDGE, level, "reading what the Arrow Java bridge returned at " + level + " failed: " + vector.getField(), e);
            }
            if (level == ValidationLevel.FULL) {
                stats.bridgeLoadedFull++;
                List<String> back = exportedBack(vector, dictionaries, c);
                if (back != null && !back.equals(values)) {
                    throw c.fail(FuzzOracle.Kind.BRIDGE, level, "exported back with the vector's own field and"
                            + " imported at FULL, the values differ: " + back + " instead of " + values, null);
                }
                stats.exportedBack += back == null ? 0 : 1;
            } else {
                stats.bridgeLoadedDefault++;
            }
            return new Bridge(values, null);
        } finally {
            vector.close();
            closeDictionaries(dictionaries);
        }
    }

    /**
     * The values of {@code vector} exported by {@code ArrowJava.exportVector} with its own field and imported
     * back at FULL through the bridge; {@code null} where the export refuses typed as unsupported (counted).
     */
    private List<String> exportedBack(FieldVector vector, DictionaryProvider dictionaries, Check c) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outArray = arena.allocate(ArrowArray.layout());
            MemorySegment outSchema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
            try {
                ArrowJava.exportVector(vector, dictionaries, outArray, outSchema);
            } catch (UnsupportedFeatureException e) {
                stats.exportUnsupported++;
                return null;
            } catch (RuntimeException | Error e) {
                throw c.fail(FuzzOracle.Kind.BRIDGE, ValidationLevel.FULL,
                        "ArrowJava.exportVector refused what the bridge loaded at FULL", e);
            }
            DictionaryProvider.MapDictionaryProvider backDictionaries = new DictionaryProvider.MapDictionaryProvider();
            try (ImportedSchema schema = ArrowC.importSchema(outSchema);
                 FieldVector back = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(schema.root(), outArray, ValidationLevel.FULL), backDictionaries)) {
                return ArrowJavaValues.of(back, backDictionaries);
            } catch (RuntimeException | Error e) {
                throw c.fail(FuzzOracle.Kind.BRIDGE, ValidationLevel.FULL,
                        "what ArrowJava.exportVector wrote failed to import back at FULL", e);
            } finally {
                closeDictionaries(backDictionaries);
            }
        }
    }

    private static void closeDictionaries(DictionaryProvider.MapDictionaryProvider dictionaries) {
        for (long id : dictionaries.getDictionaryIds()) {
            dictionaries.lookup(id).getVector().close();
        }
    }

    /** The formats of a schema tree, e.g. {@code +s<i,+L<u>>}, dictionaries as {@code i{u}}. */
    private static String shape(SchemaNode s, int depth) {
        StringBuilder sb = new StringBuilder(s.format());
        if (depth > 8) {
            return sb.append("...").toString();
        }
        if (!s.children().isEmpty()) {
            sb.append('<');
            for (int i = 0; i < s.children().size(); i++) {
                sb.append(i > 0 ? "," : "").append(shape(s.children().get(i), depth + 1));
            }
            sb.append('>');
        }
        if (s.dictionary() != null) {
            sb.append('{').append(shape(s.dictionary(), depth + 1)).append('}');
        }
        return sb.toString();
    }

    private static boolean hasDictionary(ArrayNode n) {
        if (n.dictionary() != null) {
            return true;
        }
        for (ArrayNode child : n.children()) {
            if (hasDictionary(child)) {
                return true;
            }
        }
        return false;
    }

    static void walk(SchemaNode s, int depth, Check c) {
        c.check("schema deeper than 64 levels accepted", depth <= 65);
        s.name();
        s.format();
        s.metadata().forEach((k, v) -> { });
        s.flags();
        s.type();
        for (SchemaNode child : s.children()) {
            walk(child, depth + 1, c);
        }
        if (s.dictionary() != null) {
            walk(s.dictionary(), depth + 1, c);
        }
    }

    /** Reads every byte of every buffer segment the view hands out, checking each lies in a generated buffer. */
    static long read(ArrayNode n, Fuzz.Mem mem, int depth, Check c) {
        c.check("array deeper than 64 levels accepted", depth <= 65);
        long sum = n.length() + n.nullCount() + n.offset();
        for (int i = 0; i < n.bufferCount(); i++) {
            if (n.isBufferNull(i)) {
                continue;
            }
            MemorySegment b;
            try {
                b = n.buffer(i);
            } catch (RuntimeException e) {
                throw c.fail("buffer(" + i + ") of " + n.path() + " threw on an accepted array", e);
            }
            long size = b.byteSize();
            if (size > 0) {
                c.check(n.path() + ".buffers[" + i + "]: segment of " + size + " bytes outside every generated buffer",
                        mem.insideBuffer(b.address(), size));
            }
            for (long p = 0; p < size; p++) {
                sum += b.get(ValueLayout.JAVA_BYTE, p);
            }
        }
        for (ArrayNode child : n.children()) {
            sum += read(child, mem, depth + 1, c);
        }
        if (n.dictionary() != null) {
            sum += read(n.dictionary(), mem, depth + 1, c);
        }
        return sum;
    }
}
