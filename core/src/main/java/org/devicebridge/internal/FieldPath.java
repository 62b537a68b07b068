package org.devicebridge.internal;

/**
 * Field paths of nested C structs, as every validation and export message names them
 * ({@code children[2].buffers[1]}), and the one depth cap on following them.
 */
public final class FieldPath {
    /**
     * The deepest nesting followed through children and dictionaries (64, as Arrow C++ caps it); deeper
     * structures, and ones that refer back to themselves, are refused.
     */
    public static final int MAX_DEPTH = 64;

    private FieldPath() {}

    /** {@code path.field}, or {@code field} alone for the root (empty path). */
    public static String join(String path, String field) {
        return path.isEmpty() ? field : path + "." + field;
    }
}
