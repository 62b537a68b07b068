package org.devicebridge.arrow.java;

import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.hash.ArrowBufHasher;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * A custom Arrow Java extension type for the tests: a length in a unit (its serialized metadata) over int64
 * storage. Tests register it in {@code ExtensionTypeRegistry} and unregister it after.
 */
final class LengthType extends ArrowType.ExtensionType {
    static final String NAME = "devicebridge.test.length";
    static final ArrowType STORAGE = new ArrowType.Int(64, true);

    private final String unit;

    LengthType(String unit) {
        this.unit = Objects.requireNonNull(unit, "unit");
    }

    @Override
    public ArrowType storageType() {
        return STORAGE;
    }

    @Override
    public String extensionName() {
        return NAME;
    }

    @Override
    public boolean extensionEquals(ExtensionType other) {
        return other instanceof LengthType l && l.unit.equals(unit);
    }

    @Override
    public String serialize() {
        return unit;
    }

    @Override
    public ArrowType deserialize(ArrowType storageType, String serializedData) {
        if (!STORAGE.equals(storageType)) {
            throw new UnsupportedOperationException("a length is stored as int64, not " + storageType);
        }
        return new LengthType(serializedData);
    }

    @Override
    public FieldVector getNewVector(String name, FieldType fieldType, BufferAllocator allocator) {
        return new LengthVector(new Field(name, fieldType, null), allocator);
    }

    /** The vector of a {@link LengthType} field: its values are the int64 storage's. */
    static final class LengthVector extends ExtensionTypeVector<BigIntVector> {
        private final Field field;

        LengthVector(Field field, BufferAllocator allocator) {
            super(field.getName(), allocator, new BigIntVector(field.getName(), allocator));
            this.field = field;
        }

        @Override
        public Field getField() {
            return field; // ExtensionTypeVector's own would be the storage's
        }

        @Override
        public Object getObject(int index) {
            return getUnderlyingVector().getObject(index);
        }

        @Override
        public int hashCode(int index) {
            return getUnderlyingVector().hashCode(index);
        }

        @Override
        public int hashCode(int index, ArrowBufHasher hasher) {
            return getUnderlyingVector().hashCode(index, hasher);
        }
    }
}
