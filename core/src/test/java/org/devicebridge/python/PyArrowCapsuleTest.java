package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReference;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Arrow PyCapsule interface against the real pyarrow (skipped where pyarrow is not installed): pyarrow
 * imports Arrow data exported from Java, and Java imports pyarrow's, sliced arrays with offsets included.
 */
class PyArrowCapsuleTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("pyarrow");
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        TestArrow.RELEASES.set(0);
        ns = python.newNamespace();
        python.exec("import pyarrow as pa, gc", ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return; // skipped in setUp: nothing to check
        }
        {
            python.exec("gc.collect()", ns);
            ns.close();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
    }

    @Test
    void pyarrowImportsJavaSlicedArrayAndReleasesSchemaAndArrayOnce() {
        AtomicReference<String> requested = new AtomicReference<>("none");
        try (PyObjectRef obj = PythonExport.builder()
                .arrowArray((req, schemaOut, arrayOut) -> {
                    requested.set(req.equals(MemorySegment.NULL) ? "none" : TestArrow.format(req));
                    TestArrow.int32SchemaInto(schemaOut, "x");
                    TestArrow.int32Array(arrayOut, new int[] {10, 20, 30, 40, 50}, 1, 3);
                })
                .build()) {
            python.set(ns, "obj", obj);
            python.exec("a = pa.array(obj)", ns);
            try (PyObjectRef r = python.eval("(str(a.type), a.to_pylist(), a.offset)", ns)) {
                assertEquals("('int32', [20, 30, 40], 1)", r.str(), "offset honoured by pyarrow");
            }
            assertEquals("none", requested.get());
            python.exec("b = pa.array(obj, type=pa.int32())", ns);
            assertEquals("i", requested.get(), "requested_schema reaches the Java exporter");
            python.exec("del a, b, obj\ngc.collect()", ns);
        }
        assertEquals(4, TestArrow.RELEASES.get(), "two exports, each schema and array released exactly once");
    }

    @Test
    void javaImportsPyarrowSlicedArrayWithOffsetAndNulls() {
        python.exec("src = pa.array([1, 2, None, 4, 5, 6], type=pa.int32()).slice(2, 3)", ns);
        MemorySegment schema = Native.calloc(ArrowSchema.sizeof());
        MemorySegment array = Native.calloc(ArrowArray.sizeof());
        try (PyObjectRef src = python.eval("src", ns)) {
            try (ArrowArrayCapsules capsules = PythonImport.arrowArray(src)) {
                PyObjectRef s = capsules.schema();
                PyObjectRef a = capsules.array();
                assertEquals(CapsuleKind.ARROW_SCHEMA, Capsules.kindOf(s));
                assertEquals(CapsuleKind.ARROW_ARRAY, Capsules.kindOf(a));
                Capsules.take(s, CapsuleKind.ARROW_SCHEMA, p -> {
                    TestArrow.move(p, schema, CapsuleKind.ARROW_SCHEMA);
                    return null;
                });
                Capsules.take(a, CapsuleKind.ARROW_ARRAY, p -> {
                    TestArrow.move(p, array, CapsuleKind.ARROW_ARRAY);
                    return null;
                });
            }
            assertEquals("i", TestArrow.format(schema));
            assertEquals(3, ArrowArray.length(array));
            assertEquals(2, ArrowArray.offset(array), "pyarrow exports the slice as an offset, not a copy");
            MemorySegment buffers = ArrowArray.buffers(array).reinterpret(2 * ADDRESS.byteSize());
            MemorySegment validity = buffers.get(ADDRESS, 0).reinterpret(1);
            MemorySegment values = buffers.get(ADDRESS, ADDRESS.byteSize()).reinterpret(6 * 4L);
            long offset = ArrowArray.offset(array);
            assertFalse((validity.get(JAVA_BYTE, 0) >> offset & 1) == 1, "element 0 of the slice is null");
            assertEquals(4, values.getAtIndex(JAVA_INT, offset + 1));
            assertEquals(5, values.getAtIndex(JAVA_INT, offset + 2));
            try (PyObjectRef addr = python.eval("src.buffers()[1].address", ns)) {
                assertEquals(addr.toLong(), values.address(), "Java reads pyarrow's buffer in place");
            }
        } finally {
            CapsuleKind.ARROW_SCHEMA.struct().release(schema);
            CapsuleKind.ARROW_ARRAY.struct().release(array);
        }
    }

    @Test
    void javaImportsPyarrowDeviceArrayOnTheCpu() {
        python.exec("src = pa.array([7, 8, 9], type=pa.int32()).slice(1)", ns);
        try (PyObjectRef src = python.eval("src", ns)) {
            assumeTrue(src.hasAttr("__arrow_c_device_array__"), "this pyarrow has no __arrow_c_device_array__");
            try (ArrowArrayCapsules capsules = PythonImport.arrowDeviceArray(src)) {
                PyObjectRef a = capsules.array();
                assertEquals(CapsuleKind.ARROW_DEVICE_ARRAY, Capsules.kindOf(a));
                long[] seen = Capsules.take(a, CapsuleKind.ARROW_DEVICE_ARRAY, p -> new long[] {
                        ArrowDeviceArray.device_type(p), ArrowArray.length(ArrowDeviceArray.array(p)),
                        ArrowArray.offset(ArrowDeviceArray.array(p))});
                // the importer moved nothing: take released the array after reading it
                assertEquals(1, seen[0], "ARROW_DEVICE_CPU");
                assertEquals(2, seen[1]);
                assertEquals(1, seen[2]);
            }
        }
    }

    @Test
    void javaImportsPyarrowStreamAndReadsItsBatches() {
        python.exec("t = pa.table({'a': pa.array([1, 2, 3], type=pa.int32())})", ns);
        MemorySegment stream = Native.calloc(ArrowArrayStream.sizeof());
        MemorySegment schema = Native.calloc(ArrowSchema.sizeof());
        MemorySegment batch = Native.calloc(ArrowArray.sizeof());
        try (PyObjectRef t = python.eval("t", ns); PyObjectRef capsule = PythonImport.arrowStream(t)) {
            assertEquals(CapsuleKind.ARROW_ARRAY_STREAM, Capsules.kindOf(capsule));
            Capsules.take(capsule, CapsuleKind.ARROW_ARRAY_STREAM, p -> {
                TestArrow.move(p, stream, CapsuleKind.ARROW_ARRAY_STREAM);
                return null;
            });
            assertEquals(0, ArrowArrayStream.get_schema.invoke(ArrowArrayStream.get_schema(stream), stream, schema));
            assertEquals("+s", TestArrow.format(schema));
            assertEquals(1, ArrowSchema.n_children(schema));
            assertEquals(0, ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, batch));
            assertFalse(TestArrow.isReleased(batch, CapsuleKind.ARROW_ARRAY));
            assertEquals(3, ArrowArray.length(batch));
            CapsuleKind.ARROW_ARRAY.struct().release(batch);
            batch = Native.calloc(ArrowArray.sizeof());
            assertEquals(0, ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, batch));
            assertTrue(TestArrow.isReleased(batch, CapsuleKind.ARROW_ARRAY), "end of stream");
        } finally {
            Native.free(batch);
            CapsuleKind.ARROW_SCHEMA.struct().release(schema);
            CapsuleKind.ARROW_ARRAY_STREAM.struct().release(stream);
        }
    }

    @Test
    void pyarrowReadsAStreamExportedFromJavaWithRequestedSchema() {
        // The Java exporter hands out a stream it took from pyarrow (the Arrow stream API will plug in here).
        python.exec("src = pa.table({'v': pa.array([4, 5, 6], type=pa.int32())})", ns);
        AtomicReference<String> requested = new AtomicReference<>();
        try (PyObjectRef src = python.eval("src", ns);
             PyObjectRef obj = PythonExport.builder()
                     .arrowStream((req, out) -> {
                         requested.set(req.equals(MemorySegment.NULL) ? "none" : TestArrow.format(req));
                         try (PyObjectRef c = PythonImport.arrowStream(src)) {
                             Capsules.take(c, CapsuleKind.ARROW_ARRAY_STREAM, p -> {
                                 TestArrow.move(p, out, CapsuleKind.ARROW_ARRAY_STREAM);
                                 return null;
                             });
                         }
                     })
                     .build()) {
            python.set(ns, "obj", obj);
            try (PyObjectRef r = python.eval("pa.RecordBatchReader.from_stream(obj).read_all().to_pydict()", ns)) {
                assertEquals("{'v': [4, 5, 6]}", r.str());
            }
            assertEquals("none", requested.get());
            try (PyObjectRef r = python.eval("pa.RecordBatchReader.from_stream(obj, schema=src.schema).read_all().num_rows", ns)) {
                assertEquals(3, r.toLong());
            }
            assertEquals("+s", requested.get(), "requested_schema reaches the Java exporter");
            python.exec("del obj", ns);
        }
    }
}
