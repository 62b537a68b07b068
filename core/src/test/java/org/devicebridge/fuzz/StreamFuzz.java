package org.devicebridge.fuzz;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.SplittableRandom;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * ArrowArrayStream / ArrowDeviceArrayStream around an {@link ArrowFuzz} input: get_schema hands over the
 * generated schema (or fails with an errno), get_next hands over the generated batch once (or fails), then
 * signals the end; callbacks may be NULL, the stream may be generated already released. The callbacks read
 * the current input from the calling thread's {@link Fuzz.Counters} (every callback runs on the thread that
 * imports or closes the stream).
 */
final class StreamFuzz {
    /** What the current stream does and what it handed over. */
    static final class State {
        ArrowFuzz.Input input;
        MemorySegment stream;
        boolean device;
        int schemaErrno;
        int nextErrno;          // returned by the first get_next call
        boolean lastErrorNull;
        boolean schemaHanded;
        boolean arrayHanded;
        int nextCalls;
    }

    private static final FunctionDescriptor INT_PP = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS);
    static final MemorySegment GET_SCHEMA = Native.upcallStub(MethodHandles.lookup(), StreamFuzz.class, "getSchema", INT_PP);
    static final MemorySegment GET_NEXT = Native.upcallStub(MethodHandles.lookup(), StreamFuzz.class, "getNext", INT_PP);
    static final MemorySegment GET_LAST_ERROR = Native.upcallStub(MethodHandles.lookup(), StreamFuzz.class, "getLastError",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment RELEASE = Native.upcallStub(MethodHandles.lookup(), StreamFuzz.class, "release",
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final MemorySegment MESSAGE = java.lang.foreign.Arena.global().allocateFrom("fuzz: producer failed");

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        try {
            State s = Fuzz.counters().stream;
            if (s.schemaErrno != 0) {
                return s.schemaErrno;
            }
            MemorySegment.copy(s.input.schema, 0, out.reinterpret(ArrowSchema.sizeof()), 0, ArrowSchema.sizeof());
            ArrowSchema.release(s.input.schema, MemorySegment.NULL); // moved
            s.schemaHanded = !s.input.schemaReleased;
            return 0;
        } catch (Throwable t) {
            t.printStackTrace();
            return 5;
        }
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        try {
            State s = Fuzz.counters().stream;
            int call = s.nextCalls++;
            if (call == 0 && s.nextErrno != 0) {
                return s.nextErrno;
            }
            long size = s.device ? ArrowDeviceArray.sizeof() : ArrowArray.sizeof();
            MemorySegment o = out.reinterpret(size);
            if (call == (s.nextErrno != 0 ? 1 : 0)) {
                MemorySegment.copy(s.input.array, 0, o, 0, size);
                ArrowArray.release(s.input.array, MemorySegment.NULL); // moved (the array is first in a device array)
                s.arrayHanded = !s.input.arrayReleased;
            } else {
                o.fill((byte) 0); // end of stream: a released array
            }
            return 0;
        } catch (Throwable t) {
            t.printStackTrace();
            return 5;
        }
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        State s = Fuzz.counters().stream;
        return s != null && s.lastErrorNull ? MemorySegment.NULL : MESSAGE;
    }

    private static void release(MemorySegment stream) {
        Fuzz.Counters c = Fuzz.counters();
        c.streamReleases++;
        State current = c.stream;
        long offset = current != null && current.device ? ArrowDeviceArrayStream.release$offset() : ArrowArrayStream.release$offset();
        stream.reinterpret(offset + 8).set(ValueLayout.ADDRESS, offset, MemorySegment.NULL);
    }

    /** Builds the stream around {@code input}; decisions drawn from {@code r} after the input's own. */
    static State build(Fuzz.Mem mem, ArrowFuzz.Input input, SplittableRandom r) {
        State s = new State();
        s.input = input;
        s.device = input.device;
        s.schemaErrno = r.nextInt(10) == 0 ? new int[] {5, 12, 22, -1}[r.nextInt(4)] : 0;
        s.nextErrno = r.nextInt(8) == 0 ? new int[] {5, 12, 22, -1}[r.nextInt(4)] : 0;
        s.lastErrorNull = r.nextBoolean();
        MemorySegment get = GET_SCHEMA;
        MemorySegment next = GET_NEXT;
        MemorySegment last = GET_LAST_ERROR;
        MemorySegment rel = RELEASE;
        switch (r.nextInt(24)) {
            case 0 -> get = MemorySegment.NULL;
            case 1 -> next = MemorySegment.NULL;
            case 2 -> last = MemorySegment.NULL;
            case 3 -> rel = MemorySegment.NULL;
            default -> { }
        }
        if (s.device) {
            s.stream = mem.struct(ArrowDeviceArrayStream.sizeof());
            ArrowDeviceArrayStream.device_type(s.stream, r.nextInt(10) == 0 ? new int[] {2, 0, 99}[r.nextInt(3)] : 1);
            ArrowDeviceArrayStream.get_schema(s.stream, get);
            ArrowDeviceArrayStream.get_next(s.stream, next);
            ArrowDeviceArrayStream.get_last_error(s.stream, last);
            ArrowDeviceArrayStream.release(s.stream, rel);
        } else {
            s.stream = mem.struct(ArrowArrayStream.sizeof());
            ArrowArrayStream.get_schema(s.stream, get);
            ArrowArrayStream.get_next(s.stream, next);
            ArrowArrayStream.get_last_error(s.stream, last);
            ArrowArrayStream.release(s.stream, rel);
        }
        return s;
    }
}
