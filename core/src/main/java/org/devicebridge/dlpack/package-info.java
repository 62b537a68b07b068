/**
 * DLPack 1.3: export of host, pinned-host and device memory as {@code DLManagedTensorVersioned} or legacy
 * {@code DLManagedTensor} ({@link org.devicebridge.dlpack.DLPack#exportVersioned} of a
 * {@link org.devicebridge.dlpack.TensorSpec}), strict import of both
 * ({@link org.devicebridge.dlpack.DLPack#importVersioned}, {@link org.devicebridge.dlpack.DLPack#importLegacy}),
 * the Python protocol's stream semantics ({@link org.devicebridge.dlpack.ConsumerStream}). It needs neither Arrow Java nor CUDA's Arrow layer:
 * the conversions to and from Arrow Java vectors live in the bridge ({@code org.devicebridge.arrow.java.DLPackArrow}),
 * and a tensor's device is an {@link org.devicebridge.Device}.
 *
 * <p>Ownership: {@code export...} gives the tensor to the returned {@link org.devicebridge.dlpack.ExportedTensor}
 * until a consumer takes it ({@link org.devicebridge.dlpack.ExportedTensor#transferOwnership()}); {@code import...}
 * takes the producer's tensor, and its deleter runs exactly once: when the
 * {@link org.devicebridge.dlpack.ImportedTensor} closes, or before an import method throws.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.dlpack.TensorSpec#of} and
 * {@link org.devicebridge.dlpack.DLPack#exportVersioned(org.devicebridge.dlpack.TensorSpec)} to give a tensor
 * away; {@link org.devicebridge.dlpack.DLPack#importVersioned(java.lang.foreign.MemorySegment,
 * org.devicebridge.dlpack.ImportOptions)} and {@link org.devicebridge.dlpack.ImportedTensor#segment()} to take one.
 */
package org.devicebridge.dlpack;
