# The CPython side of IpcBatchPythonTest: Arrow device batches over CUDA IPC, one JSON message per line on
# stdin/stdout. Pure CuPy + NumPy + pyarrow (host side only); libcuda's cuMemGetAddressRange through ctypes.
# For each of Java's batches (until Java sends {"next": "yours"}):
#   maps every handle, waits on Java's event on its own stream, reads the int64 column "i" and the strings zero-copy
#   with CuPy (sum of the valid values on the GPU), copies every buffer to the host and builds a pyarrow
#   RecordBatch with pa.Array.from_buffers (validated in full, compared with the expected batch), doubles "i" in
#   place on the GPU, unmaps and sends the close message.
# Then shares its own batch: CuPy allocations from CuPy's memory pool (sub-ranges of larger cudaMalloc blocks: the
# descriptor names each block's base handle and the offset from it), an interprocess event recorded after the
# uploads (not synchronised), and waits for Java's close message before freeing.
import base64, ctypes, json, sys, uuid
import cupy
import numpy as np
import pyarrow as pa

_cuda = ctypes.CDLL("libcuda.so.1")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit("java closed the channel")
    return json.loads(line)


def address_range(ptr):
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = _cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    assert rc == 0, "cuMemGetAddressRange failed: %d" % rc
    return base.value, size.value


# What Java writes (IpcBatchPythonTest.javaBatch), as pyarrow builds it with the schema Java sent.
JAVA_ROWS = {
    "i": [0, 10, None, 30, 40, 50],
    "f": [0.0, 0.25, 0.5, 0.75, 1.0, 1.25],
    "s": ["alpha", "", None, "\u03b3\u03b4", "e", "ff"],
    "b": [True, False, True, None, False, True],
    "l": [[1], [], None, [2, 3], [4], [5, 6, 7]],
    "st": [{"a": 1}, None, {"a": 3}, {"a": 4}, {"a": 5}, {"a": 6}],
}


def child_types(t):
    if pa.types.is_struct(t):
        return [t.field(k).type for k in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_type]
    return []


def read_java_batch(d, stream):
    assert d["devicebridge_ipc"] == 1 and d["kind"] == "arrow_batch", d
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(d["schema"])))
    bases = [cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(h)) for h in d["handles"]]
    event = None
    if d["event_handle"] is not None:
        event = cupy.cuda.runtime.ipcOpenEventHandle(bytes.fromhex(d["event_handle"]))
        cupy.cuda.runtime.streamWaitEvent(stream.ptr, event)

    def view(ref):  # a CuPy uint8 array over one buffer, zero-copy
        h, off, size = ref
        mem = cupy.cuda.UnownedMemory(bases[h] + off, size, None)
        return cupy.ndarray((size,), cupy.uint8, cupy.cuda.MemoryPointer(mem, 0))

    def to_host(node, t):
        bufs = []
        for ref in node["buffers"]:
            bufs.append(None if ref is None else pa.py_buffer(view(ref).get(stream=stream).tobytes()))
        kids = [to_host(c, ct) for c, ct in zip(node["children"], child_types(t))]
        return pa.Array.from_buffers(t, node["length"], bufs, null_count=node["null_count"], offset=node["offset"],
                                     children=kids)

    root = d["array"]
    names = schema.names
    col_i = root["children"][names.index("i")]
    with stream:
        n, off = col_i["length"], col_i["offset"]
        values = view(col_i["buffers"][1]).view(cupy.int64)[off:off + n]
        bits = None
        if col_i["buffers"][0] is None:
            valid = cupy.ones(n, dtype=bool)
        else:  # LSB-first validity bits, unpacked on the GPU
            bits = (view(col_i["buffers"][0])[:, None] >> cupy.arange(8, dtype=cupy.uint8)) & 1
            valid = bits.ravel()[off:off + n].astype(bool)
        gpu_sum = int(values[valid].sum())
        batch = pa.RecordBatch.from_struct_array(to_host(root, pa.struct(list(schema))))
    stream.synchronize()
    batch.validate(full=True)
    expected = pa.RecordBatch.from_pydict(JAVA_ROWS, schema=schema)
    report = {"equal": batch.equals(expected), "rows": batch.num_rows, "sum_i": gpu_sum,
              "strings": batch.column(names.index("s")).to_pylist(), "allocations": len(bases)}
    with stream:
        values *= 2  # in place: Java sees it where the batch was shared zero-copy, not where it was copied
    stream.synchronize()
    del values, valid, bits
    for b in bases:
        cupy.cuda.runtime.ipcCloseMemHandle(b)
    if event is not None:
        cupy.cuda.runtime.eventDestroy(event)
    send(report)
    send({"devicebridge_ipc_closed": d["id"]})


def share_own_batch(device, stream):
    batch = pa.RecordBatch.from_arrays([
        pa.array([1, None, 3, 4, None], pa.int32()),
        pa.array([0.5, 1.5, 2.5, 3.5, 4.5], pa.float64()),
        pa.array(["a", "bb", None, "dddd", "\u00e9"], pa.string()),
        pa.array([[1, 2], [], None, [3], [4, 5, 6]], pa.list_(pa.int16())),
        pa.array([True, False, None, True, True], pa.bool_()),
        pa.array([{"a": 10}, {"a": 20}, None, {"a": 40}, {"a": 50}], pa.struct([("a", pa.int64())])),
    ], names=["x", "y", "s", "l", "b", "st"])
    # Every buffer goes into one CuPy allocation taken from the pool after a small one, so that it is a sub-range
    # of a larger cudaMalloc block: the descriptor must name the block's base handle and offsets from that base.
    host_buffers = []

    def collect(arr):
        t, bufs = arr.type, arr.buffers()
        own = bufs[:1] if pa.types.is_struct(t) else bufs[:2] if pa.types.is_list(t) else bufs
        host_buffers.extend(b for b in own if b is not None and b.size > 0)
        for k in (range(t.num_fields) if pa.types.is_struct(t) else []):
            collect(arr.field(k))
        if pa.types.is_list(t):
            collect(arr.values)

    for c in batch.columns:
        collect(c)
    placed, total = {}, 0
    for b in host_buffers:
        placed[b.address] = total
        total += (b.size + 63) // 64 * 64
    with stream:
        block = cupy.empty(1 << 20, cupy.uint8)
        del block  # back to the pool: the next two allocations split it
        pad = cupy.empty(4096, cupy.uint8)
        arena = cupy.empty(total, cupy.uint8)
        for b in host_buffers:
            arena[placed[b.address]:placed[b.address] + b.size].set(np.frombuffer(b, dtype=np.uint8), stream=stream)
    base, _ = address_range(arena.data.ptr)
    handles = [cupy.cuda.runtime.ipcGetMemHandle(base).hex()]
    keep = (pad, arena, host_buffers)

    def upload(buf):
        if buf is None or buf.size == 0:
            return None
        return [0, arena.data.ptr - base + placed[buf.address], buf.size]

    def node(arr):
        t, bufs = arr.type, arr.buffers()
        if pa.types.is_struct(t):
            own, kids = bufs[:1], [arr.field(k) for k in range(t.num_fields)]
        elif pa.types.is_list(t):
            own, kids = bufs[:2], [arr.values]
        else:
            own, kids = bufs, []
        return {"length": len(arr), "null_count": arr.null_count, "offset": arr.offset,
                "buffers": [upload(b) for b in own], "children": [node(k) for k in kids], "dictionary": None}

    root = {"length": batch.num_rows, "null_count": 0, "offset": 0, "buffers": [None],
            "children": [node(c) for c in batch.columns], "dictionary": None}
    event = cupy.cuda.Event(block=False, disable_timing=True, interprocess=True)
    event.record(stream)  # after the uploads; not synchronised: Java's stream waits on it
    my_id = "py-" + str(uuid.uuid4())
    send({"devicebridge_ipc": 1, "kind": "arrow_batch", "id": my_id, "device": device,
          "schema": base64.b64encode(batch.schema.serialize().to_pybytes()).decode("ascii"),
          "handles": handles, "array": root,
          "event_handle": cupy.cuda.runtime.ipcGetEventHandle(event.ptr).hex()})
    ack = receive()
    assert ack == {"devicebridge_ipc_closed": my_id}, ack
    stream.synchronize()
    del keep


def main():
    msg = receive()
    device = msg["device"]
    with cupy.cuda.Device(device):
        stream = cupy.cuda.Stream(non_blocking=True)
        while "next" not in msg:
            read_java_batch(msg, stream)
            msg = receive()
        share_own_batch(device, stream)
    send({"done": True})


main()
