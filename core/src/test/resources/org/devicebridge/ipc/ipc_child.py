# The CPython side of CudaIpcPythonTest: one JSON message per line on stdin/stdout.
# 1. reads Java's descriptor, maps it with CuPy, waits on its event, reports the values, doubles them in
#    place (Java checks it sees that: zero copy), unmaps and sends the close message;
# 2. exports its own CuPy array (a view 4 elements into its allocation) the same way and waits for Java's
#    close message before freeing it.
import json, sys
import cupy

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

cupy.cuda.set_allocator(None)  # one cudaMalloc per array: the IPC handle names exactly its allocation
d = json.loads(sys.stdin.readline())
assert d["devicebridge_ipc"] == 1 and d["kind"] == "tensor", d
with cupy.cuda.Device(d["device"]):
    stream = cupy.cuda.Stream(non_blocking=True)
    base = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(d["mem_handle"]))
    if d["event_handle"] is not None:
        ev = cupy.cuda.runtime.ipcOpenEventHandle(bytes.fromhex(d["event_handle"]))
        cupy.cuda.runtime.streamWaitEvent(stream.ptr, ev)
    dtype = cupy.dtype(d["typestr"])
    mem = cupy.cuda.UnownedMemory(base, d["offset"] + d["nbytes"], None)
    arr = cupy.ndarray(tuple(d["shape"]), dtype, cupy.cuda.MemoryPointer(mem, d["offset"]),
                       tuple(s * dtype.itemsize for s in d["strides"]))
    with stream:
        values = arr.get(stream=stream).tolist()
        arr *= 2
    stream.synchronize()
    send({"values": values, "ptr_offset": arr.data.ptr - base})
    del arr, mem
    cupy.cuda.runtime.ipcCloseMemHandle(base)
    send({"devicebridge_ipc_closed": d["id"]})

    # 2. our array, shared with Java
    whole = cupy.arange(10, dtype=cupy.int64) * 3
    mine = whole[4:]
    ev = cupy.cuda.Event(block=False, disable_timing=True, interprocess=True)
    ev.record()
    send({"devicebridge_ipc": 1, "kind": "tensor", "id": "py-1", "device": d["device"],
          "mem_handle": cupy.cuda.runtime.ipcGetMemHandle(whole.data.ptr).hex(),
          "offset": mine.data.ptr - whole.data.ptr, "nbytes": mine.nbytes, "dtype": [0, 64, 1], "typestr": "<i8",
          "shape": list(mine.shape), "strides": [s // mine.itemsize for s in mine.strides],
          "event_handle": cupy.cuda.runtime.ipcGetEventHandle(ev.ptr).hex()})
    ack = json.loads(sys.stdin.readline())
    assert ack == {"devicebridge_ipc_closed": "py-1"}, ack
    del mine, whole
send({"done": True})
