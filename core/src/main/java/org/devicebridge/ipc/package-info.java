/**
 * CUDA IPC: device batches and tensors handed to another process (a JVM, or CPython with CuPy and pyarrow)
 * through {@code cuIpc} memory and event handles, a JSON descriptor and a close acknowledgement. The format,
 * with its version, is in {@code docs/ipc-format.md}; the guide in {@code docs/ipc.md}.
 *
 * <ul>
 *   <li>{@link org.devicebridge.ipc.IpcExport} exports an Arrow record batch on a CUDA device
 *       ({@link org.devicebridge.ipc.IpcExport#exportBatch}; needs Arrow Java, which writes the schema as an
 *       Arrow IPC schema message) or a DLPack tensor in one device allocation
 *       ({@link org.devicebridge.ipc.IpcExport#exportTensor}); its descriptor, one line of JSON, goes to the
 *       other process.</li>
 *   <li>{@link org.devicebridge.ipc.IpcImport} maps a descriptor there: {@link org.devicebridge.ipc.IpcImport#importBatch}
 *       as a {@link org.devicebridge.arrow.cuda.CudaArrowBatch}, {@link org.devicebridge.ipc.IpcImport#importTensor}
 *       as an {@link org.devicebridge.dlpack.ImportedTensor}.</li>
 *   <li>{@link org.devicebridge.ipc.WorkerChannel} hands batches and tensors to a Python worker process over
 *       a channel the caller already has, with the same exports and imports underneath.</li>
 * </ul>
 *
 * <p>Both kinds share one descriptor reader (strict JSON: no duplicate keys, bounded length and depth, exact
 * numeric ranges; every refusal a {@link org.devicebridge.ValidationException} with the key path) and one
 * acknowledgement lifecycle: an export keeps the memory alive until the importer's close message
 * ({@code {"devicebridge_ipc_closed": "<id>"}}) is passed to its {@code acknowledge}, and its {@code close()}
 * refuses until then.
 *
 * <p>"IPC" in this library means CUDA IPC; Arrow's IPC stream and file formats are Arrow Java's
 * ({@code ArrowStreamWriter} on a downloaded batch).
 */
package org.devicebridge.ipc;
