/**
 * The safe CUDA driver layer: lazy driver loading, devices, and (as they are added) contexts, streams,
 * events, memory and copies. Every failure is a {@link org.devicebridge.cuda.CudaException}.
 */
package org.devicebridge.cuda;
