package org.devicebridge.bench;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B1: the baseline every other benchmark is divided by. A bare FFM downcall to a libc no-op
 * ({@code free(NULL)} through a {@code void (*)(void*)} function pointer) beside the same call made
 * through the generated bindings ({@code ArrowSchema.release.invoke}, the path every release callback
 * takes). Target: generated / bare <= 1.10.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class DowncallBaselineBenchmark {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MemorySegment FREE = LINKER.defaultLookup().find("free").orElseThrow();
    private static final MethodHandle BARE = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    @Benchmark
    public void bareDowncall() throws Throwable {
        BARE.invokeExact(FREE, MemorySegment.NULL);
    }

    @Benchmark
    public void generatedBinding() {
        ArrowSchema.release.invoke(FREE, MemorySegment.NULL);
    }
}
