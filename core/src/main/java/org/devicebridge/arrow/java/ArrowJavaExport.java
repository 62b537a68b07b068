package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Iterator;
import java.util.Objects;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceKind;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.foreign.OutStructs;
import org.devicebridge.foreign.StreamExport;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;

/**
 * The export from Arrow Java behind {@link ArrowJava}'s export methods (see its class comment for what is
 * exported and who owns what): checks the arguments, sizes the caller's structs, and hands the work to the
 * schema writer ({@link ExportSchemaWriter}), the array writer ({@link ExportArrayWriter}) or a stream
 * ({@link StreamExport}). A failure leaves every output struct untouched and holds nothing.
 */
final class ArrowJavaExport {
    /** What this class needs of the generated bindings, made on first use (never while this class loads). */
    private static final class Bindings {
        static final long STREAM_SIZE = ArrowArrayStream.sizeof();
        static final long DEVICE_STREAM_SIZE = ArrowDeviceArrayStream.sizeof();
        static final long DEVICE_ARRAY_SIZE = ArrowDeviceArray.sizeof();
    }

    private ArrowJavaExport() {}

    /** Checks what every export needs before it touches Arrow Java: native access, then Arrow Java itself. */
    private static void require(String method) {
        requireNativeAccess();
        requireArrowJava(method);
    }

    static void schema(Schema schema, DictionaryProvider provider, MemorySegment outSchema) {
        require("ArrowJava.exportSchema");
        Objects.requireNonNull(schema, "schema");
        ExportSchemaWriter.export(schema, provider, OutStructs.sized(outSchema, ExportRuntime.SCHEMA_SIZE, "outSchema"));
    }

    static void field(Field field, DictionaryProvider provider, MemorySegment outSchema) {
        require("ArrowJava.exportField");
        Objects.requireNonNull(field, "field");
        ExportSchemaWriter.export(field, provider, OutStructs.sized(outSchema, ExportRuntime.SCHEMA_SIZE, "outSchema"));
    }

    static void vector(FieldVector vector, DictionaryProvider provider, MemorySegment outArray,
                       MemorySegment outSchema) {
        require("ArrowJava.exportVector");
        Objects.requireNonNull(vector, "vector");
        MemorySegment array = OutStructs.sized(outArray, ExportRuntime.ARRAY_SIZE, "outArray");
        MemorySegment schema = outSchema == null ? null
                : OutStructs.sized(outSchema, ExportRuntime.SCHEMA_SIZE, "outSchema");
        if (schema != null) {
            ExportSchemaWriter.export(VectorFields.of(vector), provider, schema);
        }
        try {
            ExportArrayWriter.exportVector(vector, provider, array);
        } catch (RuntimeException | Error e) {
            releaseWritten(schema);
            throw e;
        }
    }

    static void root(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment outArray,
                     MemorySegment outSchema) {
        require("ArrowJava.exportRoot");
        Objects.requireNonNull(root, "root");
        MemorySegment array = OutStructs.sized(outArray, ExportRuntime.ARRAY_SIZE, "outArray");
        MemorySegment schema = outSchema == null ? null
                : OutStructs.sized(outSchema, ExportRuntime.SCHEMA_SIZE, "outSchema");
        if (schema != null) {
            ExportSchemaWriter.export(root.getSchema(), provider, schema);
        }
        try {
            ExportArrayWriter.exportRoot(root, provider, array);
        } catch (RuntimeException | Error e) {
            releaseWritten(schema);
            throw e;
        }
    }

    static void deviceArray(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment outDeviceArray) {
        require("ArrowJava.exportDeviceArray");
        Objects.requireNonNull(root, "root");
        cpuDeviceArray(root, provider, OutStructs.sized(outDeviceArray, Bindings.DEVICE_ARRAY_SIZE, "outDeviceArray"));
    }

    static void stream(ArrowReader reader, MemorySegment outStream) {
        require("ArrowJava.exportStream");
        Objects.requireNonNull(reader, "reader");
        StreamExport.exportHost(Sources.of(reader, ExportArrayWriter::exportRoot),
                OutStructs.sized(outStream, Bindings.STREAM_SIZE, "outStream"));
    }

    static void stream(Schema schema, Iterator<? extends VectorSchemaRoot> batches, DictionaryProvider provider,
                       MemorySegment outStream) {
        require("ArrowJava.exportStream");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(batches, "batches");
        StreamExport.exportHost(Sources.of(schema, batches, provider, ExportArrayWriter::exportRoot),
                OutStructs.sized(outStream, Bindings.STREAM_SIZE, "outStream"));
    }

    static void deviceStream(ArrowReader reader, MemorySegment outStream) {
        require("ArrowJava.exportDeviceStream");
        Objects.requireNonNull(reader, "reader");
        StreamExport.exportDevice(Sources.of(reader, ArrowJavaExport::cpuDeviceArray), DeviceKind.CPU,
                OutStructs.sized(outStream, Bindings.DEVICE_STREAM_SIZE, "outStream"));
    }

    static void deviceStream(Schema schema, Iterator<? extends VectorSchemaRoot> batches,
                             DictionaryProvider provider, MemorySegment outStream) {
        require("ArrowJava.exportDeviceStream");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(batches, "batches");
        StreamExport.exportDevice(Sources.of(schema, batches, provider, ArrowJavaExport::cpuDeviceArray),
                DeviceKind.CPU, OutStructs.sized(outStream, Bindings.DEVICE_STREAM_SIZE, "outStream"));
    }

    /** Writes {@code root} into {@code out}, a sized {@code ArrowDeviceArray}, as a CPU device array. */
    static void cpuDeviceArray(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment out) {
        ExportArrayWriter.exportRoot(root, provider, out); // the ArrowArray is the first member
        ArrowDeviceArray.device_id(out, -1L);
        ArrowDeviceArray.device_type(out, DeviceKind.CPU.code());
        ArrowDeviceArray.sync_event(out, MemorySegment.NULL);
        long reserved = ArrowDeviceArray.reserved$offset();
        for (int i = 0; i < 3; i++) {
            out.set(ValueLayout.JAVA_LONG, reserved + 8L * i, 0L);
        }
    }

    /**
     * Releases again the schema an export wrote into {@code schema} (unless {@code null}) before its array
     * failed, so that after the throw both outputs are untouched and nothing is held.
     */
    private static void releaseWritten(MemorySegment schema) {
        if (schema != null) {
            ExportTree.release(ExportTree.SCHEMA, schema);
        }
    }
}
