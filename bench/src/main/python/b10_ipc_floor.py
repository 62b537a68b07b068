"""Path (c) of the worker hand-off benchmark (B10WorkerHandOff): the raw CUDA IPC floor, in Python alone.

A producer (this process) allocates COLUMNS buffers of ROWS int64 values with cudaMalloc (through CuPy), fills
them once, and starts one consumer process per shape (so that each shape's first batch is a first open in a
process). Per batch it records an interprocess event and sends the memory handles and the event handle over a
pipe (one line of JSON); the consumer opens the handles, makes its stream wait on the event, reads every value
(one reduction per buffer, summed on the device), synchronizes, closes the handles and answers. One direction.

Two loops per shape, in the same consumer:
  c_open    handles opened and closed per batch; the first batch is the process's first open
  c_cached  handles opened once (torch's way) and kept; per batch only the event wait and the read
and c_roundtrip, the producer's view of c_open (send to answer). The consumer times its own work with
time.perf_counter. Output: one line per measured loop,
  SAMPLES <name> <columns> <rows> first=<ms> warm=<ms>,<ms>,...
which B10WorkerHandOff reads (it also runs this script alone:  python b10_ipc_floor.py --shapes 16x1048576).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import cupy


def _view(ptr, nbytes):
    mem = cupy.cuda.UnownedMemory(ptr, nbytes, None)
    return cupy.ndarray((nbytes // 8,), cupy.int64, cupy.cuda.MemoryPointer(mem, 0))


def consumer():
    cupy.cuda.Device(0).use()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:  # the context and the reduction kernel are ready before the first open is timed
        warm = cupy.ones(1024, cupy.int64)
        int(warm.sum())
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    cached = {}
    for line in sys.stdin:
        m = json.loads(line)
        if m.get("bye"):
            break
        t0 = time.perf_counter()
        keep = m["cached"]
        ptrs = []
        for h in m["handles"]:
            p = cached.get(h) if keep else None
            if p is None:
                p = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(h))
                if keep:
                    cached[h] = p
            ptrs.append(p)
        ev = cupy.cuda.runtime.ipcOpenEventHandle(bytes.fromhex(m["event"]))
        cupy.cuda.runtime.streamWaitEvent(stream.ptr, ev, 0)
        with stream:
            total = cupy.zeros((), cupy.int64)
            for p in ptrs:
                total += _view(p, m["nbytes"]).sum()
        stream.synchronize()
        cupy.cuda.runtime.eventDestroy(ev)
        if not keep:
            for p in ptrs:
                cupy.cuda.runtime.ipcCloseMemHandle(p)
        ms = (time.perf_counter() - t0) * 1e3
        out.write(json.dumps({"ms": ms, "sum": int(total)}) + "\n")
        out.flush()
    for p in cached.values():
        cupy.cuda.runtime.ipcCloseMemHandle(p)


def _ask(proc, msg):
    proc.stdin.write((json.dumps(msg) + "\n").encode("ascii"))
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the consumer exited (exit code %s)" % proc.poll())
    return json.loads(line)


def measure(columns, rows, iterations):
    nbytes = rows * 8
    stream = cupy.cuda.Stream(non_blocking=True)
    ptrs = [cupy.cuda.runtime.malloc(nbytes) for _ in range(columns)]
    proc = None
    try:
        with stream:
            for p in ptrs:
                _view(p, nbytes).fill(1)
        stream.synchronize()
        handles = [cupy.cuda.runtime.ipcGetMemHandle(p).hex() for p in ptrs]
        event = cupy.cuda.Event(block=False, disable_timing=True, interprocess=True)
        event_handle = cupy.cuda.runtime.ipcGetEventHandle(event.ptr).hex()
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--consumer"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if "ready" not in json.loads(proc.stdout.readline() or b"{}"):
            raise RuntimeError("the consumer did not start (exit code %s)" % proc.poll())
        want = columns * rows
        results = {}
        for name, cached in (("c_open", False), ("c_cached", True)):
            consumer_ms, roundtrip_ms = [], []
            for _ in range(iterations + 1):
                event.record(stream)
                t0 = time.perf_counter()
                r = _ask(proc, {"handles": handles, "event": event_handle, "nbytes": nbytes, "cached": cached})
                roundtrip_ms.append((time.perf_counter() - t0) * 1e3)
                if r["sum"] != want:
                    raise RuntimeError("%s: the consumer read %d but expected %d" % (name, r["sum"], want))
                consumer_ms.append(r["ms"])
            results[name] = consumer_ms
            if name == "c_open":
                results["c_roundtrip"] = roundtrip_ms
        _ask_bye(proc)
        for name in ("c_open", "c_cached", "c_roundtrip"):
            s = results[name]
            print("SAMPLES %s %d %d first=%.6f warm=%s" % (name, columns, rows, s[0],
                                                          ",".join("%.6f" % v for v in s[1:])), flush=True)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        stream.synchronize()
        for p in ptrs:
            cupy.cuda.runtime.free(p)


def _ask_bye(proc):
    proc.stdin.write(b'{"bye": true}\n')
    proc.stdin.flush()
    proc.stdin.close()
    proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--consumer", action="store_true")
    ap.add_argument("--shapes", default="16x1048576,8x1048576", help="COLUMNSxROWS,...")
    ap.add_argument("--iterations", type=int, default=20, help="warm batches (the first comes on top)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for the whole script")
    a = ap.parse_args()
    signal.alarm(a.timeout)  # SIGALRM ends a stalled process (its default action)
    if a.consumer:
        consumer()
        return
    cupy.cuda.Device(0).use()
    for shape in a.shapes.split(","):
        columns, rows = (int(x) for x in shape.lower().split("x"))
        measure(columns, rows, a.iterations)


if __name__ == "__main__":
    main()
