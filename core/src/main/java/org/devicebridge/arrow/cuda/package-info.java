/**
 * Arrow on CUDA, one class per job: {@link org.devicebridge.arrow.cuda.CudaArrowUpload} (Arrow Java batches
 * into device memory), {@link org.devicebridge.arrow.cuda.CudaArrowExport} (CUDA {@code ArrowDeviceArray}s and
 * streams with a sync event, and Arrow Java batches in pinned host memory as {@code ARROW_DEVICE_CUDA_HOST}), {@link org.devicebridge.arrow.cuda.CudaArrowImport} (zero-copy import, the
 * consumer's stream waits on the producer's event), {@link org.devicebridge.arrow.cuda.CudaArrowDownload}
 * (device batches into Arrow Java) and {@link org.devicebridge.arrow.cuda.CudaArrowIpc} (Arrow IPC through host
 * copies). Every stream parameter is the consumer's stream, which the caller keeps owning.
 */
package org.devicebridge.arrow.cuda;
