package org.devicebridge.python;

import java.util.Objects;

/**
 * The two capsules of the Arrow PyCapsule array protocol, as {@code __arrow_c_array__} and
 * {@code __arrow_c_device_array__} return them. The holder owns both references: closing it closes both
 * (a capsule closed without being taken releases its struct through its destructor).
 *
 * <p>Immutable; {@link #close()} is idempotent and may be called from any thread, as each
 * {@link PyObjectRef}'s close may.
 *
 * @param schema the {@code arrow_schema} capsule
 * @param array  the {@code arrow_array} or {@code arrow_device_array} capsule
 */
record ArrowArrayCapsules(PyObjectRef schema, PyObjectRef array) implements AutoCloseable {

    /**
     * Checks the components.
     *
     * @throws NullPointerException if a capsule is {@code null}
     */
    public ArrowArrayCapsules {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(array, "array");
    }

    /** Closes both references; idempotent. */
    @Override
    public void close() {
        try {
            array.close();
        } finally {
            schema.close();
        }
    }
}
