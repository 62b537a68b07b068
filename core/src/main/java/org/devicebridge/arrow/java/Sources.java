package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.util.Iterator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.foreign.StreamExport;

/** Arrow Java batches as the source of an exported C stream ({@link StreamExport}). */
final class Sources {
    private Sources() {}

    /** Writes one batch into what {@code get_next} fills: an {@code ArrowArray} or a CPU {@code ArrowDeviceArray}. */
    @FunctionalInterface
    interface BatchWriter {
        void write(VectorSchemaRoot batch, DictionaryProvider provider, MemorySegment out);
    }

    /** The batches of {@code reader}, written by {@code writer}; the stream closes the reader on release. */
    static StreamExport.Source of(ArrowReader reader, BatchWriter writer) {
        return new Source(writer) {
            @Override
            Schema schema() throws Exception {
                return reader.getVectorSchemaRoot().getSchema();
            }

            @Override
            VectorSchemaRoot next() throws Exception {
                return reader.loadNextBatch() ? reader.getVectorSchemaRoot() : null;
            }

            @Override
            DictionaryProvider provider() {
                return reader;
            }

            @Override
            public void close() throws Exception {
                reader.close();
            }
        };
    }

    /**
     * The roots of {@code batches} (all of {@code schema}), written by {@code writer}; the stream closes the
     * iterator on release if it is {@link AutoCloseable}.
     */
    static StreamExport.Source of(Schema schema, Iterator<? extends VectorSchemaRoot> batches,
                                  DictionaryProvider provider, BatchWriter writer) {
        return new Source(writer) {
            @Override
            Schema schema() {
                return schema;
            }

            @Override
            VectorSchemaRoot next() {
                return batches.hasNext() ? batches.next() : null;
            }

            @Override
            DictionaryProvider provider() {
                return provider;
            }

            @Override
            public void close() throws Exception {
                if (batches instanceof AutoCloseable c) {
                    c.close();
                }
            }
        };
    }

    /** The schema and batches of one source; exporting them is the same for every kind of source. */
    private abstract static class Source implements StreamExport.Source {
        private final BatchWriter writer;

        Source(BatchWriter writer) {
            this.writer = writer;
        }

        abstract Schema schema() throws Exception;

        /** The next batch, or {@code null} at the end. */
        abstract VectorSchemaRoot next() throws Exception;

        abstract DictionaryProvider provider();

        @Override
        public final void exportSchema(MemorySegment out) throws Exception {
            ExportSchemaWriter.export(schema(), provider(), out);
        }

        @Override
        public final boolean exportNext(MemorySegment out) throws Exception {
            VectorSchemaRoot batch = next();
            if (batch == null) {
                return false;
            }
            writer.write(batch, provider(), out);
            return true;
        }
    }
}
