/**
 * Arrow on CUDA, one class per job: {@link org.devicebridge.arrow.cuda.CudaArrowUpload} (Arrow Java batches
 * into device memory), {@link org.devicebridge.arrow.cuda.CudaArrowExport} (CUDA {@code ArrowDeviceArray}s and
 * streams with a sync event, and Arrow Java batches in pinned host memory as {@code ARROW_DEVICE_CUDA_HOST}), {@link org.devicebridge.arrow.cuda.CudaArrowImport} (zero-copy import, the
 * consumer's stream waits on the producer's event), {@link org.devicebridge.arrow.cuda.CudaArrowDownload}
 * (device batches into Arrow Java) and {@link org.devicebridge.arrow.cuda.CudaArrowStreamFormat} (Arrow's IPC
 * stream and file formats, through host copies; CUDA IPC of device batches is {@code org.devicebridge.ipc}); {@link org.devicebridge.arrow.cuda.PinnedArrowMemory} is Arrow Java memory in pooled pinned host
 * memory, which those copies read and write with no staging. Every stream parameter is the consumer's stream, which the caller keeps owning.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.arrow.cuda.CudaArrowUpload#upload(org.apache.arrow.vector.VectorSchemaRoot,
 * org.devicebridge.cuda.HostDeviceTransfer, org.devicebridge.cuda.CudaStream)} with a
 * {@link org.devicebridge.cuda.HostDeviceTransfer} and a {@link org.devicebridge.cuda.CudaStream}, then
 * {@link org.devicebridge.arrow.cuda.CudaArrowExport#exportDeviceArray} to hand the
 * {@link org.devicebridge.arrow.cuda.CudaArrowBatch} to a CUDA consumer.
 */
package org.devicebridge.arrow.cuda;
