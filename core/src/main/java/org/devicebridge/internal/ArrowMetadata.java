package org.devicebridge.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** The C Data interface's binary encoding of a field's metadata, for every schema export. */
public final class ArrowMetadata {
    private ArrowMetadata() {}

    /**
     * {@code metadata} as the {@code ArrowSchema.metadata} bytes (an int32 count, then per pair the length-prefixed
     * key and value in UTF-8, native byte order), or {@code null} when there is none. A {@code null} value is
     * written as empty.
     *
     * @throws IllegalArgumentException if the encoding would exceed 2 GiB
     */
    public static byte[] encode(Map<String, String> metadata) {
        if (metadata == null || metadata.isEmpty()) {
            return null;
        }
        byte[][] parts = new byte[2 * metadata.size()][];
        long size = 4;
        int k = 0;
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            parts[k] = e.getKey().getBytes(StandardCharsets.UTF_8);
            parts[k + 1] = (e.getValue() == null ? "" : e.getValue()).getBytes(StandardCharsets.UTF_8);
            size = Math.addExact(size, 8L + parts[k].length + parts[k + 1].length);
            k += 2;
        }
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("metadata exceeds 2 GiB");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.nativeOrder());
        b.putInt(metadata.size());
        for (byte[] part : parts) {
            b.putInt(part.length).put(part);
        }
        return b.array();
    }
}
