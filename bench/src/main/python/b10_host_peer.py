"""Path (b) of the worker hand-off benchmark (B10WorkerHandOff): Spark's path today, the Python side.

Connects to the JVM on 127.0.0.1:PORT and reads one Arrow IPC stream of record batches from the socket with
pyarrow; for each batch it uploads every buffer to the GPU with CuPy, applies the function (plus_one: +1 on the
first column, int64; identity), downloads every buffer, and writes the result batch to one Arrow IPC stream back
on the same socket. Stops at the end of the input stream. With --no-cuda (the benchmark's --dry-run) the buffers
stay in host memory and plus_one runs with pyarrow.compute: only the socket and IPC stream plumbing is exercised.

    python b10_host_peer.py --port PORT [--function plus_one|identity] [--no-cuda] [--timeout SECONDS]
"""
import argparse
import socket
import sys

import pyarrow as pa


class Cuda:
    def __init__(self):
        import cupy
        import numpy
        self.cupy, self.numpy = cupy, numpy

    def upload(self, buf):
        return None if buf is None else self.cupy.asarray(self.numpy.frombuffer(buf, dtype=self.numpy.uint8))

    def plus_one(self, data):
        n = data.nbytes // 8 * 8
        return (data[:n].view(self.cupy.int64) + 1).view(self.cupy.uint8)

    def download(self, d):
        return None if d is None else pa.py_buffer(self.cupy.asnumpy(d))


class Host:
    """--no-cuda: the buffers stay where pyarrow read them."""

    def upload(self, buf):
        return buf

    def plus_one(self, data):
        import pyarrow.compute as pc
        n = data.size // 8
        return pc.add(pa.Array.from_buffers(pa.int64(), n, [None, data]), 1).buffers()[1]

    def download(self, d):
        return d


def transform(batch, backend, function):
    arrays = []
    for i, col in enumerate(batch.columns):
        on_device = [backend.upload(b) for b in col.buffers()]
        if function == "plus_one" and i == 0:
            if col.type != pa.int64() or col.offset != 0:
                raise ValueError("plus_one expects an int64 first column without offset, not %s" % col.type)
            on_device[1] = backend.plus_one(on_device[1])
        back = [backend.download(d) for d in on_device]
        arrays.append(pa.Array.from_buffers(col.type, len(col), back, col.null_count, col.offset))
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--function", choices=["plus_one", "identity"], default="plus_one")
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args()
    backend = Host() if a.no_cuda else Cuda()
    sock = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # buffered socket files, as Spark's Python worker reads and writes its socket
    infile, outfile = sock.makefile("rb", 65536), sock.makefile("wb", 65536)
    writer = None
    try:
        reader = pa.ipc.open_stream(infile)
        for batch in reader:
            out = transform(batch, backend, a.function)
            if writer is None:
                writer = pa.ipc.new_stream(outfile, out.schema)
            writer.write_batch(out)
            outfile.flush()
        if writer is not None:
            writer.close()
        outfile.flush()
    finally:
        for f in (outfile, infile):
            try:
                f.close()
            except OSError:
                pass
        sock.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the JVM reports this with the stderr tail
        print("b10_host_peer: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        raise
