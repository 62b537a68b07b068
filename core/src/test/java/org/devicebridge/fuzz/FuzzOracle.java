package org.devicebridge.fuzz;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.apache.arrow.memory.BufferAllocator;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * Runs one fuzz input through the importers and checks the oracle (the Arrow targets: {@link ArrowOracle}):
 * no exception outside {@link DeviceBridgeException}, nor its untyped base class; release/deleter called exactly once (zero for an input generated already
 * released, or without a deleter); no child release ever called; every accepted value read (every buffer
 * segment of every node, children, dictionaries; for CPU arrays also through Arrow Java's getObject) and
 * every segment the importer hands out inside a buffer the generator allocated; the Arrow allocator back
 * to zero. A violation throws {@link FuzzFailure} naming the seed and the input's mutations.
 */
final class FuzzOracle {
    enum Outcome { ACCEPTED, REJECTED }

    /** What kind of oracle rule a failure broke (for its message and for whoever triages it). */
    enum Kind {
        /** A malformed input accepted at a level the {@link MalformedArrow.Malformation} table says rejects it. */
        LEVEL_TABLE,
        /** The Arrow Java bridge: an untyped exception, a refusal at FULL, values unreadable, wrong or undefined. */
        BRIDGE,
        /** Any other rule (release counts, segment bounds, untyped import errors...). */
        OTHER
    }

    static final class FuzzFailure extends AssertionError {
        private static final long serialVersionUID = 1L;
        final transient Check check;
        final Kind kind;
        final org.devicebridge.arrow.ValidationLevel level;

        FuzzFailure(Check c, Kind kind, org.devicebridge.arrow.ValidationLevel level, String what, Throwable cause) {
            super(c.target() + " seed " + c.seed() + " " + c.mutations() + (c.shape == null ? "" : " " + c.shape) + ": " + what, cause);
            this.check = c;
            this.kind = kind;
            this.level = level;
        }
    }

    private final BufferAllocator allocator;
    /** The Arrow targets (random and malformed inputs); their counts. */
    final ArrowOracle arrow;

    FuzzOracle(BufferAllocator allocator) {
        this.allocator = allocator;
        this.arrow = new ArrowOracle(allocator);
    }

    /** A random Arrow input ({@link ArrowFuzz}), imported at FULL and DEFAULT: see {@link ArrowOracle}. */
    Outcome arrow(long seed) {
        return arrow.random(seed);
    }

    /** A malformed-content Arrow input ({@link MalformedArrow}), imported at every level: see {@link ArrowOracle}. */
    Outcome malformed(long seed) {
        return arrow.malformed(seed);
    }

    // ------------------------------------------------------------------------------------------ streams

    Outcome stream(long seed) {
        Fuzz.Counters k = Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            ArrowFuzz.Input in = new ArrowFuzz(mem).generate();
            StreamFuzz.State st = StreamFuzz.build(mem, in, mem.r);
            k.stream = st;
            Check c = new Check("stream", seed, in.mutations + " schemaErrno=" + st.schemaErrno + " nextErrno=" + st.nextErrno);
            boolean streamLive = !MemorySegment.NULL.equals(st.device
                    ? org.devicebridge.generated.arrow.ArrowDeviceArrayStream.release(st.stream)
                    : org.devicebridge.generated.arrow.ArrowArrayStream.release(st.stream));
            Outcome outcome = Outcome.REJECTED;
            org.devicebridge.arrow.ImportedArrayStream stream = null;
            try {
                stream = st.device ? ArrowC.importDeviceStream(st.stream) : ArrowC.importStream(st.stream);
            } catch (DeviceBridgeException e) {
                // rejected: the stream released, and whatever get_schema handed over released too
                c.check("importStream threw the untyped base exception: " + e, e.getClass() != DeviceBridgeException.class);
            } catch (RuntimeException | Error e) {
                throw c.fail("importStream threw outside the library's hierarchy", e);
            }
            if (stream != null) {
                c.check("accepted a released stream", streamLive);
                try {
                    ArrowOracle.walk(stream.schema(), 0, c);
                    for (int i = 0; i < 3; i++) {
                        ImportedArray batch;
                        try {
                            batch = stream.next(ValidationLevel.FULL);
                        } catch (DeviceBridgeException e) {
                            c.check("next() threw the untyped base exception: " + e, e.getClass() != DeviceBridgeException.class);
                            c.equal("batch release calls after a rejected batch", st.arrayHanded ? 1 : 0, k.rootReleases);
                            continue;
                        } catch (RuntimeException | Error e) {
                            throw c.fail("next() threw outside the library's hierarchy", e);
                        }
                        if (batch == null) {
                            break;
                        }
                        outcome = Outcome.ACCEPTED;
                        try {
                            ArrowOracle.read(batch.root(), mem, 0, c);
                        } finally {
                            batch.close();
                        }
                        c.equal("batch release calls after close", 1, k.rootReleases);
                    }
                } finally {
                    stream.close();
                }
            }
            c.equal("stream release calls", streamLive ? 1 : 0, k.streamReleases);
            c.equal("schema release calls (handed over by get_schema)", st.schemaHanded ? 1 : 0, k.schemaReleases);
            c.equal("batch release calls (handed over by get_next)", st.arrayHanded ? 1 : 0, k.rootReleases);
            c.equal("child release calls", 0, k.childReleases);
            k.stream = null;
            return outcome;
        }
    }

    // ------------------------------------------------------------------------------------------ DLPack

    Outcome dlpack(long seed) {
        Fuzz.Counters k = Fuzz.resetCounters();
        try (Fuzz.Mem mem = new Fuzz.Mem(new SplittableRandom(seed))) {
            DLPackFuzz.Input in = new DLPackFuzz(mem).generate();
            Check c = new Check("dlpack", seed, in.mutations);
            int expectedDeletes = in.hasDeleter ? 1 : 0;
            ImportedTensor t;
            try {
                t = in.versioned ? DLPack.importVersioned(in.tensor, ImportOptions.any())
                        : DLPack.importLegacy(in.tensor, ImportOptions.any());
            } catch (DeviceBridgeException e) {
                c.check("DLPack import threw the untyped base exception: " + e, e.getClass() != DeviceBridgeException.class);
                c.equal("deleter calls after rejection", expectedDeletes, k.deletes);
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
                if (t.device().kind().isHostAccessible()) {
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
            c.equal("deleter calls after close", expectedDeletes, k.deletes);
            return Outcome.ACCEPTED;
        }
    }

    // ------------------------------------------------------------------------------------------ checks

    /** The checks of one input: a failed one throws a {@link FuzzFailure} naming the seed and the mutations. */
    static final class Check {
        private final String target;
        private final long seed;
        private final Object mutations;
        /** The malformation of a malformed input, or null. */
        MalformedArrow.Malformation malformation;
        /** The imported schema's formats as a tree, for messages (set once the schema is imported). */
        String shape;

        Check(String target, long seed, Object mutations) {
            this.target = target;
            this.seed = seed;
            this.mutations = mutations;
        }

        String target() {
            return target;
        }

        long seed() {
            return seed;
        }

        Object mutations() {
            return mutations;
        }

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
            return new FuzzFailure(this, Kind.OTHER, null, what, cause);
        }

        FuzzFailure fail(Kind kind, org.devicebridge.arrow.ValidationLevel level, String what, Throwable cause) {
            return new FuzzFailure(this, kind, level, what, cause);
        }
    }
}
