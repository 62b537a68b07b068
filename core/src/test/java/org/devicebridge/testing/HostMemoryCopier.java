package org.devicebridge.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.HostCopies;

/**
 * A {@link DeviceCopier} over memory the CPU can read (the tests' stand-in for device memory): each call copies
 * every buffer asked for into its arena and records what was asked, so that tests can count the calls, the
 * buffers and the bytes. Closed by the test, which frees the copies.
 */
public final class HostMemoryCopier implements DeviceCopier, AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    /** The addresses asked for, one array per call. */
    public final List<long[]> batches = new ArrayList<>();
    /** The nodes asked for, one list per call. */
    public final List<List<ArrayNode>> asked = new ArrayList<>();
    /** Bytes copied in all. */
    public long bytes;

    @Override
    public HostCopies copyToHost(List<ArrayNode> nodes) {
        asked.add(List.copyOf(nodes));
        List<Long> addresses = new ArrayList<>();
        TreeMap<Long, MemorySegment> copies = new TreeMap<>();
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++) {
                if (node.isBufferNull(i)) {
                    continue;
                }
                long address = node.bufferPointer(i).address();
                long size = node.bufferLength(i);
                assertTrue(size > 0, "a buffer to copy has bytes");
                MemorySegment copy = arena.allocate(size, 8);
                MemorySegment.copy(node.bufferPointer(i).reinterpret(size), 0, copy, 0, size);
                copies.merge(address, copy, (a, b) -> a.byteSize() >= b.byteSize() ? a : b);
                addresses.add(address);
                bytes += size;
            }
        }
        batches.add(addresses.stream().mapToLong(Long::longValue).toArray());
        return (address, size) -> {
            var e = copies.floorEntry(address);
            if (e == null || address - e.getKey() + size > e.getValue().byteSize()) {
                return null;
            }
            return e.getValue().asSlice(address - e.getKey(), size);
        };
    }

    @Override
    public void close() {
        arena.close();
    }
}
