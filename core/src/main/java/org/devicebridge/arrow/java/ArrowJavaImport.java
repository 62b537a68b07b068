package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.foreign.ForeignImport;

/**
 * The import into Arrow Java behind {@link ArrowJava}'s import methods (see its class comment for what is
 * copied and what Arrow Java cannot hold).
 */
final class ArrowJavaImport {

    private ArrowJavaImport() {}

    /**
     * {@return the Arrow Java field for {@code schema}, exactly (names, metadata, type ids), for callers that
     * build vectors themselves} Dictionary ids are assigned from 0 in depth-first order.
     *
     * @param schema the imported field to convert; only read
     * @throws UnsupportedFeatureException if Arrow Java cannot represent a type of the tree exactly
     */
    static Field toField(SchemaNode schema) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.toField");
        return JavaFields.field(Objects.requireNonNull(schema, "schema"));
    }

    /**
     * Imports a validated array into a new Arrow Java vector, without copying (see the class comment for
     * the exceptions). Dictionaries of dictionary-encoded fields are put into {@code dictionaries} (with
     * fresh ids above the ones it holds); the caller closes them.
     *
     * <p>Ownership: after a return the caller owns the vector (and the dictionaries it added), and
     * {@code array} is consumed: its struct is released when the last Arrow buffer is. After a throw
     * {@code array} has already been released (closed), whatever the exception, as after every import.
     *
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param array the imported array; consumed by this call
     * @return the vector, owned by the caller
     * @throws UnsupportedFeatureException see above, or if {@code array} is device memory or was validated
     *         below DEFAULT
     */
    static FieldVector importFieldVector(BufferAllocator allocator, ImportedArray array,
                                                DictionaryProvider.MapDictionaryProvider dictionaries) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.importFieldVector");
        return importInto(allocator, array, dictionaries, false, ArrowJavaImport::loadVector);
    }

    /**
     * Imports a validated struct array (a record batch) into a new {@link VectorSchemaRoot}, without
     * copying; the struct's validity must have no nulls and its children become the root's vectors.
     * Ownership and exceptions as in {@link #importFieldVector}: after a throw {@code array} has already
     * been released.
     *
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param array the imported array; consumed by this call
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @return the batch, owned by the caller
     */
    static VectorSchemaRoot importVectorSchemaRoot(BufferAllocator allocator, ImportedArray array,
                                                          DictionaryProvider.MapDictionaryProvider dictionaries) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.importVectorSchemaRoot");
        return importInto(allocator, array, dictionaries, true, ArrowJavaImport::loadRoot);
    }

    /**
     * Moves, validates (DEFAULT) and imports a record batch from C structs: {@link ArrowJava}'s one-call
     * import. After a return the caller owns the root; after a throw both structs were released.
     */
    static VectorSchemaRoot importVectorSchemaRoot(BufferAllocator allocator, MemorySegment arrowArrayPtr,
                                                   MemorySegment arrowSchemaPtr,
                                                   DictionaryProvider.MapDictionaryProvider dictionaries) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.importVectorSchemaRoot");
        Objects.requireNonNull(allocator, "allocator");
        try (ImportedSchema schema = importSchemaOrRelease(arrowSchemaPtr, arrowArrayPtr)) {
            return importVectorSchemaRoot(allocator,
                    ArrowC.importArray(schema.root(), arrowArrayPtr, ValidationLevel.DEFAULT), dictionaries);
        }
    }

    /** The one-call import above, for any type, into one vector. Ownership as there. */
    static FieldVector importFieldVector(BufferAllocator allocator, MemorySegment arrowArrayPtr,
                                         MemorySegment arrowSchemaPtr,
                                         DictionaryProvider.MapDictionaryProvider dictionaries) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.importFieldVector");
        Objects.requireNonNull(allocator, "allocator");
        try (ImportedSchema schema = importSchemaOrRelease(arrowSchemaPtr, arrowArrayPtr)) {
            return importFieldVector(allocator,
                    ArrowC.importArray(schema.root(), arrowArrayPtr, ValidationLevel.DEFAULT), dictionaries);
        }
    }

    /**
     * The schema of a one-call import; if it is refused, the array struct is released too (moved, then its
     * {@code release} called), so that after the throw the caller owns neither struct.
     */
    private static ImportedSchema importSchemaOrRelease(MemorySegment arrowSchemaPtr, MemorySegment arrowArrayPtr) {
        try {
            return ArrowC.importSchema(arrowSchemaPtr);
        } catch (RuntimeException | Error e) {
            try {
                ForeignImport.take(ForeignImport.Kind.ARROW_ARRAY, arrowArrayPtr, owned -> {
                    ForeignImport.Kind.ARROW_ARRAY.release(owned);
                    return null;
                });
            } catch (RuntimeException more) {
                e.addSuppressed(more);
            }
            throw e;
        }
    }

    /** Builds the Arrow Java result of one import with the loader, once the array is checked and handed over. */
    @FunctionalInterface
    private interface Body<T> {
        T load(VectorLoader loader, JavaFields.Mapping fields, ArrayNode root);
    }

    /**
     * The one import path: checks {@code array} (the common checks, then a record batch's if
     * {@code recordBatch}), takes it over and loads it with {@code body}. The input is released on every
     * throw: by closing it while it is still a handle, by the loader once it was handed over.
     */
    private static <T> T importInto(BufferAllocator allocator, ImportedArray array,
                                    DictionaryProvider.MapDictionaryProvider dictionaries, boolean recordBatch,
                                    Body<T> body) {
        Objects.requireNonNull(array, "array");
        ArrayNode root;
        JavaFields.Mapping fields;
        try {
            Objects.requireNonNull(allocator, "allocator");
            root = array.root();
            fields = prepare(root, array, dictionaries);
            array.checkIndices(); // what Arrow Java trusts, checked once where the level did not
            if (recordBatch) {
                requireRecordBatch(root);
            }
        } catch (RuntimeException | Error e) {
            array.close();
            throw e;
        }
        VectorLoader loader = new VectorLoader(allocator, array.detach(), dictionaries, fields);
        boolean failed = true;
        try {
            T result = body.load(loader, fields, root);
            failed = false;
            return result;
        } catch (DeviceBridgeException | Error e) {
            throw e;
        } catch (RuntimeException e) {
            // every layout the import accepts loads; an exception here is a bug of this bridge, reported as
            // such, with the array released (never left consumed and unreleased)
            throw new DeviceBridgeException("internal error: Arrow Java could not load the imported array"
                    + " (it was released): " + e, e);
        } finally {
            loader.finish(failed);
        }
    }

    private static FieldVector loadVector(VectorLoader loader, JavaFields.Mapping fields, ArrayNode root) {
        FieldVector v = loader.plan(fields.buildRoot, root, 0, root.length());
        try {
            loader.load();
            return v;
        } catch (RuntimeException | Error e) {
            v.close();
            throw e;
        }
    }

    private static VectorSchemaRoot loadRoot(VectorLoader loader, JavaFields.Mapping fields, ArrayNode root) {
        List<ArrayNode> children = root.children();
        List<Field> childFields = fields.buildChildren;
        List<FieldVector> vectors = new ArrayList<>(children.size());
        try {
            for (int i = 0; i < children.size(); i++) {
                vectors.add(loader.plan(childFields.get(i), children.get(i), root.offset(), root.length()));
            }
            loader.load();
        } catch (RuntimeException | Error e) {
            vectors.forEach(FieldVector::close);
            throw e;
        }
        // the schema's metadata is the root field's, as Arrow Java's readers keep it
        return new VectorSchemaRoot(fields.childSchema(), vectors, Math.toIntExact(root.length()));
    }

    /** A record batch is a struct array, not dictionary-encoded, without top-level nulls. */
    private static void requireRecordBatch(ArrayNode root) {
        if (root.type().id() != TypeId.STRUCT || root.schema().dictionary() != null) {
            throw new UnsupportedFeatureException("format", "expected a struct array (a record batch) for a"
                    + " VectorSchemaRoot but found " + root.type());
        }
        long topNulls = VectorLoader.nullCount(root, root.offset(), root.length());
        if (topNulls > 0) {
            throw new UnsupportedFeatureException("null_count",
                    "expected a record batch without top-level nulls but found " + topNulls);
        }
    }

    private static JavaFields.Mapping prepare(ArrayNode root, ImportedArray array,
                                       DictionaryProvider.MapDictionaryProvider dictionaries) {
        if (!root.isHostAccessible()) {
            throw new UnsupportedFeatureException("", "expected host memory for Arrow Java but found device type "
                    + array.deviceType().arrowName() + ": copy it to the host first");
        }
        if (array.validationLevel() != ValidationLevel.DEFAULT && array.validationLevel() != ValidationLevel.FULL) {
            throw new UnsupportedFeatureException("", "expected an array validated at DEFAULT or FULL for Arrow Java"
                    + " (it trusts every offset) but found " + array.validationLevel());
        }
        if (root.length() > Integer.MAX_VALUE) {
            throw new UnsupportedFeatureException("length", "expected at most " + Integer.MAX_VALUE
                    + " elements (Arrow Java's limit) but found " + root.length());
        }
        long firstId = 0;
        if (dictionaries != null) {
            for (long id : dictionaries.getDictionaryIds()) {
                firstId = Math.max(firstId, id + 1);
            }
        }
        JavaFields.Mapping fields = JavaFields.of(root.schema(), firstId);
        if (fields.hasDictionary && dictionaries == null) {
            throw new UnsupportedFeatureException("dictionary",
                    "expected a DictionaryProvider for a dictionary-encoded field but found null");
        }
        if (fields.hasRunEndEncoded) { // the only layout the loader cannot take at every offset
            checkLoadable(root, 0, root.length());
        }
        return fields;
    }

    /** Rejects, before ownership moves, what the loader could not represent exactly. */
    private static void checkLoadable(ArrayNode n, long start, long count) {
        long phys = n.offset() + start;
        switch (n.type().layout()) {
            case RUN_END_ENCODED -> {
                if (phys != 0) {
                    throw new UnsupportedFeatureException(n.path(), "expected a run-end encoded array without offset"
                            + " (Arrow Java's RunEndEncodedVector has none) but found offset " + phys);
                }
                n.children().forEach(c -> checkLoadable(c, 0, c.length()));
            }
            case STRUCT, SPARSE_UNION -> n.children().forEach(c -> checkLoadable(c, phys, count));
            case FIXED_SIZE_LIST -> {
                long k = n.type().fixedSize();
                checkLoadable(n.children().get(0), Math.multiplyExact(phys, k), Math.multiplyExact(count, k));
            }
            case LIST, LARGE_LIST -> {
                ArrayNode c = n.children().get(0);
                long[] r = ListRange.of(n, phys, count);
                checkLoadable(c, r[0], r[1] - r[0]);
            }
            default -> n.children().forEach(c -> checkLoadable(c, 0, c.length()));
        }
        if (n.dictionary() != null) {
            checkLoadable(n.dictionary(), 0, n.dictionary().length());
        }
    }
}
