package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * pyarrow as the independent peer for every Arrow type (issue 13, item 5): each case (a one-column record
 * batch built by {@code peers.py}; whole, sliced, and zero-length at its end) goes
 * <ol>
 *   <li>{@code pyarrow->view}: pyarrow exports it through the PyCapsule interface, Java imports it at FULL
 *       (the {@code arrow} package alone) and reads every value, name, nullability and metadata entry,
 *       compared with what pyarrow says of its own batch;</li>
 *   <li>{@code view->pyarrow->view}: Java exports a deep copy of that view (its own memory and release
 *       callbacks, the producer's offsets kept), pyarrow imports it, validates it fully and compares it
 *       with the source, then exports it again for Java to read and compare; each Java export is released
 *       exactly once;</li>
 *   <li>{@code pyarrow->ArrowJava->(view|pyarrow)}: the Arrow Java bridge where Arrow Java can hold the
 *       type: the view is imported into a {@code VectorSchemaRoot}, exported back with {@code ArrowJava},
 *       and read both by Java's view (values compared in Java) and by pyarrow (compared in Python). A type
 *       the bridge refuses with the typed {@link UnsupportedFeatureException} is reported, not failed.</li>
 * </ol>
 * Every direction is tried even when an earlier one failed; the test fails if any did. A summary table
 * (type, variant, direction, rows, result) is printed after the class: paste it into the closing note.
 * Skipped (with the reason) where CPython or pyarrow is missing; case by case where this pyarrow cannot
 * build a type (decimal32/64 before pyarrow 18, views, list views...).
 */
class PyArrowPeerTest {
    private static final ConcurrentLinkedQueue<String> TABLE = new ConcurrentLinkedQueue<>();
    private static final List<String> CASES = List.of(
            "null", "bool", "int8", "uint16", "int32", "int64", "uint64", "float32", "float64", "date32",
            "timestamp_us_utc", "time64_ns", "duration_ms", "string", "large_string", "binary", "large_binary",
            "fixed_size_binary", "decimal32", "decimal64", "decimal128", "decimal256", "list", "large_list",
            "fixed_size_list", "struct", "map_noncanonical_names", "string_view", "binary_view", "run_end_encoded",
            "run_end_encoded_int16_strings", "list_view", "large_list_view", "dictionary", "list_of_dictionary",
            "nested_dictionary", "dense_union_type_ids", "sparse_union_type_ids", "metadata");
    private static final List<String> VARIANTS = List.of("whole", "sliced", "empty");

    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;
    private int copiesBefore;

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String c : CASES) {
            for (String v : VARIANTS) {
                out.add(Arguments.of(c, v));
            }
        }
        return out.stream();
    }

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("pyarrow");
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        copiesBefore = ViewCopyExport.live();
        ns = python.newNamespace();
        python.exec(peersSource(), ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return;
        }
        python.exec("gc.collect()", ns);
        ns.close();
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
        assertEquals(copiesBefore, ViewCopyExport.live(), "Java exports pyarrow did not release");
    }

    @AfterAll
    static void printTable() {
        if (TABLE.isEmpty()) {
            return;
        }
        StringBuilder b = new StringBuilder("\n[pyarrow peers] ");
        try {
            b.append(PythonRuntime.get());
        } catch (RuntimeException e) {
            b.append("(no runtime)");
        }
        b.append(String.format(Locale.ROOT, "%n%-30s %-7s %-30s %5s  %s%n", "type", "variant", "direction", "rows",
                "result"));
        TABLE.stream().sorted().forEach(r -> b.append(r).append('\n'));
        System.out.println(b);
    }

    /** {@code str(expression)} evaluated in the test's namespace. */
    private String text(String expression) {
        try (PyObjectRef r = python.eval(expression, ns)) {
            return r.str();
        }
    }

    private static String peersSource() {
        try (InputStream in = PyArrowPeerTest.class.getResourceAsStream("peers.py")) {
            if (in == null) {
                throw new IllegalStateException("peers.py is not on the class path next to " + PyArrowPeerTest.class);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void record(String type, String variant, String direction, long rows, String result) {
        String line = String.format(Locale.ROOT, "%-30s %-7s %-30s %5d  %s", type, variant, direction, rows, result);
        TABLE.add(line);
        System.out.println("[pyarrow peers] " + line);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void roundTripsThroughPyarrowBothWays(String type, String variant) {
        python.exec("src = peer_batch('" + type + "', '" + variant + "')", ns);
        try (PyObjectRef src = python.eval("src", ns)) {
            if (src.isNone()) {
                String version = text("pa.__version__");
                record(type, variant, "-", 0, "SKIP (pyarrow " + version + " cannot build it)");
                assumeTrue(false, "pyarrow " + version + " cannot build " + type);
            }
            long rows;
            try (PyObjectRef n = python.eval("src.num_rows", ns)) {
                rows = n.toLong();
            }
            String expectedValues = text("peer_canon(src)");
            String expectedSchema = text("peer_describe(src)");
            System.out.println("[pyarrow peers] " + type + " " + variant + ": " + text("str(src.schema.field(0).type)")
                    + ", " + rows + " rows, offset " + text("src.column(0).offset"));
            List<String> failures = new ArrayList<>();
            direction(type, variant, "pyarrow->view", rows, failures, () -> {
                try (View view = View.of(src)) {
                    return compare(view, expectedValues, expectedSchema);
                }
            });
            direction(type, variant, "view->pyarrow->view", rows, failures,
                    () -> throughJavaCopy(src, expectedValues, expectedSchema));
            direction(type, variant, "pyarrow->ArrowJava->view|pa", rows, failures,
                    () -> throughArrowJava(src, expectedValues, expectedSchema));
            if (!failures.isEmpty()) {
                fail(type + " " + variant + ":\n  " + String.join("\n  ", failures));
            }
        }
    }

    /** One direction: records OK / its problem / a typed unsupported answer; never stops the others. */
    private static void direction(String type, String variant, String name, long rows, List<String> failures,
                                  Direction body) {
        String problem;
        try {
            problem = body.run();
        } catch (UnsupportedFeatureException e) {
            record(type, variant, name, rows, "UNSUPPORTED (typed): " + oneLine(e.getMessage()));
            return;
        } catch (RuntimeException | AssertionError e) {
            problem = e.getClass().getSimpleName() + ": " + oneLine(e.getMessage());
            System.out.println("[pyarrow peers] " + type + " " + variant + " " + name + " failed:");
            e.printStackTrace(System.out);
        }
        if (problem.startsWith("NOTE: ")) {
            record(type, variant, name, rows, "OK (" + oneLine(problem) + ")");
            return;
        }
        record(type, variant, name, rows, problem.isEmpty() ? "OK" : "FAIL " + problem);
        if (!problem.isEmpty()) {
            failures.add(name + ": " + problem);
        }
    }

    @FunctionalInterface
    private interface Direction {
        /** '' when the direction round-tripped exactly, else what differed. */
        String run();
    }

    private static String oneLine(String s) {
        String t = String.valueOf(s).replace('\n', ' ');
        return t.length() > 300 ? t.substring(0, 297) + "..." : t;
    }

    /** An imported schema and array, closed together. */
    private record View(ImportedSchema schema, ImportedArray array) implements AutoCloseable {
        /** pyarrow's {@code __arrow_c_array__} of {@code producer}, imported at FULL. */
        static View of(PyObjectRef producer) {
            try (ArrowArrayCapsules caps = PythonImport.arrowArray(producer)) {
                ImportedSchema s = Capsules.take(caps.schema(), CapsuleKind.ARROW_SCHEMA, ArrowC::importSchema);
                try {
                    return new View(s, Capsules.take(caps.array(), CapsuleKind.ARROW_ARRAY,
                            p -> ArrowC.importArray(s.root(), p, ValidationLevel.FULL)));
                } catch (RuntimeException | Error e) {
                    s.close();
                    throw e;
                }
            }
        }

        /** An {@code ArrowSchema} and {@code ArrowArray} pair that Java code filled, imported at FULL. */
        static View of(MemorySegment schema, MemorySegment array) {
            ImportedSchema s = ArrowC.importSchema(schema);
            try {
                return new View(s, ArrowC.importArray(s.root(), array, ValidationLevel.FULL));
            } catch (RuntimeException | Error e) {
                s.close();
                throw e;
            }
        }

        @Override
        public void close() {
            try {
                array.close();
            } finally {
                schema.close();
            }
        }
    }

    /** '' when the view holds the expected values and names/metadata, else the differences. */
    private static String compare(View view, String expectedValues, String expectedSchema) {
        List<String> problems = new ArrayList<>();
        String schema = describe(view.schema().root());
        if (!schema.equals(expectedSchema)) {
            problems.add("names/metadata: Java reads " + schema + " but pyarrow has " + expectedSchema);
        }
        String values = values(view.array().root());
        if (!values.equals(expectedValues)) {
            problems.add("values: Java reads [" + values.replace('\t', ' ') + "] but pyarrow has ["
                    + expectedValues.replace('\t', ' ') + "]");
        }
        return String.join("; ", problems);
    }

    /** The canonical text of every column of a record batch view, as {@code peer_canon} makes it. */
    private static String values(ArrayNode root) {
        return root.children().stream()
                .map(c -> String.join("\t", ViewValues.column(c, root.offset(), root.length())))
                .collect(Collectors.joining("\n"));
    }

    /** Names, nullability and metadata of the tree, as {@code peer_describe} makes them. */
    static String describe(SchemaNode root) {
        return meta(root.metadata()) + "(" + root.children().stream().map(PyArrowPeerTest::field)
                .collect(Collectors.joining(",")) + ")";
    }

    private static String field(SchemaNode f) {
        List<SchemaNode> kids = describedChildren(f);
        return f.name() + (f.nullable() ? "" : "!") + meta(f.metadata())
                + (kids.isEmpty() ? "" : "(" + kids.stream().map(PyArrowPeerTest::field).collect(Collectors.joining(",")) + ")");
    }

    /** The fields pyarrow's types expose: struct and union children, list item fields, map keys and items. */
    private static List<SchemaNode> describedChildren(SchemaNode f) {
        TypeId id = f.type().id();
        return switch (id) {
            case STRUCT, SPARSE_UNION, DENSE_UNION -> f.children();
            case MAP -> f.children().get(0).children();
            case LIST, LARGE_LIST, LIST_VIEW, LARGE_LIST_VIEW, FIXED_SIZE_LIST -> f.children();
            default -> List.of();
        };
    }

    private static String meta(Map<String, String> m) {
        if (m.isEmpty()) {
            return "";
        }
        return new TreeMap<>(m).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(",", "<", ">"));
    }

    /** view->pyarrow->view: a deep copy made by Java goes to pyarrow, which checks it and gives it back. */
    private String throughJavaCopy(PyObjectRef src, String expectedValues, String expectedSchema) {
        int schemaReleases = ViewCopyExport.SCHEMA_RELEASES.get();
        int arrayReleases = ViewCopyExport.ARRAY_RELEASES.get();
        List<String> problems = new ArrayList<>();
        try (View view = View.of(src);
             PyObjectRef obj = PythonExport.builder().arrowArray((requested, schemaOut, arrayOut) -> {
                 ViewCopyExport.exportSchema(view.schema().root(), schemaOut);
                 ViewCopyExport.exportArray(view.array().root(), arrayOut);
             }).build()) {
            python.set(ns, "obj", obj);
            python.exec("got = peer_import(obj)", ns);
            String pyProblem = text("peer_check(got, src)");
            if (!pyProblem.isEmpty()) {
                problems.add((pyProblem.startsWith("NOTE: ") ? "" : "pyarrow on Java's export: ") + pyProblem);
            }
            // What pyarrow re-exports is compared with what pyarrow's own C Data round trip of the source
            // gives (pyarrow 25 renames non-canonical map fields on import, for instance).
            String ownSchema = text("peer_describe(peer_import(src))");
            try (PyObjectRef got = python.eval("got", ns); View back = View.of(got)) {
                String p = compare(back, expectedValues, ownSchema);
                if (!p.isEmpty()) {
                    problems.add("Java on pyarrow's re-export: " + p);
                }
            }
            if (problems.isEmpty() && !ownSchema.equals(expectedSchema)) {
                problems.add("NOTE: pyarrow's own C Data import turns " + expectedSchema + " into " + ownSchema);
            }
        } finally {
            python.exec("got = obj = None\ngc.collect()", ns);
        }
        int s = ViewCopyExport.SCHEMA_RELEASES.get() - schemaReleases;
        int a = ViewCopyExport.ARRAY_RELEASES.get() - arrayReleases;
        if (s != 1 || a != 1) {
            problems.add("expected pyarrow to release Java's schema and array once each but found " + s + " and " + a);
        }
        return String.join("; ", problems);
    }

    /** pyarrow->ArrowJava->(view|pyarrow): the Arrow Java bridge both ways. */
    private String throughArrowJava(PyObjectRef src, String expectedValues, String expectedSchema) {
        List<String> problems = new ArrayList<>();
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        try (BufferAllocator allocator = new RootAllocator()) {
            try (View view = View.of(src)) {
                ArrowJava.toField(view.schema().root()); // a typed refusal is reported, not failed
                long rows = view.array().root().length();
                try (VectorSchemaRoot root = ArrowJava.importVectorSchemaRoot(allocator, view.array(), dictionaries)) {
                    if (root.getRowCount() != rows) {
                        problems.add("Arrow Java holds " + root.getRowCount() + " rows");
                    }
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment cs = arena.allocate(ArrowSchema.layout());
                        MemorySegment ca = arena.allocate(ArrowArray.layout());
                        ArrowJava.exportRoot(root, dictionaries, ca, cs);
                        try (View back = View.of(cs, ca)) {
                            String p = compare(back, expectedValues, expectedSchema);
                            if (!p.isEmpty()) {
                                problems.add("Java view of ArrowJava: " + p);
                            }
                        }
                    }
                    try (PyObjectRef obj = PythonExport.builder().arrowArray((requested, schemaOut, arrayOut) ->
                            ArrowJava.exportRoot(root, dictionaries, arrayOut, schemaOut)).build()) {
                        python.set(ns, "obj", obj);
                        String p = text("peer_check(peer_import(obj), src)");
                        if (!p.isEmpty()) {
                            problems.add((p.startsWith("NOTE: ") ? "" : "pyarrow on ArrowJava: ") + p);
                        }
                    } finally {
                        python.exec("obj = None\ngc.collect()", ns);
                    }
                }
            } finally {
                for (long id : dictionaries.getDictionaryIds()) {
                    dictionaries.lookup(id).getVector().close();
                }
            }
            if (allocator.getAllocatedMemory() != 0) {
                problems.add("Arrow Java allocator holds " + allocator.getAllocatedMemory() + " bytes");
            }
        }
        return String.join("; ", problems);
    }
}
