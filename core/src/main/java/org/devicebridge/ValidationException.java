package org.devicebridge;

import java.util.Objects;

/**
 * A foreign structure (Arrow C struct, DLPack tensor) is malformed. Carries a {@link Category} and the
 * field path of the offending value; the message reads {@code children[2].buffers[1]: expected at least
 * 48 bytes but found 40}. By the time this is thrown, the library has already released the foreign
 * structure it was given (see each import method's Javadoc).
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class ValidationException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /** What kind of rule the input broke. */
    public enum Category {
        /** The struct was NULL or already released (its {@code release}/{@code deleter} is NULL where required). */
        RELEASED,
        /** A pointer that must not be NULL is NULL, or a pointer that must be NULL is not. */
        NULL_POINTER,
        /** A format string (Arrow) or data type (DLPack) is malformed or unknown. */
        FORMAT,
        /** Schema-level semantics: union type ids, decimal precision, dictionary index type, map layout, flags. */
        SCHEMA,
        /** Metadata blob is truncated or inconsistent. */
        METADATA,
        /** Wrong number of buffers or children, or a missing required buffer. */
        STRUCTURE,
        /** A length, count, offset or size is negative, or overflows when combined. */
        SIZE,
        /** A child is shorter than its parent requires, or lengths disagree. */
        LENGTH,
        /** Offsets, type ids, run ends or dictionary indices read from buffers are invalid. */
        CONTENT,
        /** A buffer or struct pointer is not aligned as its type requires. */
        ALIGNMENT,
        /** The structure nests deeper than the cap, or refers back to itself. */
        DEPTH,
        /** Device type, device id, sync event or reserved fields are wrong for this data. */
        DEVICE,
        /** DLPack version negotiation failed. */
        VERSION,
        /** A stream callback returned an error. */
        STREAM
    }

    /** What kind of rule the input broke. */
    private final Category category;
    /** The field path; empty for the root struct. */
    private final String path;

    /**
     * An exception for a broken rule at {@code path}.
     *
     * @param category what kind of rule the input broke
     * @param path the field path, e.g. {@code children[2].buffers[1]}; {@code null} or empty for the root
     * @param message what is wrong, in the form "expected X but found Y" where possible
     */
    public ValidationException(Category category, String path, String message) {
        super(format(path, message));
        this.category = Objects.requireNonNull(category, "category");
        this.path = path == null ? "" : path;
    }

    /**
     * An exception for a broken rule at {@code path}, caused by another failure.
     *
     * @param category what kind of rule the input broke
     * @param path the field path; {@code null} or empty for the root
     * @param message what is wrong
     * @param cause the underlying failure, or {@code null}
     */
    public ValidationException(Category category, String path, String message, Throwable cause) {
        super(format(path, message), cause);
        this.category = Objects.requireNonNull(category, "category");
        this.path = path == null ? "" : path;
    }

    private static String format(String path, String message) {
        return path == null || path.isEmpty() ? message : path + ": " + message;
    }

    /** {@return what kind of rule the input broke} */
    public Category category() {
        return category;
    }

    /** {@return the field path, e.g. {@code children[2].buffers[1]}; empty for the root struct itself} */
    public String path() {
        return path;
    }
}
