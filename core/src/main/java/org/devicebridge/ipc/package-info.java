/**
 * CUDA IPC: device batches and tensors handed to another process (a JVM, or CPython with CuPy and pyarrow)
 * through {@code cuIpc} memory and event handles, a JSON descriptor and a close acknowledgement. The format,
 * with its version, is in {@code docs/ipc-format.md}; the guide in {@code docs/ipc.md}.
 *
 * <ul>
 *   <li>A batch (an Arrow record batch on a CUDA device): {@link org.devicebridge.ipc.IpcBatchExport#export}
 *       gives an {@link org.devicebridge.ipc.IpcBatchExport} whose {@link org.devicebridge.ipc.IpcBatchDescriptor}
 *       goes to the other process; there {@link org.devicebridge.ipc.IpcBatchImport#open} maps it as an
 *       {@link org.devicebridge.ipc.IpcBatchImport}. The batch side needs Arrow Java (it writes and reads the
 *       schema as an Arrow IPC schema message).</li>
 *   <li>A tensor (a DLPack tensor in one device allocation): {@link org.devicebridge.ipc.IpcTensorExport#export}
 *       and its {@link org.devicebridge.ipc.IpcTensorDescriptor}; {@link org.devicebridge.ipc.IpcTensorImport#open}
 *       maps it as an {@link org.devicebridge.dlpack.ImportedTensor}. The tensor side needs no Arrow Java.</li>
 * </ul>
 *
 * <p>Both kinds share one descriptor reader (strict JSON: no duplicate keys, bounded length and depth, exact
 * numeric ranges; every refusal a {@link org.devicebridge.ValidationException} with the key path) and one
 * acknowledgement lifecycle: an export keeps the memory alive until the importer's close message
 * ({@code {"devicebridge_ipc_closed": "<id>"}}) is passed to its {@code acknowledge}, and its {@code close()}
 * refuses until then.
 *
 * <p>"IPC" in this library means CUDA IPC; Arrow's IPC stream and file formats are
 * {@link org.devicebridge.arrow.cuda.CudaArrowStreamFormat}.
 */
package org.devicebridge.ipc;
