/**
 * Plumbing the public packages share that needs the base package's types (not exported; it imports no other
 * public package, so every package above may use it): the one translation of native-call failures into the
 * library's exceptions ({@link org.devicebridge.foreign.NativeCalls}), the one C stream exporter
 * ({@link org.devicebridge.foreign.StreamExport}), the one release machinery of exported {@code ArrowSchema} and
 * {@code ArrowArray} trees ({@link org.devicebridge.foreign.ExportTree}, subclassed by the Arrow Java export and
 * the FFM-only export), the check of caller-allocated output structs, the check
 * that Arrow Java can be loaded ({@link org.devicebridge.foreign.ArrowJavaCheck}), and the one writer of
 * {@code ArrowArray} trees over device addresses ({@link org.devicebridge.foreign.CudaStructs}), shared by the
 * device export of {@code org.devicebridge.arrow.cuda} and the CUDA IPC import of {@code org.devicebridge.ipc}.
 * Nothing here lends a public package's private methods to another.
 */
package org.devicebridge.foreign;
