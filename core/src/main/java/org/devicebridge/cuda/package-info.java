/**
 * The safe CUDA driver layer. Every failure is a {@link org.devicebridge.cuda.CudaException} naming the
 * driver function and its {@code CUresult}; without a driver, every entry point throws
 * {@link org.devicebridge.cuda.CudaUnavailableException}. Arguments are checked before the driver is
 * called: a bad one throws {@link org.devicebridge.InvalidArgumentException}, and nothing was done.
 *
 * <ul>
 *   <li>Every call that works on one device takes an {@link org.devicebridge.Device} of kind
 *       {@link org.devicebridge.DeviceKind#CUDA} (another kind throws
 *       {@link org.devicebridge.InvalidArgumentException}), and every handle's {@code device()} returns one.</li>
 *   <li>{@link org.devicebridge.cuda.Cuda}: driver loading, devices, free memory, peer access, the default
 *       memory pool's threshold. Each device's primary
 *       context is retained once (for the life of the process) and made current on the calling thread
 *       whenever a call needs it ({@code cuCtxGetCurrent}, then {@code cuCtxSetCurrent} if it differs); it
 *       stays current afterwards, as with the CUDA runtime. Code that manages its own contexts on the same
 *       thread should make its context current again after calling into this package.</li>
 *   <li>{@link org.devicebridge.cuda.CudaStream} (owned: non-blocking by default, blocking on request; or
 *       borrowed) and
 *       {@link org.devicebridge.cuda.CudaEvent} (pooled, timing disabled).</li>
 *   <li>{@link org.devicebridge.cuda.DeviceBuffer} (cuMemAlloc, stream-ordered pool memory, or wrapped
 *       foreign memory; reference counted), {@link org.devicebridge.cuda.PinnedHostBuffer} (allocated
 *       pinned, or existing memory registered),
 *       {@link org.devicebridge.cuda.PinnedHostPool} (pinned blocks by size class, reused).</li>
 *   <li>{@link org.devicebridge.cuda.CudaCopies}: host/device copies, each as a blocking call and as
 *       {@code ...Async(..., stream)}; a {@link org.devicebridge.cuda.DeviceRange} names the bytes of a
 *       buffer to copy.</li>
 *   <li>{@link org.devicebridge.cuda.PointerAttributes}: memory kind, device and range of an address,
 *       cached per allocation.</li>
 *   <li>CUDA IPC: {@link org.devicebridge.cuda.DeviceBuffer#ipcHandle()} and
 *       {@link org.devicebridge.cuda.CudaEvent#ipcHandle()} share device memory and events with other
 *       processes, which open them with {@code openIpcHandle}.</li>
 *   <li>{@link org.devicebridge.cuda.HostDeviceTransfer}: batches of host buffers to one packed device
 *       allocation and back: page-locked buffers by direct DMA, pageable ones through a reused ring of pinned
 *       staging chunks packed in parallel while the previous chunk's copy runs.</li>
 * </ul>
 *
 * <p>Every owning type is a {@link org.devicebridge.NativeHandle}: close it (try-with-resources); close
 * is idempotent and thread-safe, and a forgotten handle is released by a Cleaner with a leak warning.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.cuda.Cuda#isAvailable()}, then
 * {@link org.devicebridge.cuda.CudaStream}, {@link org.devicebridge.cuda.DeviceBuffer} and
 * {@link org.devicebridge.cuda.CudaCopies}.
 */
package org.devicebridge.cuda;
