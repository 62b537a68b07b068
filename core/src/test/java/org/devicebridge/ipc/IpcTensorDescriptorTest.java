package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.DType;
import org.junit.jupiter.api.Test;

/** The language-neutral CUDA IPC descriptor: its JSON form, read back, and its refusals. No GPU needed. */
class IpcTensorDescriptorTest {
    private static byte[] handle(int seed) {
        byte[] h = new byte[64];
        Arrays.fill(h, (byte) seed);
        h[0] = (byte) 0xAB;
        return h;
    }

    @Test
    void jsonRoundTripKeepsEveryField() {
        IpcTensorDescriptor d = new IpcTensorDescriptor("id-1", 1, handle(7), 256, 128, DType.FLOAT32,
                new long[] {4, 8}, new long[] {8, 1}, handle(9));
        String json = d.toJson();
        assertEquals(true, json.contains("\"typestr\": \"<f4\""), json);
        assertEquals(true, json.contains("\"dtype\": [2, 32, 1]"), json);
        IpcTensorDescriptor back = IpcTensorDescriptor.parse(json);
        assertEquals(d, back);
        assertEquals(256, back.offset());
        assertArrayEquals(handle(9), back.eventHandle());
        assertArrayEquals(new long[] {8, 1}, back.strides());
        assertEquals("id-1", IpcTensorDescriptor.closedId(back.closeMessage()));
    }

    @Test
    void readsWhatPythonWritesWithoutAnEvent() {
        String json = "{ \"devicebridge_ipc\":1,\"kind\":\"tensor\",\"id\":\"py\",\"device\":0,\"mem_handle\":\""
                + "ab".repeat(64) + "\",\"offset\":32,\"nbytes\":48,\"dtype\":[0,64,1],\"typestr\":\"<i8\","
                + "\"shape\":[6],\"strides\":[1],\"event_handle\":null}";
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(json);
        assertEquals(DType.INT64, d.dtype());
        assertNull(d.eventHandle());
        assertArrayEquals(new long[] {6}, d.shape());
    }

    @Test
    void refusesMalformedDescriptorsByCategoryAndKey() {
        String good = new IpcTensorDescriptor("x", 0, handle(1), 0, 4, DType.INT32, new long[] {1}, new long[] {1}, null)
                .toJson();
        assertEquals(Category.VERSION, assertThrows(ValidationException.class,
                () -> IpcTensorDescriptor.parse(good.replace("\"devicebridge_ipc\": 1", "\"devicebridge_ipc\": 2"))).category());
        assertEquals("mem_handle", assertThrows(ValidationException.class,
                () -> IpcTensorDescriptor.parse(good.replace("\"mem_handle\": \"ab", "\"mem_handle\": \""))).path());
        assertEquals("shape", assertThrows(ValidationException.class,
                () -> IpcTensorDescriptor.parse(good.replace("\"shape\": [1], ", ""))).path());
        assertEquals(Category.FORMAT, assertThrows(ValidationException.class,
                () -> IpcTensorDescriptor.parse(good.substring(0, good.length() - 1))).category());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class,
                () -> new IpcTensorDescriptor("x", 0, handle(1), -1, 4, DType.INT32, new long[0], new long[0], null)).category());
        assertThrows(ValidationException.class, () -> IpcTensorDescriptor.closedId("{\"other\": \"x\"}"));
    }
}
