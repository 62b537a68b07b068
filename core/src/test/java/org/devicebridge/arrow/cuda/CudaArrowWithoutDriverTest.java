package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Without a CUDA driver every entry point of {@link CudaArrow} throws
 * {@link CudaUnavailableException},
 * holds nothing, and an import still releases its input struct exactly once.
 */
class CudaArrowWithoutDriverTest {
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;

    @BeforeEach
    void setUp() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present; CudaArrowRoundTripTest covers this machine");
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
    }

    @AfterEach
    void tearDown() {
        if (allocator != null) {
            baseline.assertNothingLeaked(allocator);
            allocator.close();
        }
    }

    private VectorSchemaRoot table() {
        List<FieldVector> vectors = ExportTestSupport.family("strings", allocator, 12, true,
                new DictionaryProvider.MapDictionaryProvider());
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(12);
        return root;
    }

    @Test
    void uploadExportAndDownloadThrowCudaUnavailable() {
        try (VectorSchemaRoot root = table(); Arena arena = Arena.ofConfined()) {
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.upload(root, null));
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.upload(root, null, null));
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.exportDeviceArray(null, null, out));
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.download(null, null));
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.download(null, null, null));
            MemorySegment outStream = arena.allocate(org.devicebridge.generated.arrow.ArrowDeviceArrayStream.layout());
            assertThrows(CudaUnavailableException.class,
                    () -> CudaArrow.exportDeviceStream(root.getSchema(), List.<CudaArrowBatch>of().iterator(), null, outStream));
            assertEquals(0L, org.devicebridge.generated.arrow.ArrowDeviceArrayStream.release(outStream).address(),
                    "the output stream is untouched");
            assertThrows(CudaUnavailableException.class, () -> CudaArrow.importNext(null, ValidationLevel.MINIMAL, null));
            assertEquals(0L, ArrowArray.release(out).address(), "the output struct is untouched");
        }
    }

    @ParameterizedTest(name = "{0}: the CUDA-labelled input is released exactly once before the throw")
    @EnumSource(ValidationLevel.class)
    void importReleasesItsInputExactlyOnce(ValidationLevel level) {
        try (VectorSchemaRoot root = table(); Arena arena = Arena.ofConfined()) {
            SchemaNode schema;
            try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out));
                 ImportedSchema is = ArrowC.importSchema(es.segment())) {
                schema = is.root();
            }
            MemorySegment in = arena.allocate(ArrowDeviceArray.layout());
            int nodesBefore = ExportTestSupport.exportedArrays();
            long releasesBefore = ExportTestSupport.arrayReleases();
            ArrowJava.exportDeviceArray(root, null, in);
            int nodes = ExportTestSupport.exportedArrays() - nodesBefore;
            ArrowDeviceArray.device_type(in, DeviceKind.CUDA.code());
            ArrowDeviceArray.device_id(in, 0L);
            assertThrows(CudaUnavailableException.class,
                    () -> CudaArrow.importDeviceArray(schema, in, level, null));
            assertEquals(0L, ArrowArray.release(in).address(), "the producer's struct is marked released (moved)");
            assertEquals(nodes, ExportTestSupport.arrayReleases() - releasesBefore, "every node released exactly once");
        }
    }
}
