package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Capsule ownership against the real CPython C API (needs only libpython, no Python package). */
class CapsulesTest {
    private PythonRuntime python;
    private long liveBefore;
    private int deletesBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtime();
        liveBefore = HandleTracker.liveHandles();
        deletesBefore = TestTensors.DELETES.get();
        TestArrow.RELEASES.set(0);
    }

    @AfterEach
    void noLeaks() {
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
    }

    @Test
    void runtimeReportsVersionAndEvaluatesPython() {
        assertTrue(python.version().startsWith("3."), python.version());
        try (PyObjectRef ns = python.newNamespace()) {
            python.exec("x = 6 * 7", ns);
            try (PyObjectRef x = python.eval("x", ns)) {
                assertEquals(42, x.toLong());
                assertEquals("int", x.typeName());
            }
        }
    }

    @Test
    void pythonErrorsBecomeTypedExceptions() {
        try (PyObjectRef ns = python.newNamespace()) {
            PythonException e = assertThrows(PythonException.class, () -> python.exec("raise ValueError('bad value')", ns));
            assertEquals("ValueError", e.pythonType());
            assertEquals("bad value", e.pythonMessage());
        }
    }

    @Test
    void unconsumedDLPackCapsuleCallsDeleterOnceWhenDropped() {
        MemorySegment t = TestTensors.cpuTensor(false, new float[] {1, 2}, new long[] {2}, false);
        try (PyObjectRef capsule = Capsules.export(t, CapsuleKind.DLTENSOR)) {
            assertEquals("dltensor", Capsules.nameOf(capsule));
            assertEquals(CapsuleKind.DLTENSOR, Capsules.kindOf(capsule));
            assertEquals(deletesBefore, TestTensors.DELETES.get());
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get());
        assertEquals(1, TestTensors.DELETES_BY_ADDRESS.get(t.address()));
    }

    @Test
    void takenDLPackCapsuleIsRenamedAndNeverDeletesAgain() {
        MemorySegment t = TestTensors.cpuTensor(true, new float[] {1, 2, 3}, new long[] {3}, false);
        try (PyObjectRef capsule = Capsules.export(t, CapsuleKind.DLTENSOR_VERSIONED)) {
            MemorySegment taken = Capsules.take(capsule, CapsuleKind.DLTENSOR_VERSIONED, p -> p);
            assertEquals(t.address(), taken.address());
            assertEquals("used_dltensor_versioned", Capsules.nameOf(capsule));
            assertTrue(Capsules.isConsumed(capsule));
            // a second consumer is refused, by name, and nothing is deleted
            ValidationException e = assertThrows(ValidationException.class,
                    () -> Capsules.take(capsule, CapsuleKind.DLTENSOR_VERSIONED, p -> p));
            assertEquals(ValidationException.Category.RELEASED, e.category());
            TestTensors.callDeleter(taken, true); // the consumer's single delete
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get());
        assertEquals(1, TestTensors.DELETES_BY_ADDRESS.get(t.address()));
    }

    @Test
    void takeRefusesACapsuleOfAnotherName() {
        MemorySegment t = TestTensors.cpuTensor(false, new float[] {1}, new long[] {1}, false);
        try (PyObjectRef capsule = Capsules.export(t, CapsuleKind.DLTENSOR)) {
            ValidationException e = assertThrows(ValidationException.class,
                    () -> Capsules.take(capsule, CapsuleKind.DLTENSOR_VERSIONED, p -> p));
            assertEquals(ValidationException.Category.FORMAT, e.category());
            assertTrue(e.getMessage().contains("'dltensor_versioned'") && e.getMessage().contains("'dltensor'"), e.getMessage());
            assertEquals("dltensor", Capsules.nameOf(capsule), "a refused capsule keeps its name");
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "the destructor still deletes the refused tensor");
    }

    @Test
    void takeRefusesAnObjectThatIsNotACapsule() {
        try (PyObjectRef ns = python.newNamespace(); PyObjectRef notCapsule = python.eval("[1, 2]", ns)) {
            assertNull(Capsules.kindOf(notCapsule));
            ValidationException e = assertThrows(ValidationException.class,
                    () -> Capsules.take(notCapsule, CapsuleKind.ARROW_SCHEMA, p -> p));
            assertEquals(ValidationException.Category.FORMAT, e.category());
        }
    }

    @Test
    void unconsumedArrowCapsuleReleasesOnceAndMarksTheSourceReleased() {
        MemorySegment source = TestArrow.int32Schema("x");
        try (PyObjectRef capsule = Capsules.export(source, CapsuleKind.ARROW_SCHEMA)) {
            assertTrue(TestArrow.isReleased(source, CapsuleKind.ARROW_SCHEMA), "the caller's struct was moved out");
            assertEquals(0, TestArrow.RELEASES.get());
        }
        assertEquals(1, TestArrow.RELEASES.get());
        Native.free(source);
    }

    @Test
    void takenArrowCapsuleIsMovedToTheConsumerAndNotReleasedByTheCapsule() {
        MemorySegment source = TestArrow.int32Schema("col");
        MemorySegment mine = Native.calloc(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
        try (PyObjectRef capsule = Capsules.export(source, CapsuleKind.ARROW_SCHEMA)) {
            String format = Capsules.take(capsule, CapsuleKind.ARROW_SCHEMA, p -> {
                TestArrow.move(p, mine, CapsuleKind.ARROW_SCHEMA); // what the Arrow import API does
                return TestArrow.format(mine);
            });
            assertEquals("i", format);
            assertEquals(0, TestArrow.RELEASES.get());
            // a second take finds the capsule's struct released
            ValidationException e = assertThrows(ValidationException.class,
                    () -> Capsules.take(capsule, CapsuleKind.ARROW_SCHEMA, p -> p));
            assertEquals(ValidationException.Category.RELEASED, e.category());
        }
        assertEquals(0, TestArrow.RELEASES.get(), "the capsule must not release what was moved out");
        CapsuleKind.ARROW_SCHEMA.struct().release(mine); // the consumer's single release (frees mine)
        assertEquals(1, TestArrow.RELEASES.get());
        Native.free(source);
    }

    @Test
    void takeReleasesWhatTheImporterDidNotMove() {
        MemorySegment source = TestArrow.int32Schema("x");
        try (PyObjectRef capsule = Capsules.export(source, CapsuleKind.ARROW_SCHEMA)) {
            assertThrows(IllegalStateException.class, () -> Capsules.take(capsule, CapsuleKind.ARROW_SCHEMA, p -> {
                throw new IllegalStateException("importer failed before moving");
            }));
            assertEquals(1, TestArrow.RELEASES.get());
        }
        assertEquals(1, TestArrow.RELEASES.get());
        Native.free(source);
    }

    @Test
    void exportRefusesNullAndReleasedStructs() {
        assertThrows(ValidationException.class, () -> Capsules.export(MemorySegment.NULL, CapsuleKind.ARROW_ARRAY));
        MemorySegment released = Native.calloc(CapsuleKind.ARROW_ARRAY.struct().byteSize());
        ValidationException e = assertThrows(ValidationException.class, () -> Capsules.export(released, CapsuleKind.ARROW_ARRAY));
        assertEquals(ValidationException.Category.RELEASED, e.category());
        Native.free(released);
    }

    @Test
    void exporterObjectIsCollectedAndForgetsItsExporters() {
        int before = PythonExport.liveObjects();
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> TestTensors.cpuTensor(true, new float[] {5}, new long[] {1}, false))
                .build()) {
            assertTrue(obj.hasAttr("__dlpack__"));
            assertFalse(obj.hasAttr("__arrow_c_array__"), "only the protocols given are offered");
            assertEquals(before + 1, PythonExport.liveObjects());
            try (PyObjectRef capsule = obj.callMethod("__dlpack__")) {
                assertEquals("dltensor", Capsules.nameOf(capsule), "no max_version: a legacy capsule");
            }
            assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "dropping an unconsumed capsule deletes");
            assertEquals(Device.CPU, PythonImport.device(obj));
        }
        assertEquals(before, PythonExport.liveObjects());
    }

    @Test
    void aLegacyConsumerGetsNoReadOnlyTensorAndTheExportIsDeletedOnce() {
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> TestTensors.cpuTensor(true, new float[] {5}, new long[] {1}, true))
                .build()) {
            PythonException e = assertThrows(PythonException.class, () -> obj.callMethod("__dlpack__").close());
            assertEquals("BufferError", e.pythonType(), "a legacy struct cannot say read-only: " + e.pythonMessage());
            assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "the versioned export was deleted once");
            try (PyObjectRef ns = python.newNamespace()) {
                python.set(ns, "obj", obj);
                try (PyObjectRef capsule = python.eval("obj.__dlpack__(max_version=(1, 0))", ns)) {
                    assertEquals("dltensor_versioned", Capsules.nameOf(capsule), "a 1.x consumer gets the read-only tensor");
                }
            }
        }
        assertEquals(deletesBefore + 2, TestTensors.DELETES.get());
    }

    @Test
    void exporterFailureReachesPythonAsBufferError() {
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> {
                    throw new org.devicebridge.UnsupportedFeatureException("dtype", "no such dtype here");
                })
                .build()) {
            PythonException e = assertThrows(PythonException.class, () -> PythonImport.dlpack(obj, java.util.OptionalLong.empty()));
            assertEquals("BufferError", e.pythonType());
            assertTrue(e.pythonMessage().contains("no such dtype here"), e.pythonMessage());
        }
        assertEquals(deletesBefore, TestTensors.DELETES.get());
    }

    @Test
    void gilIsReentrantAndUsableFromAnyThread() throws Exception {
        try (Gil outer = python.gil(); Gil inner = python.gil(); PyObjectRef ns = python.newNamespace()) {
            python.exec("y = 1", ns);
        }
        long[] result = new long[1];
        Thread t = new Thread(() -> {
            try (PyObjectRef ns = python.newNamespace(); PyObjectRef v = python.eval("2 ** 10", ns)) {
                result[0] = v.toLong();
            }
        });
        t.start();
        t.join();
        assertEquals(1024, result[0]);
    }
}
