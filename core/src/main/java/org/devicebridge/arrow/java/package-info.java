/**
 * The Arrow Java bridge (Arrow Java is an optional dependency): zero-copy export of
 * {@code VectorSchemaRoot}s, vectors, schemas and readers as Arrow C structs and streams
 * ({@link org.devicebridge.arrow.java.ArrowJava}), and zero-copy import of validated arrays into Arrow Java
 * ({@link org.devicebridge.arrow.java.ArrowJava}), and zero-copy conversions between Arrow Java vectors
 * and DLPack tensors ({@link org.devicebridge.arrow.java.DLPackArrow}).
 *
 * <p>Arrow Java memory without Netty: {@link org.devicebridge.arrow.java.ArrowMemory} is an allocation
 * manager on the FFM API and the one call that makes it Arrow Java's default.
 *
 * <p>Ownership: {@code export...} gives the struct to its consumer, whose {@code release} frees what the
 * export holds; {@code import...} consumes the {@link org.devicebridge.arrow.ImportedArray} after a return
 * and has released it after a throw.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.arrow.java.ArrowJava#exportRoot(org.apache.arrow.vector.VectorSchemaRoot,
 * org.apache.arrow.vector.dictionary.DictionaryProvider, java.lang.foreign.MemorySegment,
 * java.lang.foreign.MemorySegment)} to hand a batch to C, and
 * {@link org.devicebridge.arrow.java.ArrowJava#importVectorSchemaRoot} to take one from C after
 * {@link org.devicebridge.arrow.ArrowC#importArray(org.devicebridge.arrow.SchemaNode,
 * java.lang.foreign.MemorySegment, org.devicebridge.arrow.ValidationLevel)}.
 */
package org.devicebridge.arrow.java;
