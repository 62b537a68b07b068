package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowAccess;
import org.devicebridge.foreign.SegmentSource;

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
        return Objects.requireNonNull(array, "array").transfer();
    }

    @Override
    public void checkContentsArrowJavaTrusts(ImportedArray array) {
        Objects.requireNonNull(array, "array").checkContentsArrowJavaTrusts();
    }

    @Override
    public ArrayNode relocated(ArrayNode root, Map<ArrayNode, long[]> addresses, Map<ArrayNode, Long> nullCounts) {
        ArrayTable table = root.table().derive(false);
        addresses.forEach((node, addrs) -> {
            for (int i = 0; i < addrs.length; i++) {
                table.setBuffer(node.index(), i, addrs[i], node.bufferLength(i));
            }
        });
        nullCounts.forEach((node, count) -> table.setNullCount(node.index(), count));
        return table.node(root.index());
    }

    @Override
    public ArrayNode reread(ImportedArray array, ValidationLevel level, DeviceCopier copier) {
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(copier, "copier");
        return Objects.requireNonNull(array, "array").reread(level, copier);
    }

    @Override
    public ImportedArray hostView(ArrayNode validatedRoot, ValidationLevel level, HostCopies copies, Runnable release) {
        Objects.requireNonNull(validatedRoot, "validatedRoot");
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(copies, "copies");
        Objects.requireNonNull(release, "release");
        if (validatedRoot.index() != 0) {
            throw new IllegalArgumentException("expected the root of a view but found " + validatedRoot.path());
        }
        ArrayTable device = validatedRoot.table();
        ArrayTable host = device.derive(true);
        for (int n = 0; n < device.size(); n++) {
            for (int i = 0; i < device.bufferCount(n); i++) {
                long address = device.bufferAddress(n, i);
                if (address == 0) {
                    continue;
                }
                long length = device.bufferLength(n, i);
                String path = device.layout.path(n, "buffers[" + i + "]");
                if (length < 0) {
                    throw new UnsupportedFeatureException(path, "expected a known buffer length but found none");
                }
                MemorySegment copy = copies.find(address, length);
                if (copy == null || copy.byteSize() < length || copy.address() == 0) {
                    throw new ValidationException(ValidationException.Category.DEVICE, path, String.format(Locale.ROOT,
                            "expected a host copy of the %d validated bytes at 0x%x but found none", length, address));
                }
                host.setBuffer(n, i, copy.address(), length);
            }
        }
        // What Arrow Java will read is checked where it lies: the producer (or the caller's own device work)
        // may have changed it since the view was validated.
        ArrayReader.recheck(host, level == ValidationLevel.FULL ? ValidationLevel.FULL : ValidationLevel.DEFAULT);
        return new ImportedArray(host, level, release);
    }

    @Override
    public void bind(ArrayNode root, SegmentSource owner) {
        if (root.table().source() == null) {
            root.table().ownedBy(owner);
        }
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
