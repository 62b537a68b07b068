package org.devicebridge.arrow.java;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.AbstractStructVector;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.Types;
import org.apache.arrow.vector.types.UnionMode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.util.CallBack;

/**
 * The fields Arrow Java vectors are made from ({@link Field#createVector}), where they must differ from the
 * exact field of the schema for Arrow Java 19 to build the vector at all. The exact field stays the
 * schema's ({@code VectorSchemaRoot.getSchema()}, {@link ArrowJava#toField}); only the vectors are
 * made from these:
 * <ul>
 *   <li>a struct whose children share a name: Arrow Java's {@code StructVector} replaces a child by a later
 *       one of the same name unless it is made with {@code CONFLICT_APPEND}, which is done here;</li>
 *   <li>a union whose children share a name: Arrow Java's union vectors keep their children in a struct
 *       that replaces them by name (the policy cannot be changed), so the vector's children get unique
 *       names ({@code name}, then {@code name_1}, {@code name_2}, ...); the schema keeps the declared ones;</li>
 *   <li>a union directly under a fixed-size list: {@code FixedSizeListVector} compares its new child's type
 *       with the field's before the child has children, which a union with type ids never passes; the
 *       union is made here, complete, and handed to the list under the type it reports.</li>
 * </ul>
 * Every other field is returned as it is (the same object: no copy for the common schema).
 */
final class VectorFields {
    private VectorFields() {}

    /**
     * The field that describes {@code v} as its vectors are, for exporting a vector with its own field:
     * {@code v.getField()} unless some node of it lists other children than the vector has. Arrow Java 19's
     * {@code DenseUnionVector} reports the fields its children were made from, so a child made here from a
     * prebuilt field (a union under a fixed-size list, a struct whose children share a name) appears with no
     * children; such a tree is rebuilt from the child vectors' own fields (a dense union's in the order of its
     * type ids). O(nodes); the common tree is returned as it is.
     */
    static Field of(FieldVector v) {
        Field f = v.getField();
        return matches(f, v) ? f : rebuilt(f, v);
    }

    private static boolean matches(Field f, FieldVector v) {
        if (v instanceof ExtensionTypeVector<?>) {
            return true; // exported through its storage vector, whose field Arrow Java reports as it is
        }
        List<FieldVector> vectors = childVectors(f, v);
        if (vectors == null || vectors.size() != f.getChildren().size()) {
            return false;
        }
        for (int i = 0; i < vectors.size(); i++) {
            if (!matches(f.getChildren().get(i), vectors.get(i))) {
                return false;
            }
        }
        return true;
    }

    private static Field rebuilt(Field f, FieldVector v) {
        List<FieldVector> vectors = childVectors(f, v);
        if (vectors == null) {
            return f; // the exporter names the missing child
        }
        List<Field> children = new ArrayList<>(vectors.size());
        for (FieldVector c : vectors) {
            children.add(of(c));
        }
        return new Field(f.getName(), f.getFieldType(), children);
    }

    /** {@code v}'s children in the order {@code f} lists them; {@code null} where a type id has no child. */
    private static List<FieldVector> childVectors(Field f, FieldVector v) {
        if (v instanceof DenseUnionVector dense && f.getType() instanceof ArrowType.Union u && u.getTypeIds() != null) {
            List<FieldVector> out = new ArrayList<>(u.getTypeIds().length);
            for (int id : u.getTypeIds()) {
                FieldVector c = denseChild(dense, id);
                if (c == null) {
                    return null;
                }
                out.add(c);
            }
            return out;
        }
        List<FieldVector> children = v.getChildrenFromFields();
        return children == null ? List.of() : children;
    }

    /** The child of dense union {@code v} for type id {@code id} (a field's id, any int), or {@code null}. */
    static FieldVector denseChild(DenseUnionVector v, int id) {
        return id >= 0 && id <= Byte.MAX_VALUE && v.getVectorByType((byte) id) instanceof FieldVector c ? c : null;
    }

    /** The field to make the vector of {@code exact} from: {@code exact} itself where Arrow Java builds it as it is. */
    static Field build(Field exact) {
        List<Field> children = exact.getChildren();
        List<Field> out = children;
        for (int i = 0; i < children.size(); i++) {
            Field c = children.get(i);
            Field b;
            if (exact.getType() instanceof ArrowType.FixedSizeList && c.getType() instanceof ArrowType.Union) {
                b = prebuiltUnion(c);
            } else if (exact.getType() instanceof ArrowType.Map) {
                b = entries(c); // MapVector checks its entries field (two children): renamed, never prebuilt
            } else {
                b = build(c);
            }
            if (b != c && out == children) {
                out = new ArrayList<>(children.subList(0, i));
            }
            if (out != children) {
                out.add(b);
            }
        }
        if (exact.getType() instanceof ArrowType.Union && hasDuplicateNames(out)) {
            out = uniqueNames(out);
        } else if (exact.getType() instanceof ArrowType.Struct && hasDuplicateNames(out)) {
            return appendingStruct(exact, out);
        }
        return out == children ? exact : new Field(exact.getName(), exact.getFieldType(), out);
    }

    /** A map's entries struct: its children built, renamed where they share a name. */
    private static Field entries(Field exact) {
        List<Field> children = exact.getChildren();
        List<Field> out = new ArrayList<>(children.size());
        boolean changed = false;
        for (Field c : children) {
            Field b = build(c);
            changed |= b != c;
            out.add(b);
        }
        if (hasDuplicateNames(out)) {
            out = uniqueNames(out);
            changed = true;
        }
        return changed ? new Field(exact.getName(), exact.getFieldType(), out) : exact;
    }

    private static boolean hasDuplicateNames(List<Field> fields) {
        Set<String> seen = new HashSet<>();
        for (Field f : fields) {
            if (!seen.add(f.getName())) {
                return true;
            }
        }
        return false;
    }

    /** {@code fields} renamed where a name was taken already: {@code name_1}, {@code name_2}, ... (never taken). */
    private static List<Field> uniqueNames(List<Field> fields) {
        Set<String> taken = new HashSet<>();
        for (Field f : fields) {
            taken.add(f.getName());
        }
        Set<String> used = new HashSet<>();
        List<Field> out = new ArrayList<>(fields.size());
        for (Field f : fields) {
            String name = f.getName();
            if (!used.add(name)) {
                int k = 1;
                while (taken.contains(name + "_" + k) || used.contains(name + "_" + k)) {
                    k++;
                }
                name = name + "_" + k;
                used.add(name);
                f = new Field(name, f.getFieldType(), f.getChildren());
            }
            out.add(f);
        }
        return out;
    }

    /** A struct made with {@code CONFLICT_APPEND}, so that children of one name are all kept, in order. */
    private static Field appendingStruct(Field exact, List<Field> children) {
        FieldType type = exact.getFieldType();
        return new Field(exact.getName(), new Prebuilt(type, type.getType(), (name, allocator) -> {
            StructVector v = new StructVector(new Field(name, type, null), allocator, null,
                    AbstractStructVector.ConflictPolicy.CONFLICT_APPEND, true);
            initialize(v, children);
            return v;
        }), List.of());
    }

    /**
     * A union under a fixed-size list: made complete by the field's own type, then handed to the list under
     * the type the made vector reports (its type ids as Arrow Java lists them), which the list compares.
     */
    private static Field prebuiltUnion(Field exact) {
        Field built = build(exact);
        FieldType type = built.getFieldType();
        List<Field> children = built.getChildren();
        ArrowType.Union union = (ArrowType.Union) type.getType();
        return new Field(exact.getName(), new Prebuilt(type, reported(union, children), (name, allocator) -> {
            FieldVector v = type.createNewSingleVector(name, allocator, null);
            initialize(v, children);
            return v;
        }), List.of());
    }

    private static void initialize(FieldVector v, List<Field> children) {
        try {
            v.initializeChildrenFromFields(children);
        } catch (RuntimeException | Error e) {
            v.close();
            throw e;
        }
    }

    /**
     * The type a union vector of Arrow Java 19 reports once its children are in place: a dense union lists its
     * type ids in ascending order, a sparse union the minor-type number of each child.
     */
    private static ArrowType reported(ArrowType.Union union, List<Field> children) {
        int[] ids;
        if (union.getMode() == UnionMode.Dense) {
            ids = union.getTypeIds() == null ? new int[children.size()] : union.getTypeIds().clone();
            if (union.getTypeIds() == null) {
                Arrays.setAll(ids, i -> i);
            }
            Arrays.sort(ids);
        } else {
            ids = new int[children.size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = Types.getMinorTypeForArrowType(children.get(i).getType()).ordinal();
            }
        }
        return new ArrowType.Union(union.getMode(), ids);
    }

    /** Makes a vector named {@code name}, children included. */
    @FunctionalInterface
    private interface Builder {
        FieldVector make(String name, BufferAllocator allocator);
    }

    /**
     * A field type whose vector is made by a {@link Builder}, complete with its children (the field that
     * carries it has none, so that its parent's {@code initializeChildrenFromFields} adds nothing). Its
     * type is the one the made vector reports, which is what a parent that checks compares.
     */
    private static final class Prebuilt extends FieldType {
        private final Builder builder;

        Prebuilt(FieldType exact, ArrowType reported, Builder builder) {
            super(exact.isNullable(), reported, exact.getDictionary(), exact.getMetadata());
            this.builder = builder;
        }

        @Override
        public FieldVector createNewSingleVector(String name, BufferAllocator allocator, CallBack schemaCallBack) {
            return builder.make(name, allocator);
        }

        @Override
        public FieldVector createNewSingleVector(Field field, BufferAllocator allocator, CallBack schemaCallBack) {
            return builder.make(field.getName(), allocator);
        }
    }
}
