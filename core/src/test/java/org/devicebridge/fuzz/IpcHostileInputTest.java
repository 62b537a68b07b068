package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.IpcParsing;
import org.junit.jupiter.api.Test;

/**
 * The hostile schema messages of the IPC descriptors, as explicit cases beside the fuzzer: length claims,
 * cycles, shared tables, nesting, vectors and strings longer than the message. Each is a typed
 * {@link ValidationException} with a path, never an {@link OutOfMemoryError} or {@link StackOverflowError}, and
 * a replay of the fuzzer's first seeds passes the oracle. No GPU needed.
 */
class IpcHostileInputTest {
    private static ValidationException refused(byte[] message, Category category, String path) {
        ValidationException e = assertThrows(ValidationException.class, () -> IpcParsing.schema(message));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        return e;
    }

    private static Field nested(int depth) {
        Field f = Field.nullable("leaf", new ArrowType.Int(32, true));
        for (int d = 0; d < depth; d++) {
            f = new Field("s" + d, FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(f));
        }
        return f;
    }

    private static byte[] message(Field... fields) {
        return IpcFuzz.message(new Schema(List.of(fields)));
    }

    /** A little-endian view of the flatbuffer of an encapsulated message (after continuation and length). */
    private static ByteBuffer flatbuffer(byte[] m) {
        return ByteBuffer.wrap(m, 8, m.length - 8).slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The position of slot {@code slot} of the table at {@code t}, which the test knows is present. */
    private static int slot(ByteBuffer b, int t, int slot) {
        int vt = t - b.getInt(t);
        int fo = b.getShort(vt + 4 + 2 * slot);
        assertTrue(fo != 0, "slot " + slot + " present");
        return t + fo;
    }

    private static int follow(ByteBuffer b, int at) {
        return at + b.getInt(at);
    }

    /** The position of the uoffset to the first child of the first field, and of that field's table. */
    private static int[] firstChildOffset(byte[] m) {
        ByteBuffer b = flatbuffer(m);
        int message = follow(b, 0);
        int schema = follow(b, slot(b, message, 2));
        int fields = follow(b, slot(b, schema, 1));
        int field = follow(b, fields + 4);
        int children = follow(b, slot(b, field, 5));
        return new int[] {children + 4, field};
    }

    @Test
    void eightBytesClaimingTwoGibibytesAreRefusedBeforeAnyAllocation() {
        refused(new byte[] {-1, -1, -1, -1, -1, -1, -1, 0x7F}, Category.SIZE, "schema");
        refused(new byte[] {-1, -1, -1, 0x7F, 0, 0, 0, 0}, Category.SIZE, "schema");
        refused(new byte[] {-1, -1, -1, -1, 0, 0, 0, 0}, Category.FORMAT, "schema");
        refused(new byte[] {1, 2, 3}, Category.FORMAT, "schema");
    }

    @Test
    void aChildOffsetPointingBackToItsOwnFieldIsRefusedAsACycle() {
        byte[] m = message(nested(1));
        int[] at = firstChildOffset(m);
        flatbuffer(m).putInt(at[0], at[1] - at[0]); // negative: Arrow Java would follow it forever
        ValidationException e = refused(m, Category.FORMAT, "schema.fields[0].children");
        assertTrue(e.getMessage().contains("expected an offset to a later place"), e.getMessage());
    }

    @Test
    void fieldsNestedDeeperThan64AreRefusedWithTheirPath() {
        IpcParsing.schema(message(nested(63)));
        ValidationException e = refused(message(nested(70)), Category.DEPTH,
                "schema.fields[0]" + ".children[0]".repeat(64) + ".children");
        assertTrue(e.getMessage().contains("at most 64 levels"), e.getMessage());
    }

    @Test
    void aTableSharedByEveryParentCannotExpandExponentially() {
        // 20 levels of [deeper struct, leaf]; the leaf's offset is then pointed at the deeper struct, so that a
        // message of linear size holds 2^20 paths
        Field f = Field.nullable("leaf", new ArrowType.Int(32, true));
        for (int d = 0; d < 20; d++) {
            f = new Field("s" + d, FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(f,
                    Field.nullable("l" + d, new ArrowType.Int(8, true))));
        }
        byte[] m = message(f);
        ByteBuffer b = flatbuffer(m);
        int field = firstChildOffset(m)[1];
        // make every second child the first child: walk down, repointing the vector's second element
        for (int d = 0; d < 20; d++) {
            int children = follow(b, slot(b, field, 5));
            int first = follow(b, children + 4);
            b.putInt(children + 8, first - (children + 8));
            field = first;
        }
        ValidationException e = assertThrows(ValidationException.class, () -> IpcParsing.schema(m));
        assertEquals(Category.DEPTH, e.category(), e.getMessage());
        assertTrue(e.path().startsWith("schema.fields[0].children[") && e.getMessage().contains("at most 65536 tables"),
                e.getMessage());
    }

    @Test
    void vectorAndStringLengthsBeyondTheMessageAreRefused() {
        byte[] m = message(Field.nullable("name", ArrowType.Utf8.INSTANCE));
        ByteBuffer b = flatbuffer(m);
        int message = follow(b, 0);
        int schema = follow(b, slot(b, message, 2));
        int fields = follow(b, slot(b, schema, 1));
        int field = follow(b, fields + 4);
        int name = follow(b, slot(b, field, 0));
        byte[] longName = m.clone();
        flatbuffer(longName).putInt(name, 0x7FFFFFF0);
        refused(longName, Category.SIZE, "schema.fields[0].name");
        byte[] manyFields = m.clone();
        flatbuffer(manyFields).putInt(fields, 0x7FFFFFFF);
        refused(manyFields, Category.SIZE, "schema.fields");
        byte[] badUtf8 = m.clone();
        flatbuffer(badUtf8).put(name + 4, (byte) 0xC0);
        refused(badUtf8, Category.FORMAT, "schema.fields[0].name");
    }

    @Test
    void otherMessagesVersionsAndBodiesAreRefused() {
        byte[] m = message(Field.nullable("x", new ArrowType.Int(64, true)));
        ByteBuffer b = flatbuffer(m);
        int message = follow(b, 0);
        byte[] v = m.clone();
        flatbuffer(v).putShort(slot(b, message, 0), (short) 1);
        refused(v, Category.VERSION, "schema.version");
        byte[] h = m.clone();
        flatbuffer(h).put(slot(b, message, 1), (byte) 3);
        refused(h, Category.FORMAT, "schema.header_type");
        byte[] trailing = java.util.Arrays.copyOf(m, m.length + 8);
        refused(trailing, Category.SIZE, "schema");
    }

    @Test
    void theFuzzersFirstSeedsPassTheOracle() {
        List<Long> accepted = new ArrayList<>();
        for (long seed = 0; seed < 3000; seed++) {
            if (IpcFuzzTest.one(seed)) {
                accepted.add(seed);
            }
        }
        assertTrue(accepted.size() > 100 && accepted.size() < 2900, accepted.size() + " accepted");
    }
}
