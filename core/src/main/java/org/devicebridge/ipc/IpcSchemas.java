package org.devicebridge.ipc;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowSchema;

/**
 * The schema of a CUDA IPC batch descriptor as an Arrow IPC schema message, through Arrow Java's
 * {@link MessageSerializer}: the one class of the IPC batch path that links against Arrow Java, so that the
 * descriptor itself loads without it (callers check {@code requireArrowJava} first). Stateless.
 */
final class IpcSchemas {
    private IpcSchemas() {}

    /**
     * The IPC schema message of a record batch whose type is {@code root} (a struct: its children become the
     * schema's fields, its metadata the schema's).
     *
     * @throws UnsupportedFeatureException for a root that is not a struct, or a dictionary-encoded field
     */
    static byte[] serialize(SchemaNode root) {
        if (root.type().id() != ArrowDataType.TypeId.STRUCT) {
            throw new UnsupportedFeatureException("schema", "expected a record batch (a struct array) but found "
                    + root.type() + ": CUDA IPC batches carry their type as an Arrow IPC schema");
        }
        checkNoDictionary(root, "");
        Field field = ArrowJava.toField(root);
        Schema schema = new Schema(field.getChildren(), field.getMetadata());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            MessageSerializer.serialize(new WriteChannel(Channels.newChannel(bytes)), schema);
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e); // a ByteArrayOutputStream does not fail
        }
        return bytes.toByteArray();
    }

    /**
     * The struct type of the record batch an IPC schema message describes, as the library's import would see
     * it from a C producer (exported to an {@code ArrowSchema} and imported back: the same checks).
     *
     * @throws ValidationException (path {@code schema...}) for a message {@link SchemaMessageVerifier} refuses,
     *         ({@code FORMAT}, path {@code schema}) one Arrow Java cannot read, or as
     *         {@link ArrowC#importSchema} for a type the library refuses
     * @throws UnsupportedFeatureException for a dictionary-encoded field
     */
    static SchemaNode deserialize(byte[] message) {
        SchemaMessageVerifier.verify(message); // Arrow Java trusts every length and offset it reads
        Schema schema;
        try {
            schema = MessageSerializer.deserializeSchema(new ReadChannel(Channels.newChannel(
                    new ByteArrayInputStream(message))));
        } catch (IOException | RuntimeException e) {
            throw new ValidationException(Category.FORMAT, "schema", "expected an Arrow IPC schema message but "
                    + "Arrow Java could not read it: " + e, e);
        }
        if (schema == null) {
            throw new ValidationException(Category.FORMAT, "schema", "expected an Arrow IPC schema message but"
                    + " found the end of the stream");
        }
        for (Field f : schema.getFields()) {
            if (hasDictionary(f)) {
                throw new UnsupportedFeatureException("schema", "expected no dictionary-encoded fields in a CUDA IPC"
                        + " batch but found one in " + f.getName());
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportSchema(schema, null, c);
            try (ImportedSchema imported = ArrowC.importSchema(c)) {
                return imported.root(); // plain Java data, usable after close
            }
        }
    }

    private static boolean hasDictionary(Field f) {
        if (f.getDictionary() != null) {
            return true;
        }
        for (Field c : f.getChildren()) {
            if (hasDictionary(c)) {
                return true;
            }
        }
        return false;
    }

    private static void checkNoDictionary(SchemaNode n, String path) {
        if (n.dictionary() != null) {
            throw new UnsupportedFeatureException(path.isEmpty() ? "schema" : path, "expected no dictionary-encoded"
                    + " fields in a CUDA IPC batch but found one");
        }
        for (SchemaNode c : n.children()) {
            checkNoDictionary(c, c.path());
        }
    }
}
