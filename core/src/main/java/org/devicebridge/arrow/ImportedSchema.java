package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;
import org.devicebridge.foreign.ForeignImport;

/**
 * An {@code ArrowSchema} taken from native code, validated and parsed. Owns the moved struct and calls
 * its {@code release} exactly once, on {@link #close()}. The parsed {@link #root()} tree is plain Java data
 * and stays usable after close.
 *
 * <p>Thread-safe: {@link #root()} may be read from any thread, and {@code close()} is idempotent and
 * thread-safe.
 */
public final class ImportedSchema extends NativeHandle {
    private final SchemaNode root;

    ImportedSchema(MemorySegment owned, SchemaNode root) {
        super("imported ArrowSchema", () -> ForeignImport.Kind.ARROW_SCHEMA.release(owned));
        this.root = root;
    }

    /** {@return the parsed root field (usually a struct for a record batch)} Usable after close. */
    public SchemaNode root() {
        return root;
    }
}
