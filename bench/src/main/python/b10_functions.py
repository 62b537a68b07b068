"""The trivial functions of the worker hand-off benchmark (B10WorkerHandOff), for devicebridge_worker.py.

Run the worker as  python devicebridge_worker.py --function b10_functions:plus_one  with this folder on
PYTHONPATH. plus_one adds 1 to every value of the first column (int64, no offset) and returns the other columns
as they came; identity returns the batch itself. Either way the worker copies the buffers that still lie in the
JVM's memory once into its own memory before it shares them back (CUDA IPC cannot re-share a mapping).
"""
import cupy
import devicebridge_worker as dbw


def plus_one(batch):
    cols = list(batch.columns)
    first = cols[0]
    if first.offset != 0 or first.buffers[1] is None:
        raise ValueError("plus_one expects an int64 first column without offset")
    data = first.buffers[1]
    values = data[: data.nbytes // 8 * 8].view(cupy.int64) + 1  # new memory of the worker
    cols[0] = dbw.Node(first.length, first.null_count, 0, [first.buffers[0], values.view(cupy.uint8)])
    root = batch.root
    return dbw.DeviceBatch(batch.schema_message, dbw.Node(root.length, root.null_count, root.offset,
                                                          root.buffers, cols), batch.device)


def identity(batch):
    return batch
