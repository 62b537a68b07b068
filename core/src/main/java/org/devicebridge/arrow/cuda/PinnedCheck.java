package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import org.devicebridge.DeviceKind;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.devicebridge.ValidationException;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.FieldPath;

/**
 * Confirms, with the driver's pointer attributes, that an exported Arrow Java batch lies in pinned host
 * memory: every Arrow buffer with bytes of its vectors and their dictionaries, and the buffers the export
 * made itself (narrowed decimals), read from the exported structs walked beside the vectors.
 */
final class PinnedCheck {
    /** Every address: the exported structs are this library's own, written a moment ago. */
    private static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    private final DictionaryProvider provider;
    /** The device the driver names for the first buffer checked, -1 before one is. */
    private int device = -1;

    private PinnedCheck(DictionaryProvider provider) {
        this.provider = provider;
    }

    /**
     * Throws unless every buffer of {@code root} is pinned host memory; returns the device the driver names
     * for it (that of the first buffer, 0 without any).
     *
     * @param exported the {@code ArrowArray} exported from {@code root} (a struct, one child per vector)
     */
    static int requirePinned(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment exported) {
        PinnedCheck check = new PinnedCheck(provider);
        List<FieldVector> vectors = root.getFieldVectors();
        for (int i = 0; i < vectors.size(); i++) {
            check.check(vectors.get(i), child(exported.address(), i), "children[" + i + "]", 0);
        }
        return Math.max(check.device, 0);
    }

    /** Checks {@code vector}, exported as the {@code ArrowArray} at address {@code struct} (ours: read by address). */
    private void check(FieldVector vector, long struct, String path, int depth) {
        if (depth > FieldPath.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, path,
                    "the data nests deeper than " + FieldPath.MAX_DEPTH + " levels");
        }
        FieldVector v = vector;
        while (v instanceof ExtensionTypeVector<?> ext) {
            v = ext.getUnderlyingVector();
        }
        List<ArrowBuf> buffers = v.getFieldBuffers();
        for (int b = 0; b < buffers.size(); b++) {
            ArrowBuf buf = buffers.get(b);
            if (buf != null && buf.capacity() > 0 && buf.memoryAddress() != 0) {
                requireHost(buf.memoryAddress(), FieldPath.join(path, "buffers[" + b + "]"));
            }
        }
        if (v instanceof BaseVariableWidthViewVector view) {
            List<ArrowBuf> data = view.getDataBuffers();
            for (int k = 0; k < data.size(); k++) {
                ArrowBuf buf = data.get(k);
                if (buf.capacity() > 0) {
                    requireHost(buf.memoryAddress(), FieldPath.join(path, "buffers[" + (2 + k) + "]"));
                }
            }
        }
        if (v instanceof DecimalVector && ((ArrowType.Decimal) v.getField().getType()).getBitWidth() < 128
                && v.getValueCount() > 0) {
            // the export narrowed the values into a buffer of its own
            long narrowed = ALL.get(ValueLayout.JAVA_LONG, ALL.get(ValueLayout.JAVA_LONG, struct + ArrowArrayFields.BUFFERS) + 8);
            requireHost(narrowed, FieldPath.join(path, "buffers[1]"));
        }
        List<FieldVector> children = v.getChildrenFromFields() == null ? List.of() : v.getChildrenFromFields();
        for (int i = 0; i < children.size(); i++) {
            check(children.get(i), child(struct, i), FieldPath.join(path, "children[" + i + "]"), depth + 1);
        }
        if (vector.getField().getDictionary() != null && provider != null) {
            Dictionary d = provider.lookup(vector.getField().getDictionary().getId());
            long dictionary = ALL.get(ValueLayout.JAVA_LONG, struct + ArrowArrayFields.DICTIONARY);
            check(d.getVector(), dictionary, FieldPath.join(path, "dictionary"), depth + 1);
        }
    }

    private static long child(long struct, int i) {
        return ALL.get(ValueLayout.JAVA_LONG, ALL.get(ValueLayout.JAVA_LONG, struct + ArrowArrayFields.CHILDREN) + 8L * i);
    }

    private void requireHost(long address, String path) {
        PointerAttributes a = PointerAttributes.query(address); // not cached: freed pinned memory can be reused unpinned
        if (a.kind() != DeviceKind.CUDA_HOST) {
            throw new ValidationException(ValidationException.Category.DEVICE, path,
                    "expected pinned host memory (CU_MEMORYTYPE_HOST) for ARROW_DEVICE_CUDA_HOST but found "
                            + a.kind());
        }
        if (device < 0) {
            device = Math.max(a.deviceOrdinal(), 0);
        }
    }
}
