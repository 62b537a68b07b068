/**
 * Plumbing the public packages share that needs their types (not exported): the one translation of native-call
 * failures into the library's exceptions ({@link org.devicebridge.foreign.NativeCalls}), the one C stream
 * exporter ({@link org.devicebridge.foreign.StreamExport}), the check of caller-allocated output structs, and
 * the package access of {@code org.devicebridge.arrow} for its sibling packages
 * ({@link org.devicebridge.foreign.Access}), the acknowledgement that gates the release of a CUDA IPC export
 * ({@link org.devicebridge.foreign.AcknowledgementGate}), and the one strict JSON reader and writer of
 * cross-process messages ({@link org.devicebridge.foreign.StrictJson}, {@link org.devicebridge.foreign.JsonFields},
 * {@link org.devicebridge.foreign.IpcMessages}).
 */
package org.devicebridge.foreign;
