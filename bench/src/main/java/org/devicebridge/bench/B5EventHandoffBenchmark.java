package org.devicebridge.bench;

import org.devicebridge.Device;
import org.devicebridge.cuda.Cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B5 (GPU): the per-batch event handoff between a producer and a consumer stream on device 0.
 * {@link #library}: take a pooled event ({@code CudaEvent.acquire}), record it on the producer stream,
 * make the consumer stream wait on it, give it back to the pool (close): what an Arrow device export and
 * import do per batch. {@link #raw}: the same two driver calls ({@code cuEventRecord},
 * {@code cuStreamWaitEvent}) through the generated bindings on bare handles, with one event created in setup.
 * Every iteration checks through {@code CudaCounters} that the library made no {@code cuEventCreate} call
 * (the pool is warmed in setup), printing the counts, and fails otherwise. Both streams are synchronised at
 * the end of every iteration so that no work piles up. Throws in setup without CUDA.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B5EventHandoffBenchmark {
    private CudaStream producer;
    private CudaStream consumer;
    private CudaEvent rawEvent;
    private MemorySegment rawProducer;
    private MemorySegment rawConsumer;
    private MemorySegment rawEventHandle;
    private CudaCounters.Snapshot iterationStart;

    @Setup(Level.Trial)
    public void setUp() {
        GpuSupport.requireCuda();
        // Creating the streams on this (the benchmark) thread makes device 0's primary context current here.
        producer = CudaStream.create(Device.cuda(0));
        consumer = CudaStream.create(Device.cuda(0));
        rawEvent = CudaEvent.acquire(Device.cuda(0));
        CudaEvent.acquire(Device.cuda(0)).close(); // warm the pool: the steady state takes and gives back this one
        rawProducer = GpuSupport.handle(producer.address());
        rawConsumer = GpuSupport.handle(consumer.address());
        rawEventHandle = GpuSupport.handle(rawEvent.address());
    }

    @Setup(Level.Iteration)
    public void startIteration() {
        iterationStart = CudaCounters.snapshot();
    }

    @TearDown(Level.Iteration)
    public void endIteration() {
        if (producer == null) {
            return;
        }
        producer.synchronize();
        consumer.synchronize();
        GpuSupport.checkSteadyState("B5", iterationStart);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (producer == null) {
            return;
        }
        producer.synchronize();
        consumer.synchronize();
        rawEvent.close();
        producer.close();
        consumer.close();
    }

    @Benchmark
    public void library() {
        try (CudaEvent event = CudaEvent.acquire(Device.cuda(0))) {
            event.record(producer);
            consumer.waitEvent(event);
        }
    }

    @Benchmark
    public void raw() {
        Cuda.check("cuEventRecord", cuda_driver_h.cuEventRecord(rawEventHandle, rawProducer));
        Cuda.check("cuStreamWaitEvent", cuda_driver_h.cuStreamWaitEvent(rawConsumer, rawEventHandle, 0));
    }
}
