package org.devicebridge.arrow.malformed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.devicebridge.arrow.ValidationLevel;
import org.junit.jupiter.api.Test;

/**
 * Keeps {@code validation-parity.md} (the check-by-check table against Arrow C++ and nanoarrow) and the
 * tests in step: every row names at least one test, every {@code matrix:} test is a row of the
 * malformed-input matrix that is rejected exactly from the row's level (or accepted, for ACCEPTED rows),
 * and every {@code Class#method} test exists.
 */
class ValidationParityTest {
    static final String TABLE = "/validation-parity.md";
    private static final Set<String> LEVELS = Set.of("SCHEMA", "NONE", "MINIMAL", "DEFAULT", "FULL", "BRIDGE",
            "ACCEPTED", "DERIVED");
    private static final List<String> PACKAGES = List.of("org.devicebridge.arrow.malformed.", "org.devicebridge.arrow.",
            "org.devicebridge.arrow.java.");

    /** One row of the table. */
    record Row(String id, String reference, String check, String level, List<String> tests, String note) {}

    /** Every row of every table in the file, in order. */
    static List<Row> rows() throws IOException {
        String text;
        try (InputStream in = ValidationParityTest.class.getResourceAsStream(TABLE)) {
            if (in == null) {
                throw new IOException("missing resource " + TABLE);
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<Row> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.startsWith("| ") || line.startsWith("| id ")) {
                continue;
            }
            String[] cells = line.substring(1, line.length() - (line.endsWith("|") ? 1 : 0)).split("\\|", -1);
            if (cells.length != 6) {
                throw new IOException("expected 6 cells but found " + cells.length + " in: " + line);
            }
            List<String> tests = new ArrayList<>();
            for (String t : cells[4].split("<br>")) {
                if (!t.isBlank()) {
                    tests.add(t.strip());
                }
            }
            rows.add(new Row(cells[0].strip(), cells[1].strip(), cells[2].strip(), cells[3].strip(), tests,
                    cells[5].strip()));
        }
        return rows;
    }

    private static Map<String, Case> matrix() {
        Map<String, Case> byName = new HashMap<>();
        List<Case> all = new ArrayList<>(MalformedInputMatrixTest.cases());
        all.addAll(ScriptedCasesTest.cases());
        all.addAll(NativeProducerTest.cases());
        for (Case c : all) {
            byName.putIfAbsent(c.name(), c);
        }
        return byName;
    }

    @Test
    void everyRowHasAUniqueIdAKnownLevelAndATest() throws IOException {
        List<Row> rows = rows();
        assertTrue(rows.size() >= 100, "expected the whole table but found " + rows.size() + " rows");
        Set<String> ids = new HashSet<>();
        for (Row r : rows) {
            assertTrue(ids.add(r.id()), "duplicate id " + r.id());
            assertTrue(LEVELS.contains(r.level()), r.id() + ": unknown level '" + r.level() + "'");
            assertTrue(!r.tests().isEmpty(), r.id() + ": names no test");
            assertTrue(!r.check().isEmpty() && !r.reference().isEmpty(), r.id() + ": empty check or reference");
            if (r.level().equals("ACCEPTED") || r.level().equals("DERIVED")) {
                assertTrue(!r.note().isEmpty(), r.id() + ": a deviation or derived value needs its reason");
            }
        }
    }

    @Test
    void everyNamedTestExistsAndRejectsAtTheRowsLevel() throws IOException {
        Map<String, Case> matrix = matrix();
        List<String> problems = new ArrayList<>();
        for (Row r : rows()) {
            for (String test : r.tests()) {
                if (test.startsWith("matrix: ")) {
                    String name = test.substring("matrix: ".length());
                    Case c = matrix.get(name);
                    if (c == null) {
                        problems.add(r.id() + ": no matrix row named '" + name + "'");
                        continue;
                    }
                    String p = matrixProblem(r, c);
                    if (p != null) {
                        problems.add(r.id() + ": matrix row '" + name + "' " + p);
                    }
                } else if (!methodExists(test)) {
                    problems.add(r.id() + ": no test method " + test);
                }
            }
        }
        if (!problems.isEmpty()) {
            fail(problems.size() + " row(s) out of step with the tests:\n  " + String.join("\n  ", problems));
        }
    }

    /**
     * Null if {@code c} may stand for row {@code r}: for an array level, an array row rejected from that
     * level or above (a laxer variant, e.g. a -1 null count resolved at DEFAULT) or an accepted row (where
     * the check stops); {@link #everyRejectingLevelIsTheLowestOfAtLeastOneNamedTest} requires one rejected
     * exactly from the level. For SCHEMA a rejected schema row; for ACCEPTED/DERIVED any row.
     */
    private static String matrixProblem(Row r, Case c) {
        switch (r.level()) {
            case "SCHEMA" -> {
                if (c.expected() == null) {
                    return "accepts its input, but the row says SCHEMA";
                }
                if (c.kind() != Case.Kind.SCHEMA) {
                    return "is not a schema row";
                }
                return null;
            }
            case "NONE", "MINIMAL", "DEFAULT", "FULL" -> {
                if (c.expected() == null) {
                    return null; // an accepted row beside a rejected one shows where the check stops
                }
                if (c.kind() == Case.Kind.SCHEMA) {
                    return "is a schema row, but the row says " + r.level();
                }
                ValidationLevel rowLevel = ValidationLevel.valueOf(r.level());
                if (c.lowest() == null) {
                    return "has no lowest level";
                }
                if (c.lowest().compareTo(rowLevel) < 0) {
                    return "is rejected from " + c.lowest() + ", below the row's " + r.level();
                }
                return null;
            }
            default -> {
                return null;
            }
        }
    }

    private static boolean methodExists(String test) {
        int hash = test.indexOf('#');
        if (hash < 0) {
            return false;
        }
        String cls = test.substring(0, hash);
        String method = test.substring(hash + 1);
        for (String p : PACKAGES) {
            try {
                Class<?> k = Class.forName(p + cls);
                for (Method m : k.getDeclaredMethods()) {
                    if (m.getName().equals(method)) {
                        return true;
                    }
                }
                return false;
            } catch (ClassNotFoundException e) {
                // next package
            }
        }
        return false;
    }

    @Test
    void everyRejectingLevelIsTheLowestOfAtLeastOneNamedTest() throws IOException {
        Map<String, Case> matrix = matrix();
        for (Row r : rows()) {
            if (!List.of("NONE", "MINIMAL", "DEFAULT", "FULL").contains(r.level())) {
                continue;
            }
            boolean exact = r.tests().stream().filter(t -> t.startsWith("matrix: "))
                    .map(t -> matrix.get(t.substring("matrix: ".length())))
                    .anyMatch(c -> c != null && c.expected() != null && c.lowest() == ValidationLevel.valueOf(r.level()));
            assertTrue(exact, r.id() + ": no named matrix row is rejected exactly from " + r.level());
        }
        assertEquals(ValidationLevel.values().length, 4, "levels changed: update the table's level words");
    }
}
