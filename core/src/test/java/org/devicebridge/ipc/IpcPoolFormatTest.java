package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * Pool memory on the wire: a batch descriptor of format version 2 names allocations of an IPC-shareable pool after
 * its CUDA IPC handles, the worker offers a socket for pools in its hello, and a call says how many pools came
 * before it. Every malformed field is refused with its category and path; nothing here needs a GPU.
 */
class IpcPoolFormatTest {
    private static final byte[] SCHEMA = {1, 2, 3, 4};

    private static byte[] bytes(int fill) {
        byte[] b = new byte[64];
        Arrays.fill(b, (byte) fill);
        return b;
    }

    /** One handle (allocation 0), two pool pointers (allocations 1 and 2); a buffer in each. */
    private static IpcBatchDescriptor sample() {
        Node column = new Node(4, 0, 0, Arrays.asList(new BufferRef(1, 0, 1), new BufferRef(2, 64, 16)), List.of(), null);
        Node root = new Node(4, 0, 0, Arrays.asList((BufferRef) null), List.of(column,
                new Node(4, 0, 0, Arrays.asList(null, new BufferRef(0, 128, 16)), List.of(), null)), null);
        return new IpcBatchDescriptor("pool-1", 0, SCHEMA, List.of(bytes(1)),
                List.of(new PoolPointer(0, bytes(0xAB)), new PoolPointer(3, bytes(0xCD))), root, null);
    }

    @Test
    void aDescriptorNamingPoolMemoryIsVersionTwoAndReadsBackEqual() {
        IpcBatchDescriptor d = sample();
        String json = d.toJson();
        assertTrue(json.startsWith("{\"devicebridge_ipc\": 2, "), json);
        assertTrue(json.contains("\"pool_pointers\": [{\"pool\": 0, \"pointer\": \"" + "ab".repeat(64) + "\"}, {\"pool\": 3,"),
                json);
        IpcBatchDescriptor back = IpcBatchDescriptor.parse(json);
        assertEquals(d, back);
        assertEquals(List.of(new PoolPointer(0, bytes(0xAB)), new PoolPointer(3, bytes(0xCD))), back.poolPointers());
        assertArrayEquals(bytes(0xCD), back.poolPointers().get(1).pointer());
        assertEquals(2, back.array().children().get(0).buffers().get(1).handle());
    }

    @Test
    void aDescriptorWithoutPoolMemoryStaysVersionOneWithoutTheKey() {
        IpcBatchDescriptor d = new IpcBatchDescriptor("plain", 0, SCHEMA, List.of(bytes(1)), List.of(),
                new Node(0, 0, 0, Arrays.asList((BufferRef) null), List.of(), null), null);
        String json = d.toJson();
        assertTrue(json.startsWith("{\"devicebridge_ipc\": 1, "), json);
        assertTrue(!json.contains("pool_pointers"), json);
        assertEquals(d, IpcBatchDescriptor.parse(json));
    }

    @Test
    void aPoolPointerCopiesItsBytesAndRefusesWrongOnes() {
        byte[] b = bytes(7);
        PoolPointer p = new PoolPointer(1, b);
        b[0] = 0;
        assertEquals(7, p.pointer()[0]);
        p.pointer()[1] = 0;
        assertEquals(7, p.pointer()[1]);
        assertEquals(Category.SIZE, assertThrows(ValidationException.class, () -> new PoolPointer(-1, bytes(1))).category());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class,
                () -> new PoolPointer(IpcBatchDescriptor.MAX_POOLS, bytes(1))).category());
        assertEquals(Category.STRUCTURE, assertThrows(ValidationException.class, () -> new PoolPointer(0, new byte[63]))
                .category());
    }

    @Test
    void aBufferIndexBeyondHandlesAndPoolPointersIsRefused() {
        Node column = new Node(1, 0, 0, Arrays.asList(null, new BufferRef(3, 0, 8)), List.of(), null);
        Node root = new Node(1, 0, 0, Arrays.asList((BufferRef) null), List.of(column), null);
        ValidationException e = assertThrows(ValidationException.class, () -> new IpcBatchDescriptor("x", 0, SCHEMA,
                List.of(bytes(1)), List.of(new PoolPointer(0, bytes(2)), new PoolPointer(0, bytes(3))), root, null));
        assertEquals(Category.SIZE, e.category());
        assertEquals("array.children[0].buffers[1]", e.path());
    }

    static Stream<Arguments> malformed() {
        String good = sample().toJson();
        String first = "{\"pool\": 0, \"pointer\": \"" + "ab".repeat(64) + "\"}";
        return Stream.of(
                Arguments.of("pool pointers in version 1", good.replace("\"devicebridge_ipc\": 2", "\"devicebridge_ipc\": 1"),
                        Category.VERSION, "pool_pointers"),
                Arguments.of("version 2 without the key", good.substring(0, good.indexOf(", \"pool_pointers\""))
                        + good.substring(good.indexOf(", \"array\"")),
                        Category.STRUCTURE, "pool_pointers"),
                Arguments.of("not a list", good.replace("\"pool_pointers\": [" + first, "\"pool_pointers\": {\"a\": " + first),
                        Category.FORMAT, "pool_pointers"),
                Arguments.of("an entry that is no object", good.replace(first, "\"" + "ab".repeat(64) + "\""),
                        Category.FORMAT, "pool_pointers[0]"),
                Arguments.of("no pool", good.replace(first, "{\"pointer\": \"" + "ab".repeat(64) + "\"}"),
                        Category.STRUCTURE, "pool_pointers[0].pool"),
                Arguments.of("a negative pool", good.replace(first, first.replace("\"pool\": 0", "\"pool\": -1")),
                        Category.SIZE, "pool_pointers[0].pool"),
                Arguments.of("a pool beyond the bound", good.replace(first, first.replace("\"pool\": 0", "\"pool\": 64")),
                        Category.SIZE, "pool_pointers[0].pool"),
                Arguments.of("a pool that is no integer", good.replace(first, first.replace("\"pool\": 0", "\"pool\": \"0\"")),
                        Category.FORMAT, "pool_pointers[0].pool"),
                Arguments.of("no pointer", good.replace(first, "{\"pool\": 0}"), Category.STRUCTURE,
                        "pool_pointers[0].pointer"),
                Arguments.of("a short pointer", good.replace(first, first.replace("ab".repeat(64), "ab".repeat(63))),
                        Category.STRUCTURE, "pool_pointers[0].pointer"),
                Arguments.of("a long pointer", good.replace(first, first.replace("ab".repeat(64), "ab".repeat(65))),
                        Category.STRUCTURE, "pool_pointers[0].pointer"),
                Arguments.of("a pointer that is no hex", good.replace(first, first.replace("ab".repeat(64),
                        "zz" + "ab".repeat(63))), Category.FORMAT, "pool_pointers[0].pointer"),
                Arguments.of("a pointer that is no string", good.replace(first, "{\"pool\": 0, \"pointer\": 5}"),
                        Category.FORMAT, "pool_pointers[0].pointer"),
                Arguments.of("a buffer beyond the allocations", good.replace("[2, 64, 16]", "[3, 64, 16]"),
                        Category.SIZE, "array.children[0].buffers[1][0]"),
                Arguments.of("version 3", good.replace("\"devicebridge_ipc\": 2", "\"devicebridge_ipc\": 3"),
                        Category.VERSION, "devicebridge_ipc"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformed")
    void everyMalformedPoolFieldIsRefusedWithItsPath(String name, String json, Category category, String path) {
        ValidationException e = assertThrows(ValidationException.class, () -> IpcBatchDescriptor.parse(json), json);
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
    }

    @Test
    void theWorkersHelloOffersItsPoolSocketAndPid() {
        WorkerProtocol.Message m = WorkerProtocol.read("{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"pid\": 4242,"
                + " \"pool_socket\": \"/tmp/devicebridge-worker-x/pools\"}");
        assertEquals(4242, m.pid());
        assertEquals("/tmp/devicebridge-worker-x/pools", m.poolSocket());
        WorkerProtocol.Message none = WorkerProtocol.read("{\"devicebridge_worker\": 1, \"kind\": \"hello\"}");
        assertEquals(0, none.pid());
        assertEquals(null, none.poolSocket());
    }

    static Stream<Arguments> badHellos() {
        String hello = "{\"devicebridge_worker\": 1, \"kind\": \"hello\", ";
        return Stream.of(
                Arguments.of(hello + "\"pid\": 0}", Category.SIZE, "pid"),
                Arguments.of(hello + "\"pid\": 2147483648}", Category.SIZE, "pid"),
                Arguments.of(hello + "\"pid\": \"1\"}", Category.FORMAT, "pid"),
                Arguments.of(hello + "\"pool_socket\": 3}", Category.FORMAT, "pool_socket"),
                Arguments.of(hello + "\"pool_socket\": \"relative/pools\"}", Category.FORMAT, "pool_socket"),
                Arguments.of(hello + "\"pool_socket\": \"/a\\u0000b\"}", Category.FORMAT, "pool_socket"),
                Arguments.of(hello + "\"pool_socket\": \"\"}", Category.SIZE, "pool_socket"),
                Arguments.of(hello + "\"pool_socket\": \"/" + "p".repeat(107) + "\"}", Category.SIZE, "pool_socket"));
    }

    @ParameterizedTest
    @MethodSource("badHellos")
    void aHelloWithABadPidOrSocketIsRefusedWithItsPath(String line, Category category, String path) {
        ValidationException e = assertThrows(ValidationException.class, () -> WorkerProtocol.read(line));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
    }

    @Test
    void aCallSaysHowManyPoolsCameBeforeItOnlyWhenSomeDid() {
        assertEquals("{\"devicebridge_worker\": 1, \"kind\": \"call\", \"seq\": 3, \"payload\": \"arrow_batch\","
                + " \"unmap\": [], \"transient\": [0], \"pools_sent\": 1}",
                WorkerProtocol.call(3, WorkerProtocol.Payload.ARROW_BATCH, List.of(), List.of(0), 1));
        assertEquals(WorkerProtocol.call(3, WorkerProtocol.Payload.ARROW_BATCH, List.of(), List.of(0)),
                WorkerProtocol.call(3, WorkerProtocol.Payload.ARROW_BATCH, List.of(), List.of(0), 0));
        assertTrue(!WorkerProtocol.call(1, WorkerProtocol.Payload.TENSOR, List.of(), List.of(), 0).contains("pools_sent"));
    }

    @Test
    void poolsAreNotSentWhereTheWorkerOfferedNoSocket() {
        WorkerPools pools = new WorkerPools();
        pools.offered(WorkerProtocol.read("{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"pid\": 7}"));
        assertEquals(-1, pools.indexOf(org.devicebridge.Device.cuda(0)));
        assertEquals(0, pools.announce());
        WorkerPools noPid = new WorkerPools();
        noPid.offered(WorkerProtocol.read("{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"pool_socket\": \"/tmp/s\"}"));
        assertEquals(-1, noPid.indexOf(org.devicebridge.Device.cuda(0)));
    }
}
