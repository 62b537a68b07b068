package org.devicebridge.python;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/**
 * The PyCapsule names of the Arrow PyCapsule interface and of DLPack's Python specification, and the C
 * struct each capsule carries.
 *
 * <p>Arrow capsules own a heap-allocated struct: a consumer moves its contents out and marks it released
 * ({@code release = NULL}); the capsule's destructor releases a struct nobody moved and frees the memory.
 * DLPack capsules carry the producer's {@code DLManagedTensor[Versioned]*}: a consumer renames the
 * capsule to {@code used_dltensor[_versioned]} and from then on calls the deleter itself; the capsule's
 * destructor calls the deleter only if the capsule still has its original name.
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
enum CapsuleKind {
    /** {@code "arrow_schema"}: an {@code ArrowSchema}. */
    ARROW_SCHEMA("arrow_schema", null, "ArrowSchema"),
    /** {@code "arrow_array"}: an {@code ArrowArray}. */
    ARROW_ARRAY("arrow_array", null, "ArrowArray"),
    /** {@code "arrow_device_array"}: an {@code ArrowDeviceArray}. */
    ARROW_DEVICE_ARRAY("arrow_device_array", null, "ArrowDeviceArray"),
    /** {@code "arrow_array_stream"}: an {@code ArrowArrayStream}. */
    ARROW_ARRAY_STREAM("arrow_array_stream", null, "ArrowArrayStream"),
    /** {@code "arrow_device_array_stream"}: an {@code ArrowDeviceArrayStream}. */
    ARROW_DEVICE_ARRAY_STREAM("arrow_device_array_stream", null, "ArrowDeviceArrayStream"),
    /** {@code "dltensor"}: a legacy (pre-1.0) {@code DLManagedTensor*}; renamed {@code "used_dltensor"} when consumed. */
    DLTENSOR("dltensor", "used_dltensor", "DLManagedTensor"),
    /** {@code "dltensor_versioned"}: a {@code DLManagedTensorVersioned*}; renamed {@code "used_dltensor_versioned"}. */
    DLTENSOR_VERSIONED("dltensor_versioned", "used_dltensor_versioned", "DLManagedTensorVersioned");

    private final String capsuleName;
    private final String usedName;
    private final String structName;
    // C strings that live as long as any capsule may: capsules keep the name pointer, never a copy.
    private final MemorySegment cName;
    private final MemorySegment cUsedName;

    CapsuleKind(String capsuleName, String usedName, String structName) {
        this.capsuleName = capsuleName;
        this.usedName = usedName;
        this.structName = structName;
        this.cName = Arena.global().allocateFrom(capsuleName);
        this.cUsedName = usedName == null ? MemorySegment.NULL : Arena.global().allocateFrom(usedName);
    }

    /** {@return the capsule name, e.g. {@code "arrow_array"} or {@code "dltensor_versioned"}} */
    public String capsuleName() {
        return capsuleName;
    }

    /** {@return the name a consumed DLPack capsule gets ({@code "used_dltensor"}, ...); null for Arrow kinds} */
    public String usedName() {
        return usedName;
    }

    /** {@return {@code true} for the DLPack kinds} */
    public boolean isDLPack() {
        return usedName != null;
    }

    /** {@return the C struct's name, e.g. {@code ArrowDeviceArray} or {@code DLManagedTensorVersioned}} */
    public String structName() {
        return structName;
    }

    /** The struct's import kind; looked up on use, so that this enum loads without native access. */
    ForeignImport.Kind struct() {
        return switch (this) {
            case ARROW_SCHEMA -> ForeignImport.Kind.ARROW_SCHEMA;
            case ARROW_ARRAY -> ForeignImport.Kind.ARROW_ARRAY;
            case ARROW_DEVICE_ARRAY -> ForeignImport.Kind.ARROW_DEVICE_ARRAY;
            case ARROW_ARRAY_STREAM -> ForeignImport.Kind.ARROW_ARRAY_STREAM;
            case ARROW_DEVICE_ARRAY_STREAM -> ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM;
            case DLTENSOR -> ForeignImport.Kind.DL_MANAGED_TENSOR;
            case DLTENSOR_VERSIONED -> ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED;
        };
    }

    MemorySegment cName() {
        return cName;
    }

    MemorySegment cUsedName() {
        return cUsedName;
    }

    /** The kind whose capsule name (or used name) is {@code name}; null if none. */
    static CapsuleKind byName(String name) {
        for (CapsuleKind k : values()) {
            if (k.capsuleName.equals(name) || name.equals(k.usedName)) {
                return k;
            }
        }
        return null;
    }
}
