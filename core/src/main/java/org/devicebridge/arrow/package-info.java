/**
 * The Arrow C Data, C Device Data and C Stream interfaces on the FFM API alone, with no Arrow Java and no
 * CUDA types: import of foreign structs into validated views ({@link org.devicebridge.arrow.ArrowC},
 * {@link org.devicebridge.arrow.ImportedArray}, {@link org.devicebridge.arrow.ArrayNode}), the validation
 * levels, the device types ({@link org.devicebridge.DeviceKind}), empty structs for
 * caller-allocated exports ({@code ArrowC.allocate…}), the FFM-only export of arrays described in Java
 * ({@link org.devicebridge.arrow.ArrayData}, {@link org.devicebridge.arrow.ArrowC#exportArray}), the handle of a
 * struct the library allocated ({@link org.devicebridge.arrow.ExportedStruct}), and the device
 * array view a device layer uses as any user would ({@link org.devicebridge.arrow.ImportedArray#view},
 * {@link org.devicebridge.arrow.ImportedArray#ofHostCopies}, {@link org.devicebridge.arrow.ArrayNode#relocated},
 * through a {@link org.devicebridge.arrow.DeviceCopier}). The Arrow Java bridge is {@code org.devicebridge.arrow.java}; Arrow on CUDA is
 * {@code org.devicebridge.arrow.cuda}.
 *
 * <p>Ownership: every {@code import...} moves the foreign struct first; after a return the returned handle
 * owns it, after a throw it has already been released.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.arrow.ArrowC#importSchema} and
 * {@link org.devicebridge.arrow.ArrowC#importArray(org.devicebridge.arrow.SchemaNode,
 * java.lang.foreign.MemorySegment, org.devicebridge.arrow.ValidationLevel)} for what a C producer hands you,
 * then {@link org.devicebridge.arrow.ImportedArray#root()} and {@link org.devicebridge.arrow.ArrayNode#buffer(int)}
 * to read it; {@link org.devicebridge.arrow.ArrowC#importStream} for a stream.
 */
package org.devicebridge.arrow;
