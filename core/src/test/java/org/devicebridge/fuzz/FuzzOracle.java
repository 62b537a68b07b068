package org.devicebridge.fuzz;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJavaImport;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * Runs one fuzz input through the importers at FULL and checks the oracle: no exception outside
 * {@link DeviceBridgeException}; release/deleter called exactly once (zero for an input generated already
 * released, or without a deleter); no child release ever called; every accepted value read (every buffer
 * segment of every node, children, dictionaries; for CPU arrays also through Arrow Java's getObject) and
 * every segment the importer hands out inside a buffer the generator allocated; the Arrow allocator back
 * to zero. A violation throws {@link FuzzFailure} naming the seed and the input's mutations.
 */
final class FuzzOracle {
    enum Outcome { ACCEPTED, REJECTED }

    static final class FuzzFailure extends AssertionError {
        private static final long serialVersionUID = 1L;

        FuzzFailure(String target, long seed, Object mutations, String what, Throwable cause) {
            super(target + " seed " + seed + " " + mutations + ": " + what, cause);
        }
    }

    /** Values Arrow Java itself cannot represent (e.g. a timestamp in seconds beyond LocalDateTime). */
    long arrowJavaValueLimits;
    /** Accepted CPU arrays that Arrow Java imported and read, or that it declined (UnsupportedFeatureException). */
    long arrowJavaRead;
    long arrowJavaDeclined;
    /** Accepted arrays with nested children, or with a dictionary somewhere. */
    long acceptedNested;
    long acceptedDictionary;

    private final BufferAllocator allocator;

    FuzzOracle(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    // ------------------------------------------------------------------------------------------ Arrow

    Outcome arrow(long seed) {
        Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            ArrowFuzz.Input in = new ArrowFuzz(mem).generate();
            Check c = new Check("arrow", seed, in.mutations);
            Outcome outcome = arrowImport(mem, in, c);
            c.equal("child release calls", 0, Fuzz.CHILD_RELEASES.get());
            c.equal("Arrow allocator bytes", 0, allocator.getAllocatedMemory());
            return outcome;
        }
    }

    private Outcome arrowImport(Fuzz.Mem mem, ArrowFuzz.Input in, Check c) {
        ImportedSchema schema;
        try {
            schema = ArrowImport.importSchema(in.schema);
        } catch (DeviceBridgeException e) {
            c.equal("schema release calls after rejection", in.schemaReleased ? 0 : 1, Fuzz.SCHEMA_RELEASES.get());
            return Outcome.REJECTED;
        } catch (RuntimeException | Error e) {
            throw c.fail("importSchema threw outside the library's hierarchy", e);
        }
        c.check("accepted a released schema", !in.schemaReleased);
        Outcome outcome;
        try {
            walk(schema.root(), 0, c);
            ImportedArray array;
            try {
                array = in.device ? ArrowImport.importDeviceArray(schema, in.array, ValidationLevel.FULL)
                        : ArrowImport.importArray(schema, in.array, ValidationLevel.FULL);
            } catch (DeviceBridgeException e) {
                c.equal("array release calls after rejection", in.arrayReleased ? 0 : 1, Fuzz.ROOT_RELEASES.get());
                return Outcome.REJECTED;
            } catch (RuntimeException | Error e) {
                throw c.fail("importArray threw outside the library's hierarchy", e);
            }
            c.check("accepted a released array", !in.arrayReleased);
            if (!array.root().children().isEmpty()) {
                acceptedNested++;
            }
            if (hasDictionary(array.root())) {
                acceptedDictionary++;
            }
            try {
                read(array.root(), mem, 0, c);
                if (array.root().isHostAccessible()) {
                    readThroughArrowJava(array, c);
                }
            } finally {
                array.close();
            }
            c.equal("array release calls after close", 1, Fuzz.ROOT_RELEASES.get());
            outcome = Outcome.ACCEPTED;
        } finally {
            schema.close();
        }
        c.equal("schema release calls after close", 1, Fuzz.SCHEMA_RELEASES.get());
        return outcome;
    }

    private static boolean hasDictionary(ArrayNode n) {
        if (n.dictionary() != null) {
            return true;
        }
        for (ArrayNode child : n.children()) {
            if (hasDictionary(child)) {
                return true;
            }
        }
        return false;
    }

    private static void walk(SchemaNode s, int depth, Check c) {
        c.check("schema deeper than 64 levels accepted", depth <= 65);
        s.name();
        s.format();
        s.metadata().forEach((k, v) -> { });
        s.flags();
        s.type();
        for (SchemaNode child : s.children()) {
            walk(child, depth + 1, c);
        }
        if (s.dictionary() != null) {
            walk(s.dictionary(), depth + 1, c);
        }
    }

    private static long read(ArrayNode n, Fuzz.Mem mem, int depth, Check c) {
        c.check("array deeper than 64 levels accepted", depth <= 65);
        long sum = n.length() + n.nullCount() + n.offset();
        for (int i = 0; i < n.bufferCount(); i++) {
            if (n.isBufferNull(i)) {
                continue;
            }
            MemorySegment b;
            try {
                b = n.buffer(i);
            } catch (RuntimeException e) {
                throw c.fail("buffer(" + i + ") of " + n.path() + " threw on an array accepted at FULL", e);
            }
            long size = b.byteSize();
            if (size > 0) {
                c.check(n.path() + ".buffers[" + i + "]: segment of " + size + " bytes outside every generated buffer",
                        mem.insideBuffer(b.address(), size));
            }
            for (long p = 0; p < size; p++) {
                sum += b.get(ValueLayout.JAVA_BYTE, p);
            }
        }
        for (ArrayNode child : n.children()) {
            sum += read(child, mem, depth + 1, c);
        }
        if (n.dictionary() != null) {
            sum += read(n.dictionary(), mem, depth + 1, c);
        }
        return sum;
    }

    private void readThroughArrowJava(ImportedArray array, Check c) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        FieldVector vector;
        try {
            vector = ArrowJavaImport.importFieldVector(allocator, array, dictionaries);
        } catch (DeviceBridgeException e) {
            closeDictionaries(dictionaries);
            arrowJavaDeclined++;
            // e.g. a type Arrow Java 19 has no vector for: like every import, it released its input on the throw
            if (array.isLive()) {
                throw c.fail("ArrowJavaImport threw but left its input live", e);
            }
            return;
        } catch (RuntimeException | Error e) {
            closeDictionaries(dictionaries);
            throw c.fail("ArrowJavaImport threw outside the library's hierarchy", e);
        }
        arrowJavaRead++;
        try {
            readAll(vector, c);
            for (long id : dictionaries.getDictionaryIds()) {
                readAll(dictionaries.lookup(id).getVector(), c);
            }
        } finally {
            vector.close();
            closeDictionaries(dictionaries);
        }
    }

    private static void closeDictionaries(DictionaryProvider.MapDictionaryProvider dictionaries) {
        for (long id : dictionaries.getDictionaryIds()) {
            dictionaries.lookup(id).getVector().close();
        }
    }

    private void readAll(ValueVector v, Check c) {
        for (int i = 0; i < v.getValueCount(); i++) {
            try {
                v.getObject(i);
            } catch (java.time.DateTimeException e) {
                arrowJavaValueLimits++; // Arrow Java's own limit (LocalDateTime range), not an import defect
            } catch (RuntimeException e) {
                throw c.fail("Arrow Java getObject(" + i + ") failed on " + v.getField(), e);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ streams

    Outcome stream(long seed) {
        Fuzz.resetCounters();
        StreamFuzz.STREAM_RELEASES.set(0);
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            ArrowFuzz.Input in = new ArrowFuzz(mem).generate();
            StreamFuzz.State st = StreamFuzz.build(mem, in, mem.r);
            StreamFuzz.current = st;
            Check c = new Check("stream", seed, in.mutations + " schemaErrno=" + st.schemaErrno + " nextErrno=" + st.nextErrno);
            boolean streamLive = !MemorySegment.NULL.equals(st.device
                    ? org.devicebridge.generated.arrow.ArrowDeviceArrayStream.release(st.stream)
                    : org.devicebridge.generated.arrow.ArrowArrayStream.release(st.stream));
            Outcome outcome = Outcome.REJECTED;
            org.devicebridge.arrow.ImportedArrayStream stream = null;
            try {
                stream = st.device ? ArrowImport.importDeviceStream(st.stream) : ArrowImport.importStream(st.stream);
            } catch (DeviceBridgeException e) {
                // rejected: the stream released, and whatever get_schema handed over released too
            } catch (RuntimeException | Error e) {
                throw c.fail("importStream threw outside the library's hierarchy", e);
            }
            if (stream != null) {
                c.check("accepted a released stream", streamLive);
                try {
                    walk(stream.schema(), 0, c);
                    for (int i = 0; i < 3; i++) {
                        ImportedArray batch;
                        try {
                            batch = stream.next(ValidationLevel.FULL);
                        } catch (DeviceBridgeException e) {
                            c.equal("batch release calls after a rejected batch", st.arrayHanded ? 1 : 0, Fuzz.ROOT_RELEASES.get());
                            continue;
                        } catch (RuntimeException | Error e) {
                            throw c.fail("next() threw outside the library's hierarchy", e);
                        }
                        if (batch == null) {
                            break;
                        }
                        outcome = Outcome.ACCEPTED;
                        try {
                            read(batch.root(), mem, 0, c);
                        } finally {
                            batch.close();
                        }
                        c.equal("batch release calls after close", 1, Fuzz.ROOT_RELEASES.get());
                    }
                } finally {
                    stream.close();
                }
            }
            c.equal("stream release calls", streamLive ? 1 : 0, StreamFuzz.STREAM_RELEASES.get());
            c.equal("schema release calls (handed over by get_schema)", st.schemaHanded ? 1 : 0, Fuzz.SCHEMA_RELEASES.get());
            c.equal("batch release calls (handed over by get_next)", st.arrayHanded ? 1 : 0, Fuzz.ROOT_RELEASES.get());
            c.equal("child release calls", 0, Fuzz.CHILD_RELEASES.get());
            StreamFuzz.current = null;
            return outcome;
        }
    }

    // ------------------------------------------------------------------------------------------ DLPack

    Outcome dlpack(long seed) {
        Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            DLPackFuzz.Input in = new DLPackFuzz(mem).generate();
            Check c = new Check("dlpack", seed, in.mutations);
            int expectedDeletes = in.hasDeleter ? 1 : 0;
            ImportedTensor t;
            try {
                t = in.versioned ? DLPack.importVersioned(in.tensor, ImportOptions.any())
                        : DLPack.importLegacy(in.tensor, ImportOptions.any());
            } catch (DeviceBridgeException e) {
                c.equal("deleter calls after rejection", expectedDeletes, Fuzz.DELETES.get());
                return Outcome.REJECTED;
            } catch (RuntimeException | Error e) {
                throw c.fail("DLPack import threw outside the library's hierarchy", e);
            }
            try {
                c.check("accepted a tensor whose byte range does not fit a long", !in.rangeOverflows);
                t.shape();
                t.strides();
                t.dtype();
                t.byteOffset();
                t.elementCount();
                if (t.device().type().isHostAccessible()) {
                    MemorySegment s = t.segment();
                    if (s.byteSize() > 0) {
                        long base = in.dataBuffer == null ? -1 : in.dataBuffer.address();
                        c.check("tensor segment [" + s.address() + ", +" + s.byteSize() + ") outside the data buffer",
                                base >= 0 && s.address() >= base && s.address() + s.byteSize() <= base + 2 * DLPackFuzz.HALF);
                        long sum = 0;
                        for (long p = 0; p < s.byteSize(); p++) {
                            sum += s.get(ValueLayout.JAVA_BYTE, p);
                        }
                    }
                } else {
                    t.devicePointer();
                }
            } catch (DeviceBridgeException e) {
                throw c.fail("reading an accepted tensor threw", e);
            } finally {
                t.close();
            }
            c.equal("deleter calls after close", expectedDeletes, Fuzz.DELETES.get());
            return Outcome.ACCEPTED;
        }
    }

    // ------------------------------------------------------------------------------------------ checks

    private record Check(String target, long seed, Object mutations) {
        void check(String what, boolean ok) {
            if (!ok) {
                throw fail(what, null);
            }
        }

        void equal(String what, long expected, long actual) {
            if (expected != actual) {
                throw fail(what + ": expected " + expected + " but found " + actual, null);
            }
        }

        FuzzFailure fail(String what, Throwable cause) {
            return new FuzzFailure(target, seed, mutations, what, cause);
        }
    }
}
