package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowAccess;

/**
 * Lends this package's plumbing to {@code arrow.java} and {@code arrow.cuda} through
 * {@link Access#arrow()} instead of public methods: installed once, from this class's static initialiser.
 */
final class PackageAccess implements ArrowAccess {
    static {
        Access.setArrow(new PackageAccess());
    }

    private PackageAccess() {}

    @Override
    public Runnable transfer(ImportedArray array) {
        ImportedArray.Owner owner = Objects.requireNonNull(array, "array").transfer();
        return owner::release;
    }

    @Override
    public ArrayNode deviceCopy(ArrayNode node, long[] addresses, long[] lengths, List<ArrayNode> children,
                                ArrayNode dictionary) {
        if (addresses.length != node.bufferCount() || lengths.length != node.bufferCount()) {
            throw new IllegalArgumentException("expected " + node.bufferCount() + " buffers but found "
                    + addresses.length + " addresses and " + lengths.length + " lengths");
        }
        return new ArrayNode(node.schema(), node.path(), node.length(), node.nullCount(), node.offset(),
                addresses.clone(), lengths.clone(), children, dictionary, null, false);
    }

    @Override
    public ExportedSchema exportedSchema(MemorySegment struct) {
        return new ExportedSchema(struct);
    }

    @Override
    public ExportedArray exportedArray(MemorySegment struct) {
        return new ExportedArray(struct);
    }

    @Override
    public ExportedDeviceArray exportedDeviceArray(MemorySegment struct) {
        return new ExportedDeviceArray(struct);
    }

    @Override
    public ExportedStream exportedStream(MemorySegment struct) {
        return new ExportedStream(struct);
    }

    @Override
    public ExportedDeviceStream exportedDeviceStream(MemorySegment struct) {
        return new ExportedDeviceStream(struct);
    }
}
