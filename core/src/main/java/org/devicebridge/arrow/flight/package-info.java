/**
 * Arrow Flight for CUDA-resident batches (Arrow Flight, {@code flight-core}, is an optional dependency, as
 * Arrow Java is; nothing else in the library needs it).
 *
 * <ul>
 *   <li>Server side: {@link org.devicebridge.arrow.flight.DeviceFlight#serve} answers a {@code DoGet} of the
 *       user's own {@code FlightProducer} with device batches (each copied once by DMA into host memory of
 *       the caller's allocator, pinned for a direct copy, and handed to Flight from there);
 *       {@link org.devicebridge.arrow.flight.DeviceFlight#receive} takes a {@code DoPut} stream into device
 *       memory on a chosen device and stream, with an event per batch;
 *       {@link org.devicebridge.arrow.flight.DeviceFlightProducer} is a ready producer for the simple case,
 *       admitting puts under {@link org.devicebridge.arrow.flight.PutOptions} (limits, validation level, and a
 *       policy of who may create or replace which dataset).</li>
 *   <li>Client side: {@link org.devicebridge.arrow.flight.DeviceFlightClient} fetches a stream into device
 *       memory (or host memory of the client's allocator) and puts device batches, through a
 *       {@code FlightClient} the caller built.</li>
 * </ul>
 * TLS, authentication, headers, deadlines and cancellation are Flight's own: the caller builds the
 * {@code FlightServer} and {@code FlightClient} and passes {@code CallOption}s, which this package hands
 * through unchanged. Every stream parameter is the caller's CUDA stream, which the caller keeps owning.
 *
 * <p>Host memory must be of one root allocator per stream: Flight moves buffers between a batch and the
 * stream's root by reference counting, which Arrow Java allows only between allocators of one root.
 */
package org.devicebridge.arrow.flight;
