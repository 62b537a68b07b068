/**
 * Arrow on CUDA behind one entry, {@link org.devicebridge.arrow.cuda.CudaArrow}, and one parameter record,
 * {@link org.devicebridge.arrow.cuda.DeviceCopies} (the caller's stream, the staging transfer, the host
 * allocator): upload of Arrow Java batches, download back into Arrow Java, zero-copy export and import of CUDA
 * {@code ArrowDeviceArray}s and streams (the consumer's stream waits on the producer's event), export of Arrow
 * Java batches in pinned host memory as {@code ARROW_DEVICE_CUDA_HOST}, and copies to another device.
 * {@link org.devicebridge.arrow.cuda.CudaArrowBatch} is the one handle for an Arrow array on a device.
 * {@link org.devicebridge.arrow.cuda.PinnedArrowMemory} is Arrow Java memory in pooled pinned host memory, which
 * those copies read and write with no staging. CUDA IPC of device batches is {@code org.devicebridge.ipc}; Arrow's
 * IPC stream and file formats are Arrow Java's, on a downloaded batch. Every stream is the consumer's, which the caller keeps owning.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.arrow.cuda.CudaArrow#upload(org.apache.arrow.vector.VectorSchemaRoot,
 * org.devicebridge.arrow.cuda.DeviceCopies)} with a {@link org.devicebridge.cuda.HostDeviceTransfer} and a
 * {@link org.devicebridge.cuda.CudaStream}, then {@link org.devicebridge.arrow.cuda.CudaArrow#exportDeviceArray}
 * to hand the batch to a CUDA consumer.
 */
package org.devicebridge.arrow.cuda;
