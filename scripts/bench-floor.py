#!/usr/bin/env python3
"""bench-floor.py - the provider's floor for scripts/bench-java.sh: a client that does no work.

It sends `DemoService#sayHello("bench")` as fixed bytes over one blocking socket (Dubbo2 + Hessian2, or Triple
wrapper mode over HTTP/2 with literal headers), keeps CONCURRENCY requests outstanding by sending one more for
every answer it reads, and checks each answer only for "Hello bench". No serialization, no HPACK table, no
runtime: what it measures is what the provider and the loopback take per call, the most any client can get
from this provider. Output: one JSON line in the shape of `dubbo-registry invoke --repeat --json`.

    python3 scripts/bench-floor.py dubbo|tri PORT CALLS CONCURRENCY WARMUP
"""
import json
import resource
import socket
import struct
import sys
import time

SERVICE = b"com.example.peer.DemoService"
METHOD = b"sayHello"
EXPECT = b"Hello bench"


def h2s(s):
    """A Hessian2 short string (under 32 bytes, ASCII)."""
    assert len(s) < 32
    return bytes([len(s)]) + s


def dubbo_request(rid):
    body = (h2s(b"2.0.2") + h2s(SERVICE) + h2s(b"1.0.0") + h2s(METHOD) + h2s(b"Ljava/lang/String;")
            + h2s(b"bench") + b"H" + h2s(b"interface") + h2s(SERVICE) + h2s(b"path") + h2s(SERVICE)
            + h2s(b"version") + h2s(b"1.0.0") + h2s(b"timeout") + h2s(b"5000") + b"Z")
    # magic, flags (request | two-way | hessian2), status, id, length
    return struct.pack(">HBBQI", 0xDABB, 0xC2, 0, rid, len(body)) + body


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    """An HPACK literal header field without indexing, new name, no Huffman (short strings)."""
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def tri_request(stream, authority):
    headers = b"".join(literal(n, v) for n, v in [
        (b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/" + SERVICE + b"/" + METHOD),
        (b":authority", authority), (b"content-type", b"application/grpc+proto"), (b"te", b"trailers"),
        (b"tri-service-version", b"1.0.0"), (b"grpc-timeout", b"5000m")])
    hessian = h2s(b"bench")
    wrapper = (b"\x0a" + h2s(b"hessian4") + b"\x12" + bytes([len(hessian)]) + hessian
               + b"\x1a" + h2s(b"java.lang.String"))
    message = b"\x00" + struct.pack(">I", len(wrapper)) + wrapper
    return frame(1, 0x4, stream, headers) + frame(0, 0x1, stream, message)


class Framed:
    """A socket read into a buffer and cut into frames: a header of `head` bytes, `body_len` of
    it, and `on_frame` for each whole frame (the answers it completes)."""

    def __init__(self, sock, head):
        self.sock, self.buf, self.head = sock, b"", head

    def answers(self):
        """Reads until at least one answer is whole; returns [(key, ok)]."""
        out = []
        while not out:
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError("the provider closed the connection")
            self.buf += data
            while len(self.buf) >= self.head:
                n = self.body_len(self.buf[:self.head])
                if len(self.buf) < self.head + n:
                    break
                head, body = self.buf[:self.head], self.buf[self.head:self.head + n]
                self.buf = self.buf[self.head + n:]
                out.extend(self.on_frame(head, body))
        return out


class Dubbo(Framed):
    def __init__(self, sock):
        super().__init__(sock, 16)
        self.next_id = 1

    def send(self):
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(dubbo_request(rid))
        return rid

    def body_len(self, head):
        return struct.unpack(">I", head[12:16])[0]

    def on_frame(self, head, body):
        _, _, status, rid, _ = struct.unpack(">HBBQI", head)
        return [(rid, status == 20 and EXPECT in body)]


class Tri(Framed):
    def __init__(self, sock, port):
        super().__init__(sock, 9)
        self.next_stream = 1
        self.authority = b"127.0.0.1:%d" % port
        self.seen = {}
        self.unacked = 0  # DATA bytes read since the last connection WINDOW_UPDATE
        settings = struct.pack(">HI", 4, (1 << 31) - 1)  # INITIAL_WINDOW_SIZE: no stream ever waits
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, settings))

    def send(self):
        s = self.next_stream
        self.next_stream += 2
        self.sock.sendall(tri_request(s, self.authority))
        return s

    def body_len(self, head):
        return int.from_bytes(head[:3], "big")

    def on_frame(self, head, payload):
        kind, flags = head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        out = []
        if kind == 4 and not flags & 1:
            self.sock.sendall(frame(4, 1, 0, b""))
        elif kind == 6 and not flags & 1:
            self.sock.sendall(frame(6, 1, 0, payload))
        elif kind == 0 and stream:
            self.seen[stream] = self.seen.get(stream, False) or EXPECT in payload
            self.unacked += len(payload)
            if self.unacked >= 1 << 14:  # the connection window stays open (65,535 by default)
                self.sock.sendall(frame(8, 0, 0, struct.pack(">I", self.unacked)))
                self.unacked = 0
        elif kind == 3 and stream:
            out.append((stream, False))
            self.seen.pop(stream, None)
        if kind in (0, 1) and flags & 1 and stream:
            out.append((stream, self.seen.pop(stream, False)))
        return out


def run(client, calls, concurrency):
    lat, errors, sent_at = [], 0, {}
    start = time.perf_counter()
    sent = 0
    while sent < min(concurrency, calls):
        sent_at[client.send()] = time.perf_counter()
        sent += 1
    done = 0
    while done < calls:
        for key, ok in client.answers():
            now = time.perf_counter()
            lat.append(now - sent_at.pop(key))
            errors += 0 if ok else 1
            done += 1
            if sent < calls:
                sent_at[client.send()] = time.perf_counter()
                sent += 1
    return lat, errors, time.perf_counter() - start


def cpu_us():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1e6


def main():
    proto, port, calls, concurrency, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
        int(sys.argv[5])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = Dubbo(sock) if proto == "dubbo" else Tri(sock, port)
    if warmup:
        run(client, warmup, concurrency)
    cpu = cpu_us()
    lat, errors, seconds = run(client, calls, concurrency)
    cpu = cpu_us() - cpu
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, max(0, int(len(lat) * p + 0.999999) - 1))] * 1e6
    print(json.dumps({"calls": len(lat), "errors": errors, "concurrency": concurrency, "seconds": seconds,
                      "calls_per_sec": len(lat) / seconds, "p50_us": pct(0.5), "p99_us": pct(0.99),
                      "max_us": lat[-1] * 1e6, "cpu_us_per_call": cpu / max(len(lat), 1)}))


if __name__ == "__main__":
    main()
