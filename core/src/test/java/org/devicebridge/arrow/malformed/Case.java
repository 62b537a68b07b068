package org.devicebridge.arrow.malformed;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import java.util.function.Function;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;

/**
 * One row of the malformed-input matrix.
 *
 * @param group    the category this row belongs to (for the per-category summary)
 * @param name     what the input is and what must happen
 * @param kind     which import it goes through
 * @param type     the schema an array is imported against (arrays only)
 * @param input    builds the struct and returns the pointer handed to the importer
 * @param expected the category of the ValidationException, or null if the input must be accepted
 * @param path     the exact field path of the exception, or null where it is not meaningful
 * @param lowest   the lowest level that detects it (arrays); every level below must accept the input
 * @param releases release calls of the root struct expected once the case is over (0: input already released)
 * @param check    extra assertions on an accepted input's SchemaNode or ArrayNode root (may be null)
 * @param custom   for stream and other scripted rows: the whole body (then input/type are unused)
 */
record Case(String group, String name, Kind kind, Function<Fx, SchemaNode> type, Function<Fx, MemorySegment> input,
            Category expected, String path, ValidationLevel lowest, int releases, Consumer<Object> check, Consumer<Fx> custom) {

    enum Kind { SCHEMA, ARRAY, DEVICE_ARRAY, CUSTOM }

    @Override
    public String toString() {
        return group + ": " + name;
    }
}
