package org.devicebridge.arrow.flight;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;

/**
 * Moving a batch's buffers between a batch root and a stream root without copying them: Arrow Java's
 * unloader takes a reference to every buffer, its loader gives the target root references of its own (which
 * Arrow Java allows only between allocators of one root allocator, checked here first with a typed error).
 */
final class StreamRoots {
    private StreamRoots() {}

    /**
     * Replaces the contents of {@code target} with those of {@code source} (fields of the same types, see
     * {@link #sameTypes}), sharing the buffers: no byte is copied. Both roots stay their owners'.
     *
     * @throws InvalidArgumentException if the field types differ, or the roots' memory is of different root
     *         allocators
     */
    static void move(VectorSchemaRoot source, VectorSchemaRoot target, String parameter) {
        List<Field> expected = target.getSchema().getFields();
        List<Field> found = source.getSchema().getFields();
        if (!sameTypes(expected, found)) {
            throw new InvalidArgumentException(parameter, "expected a batch with the types of fields " + expected
                    + " (the stream's) but found " + found);
        }
        BufferAllocator from = allocatorOf(source);
        BufferAllocator to = allocatorOf(target);
        if (from != null && to != null && from.getRoot() != to.getRoot()) {
            throw new InvalidArgumentException(parameter, "expected a batch in memory of the stream's root allocator ("
                    + to.getRoot().getName() + ") but found one of " + from.getRoot().getName()
                    + ": Arrow Java shares buffers only between allocators of one root");
        }
        try (ArrowRecordBatch batch = new VectorUnloader(source).getRecordBatch()) {
            new org.apache.arrow.vector.VectorLoader(target).load(batch);
        }
    }

    /**
     * Whether the two field lists have the same types, nested alike: what Arrow Java's loader needs for the
     * buffers of one to fill the vectors of the other. Names, nullability and metadata may differ (a batch
     * that went through the C Data Interface and back may name a list's child differently).
     */
    static boolean sameTypes(List<Field> a, List<Field> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!a.get(i).getType().equals(b.get(i).getType()) || !sameTypes(a.get(i).getChildren(), b.get(i).getChildren())) {
                return false;
            }
        }
        return true;
    }

    /** A new root of {@code schema} in {@code allocator} holding {@code source}'s buffers (see {@link #move}). */
    static VectorSchemaRoot share(VectorSchemaRoot source, BufferAllocator allocator, String parameter) {
        VectorSchemaRoot copy = VectorSchemaRoot.create(source.getSchema(), allocator);
        try {
            move(source, copy, parameter);
            return copy;
        } catch (RuntimeException | Error e) {
            copy.close();
            throw e;
        }
    }

    /** The allocator of the root's first vector, or {@code null} for a root without columns. */
    private static BufferAllocator allocatorOf(VectorSchemaRoot root) {
        List<FieldVector> vectors = root.getFieldVectors();
        return vectors.isEmpty() ? null : vectors.get(0).getAllocator();
    }

    /**
     * Dictionary-encoded columns are not sent: Flight Java sends a stream's dictionaries once, before its
     * first batch, and batches of device memory each carry their own.
     *
     * @throws UnsupportedFeatureException naming the first dictionary-encoded field
     */
    static void requireNoDictionaries(Schema schema) {
        for (Field f : schema.getFields()) {
            requireNoDictionaries(f, f.getName());
        }
    }

    private static void requireNoDictionaries(Field field, String path) {
        if (field.getDictionary() != null) {
            throw new UnsupportedFeatureException(path, "expected no dictionary-encoded field in a device batch sent "
                    + "over Flight but found dictionary " + field.getDictionary().getId());
        }
        for (Field child : field.getChildren()) {
            requireNoDictionaries(child, path + "." + child.getName());
        }
    }
}
