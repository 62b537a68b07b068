package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.AsyncDeviceStream;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;

public class AsyncStreams {
    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             BigIntVector first = new BigIntVector("id", allocator);
             BigIntVector second = new BigIntVector("id", allocator);
             Arena structs = Arena.ofConfined()) {
            for (BigIntVector v : List.of(first, second)) {
                v.allocateNew(2);
                v.set(0, v == first ? 1 : 3);
                v.set(1, v == first ? 2 : 4);
                v.setValueCount(2);
            }
            VectorSchemaRoot a = VectorSchemaRoot.of(first);
            VectorSchemaRoot b = VectorSchemaRoot.of(second);

            // Any ArrowDeviceArrayStream is a source: here two Arrow Java batches.
            MemorySegment stream = ArrowC.allocateDeviceArrayStream(structs);
            ArrowJava.exportDeviceStream(a.getSchema(), List.of(a, b).iterator(), null, stream);

            // The consumer: a handler the library implements, at most 2 batches requested ahead.
            try (AsyncDeviceStream consumer = AsyncDeviceStream.open(2, ValidationLevel.FULL)) {
                // The producer: drives any handler (here ours; in practice Arrow C++'s or yours).
                CompletableFuture<Void> done = AsyncDeviceStream.export(stream, consumer.handler(), pool);
                System.out.println("schema: " + consumer.schema(Duration.ofSeconds(10)).children().get(0).name());
                for (;;) {
                    try (ImportedArray batch = consumer.next(Duration.ofSeconds(10))) {
                        if (batch == null) {
                            break; // the end of the stream
                        }
                        ArrayNode id = batch.root().children().get(0);
                        System.out.println("id = " + id.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, id.offset())
                                + ", " + id.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, id.offset() + 1));
                    }
                }
                done.join(); // the handler was released: the stream is over
            }
        } finally {
            pool.shutdown();
        }
    }
}
