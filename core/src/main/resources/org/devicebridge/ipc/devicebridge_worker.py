"""devicebridge worker: the Python side of org.devicebridge.ipc.WorkerChannel.

A JVM hands device batches (Arrow record batches on a CUDA device) or tensors to this process through CUDA IPC
and takes the results back the same way; only one line of JSON travels each way per call, over stdin/stdout
(the protocol is the "Worker channel" section of devicebridge's docs/ipc-format.md). Run it as

    python devicebridge_worker.py [--function module:callable]

or import it and call serve(function). The function gets a DeviceBatch (or a cupy.ndarray for a tensor) whose
buffers are CuPy arrays over the JVM's memory, zero-copy, ready on the current CuPy stream (the worker's stream
waited on the JVM's event), and returns a DeviceBatch (or a cupy.ndarray). Without --function the result is the
input itself (identity); buffers of the result that lie in the JVM's memory are copied once into memory of this
process (CUDA IPC cannot share memory a process mapped from another), the others are shared in place.

Pool memory: at hello the worker offers a Unix socket in a private directory ("pool_socket"); the JVM sends each
device's IPC-shareable memory pool over it once, as a file descriptor, and names allocations of that pool in a
descriptor of format version 2 ("pool_pointers"). The worker imports each pool once (cuMemPoolImportFromShareableHandle)
and each allocation per call (cuMemPoolImportPointer), and frees those imports (cuMemFree) before its close message.

Lifetime: the worker keeps every allocation it mapped open between calls (keyed by its handle), so that only the
first call pays the driver's cold open, and closes one when the JVM says that allocation is gone ("unmap").
The other way round, a batch result is packed into a slab: one device allocation of the worker's own (at most
MAX_SLABS per worker), reused for a later result once the JVM closed the result that used it, so that the JVM
maps each slab once ("persistent" in the result header). A slab too small for a result is retired ("retire"):
the worker frees it once the JVM confirms it unmapped it ("retired" in a later call header) or at bye. Results
that find no slab go out as before, each buffer's own allocation shared. Interprocess events are pooled for the
worker's life ("persistent_event"), so that the JVM opens each once; the JVM's own call events are pooled too
(it re-records one only after the call's close message) and their openings kept here, by handle.
It tells the JVM it is done with a call's data (the close message) once its stream has finished with it. Its
results stay alive until the JVM's close message for them. Needs CuPy; pyarrow (the schema as a pa.Schema) and
torch (as_torch) are optional. stdout is the channel: what the function prints goes to stderr.
"""
import base64
import ctypes
import importlib
import json
import os
import shutil
import socket
import sys
import tempfile
import traceback
import uuid

import cupy

PROTOCOL = 1
MAX_HEADER_BYTES = 1 << 16
MAX_DESCRIPTOR_BYTES = {"arrow_batch": 1 << 22, "tensor": 1 << 16}
MAX_HANDLE_LIST = 256
MAX_ERROR_CHARS = 1 << 14
MAX_POOLS = 64
MAX_SLABS = 4  # slabs kept per worker (retiring ones apart, at most as many again)
MAX_RETIRE_LIST = 16  # the most handles one "retire" or "retired" list names
MAX_OPENED_EVENTS = 16  # openings of the JVM's pooled events kept (it pools at most 8 per channel)
_SLAB_GRAIN = 1 << 20  # slab sizes are rounded up to this, so that a slightly larger result still fits
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_DEVICE_LOCATION = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_ALIGN = 64
_D2D = 3  # cudaMemcpyDeviceToDevice

try:
    import pyarrow as _pa
except ImportError:  # the schema stays bytes
    _pa = None

_cuda = ctypes.CDLL("libcuda.so.1")


class ProtocolError(Exception):
    """What the JVM sent breaks the protocol: the worker stops."""


def _address_range(ptr):
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = _cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if rc != 0:
        raise RuntimeError("cuMemGetAddressRange failed with CUresult %d for 0x%x" % (rc, ptr))
    return base.value, size.value


def _check(rc, what):
    if rc != 0:
        raise RuntimeError("%s failed with CUresult %d" % (what, rc))


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _Pools:
    """The memory pools the JVM sent over the pool socket, in the order they came, imported once each."""

    def __init__(self):
        self.listener, self.directory, self.pools = None, None, []

    def offer(self):
        """Listens on a socket in a new private directory (0700); returns its path, or None where it cannot."""
        if not sys.platform.startswith("linux") or not hasattr(socket, "recv_fds"):
            return None
        directory = tempfile.mkdtemp(prefix="devicebridge-worker-")
        path = os.path.join(directory, "pools")
        if len(path.encode()) > 107:
            os.rmdir(directory)
            return None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(MAX_POOLS)
        listener.settimeout(30)
        self.listener, self.directory = listener, directory
        return path

    def take(self, count, device):
        """Accepts the pools the JVM sent before this call: one connection, one descriptor each."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 or len(self.pools) + count > MAX_POOLS:
            raise ProtocolError("pools_sent: expected an integer in [0, %d] but found %r"
                                % (MAX_POOLS - len(self.pools), count))
        if count and self.listener is None:
            raise ProtocolError("pools_sent: this worker offered no pool socket")
        for _ in range(count):
            conn, _ = self.listener.accept()
            with conn:
                uid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8]
                if int.from_bytes(uid, sys.byteorder) != os.geteuid():
                    raise ProtocolError("pools_sent: a process of another user connected to the pool socket")
                conn.settimeout(30)
                _, fds, _, _ = socket.recv_fds(conn, 1, 1)
            if len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise ProtocolError("pools_sent: expected one descriptor per connection but found %d" % len(fds))
            pool = ctypes.c_void_p()
            try:
                _check(_cuda.cuMemPoolImportFromShareableHandle(ctypes.byref(pool), ctypes.c_void_p(fds[0]),
                                                                _POSIX_FD, ctypes.c_ulonglong(0)),
                       "cuMemPoolImportFromShareableHandle")
            finally:
                os.close(fds[0])
            flags = ctypes.c_int()
            here = _Location(_DEVICE_LOCATION, device)
            _check(_cuda.cuMemPoolGetAccess(ctypes.byref(flags), pool, ctypes.byref(here)), "cuMemPoolGetAccess")
            if flags.value != _READ_WRITE:
                desc = _AccessDesc(here, _READ_WRITE)
                _check(_cuda.cuMemPoolSetAccess(pool, ctypes.byref(desc), ctypes.c_size_t(1)), "cuMemPoolSetAccess")
            self.pools.append(pool)

    def import_pointer(self, entry, path):
        """Maps one allocation of a pool: (pointer, size). The caller frees it with cuMemFree."""
        if not isinstance(entry, dict) or set(entry) - {"pool", "pointer"}:
            raise ProtocolError("%s: expected {\"pool\": index, \"pointer\": hex}" % path)
        k, hexdata = entry.get("pool"), entry.get("pointer")
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(self.pools):
            raise ProtocolError("%s.pool: expected an index below %d but found %r" % (path, len(self.pools), k))
        if not isinstance(hexdata, str) or len(hexdata) != 128:
            raise ProtocolError("%s.pointer: expected 128 hex digits" % path)
        try:
            data = (ctypes.c_ubyte * 64).from_buffer_copy(bytes.fromhex(hexdata))
        except ValueError:
            raise ProtocolError("%s.pointer: expected 128 hex digits" % path)
        ptr = ctypes.c_uint64()
        _check(_cuda.cuMemPoolImportPointer(ctypes.byref(ptr), self.pools[k], ctypes.byref(data)),
               "cuMemPoolImportPointer")
        try:
            return ptr.value, _address_range(ptr.value)[1]
        except Exception:
            _cuda.cuMemFree_v2(ctypes.c_uint64(ptr.value))
            raise

    def close(self):
        if self.listener is not None:
            self.listener.close()
            shutil.rmtree(self.directory, ignore_errors=True)
            self.listener = None


class _Slab:
    """A device allocation of the worker's own that batch results are packed into, reused once the JVM closed the
    result that used it."""
    __slots__ = ("memory", "size", "hex", "device", "user")

    def __init__(self, size):
        self.memory = cupy.cuda.Memory(size)  # cudaMalloc of its own: the IPC handle names exactly this allocation
        self.size = size
        self.hex = cupy.cuda.runtime.ipcGetMemHandle(self.memory.ptr).hex()
        self.device = cupy.cuda.runtime.getDevice()
        self.user = None  # the id of the result that holds it, or None when free


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def as_torch(array):
    """A torch tensor over a CuPy array, zero-copy (DLPack)."""
    import torch
    return torch.from_dlpack(array)


class Node:
    """One node of a batch, as the C Data Interface has it: buffers are CuPy uint8 arrays (or None)."""
    __slots__ = ("length", "null_count", "offset", "buffers", "children")

    def __init__(self, length, null_count, offset, buffers, children=()):
        self.length, self.null_count, self.offset = length, null_count, offset
        self.buffers, self.children = list(buffers), list(children)

    def values(self, dtype, buffer=1):
        """The node's elements of a fixed-width type as a typed CuPy view (offset and length applied)."""
        b = self.buffers[buffer]
        item = cupy.dtype(dtype).itemsize
        return b[: b.nbytes // item * item].view(dtype)[self.offset:self.offset + self.length]


class DeviceBatch:
    """A record batch on a CUDA device: an Arrow IPC schema message and a root struct node of columns."""

    def __init__(self, schema, root, device=None):
        if _pa is not None and isinstance(schema, _pa.Schema):
            schema = schema.serialize().to_pybytes()
        self.schema_message = bytes(schema)
        self.root = root
        self.device = cupy.cuda.runtime.getDevice() if device is None else device

    @property
    def schema(self):
        """The schema as a pyarrow.Schema (needs pyarrow)."""
        return _pa.ipc.read_schema(_pa.py_buffer(self.schema_message))

    @property
    def num_rows(self):
        return self.root.length

    @property
    def columns(self):
        return self.root.children

    def column(self, name):
        return self.root.children[self.schema.names.index(name)]


def identity(data):
    return data


def _loads(line, limit, what):
    if len(line) > limit:
        raise ProtocolError("%s: expected at most %d bytes but found more" % (what, limit))

    def pairs(kv):
        keys = [k for k, _ in kv]
        if len(set(keys)) != len(keys):
            raise ProtocolError("%s: a key appears twice" % what)
        return dict(kv)

    def no_float(text):
        raise ProtocolError("%s: expected integers but found %s" % (what, text))

    try:
        obj = json.loads(line.decode("utf-8"), object_pairs_hook=pairs, parse_float=no_float, parse_constant=no_float)
    except (ValueError, RecursionError) as e:
        raise ProtocolError("%s: not strict JSON: %s" % (what, e))
    if not isinstance(obj, dict):
        raise ProtocolError("%s: expected a JSON object" % what)
    return obj


class Worker:
    def __init__(self, function, fin, fout):
        self.function = function
        self.fin, self.fout = fin, fout
        self.mapped = {}  # handle hex -> (base pointer, mapped size): open for the worker's life unless unmapped
        self.results = {}  # export id -> what keeps a result alive until the JVM's close message
        self.events = []  # interprocess events free for reuse
        self.opened_events = {}  # handle hex -> the JVM's pooled event, opened once (insertion order: oldest first)
        self.stream = None
        self.pools = _Pools()
        self.imported = []  # (pointer, size) of pool allocations imported for the current call
        self.slabs = []  # _Slab: kept for later results
        self.retiring = {}  # handle hex -> _Slab retired and not yet confirmed unmapped by the JVM
        self.announce = []  # handles retired and not yet named in a result header's "retire"

    # ---- the channel
    def _read(self, limit):
        line = self.fin.readline(limit + 2)
        if not line:
            return None
        if not line.endswith(b"\n"):
            if len(line) > limit:
                raise ProtocolError("expected a line of at most %d bytes but found more" % limit)
            return None  # a partial last line: the JVM went away
        return line[:-1]

    def _send(self, *objs):
        self.fout.write(b"".join(json.dumps(o).encode("ascii") + b"\n" for o in objs))
        self.fout.flush()

    def _header(self, kind, **fields):
        h = {"devicebridge_worker": PROTOCOL, "kind": kind}
        h.update(fields)
        return h

    # ---- mappings
    def _map(self, hexhandle):
        hit = self.mapped.get(hexhandle)
        if hit is None:
            ptr = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(hexhandle))
            hit = (ptr, _address_range(ptr)[1])
            self.mapped[hexhandle] = hit
        return hit

    def _unmap(self, hexhandles):
        for h in hexhandles:
            hit = self.mapped.pop(h.lower(), None)
            if hit is not None:
                cupy.cuda.runtime.ipcCloseMemHandle(hit[0])
        return [h.lower() for h in hexhandles]

    def _inside_mapped(self, ptr):
        return any(base <= ptr < base + size for base, size in list(self.mapped.values()) + self.imported)

    def _free_imported(self):
        """Frees this call's pool imports: the JVM frees the memory only after the close message that follows."""
        imported, self.imported = self.imported, []
        for ptr, _ in imported:
            _check(_cuda.cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")

    def _wait(self, event_handle, persistent):
        """Queues the stream's wait on the JVM's event. An event the JVM pools ("persistent_event" in the call
        header) lives until its bye and is re-recorded for a later call only after this call's close message, so
        its opening is kept (MAX_OPENED_EVENTS, oldest destroyed first); any other is opened for this wait only."""
        if event_handle is None:
            return
        key = event_handle.lower()
        ev = self.opened_events.pop(key, None) if persistent else None
        if ev is None:
            ev = cupy.cuda.runtime.ipcOpenEventHandle(bytes.fromhex(key))
        try:
            cupy.cuda.runtime.streamWaitEvent(self.stream.ptr, ev, 0)
        except BaseException:
            cupy.cuda.runtime.eventDestroy(ev)
            raise
        if not persistent:
            cupy.cuda.runtime.eventDestroy(ev)  # the wait is queued; the driver frees it after
            return
        self.opened_events[key] = ev  # most recently used last
        while len(self.opened_events) > MAX_OPENED_EVENTS:
            cupy.cuda.runtime.eventDestroy(self.opened_events.pop(next(iter(self.opened_events))))

    def _destroy_opened_events(self):
        """Destroys every kept opening of the JVM's events (at bye, and when the worker exits)."""
        opened, self.opened_events = self.opened_events, {}
        for ev in opened.values():
            try:
                cupy.cuda.runtime.eventDestroy(ev)
            except Exception:
                pass  # a context already torn down at exit frees them with it

    def _event(self):
        ev = self.events.pop() if self.events else cupy.cuda.Event(block=False, disable_timing=True, interprocess=True)
        ev.record(self.stream)
        return ev, cupy.cuda.runtime.ipcGetEventHandle(ev.ptr).hex()

    # ---- slabs
    def _slab_for(self, need):
        """A free slab of at least need bytes on this device, made or found within the bounds; or None."""
        device = cupy.cuda.runtime.getDevice()
        free = [s for s in self.slabs if s.user is None and s.device == device]
        fits = [s for s in free if s.size >= need]
        if fits:
            return min(fits, key=lambda s: s.size)
        size = (need + _SLAB_GRAIN - 1) // _SLAB_GRAIN * _SLAB_GRAIN
        if free and len(self.retiring) < MAX_SLABS and len(self.announce) < MAX_RETIRE_LIST:
            old = min(free, key=lambda s: s.size)  # free but too small: the new slab serves what it served
            self.slabs.remove(old)
            self.retiring[old.hex] = old
            self.announce.append(old.hex)
        if len(self.slabs) >= MAX_SLABS:
            return None
        slab = _Slab(size)
        self.slabs.append(slab)
        return slab

    def _retired(self, hexhandles):
        """Frees the retired slabs the JVM no longer maps."""
        if not isinstance(hexhandles, list) or len(hexhandles) > MAX_RETIRE_LIST:
            raise ProtocolError("retired: expected a list of at most %d handles" % MAX_RETIRE_LIST)
        for h in hexhandles:
            if not isinstance(h, str) or len(h) != 128:
                raise ProtocolError("retired: expected handles of 128 hex digits but found %r" % (h,))
            self.retiring.pop(h.lower(), None)  # dropping the last reference frees it (cudaFree)

    def _pack(self, buffers, keep):
        """Copies every buffer into one slab: (handles, refs, copied bytes, slab), or None when no slab is free."""
        arrays = []
        for b in buffers:
            if b is not None and not b.flags.c_contiguous:
                b = cupy.ascontiguousarray(b)
            arrays.append(b)
        slab = self._slab_for(max(_ALIGN, sum(_aligned(b.nbytes) for b in arrays if b is not None)))
        if slab is None:
            return None
        slab.user = ""  # taken: the caller names the result
        keep.extend(b for b in arrays if b is not None)  # until the copies are done (the stream is synchronized)
        refs, at = [], 0
        for b in arrays:
            if b is None:
                refs.append(None)
            elif b.nbytes == 0:
                refs.append([0, 0, 0])
            else:
                cupy.cuda.runtime.memcpyAsync(slab.memory.ptr + at, b.data.ptr, b.nbytes, _D2D, self.stream.ptr)
                refs.append([0, at, b.nbytes])
                at += _aligned(b.nbytes)
        return [slab.hex], refs, sum(b.nbytes for b in arrays if b is not None), slab

    # ---- batches
    def _view(self, bases, ref, path):
        if ref is None:
            return None
        h, off, size = ref
        if not (0 <= h < len(bases)) or off < 0 or size < 0 or off + size > bases[h][1]:
            raise ProtocolError("%s: [%r, %r, %r] lies outside its mapped allocation" % (path, h, off, size))
        if size == 0:
            return cupy.empty(0, cupy.uint8)
        mem = cupy.cuda.UnownedMemory(bases[h][0] + off, size, None)
        return cupy.ndarray((size,), cupy.uint8, cupy.cuda.MemoryPointer(mem, 0))

    def _node(self, bases, n, path, depth=0):
        if depth > 64:
            raise ProtocolError("%s: nested deeper than 64" % path)
        if n.get("dictionary") is not None:
            raise ProtocolError("%s: dictionary-encoded fields are not supported in version 1" % path)
        return Node(n["length"], n["null_count"], n["offset"],
                    [self._view(bases, r, "%s.buffers[%d]" % (path, i)) for i, r in enumerate(n["buffers"])],
                    [self._node(bases, c, "%s.children[%d]" % (path, k), depth + 1)
                     for k, c in enumerate(n["children"])])

    def _export(self, buffers, keep):
        """Handles and [handle, offset, size] refs for CuPy arrays; copies what lies in mapped memory."""
        handles, by_base, refs, copies, total = [], {}, [], [], 0

        def handle_of(ptr):
            base, _ = _address_range(ptr)
            if base not in by_base:
                by_base[base] = len(handles)
                handles.append(cupy.cuda.runtime.ipcGetMemHandle(base).hex())
            return by_base[base], ptr - base

        for b in buffers:
            if b is None:
                refs.append(None)
                continue
            if not b.flags.c_contiguous:
                b = cupy.ascontiguousarray(b)
            keep.append(b)
            if b.nbytes == 0:
                refs.append("empty")
            elif self._inside_mapped(b.data.ptr):
                copies.append((len(refs), b))
                refs.append(None)
                total += (b.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
            else:
                h, off = handle_of(b.data.ptr)
                refs.append([h, off, b.nbytes])
        copied = 0
        if copies or (not handles and "empty" in refs):
            arena = cupy.empty(max(total, _ALIGN), cupy.uint8)
            keep.append(arena)
            h, at = handle_of(arena.data.ptr)
            for i, b in copies:
                cupy.cuda.runtime.memcpyAsync(arena.data.ptr + copied, b.data.ptr, b.nbytes, _D2D, self.stream.ptr)
                refs[i] = [h, at + copied, b.nbytes]
                copied += (b.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        refs = [[0, 0, 0] if r == "empty" else r for r in refs]
        return handles, refs, sum(b.nbytes for _, b in copies)

    def _batch_result(self, out, keep):
        """The descriptor, the bytes copied, and the slab it was packed into (None when it was not)."""
        if not isinstance(out, DeviceBatch):
            raise TypeError("the function must return a DeviceBatch for a batch, not %s" % type(out).__name__)
        flat = []

        def walk(n):
            flat.extend(n.buffers)
            for c in n.children:
                walk(c)

        walk(out.root)
        packed = self._pack(flat, keep)
        if packed is None:
            handles, refs, copied = self._export(flat, keep)
            slab = None
        else:
            handles, refs, copied, slab = packed
        it = iter(refs)

        def node(n):
            return {"length": n.length, "null_count": n.null_count, "offset": n.offset,
                    "buffers": [next(it) for _ in n.buffers], "children": [node(c) for c in n.children],
                    "dictionary": None}

        try:
            array = node(out.root)
            return {"devicebridge_ipc": 1, "kind": "arrow_batch", "device": out.device,
                    "schema": base64.b64encode(out.schema_message).decode("ascii"), "handles": handles,
                    "array": array}, copied, slab
        except BaseException:
            if slab is not None:
                slab.user = None  # no result holds it
            raise

    # ---- tensors
    def _tensor(self, d):
        base, size = self._map(d["mem_handle"].lower())
        if d["offset"] < 0 or d["nbytes"] < 0 or d["offset"] + d["nbytes"] > size:
            raise ProtocolError("tensor: offset + nbytes lies outside the mapped allocation")
        if d["typestr"] is None:
            raise ProtocolError("tensor: a dtype without a NumPy name is not supported by this worker")
        dtype = cupy.dtype(d["typestr"])
        mem = cupy.cuda.UnownedMemory(base + d["offset"], d["nbytes"], None)
        return cupy.ndarray(tuple(d["shape"]), dtype, cupy.cuda.MemoryPointer(mem, 0),
                            strides=tuple(s * dtype.itemsize for s in d["strides"]))

    def _tensor_result(self, out, keep):
        if not isinstance(out, cupy.ndarray):
            raise TypeError("the function must return a cupy.ndarray for a tensor, not %s" % type(out).__name__)
        copied = 0
        if not out.flags.c_contiguous or self._inside_mapped(out.data.ptr):
            out = out.copy()
            copied = out.nbytes
        keep.append(out)
        base, _ = _address_range(out.data.ptr) if out.nbytes else _address_range(cupy.empty(_ALIGN).data.ptr)
        code = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}[out.dtype.kind]
        item = out.dtype.itemsize
        return {"devicebridge_ipc": 1, "kind": "tensor", "device": out.device.id,
                "mem_handle": cupy.cuda.runtime.ipcGetMemHandle(base).hex(),
                "offset": (out.data.ptr - base) if out.nbytes else 0, "nbytes": out.nbytes,
                "dtype": [code, 8 * item, 1], "typestr": out.dtype.str, "shape": list(out.shape),
                "strides": [s // item for s in out.strides]}, copied

    # ---- the loop
    def _call(self, header, d):
        payload = header["payload"]
        versions = (1, 2) if payload == "arrow_batch" else (1,)
        if d.get("devicebridge_ipc") not in versions or d.get("kind") != payload:
            raise ProtocolError("call %d: expected a %s descriptor of version %s" % (header["seq"], payload, versions))
        pointers = d.get("pool_pointers", []) if d.get("devicebridge_ipc") == 2 else []
        if not isinstance(pointers, list) or len(pointers) + len(d.get("handles", [])) > 1 << 16:
            raise ProtocolError("pool_pointers: expected a list of at most 65536 allocations")
        with cupy.cuda.Device(d["device"]):
            if self.stream is None:
                self.stream = cupy.cuda.Stream(non_blocking=True)
            unmapped = self._unmap(header.get("unmap", []))
            self._retired(header.get("retired", []))
            self.pools.take(header.get("pools_sent", 0), d["device"])
            keep, answer, slab = [], None, None
            try:
                with self.stream:
                    if payload == "arrow_batch":
                        bases = [self._map(h.lower()) for h in d["handles"]]
                        for k, entry in enumerate(pointers):
                            self.imported.append(self.pools.import_pointer(entry, "pool_pointers[%d]" % k))
                        bases += self.imported
                        self._wait(d["event_handle"], header.get("persistent_event") is True)
                        data = DeviceBatch(base64.b64decode(d["schema"]), self._node(bases, d["array"], "array"),
                                           d["device"])
                        out, copied, slab = self._batch_result(self.function(data), keep)
                    else:
                        data = self._tensor(d)
                        self._wait(d["event_handle"], header.get("persistent_event") is True)
                        out, copied = self._tensor_result(self.function(data), keep)
                    event, event_handle = self._event()
                    out["id"] = "py-" + str(uuid.uuid4())
                    out["event_handle"] = event_handle
                self.stream.synchronize()  # the call's data is read: the JVM may free it
                extra = {"persistent_event": True}
                if slab is not None:
                    slab.user = out["id"]
                    keep = []  # the slab holds the result: the function's arrays may go
                    extra["persistent"] = [0]
                if self.announce:
                    extra["retire"], self.announce = self.announce, []
                self.results[out["id"]] = (keep, event, slab)
                answer = [self._header("result", seq=header["seq"], payload=payload, unmapped=unmapped,
                                       copied_bytes=copied, **extra), out]
            except ProtocolError:
                if slab is not None:
                    slab.user = None
                raise
            except Exception as e:
                if slab is not None:
                    slab.user = None
                traceback.print_exc(file=sys.stderr)
                self.stream.synchronize()
                text = ("%s: %s" % (type(e).__name__, e))[:MAX_ERROR_CHARS] or "error"
                answer = [self._header("error", seq=header["seq"], message=text, unmapped=unmapped)]
            finally:
                self.stream.synchronize()  # no work reads the pool imports any more
                self._free_imported()
                handles = d.get("handles") or [d.get("mem_handle")]
                self._unmap([handles[k] for k in header.get("transient", []) if 0 <= k < len(handles)])
            self._send(*answer, {"devicebridge_ipc_closed": d["id"]})

    def run(self):
        seq = 0
        while True:
            line = self._read(MAX_HEADER_BYTES)
            if line is None:
                return  # the JVM went away; exiting frees everything
            m = _loads(line, MAX_HEADER_BYTES, "header")
            if "devicebridge_ipc_closed" in m and "devicebridge_worker" not in m:
                kept = self.results.pop(m["devicebridge_ipc_closed"], None)
                if kept is not None:
                    self.events.append(kept[1])
                    if kept[2] is not None:
                        kept[2].user = None  # the JVM is done with it: a later result may reuse it
                continue
            if m.get("devicebridge_worker") != PROTOCOL:
                raise ProtocolError("expected worker protocol version %d but found %r"
                                    % (PROTOCOL, m.get("devicebridge_worker")))
            kind = m.get("kind")
            if kind == "hello":
                offered = self.pools.offer()
                extra = {} if offered is None else {"pool_socket": offered}
                self._send(self._header("hello", pid=os.getpid(), **extra))
            elif kind == "call":
                seq += 1
                if m.get("seq") != seq or m.get("payload") not in MAX_DESCRIPTOR_BYTES:
                    raise ProtocolError("expected call %d with a known payload but found %r" % (seq, m))
                if len(m.get("unmap", [])) > MAX_HANDLE_LIST:
                    raise ProtocolError("expected at most %d handles to unmap" % MAX_HANDLE_LIST)
                line = self._read(MAX_DESCRIPTOR_BYTES[m["payload"]])
                if line is None:
                    return
                self._call(m, _loads(line, MAX_DESCRIPTOR_BYTES[m["payload"]], "descriptor"))
            elif kind == "bye":
                if self.stream is not None:
                    self.stream.synchronize()
                self.results.clear()
                self._destroy_opened_events()  # the JVM closes its pooled events after the bye
                self.slabs, self.retiring = [], {}  # the JVM unmapped every slab before its bye
                unmapped = self._unmap(list(self.mapped))
                self._send(self._header("bye", unmapped=unmapped[:MAX_HANDLE_LIST]))
                return
            else:
                raise ProtocolError("unknown message kind %r" % (kind,))


def serve(function=identity, fin=None, fout=None):
    """Runs the worker loop on stdin/stdout until the JVM says bye or goes away. stdout becomes stderr for the
    function (the channel keeps the original)."""
    if fout is None:
        fout = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    if fin is None:
        fin = sys.stdin.buffer
    worker = Worker(function, fin, fout)
    try:
        worker.run()
    finally:
        worker._destroy_opened_events()
        worker.pools.close()


def _function(spec):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr or "function")


if __name__ == "__main__":
    # A user's function imports this module by name: let that import find this very module (run as __main__),
    # not load a second copy whose DeviceBatch class the checks here would not recognise.
    sys.modules.setdefault("devicebridge_worker", sys.modules[__name__])
    args = sys.argv[1:]
    fn = identity
    if len(args) == 2 and args[0] == "--function":
        sys.path.insert(0, os.getcwd())
        fn = _function(args[1])
    elif args:
        sys.exit("usage: python devicebridge_worker.py [--function module:callable]")
    try:
        serve(fn)
    except ProtocolError as e:
        sys.exit("devicebridge worker: %s" % e)
