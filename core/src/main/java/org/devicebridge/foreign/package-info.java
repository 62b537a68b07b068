/**
 * Plumbing the public packages share that needs their types (not exported): the one translation of native-call
 * failures into the library's exceptions ({@link org.devicebridge.foreign.NativeCalls}), the one C stream
 * exporter ({@link org.devicebridge.foreign.StreamExport}), the check of caller-allocated output structs, and
 * the package access of {@code org.devicebridge.arrow} for its sibling packages
 * ({@link org.devicebridge.foreign.Access}), and the one writer of {@code ArrowArray} trees over device
 * addresses ({@link org.devicebridge.foreign.CudaStructs}), shared by the device export of
 * {@code org.devicebridge.arrow.cuda} and the CUDA IPC import of {@code org.devicebridge.ipc}.
 */
package org.devicebridge.foreign;
