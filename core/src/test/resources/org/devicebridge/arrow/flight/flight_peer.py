"""pyarrow.flight on the other side of DeviceFlightPythonPeerTest.

  python3 flight_peer.py server         serves table 'py' on DoGet, checks DoPut 'java'; prints its port,
                                        stops when stdin closes
  python3 flight_peer.py client PORT    DoGet 'java' from the Java server (values checked), DoPut 'py'

The values are those of DeviceFlightLoopbackTest.batch(first, rows): id = first + i (int32), name =
'row <id>' (utf8) with every seventh id null.
"""
import sys
import threading

import pyarrow as pa
import pyarrow.flight as fl


def batch(first, rows):
    ids = pa.array(range(first, first + rows), pa.int32())
    names = pa.array([None if (first + i) % 7 == 0 else "row %d" % (first + i) for i in range(rows)], pa.string())
    return pa.record_batch([ids, names], names=["id", "name"])


def check(table, rows):
    table = table.combine_chunks()
    expected = pa.Table.from_batches([batch(0, rows)])
    if table.num_rows != rows or table.column("id").to_pylist() != expected.column("id").to_pylist() \
            or table.column("name").to_pylist() != expected.column("name").to_pylist():
        raise ValueError("expected rows 0..%d but found %d rows: %s" % (rows, table.num_rows, table.slice(0, 5)))


class Peer(fl.FlightServerBase):
    def __init__(self, location):
        super().__init__(location)
        self.table = pa.Table.from_batches([batch(0, 100), batch(100, 1), batch(101, 37)])

    def do_get(self, context, ticket):
        if ticket.ticket != b"py":
            raise fl.FlightServerError("no dataset %r" % ticket.ticket)
        return fl.RecordBatchStream(self.table)

    def do_put(self, context, descriptor, reader, writer):
        if descriptor.path != [b"java"]:
            raise fl.FlightServerError("unexpected descriptor %r" % descriptor.path)
        check(reader.read_all(), 510)


def serve():
    peer = Peer("grpc://127.0.0.1:0")
    print(peer.port, flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), peer.shutdown()), daemon=True).start()
    peer.serve()


def client(port):
    c = fl.connect("grpc://127.0.0.1:%d" % port)
    check(c.do_get(fl.Ticket(b"java")).read_all(), 138)
    schema = batch(0, 0).schema
    writer, _ = c.do_put(fl.FlightDescriptor.for_path("py"), schema)
    writer.write_batch(batch(0, 600))
    writer.write_batch(batch(600, 400))
    writer.close()
    c.close()
    print("ok", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        client(int(sys.argv[2]))
