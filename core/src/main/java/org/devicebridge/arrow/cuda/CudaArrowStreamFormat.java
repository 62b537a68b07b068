package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ArrowWriter;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.cuda.Cuda;

/**
 * Arrow's IPC stream and file formats from and to device batches (not CUDA IPC: that is
 * {@code org.devicebridge.ipc}). <b>These paths copy:</b> Arrow Java reads and
 * writes IPC on the host, so each batch is {@link CudaArrow#download downloaded} before it is written and
 * {@link CudaArrow#upload uploaded} after it is read. Dictionary-encoded schemas are not supported here.
 *
 * <p>Stateless: its methods may be called from any thread; what calls share is the {@link DeviceCopies}'
 * transfer (one batch at a time) and stream.
 */
public final class CudaArrowStreamFormat {
    private CudaArrowStreamFormat() {}

    /**
     * Writes device batches as an Arrow IPC stream. <b>This path copies:</b> each batch is downloaded to the
     * host ({@link CudaArrow#download}) and written with Arrow Java's {@link ArrowStreamWriter}.
     *
     * <p>Ownership: the caller keeps owning the batches, {@code out} (not closed) and everything else, after a
     * return and after a throw.
     *
     * @param schema the Arrow Java schema of the batches
     * @param batches the batches; the caller keeps owning them
     * @param out where the bytes go; not closed
     * @param copies the stream, the transfer and the allocator the host buffers come from (all needed); borrowed
     * @throws UnsupportedFeatureException for dictionary-encoded fields
     * @throws org.devicebridge.InvalidArgumentException if {@code copies} lacks the transfer or the allocator
     * @throws DeviceBridgeException if writing fails
     */
    public static void writeStream(Schema schema, Iterable<CudaArrowBatch> batches, OutputStream out,
                                   DeviceCopies copies) {
        requireNativeAccess();
        requireArrowJava("CudaArrowStreamFormat.writeStream");
        Objects.requireNonNull(out, "out");
        Io.writeIpc(schema, batches, Channels.newChannel(out), false, copies);
    }

    /**
     * Writes device batches as an Arrow IPC file (with footer) through Arrow Java's {@link ArrowFileWriter}.
     * <b>This path copies</b>, as {@link #writeStream} does; ownership and exceptions as there.
     *
     * @param schema the Arrow Java schema; only read
     * @param batches the batches; the caller keeps owning them
     * @param out where the bytes go; not closed
     * @param copies the stream, the transfer and the allocator the host buffers come from (all needed); borrowed
     */
    public static void writeFile(Schema schema, Iterable<CudaArrowBatch> batches, WritableByteChannel out,
                                 DeviceCopies copies) {
        requireNativeAccess();
        requireArrowJava("CudaArrowStreamFormat.writeFile");
        Io.writeIpc(schema, batches, out, true, copies);
    }

    /**
     * Reads an Arrow IPC stream into device memory. <b>This path copies:</b> Arrow Java's
     * {@link ArrowStreamReader} reads each batch on the host, which is then
     * {@link CudaArrow#upload uploaded}.
     *
     * <p>Ownership: after a return the caller owns every returned batch; {@code in} is not closed. After a
     * throw nothing new is held.
     *
     * @param in where the bytes come from; not closed
     * @param copies the stream, the transfer and the allocator the host buffers come from (all needed); borrowed
     * @return the device batches, in order, owned by the caller
     * @throws org.devicebridge.InvalidArgumentException if {@code copies} lacks the transfer or the allocator
     * @throws DeviceBridgeException if reading fails
     */
    public static List<CudaArrowBatch> readStream(InputStream in, DeviceCopies copies) {
        requireNativeAccess();
        requireArrowJava("CudaArrowStreamFormat.readStream");
        Cuda.require();
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(copies, "copies").requireComplete();
        return Io.readStream(in, copies);
    }

    /**
     * Reads an Arrow IPC file into device memory through Arrow Java's {@link ArrowFileReader}. <b>This path
     * copies</b>, as {@link #readStream} does; ownership and exceptions as there ({@code in} is not
     * closed).
     *
     * @param in where the bytes come from; not closed
     * @param copies the stream, the transfer and the allocator the host buffers come from (all needed); borrowed
     * @return the device batches, in order, owned by the caller
     */
    public static List<CudaArrowBatch> readFile(SeekableByteChannel in, DeviceCopies copies) {
        requireNativeAccess();
        requireArrowJava("CudaArrowStreamFormat.readFile");
        Cuda.require();
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(copies, "copies").requireComplete();
        return Io.readFile(in, copies);
    }

    /**
     * The bodies that link against Arrow Java's IPC classes: in their own class, so that verifying
     * {@code CudaArrowStreamFormat} loads none of them and a JVM without Arrow Java gets the typed error first.
     */
    private static final class Io {
        private Io() {}

        static List<CudaArrowBatch> readStream(InputStream in, DeviceCopies copies) {
            return readIpc(new ArrowStreamReader(new NonClosing(in), copies.allocator()), copies);
        }

        static List<CudaArrowBatch> readFile(SeekableByteChannel in, DeviceCopies copies) {
            return readIpc(new ArrowFileReader(new NonClosingChannel(in), copies.allocator()), copies);
        }

        static void writeIpc(Schema schema, Iterable<CudaArrowBatch> batches, WritableByteChannel out, boolean file,
                             DeviceCopies copies) {
            Cuda.require();
            Objects.requireNonNull(schema, "schema");
            Objects.requireNonNull(batches, "batches");
            Objects.requireNonNull(out, "out");
            BufferAllocator allocator = Objects.requireNonNull(copies, "copies").requireComplete().allocator();
            for (Field f : schema.getFields()) {
                checkNoDictionary(f);
            }
            DictionaryProvider none = new DictionaryProvider.MapDictionaryProvider();
            try (VectorSchemaRoot writerRoot = VectorSchemaRoot.create(schema, allocator);
                 ArrowWriter writer = file ? new ArrowFileWriter(writerRoot, none, out)
                         : new ArrowStreamWriter(writerRoot, none, out)) {
                writer.start();
                for (CudaArrowBatch b : batches) {
                    try (VectorSchemaRoot host = CudaArrowDownload.download(b, null, copies);
                         ArrowRecordBatch rb = new VectorUnloader(host).getRecordBatch()) {
                        new VectorLoader(writerRoot).load(rb);
                    }
                    writer.writeBatch();
                }
                writer.end();
            } catch (IOException e) {
                throw new DeviceBridgeException("writing Arrow IPC failed: " + e.getMessage(), e);
            }
        }

        static List<CudaArrowBatch> readIpc(ArrowReader reader, DeviceCopies copies) {
            List<CudaArrowBatch> out = new ArrayList<>();
            try (reader) {
                while (reader.loadNextBatch()) {
                    out.add(CudaArrowUpload.upload(reader.getVectorSchemaRoot(), reader, copies, false));
                }
                return out;
            } catch (IOException e) {
                CudaArrowSupport.closeAll(out);
                throw new DeviceBridgeException("reading Arrow IPC failed: " + e.getMessage(), e);
            } catch (RuntimeException | Error e) {
                CudaArrowSupport.closeAll(out);
                throw e;
            }
        }
    }

    /** Keeps the caller's stream open when the reader is closed. */
    private static final class NonClosing extends java.io.FilterInputStream {
        NonClosing(InputStream in) {
            super(in);
        }

        @Override
        public void close() {
        }
    }

    /** Keeps the caller's channel open when the reader is closed. */
    private static final class NonClosingChannel implements SeekableByteChannel {
        private final SeekableByteChannel c;

        NonClosingChannel(SeekableByteChannel c) {
            this.c = c;
        }

        @Override
        public int read(java.nio.ByteBuffer dst) throws IOException {
            return c.read(dst);
        }

        @Override
        public int write(java.nio.ByteBuffer src) throws IOException {
            return c.write(src);
        }

        @Override
        public long position() throws IOException {
            return c.position();
        }

        @Override
        public SeekableByteChannel position(long p) throws IOException {
            c.position(p);
            return this;
        }

        @Override
        public long size() throws IOException {
            return c.size();
        }

        @Override
        public SeekableByteChannel truncate(long size) throws IOException {
            c.truncate(size);
            return this;
        }

        @Override
        public boolean isOpen() {
            return c.isOpen();
        }

        @Override
        public void close() {
        }
    }

    private static void checkNoDictionary(Field f) {
        if (f.getDictionary() != null) {
            throw new UnsupportedFeatureException(f.getName(),
                    "expected no dictionary-encoded fields for IPC from device batches but found one");
        }
        for (Field c : f.getChildren()) {
            checkNoDictionary(c);
        }
    }
}
