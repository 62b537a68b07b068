package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;

/**
 * Validates a device array at DEFAULT or FULL from host copies of just the buffers each level reads, so
 * that device arrays are checked by the same reader, over the same struct, as host arrays: first the
 * structure (MINIMAL, no contents), then DEFAULT with copies of the offsets, view sizes and run ends (and the
 * bitmaps of map keys, map entries and run ends whose null count is unknown), then
 * (FULL) with copies of every remaining buffer, whose sizes DEFAULT established.
 */
final class DeviceContents {
    private DeviceContents() {}

    /**
     * Reads the device array {@code deviceArray} (a moved {@code ArrowDeviceArray}) at {@code level}: its
     * structure first, which {@code copier} then checks ({@link DeviceCopier#prepare}, with the struct's device
     * and sync event), then the contents DEFAULT and FULL read, from host copies.
     *
     * @param originalAddress the producer's address of the {@code ArrowArray} inside, for the cycle check
     */
    static ArrayTable read(MemorySegment deviceArray, long originalAddress, SchemaNode schema, ValidationLevel level,
                           DeviceCopier copier) {
        MemorySegment array = deviceArray.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ValidationLevel structureLevel = level == ValidationLevel.NONE ? ValidationLevel.NONE : ValidationLevel.MINIMAL;
        ArrayTable structure = new ArrayTable(schema.layout(), false);
        ArrayReader.read(array, originalAddress, structure, structureLevel);
        copier.prepare(ArrowC.deviceType(ArrowDeviceArray.device_type(deviceArray)),
                ArrowDeviceArray.device_id(deviceArray),
                MemorySegment.ofAddress(ArrowDeviceArray.sync_event(deviceArray).address()), structure.node(0));
        if (level != ValidationLevel.DEFAULT && level != ValidationLevel.FULL) {
            return structure;
        }
        Ranges first = new Ranges(structure);
        for (int n = 0; n < structure.size(); n++) {
            Layout layout = structure.layout.schema(n).type().layout();
            switch (layout) {
                case VARIABLE, LARGE_VARIABLE, LIST, LARGE_LIST -> first.add(n, 1);
                case VIEW -> first.add(n, structure.bufferCount(n) - 1);
                case RUN_END_ENCODED -> first.add(structure.layout.child(n, 0), 1);
                default -> { }
            }
            // Children that must hold no null and give a null count of -1: DEFAULT counts their bitmaps.
            if (layout == Layout.RUN_END_ENCODED) {
                first.addUnknownNulls(structure.layout.child(n, 0));
            } else if (structure.layout.schema(n).type().id() == ArrowDataType.TypeId.MAP) {
                int entries = structure.layout.child(n, 0);
                first.addUnknownNulls(entries);
                first.addUnknownNulls(structure.layout.child(entries, 0));
            }
        }
        HostCopies firstCopies = copier.copyToHost(first.nodes());
        ArrayTable sized = new ArrayTable(schema.layout(), false);
        ArrayReader.read(array, originalAddress, sized, ValidationLevel.DEFAULT, firstCopies);
        if (level == ValidationLevel.DEFAULT) {
            return sized;
        }
        Ranges rest = new Ranges(sized);
        for (int n = 0; n < sized.size(); n++) {
            for (int i = 0; i < sized.bufferCount(n); i++) {
                rest.add(n, i);
            }
        }
        HostCopies all = copier.copyToHost(rest.nodes());
        ArrayTable full = new ArrayTable(schema.layout(), false);
        ArrayReader.read(array, originalAddress, full, ValidationLevel.FULL, all);
        return full;
    }

    /**
     * Device ranges to copy, every non-NULL buffer of known, non-zero size that was added, as a view of the
     * table they come from in which every other buffer is NULL ({@link DeviceCopier#copyToHost}).
     */
    private static final class Ranges {
        private final ArrayTable table;
        private final ArrayTable asked; // the table's nodes and fields; a buffer is non-NULL once added
        private final boolean[] holds; // nodes with a buffer added

        Ranges(ArrayTable table) {
            this.table = table;
            this.asked = table.derive(false);
            this.holds = new boolean[table.size()];
            for (int n = 0; n < table.size(); n++) {
                for (int i = 0; i < table.bufferCount(n); i++) {
                    asked.setBuffer(n, i, 0, 0);
                }
            }
        }

        void add(int node, int buffer) {
            long address = table.bufferAddress(node, buffer);
            long size = table.bufferLength(node, buffer);
            if (address == 0 || size <= 0) {
                return;
            }
            asked.setBuffer(node, buffer, address, size);
            holds[node] = true;
        }

        /** The validity bitmap of {@code node}, where its null count is unknown (-1). */
        void addUnknownNulls(int node) {
            if (table.nullCount(node) == -1) {
                add(node, 0);
            }
        }

        /** The nodes of the view that hold a buffer to copy, in table order. */
        List<ArrayNode> nodes() {
            List<ArrayNode> nodes = new ArrayList<>();
            for (int n = 0; n < holds.length; n++) {
                if (holds[n]) {
                    nodes.add(asked.node(n));
                }
            }
            return Collections.unmodifiableList(nodes);
        }
    }
}
