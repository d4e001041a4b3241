#!/usr/bin/env python3
"""Raw TCP throughput over loopback: the ceiling a socket transport works under.

  python3 bench/tcp_loopback.py [streams] [MB per stream] [message KB]

Each stream is a sender process and a receiver process (sendall / recv_into of `message`
bytes); prints the aggregate GB/s one way. Baton's NET moves both ways at once (a ring), so
compare its algbw with the two-way figure (run two streams one way as a rough stand-in).
"""
import multiprocessing as mp
import socket
import sys
import time


def receiver(port_q, total, msg):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port_q.put(s.getsockname()[1])
    c, _ = s.accept()
    buf = bytearray(msg)
    view = memoryview(buf)
    got = 0
    while got < total:
        n = c.recv_into(view, min(msg, total - got))
        if n == 0:
            break
        got += n
    c.close()


def sender(port, total, msg):
    c = socket.create_connection(("127.0.0.1", port))
    data = bytes(msg)
    sent = 0
    while sent < total:
        c.sendall(data)
        sent += msg
    c.close()


def main():
    streams = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    total = (int(sys.argv[2]) if len(sys.argv) > 2 else 2048) << 20
    msg = (int(sys.argv[3]) if len(sys.argv) > 3 else 512) << 10
    q = mp.Queue()
    rs = [mp.Process(target=receiver, args=(q, total, msg)) for _ in range(streams)]
    for r in rs:
        r.start()
    ports = [q.get() for _ in rs]
    t0 = time.time()
    ss = [mp.Process(target=sender, args=(p, total, msg)) for p in ports]
    for s in ss:
        s.start()
    for p in ss + rs:
        p.join()
    dt = time.time() - t0
    print("%d stream(s), %d MB each, %d KB messages: %.2f GB/s aggregate"
          % (streams, total >> 20, msg >> 10, streams * total / dt / 1e9))


if __name__ == "__main__":
    main()
