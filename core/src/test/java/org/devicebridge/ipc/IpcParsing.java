package org.devicebridge.ipc;

import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.java.ArrowJava;

/**
 * The driver-free half of {@link IpcBatchImport#open} for tests outside this package (the IPC fuzzer): what
 * a descriptor must pass before any handle is opened. Test code only.
 */
public final class IpcParsing {
    private IpcParsing() {}

    /** {@return the batch's struct type}: {@link IpcBatchImport#validate} */
    public static SchemaNode validate(IpcBatchDescriptor descriptor) {
        return IpcBatchImport.validate(descriptor);
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
