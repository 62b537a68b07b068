package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.dlpack.DType;

/**
 * The driver-free half of {@link IpcImport} for tests outside this package (the IPC fuzzer): what a descriptor
 * must pass before any handle is opened, and descriptor lines written by the package-private descriptor
 * records (the JSON line is the public form). Test code only.
 */
public final class IpcParsing {
    private IpcParsing() {}

    /**
     * A batch node as a generator builds it: each buffer {@code null} or {@code {handle, offset, size}}.
     *
     * @param length the number of elements
     * @param nullCount the null count, or -1
     * @param offset the logical offset
     * @param buffers the buffers in C Data Interface order
     * @param children the child nodes
     */
    public record NodeSpec(long length, long nullCount, long offset, List<long[]> buffers, List<NodeSpec> children) {}

    /** {@return the descriptor line of a batch}, written by {@link IpcBatchDescriptor#toJson()} */
    public static String batchJson(String id, int device, byte[] schema, List<byte[]> handles, NodeSpec root,
                                   byte[] eventHandle) {
        return new IpcBatchDescriptor(id, device, schema, handles, List.of(), node(root), eventHandle).toJson();
    }

    private static IpcBatchDescriptor.Node node(NodeSpec n) {
        List<IpcBatchDescriptor.BufferRef> buffers = new ArrayList<>();
        for (long[] b : n.buffers()) {
            buffers.add(b == null ? null : new IpcBatchDescriptor.BufferRef(Math.toIntExact(b[0]), b[1], b[2]));
        }
        List<IpcBatchDescriptor.Node> children = new ArrayList<>();
        for (NodeSpec c : n.children()) {
            children.add(node(c));
        }
        return new IpcBatchDescriptor.Node(n.length(), n.nullCount(), n.offset(), buffers, children, null);
    }

    /** {@return the descriptor line of a tensor}, written by {@link IpcTensorDescriptor#toJson()} */
    public static String tensorJson(String id, int device, byte[] memHandle, long offset, long nbytes, DType dtype,
                                    long[] shape, long[] strides, byte[] eventHandle) {
        return new IpcTensorDescriptor(id, device, memHandle, offset, nbytes, dtype, shape, strides, eventHandle)
                .toJson();
    }

    /**
     * Reads a batch descriptor as {@link IpcImport#importBatch} does before opening any handle: parses it, checks
     * that its own JSON reads back equal, and validates the schema message against the nodes.
     *
     * @throws AssertionError if the descriptor reads back differently from its own JSON
     */
    public static void readBatch(String json) {
        IpcBatchDescriptor d = IpcBatchDescriptor.parse(json);
        if (!IpcBatchDescriptor.parse(d.toJson()).equals(d)) {
            throw new AssertionError("read back differently from its own JSON: " + d.toJson());
        }
        IpcBatchImport.validate(d);
    }

    /**
     * Reads a tensor descriptor as {@link IpcImport#importTensor} does before opening any handle.
     *
     * @throws AssertionError if the descriptor reads back differently from its own JSON
     */
    public static void readTensor(String json) {
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(json);
        if (!IpcTensorDescriptor.parse(d.toJson()).equals(d)) {
            throw new AssertionError("read back differently from its own JSON: " + d.toJson());
        }
    }

    /** {@return the struct type of a schema message}: {@link IpcSchemas#deserialize} */
    public static SchemaNode schema(byte[] message) {
        return IpcSchemas.deserialize(message);
    }

    /** {@return the schema message of a struct type}: {@link IpcSchemas#serialize} */
    public static byte[] serialize(SchemaNode root) {
        return IpcSchemas.serialize(root);
    }

    /** {@return {@code root} as an Arrow Java field, for comparing two types} */
    public static Field field(SchemaNode root) {
        return ArrowJava.toField(root);
    }
}
