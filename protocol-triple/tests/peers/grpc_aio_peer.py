#!/usr/bin/env python3
"""A grpcio asyncio server for benchmarks: /tritest.Greeter/SayHello only, on one event loop.

usage: grpc_aio_peer.py PORT
    PORT 0 = any free port; prints "PORT <n>" when serving.

The test peer (grpc_peer.py) is a thread-pool server (80 threads sharing the GIL): with many
calls in flight its time goes to thread switches among them. This one handles every call on a
single asyncio loop (grpc's C-core still reads and writes on its own threads), so no thread
hand-offs depend on the client; what it pays per call still depends on how the requests
arrive (one wake-up per segment). It answers like the test peer:
HelloReply{message: "Hello " + name}, raw bytes in and out (no generated code needed).
"""
import asyncio
import sys

import grpc


def _read_name(req: bytes) -> bytes:
    # HelloRequest{name = 1}: tag 0x0a, one-byte length (names used by the benches are short).
    if len(req) >= 2 and req[0] == 0x0A and req[1] + 2 <= len(req):
        return req[2:2 + req[1]]
    return b""


def _reply(name: bytes) -> bytes:
    msg = b"Hello " + name
    return b"\x0a" + bytes([len(msg)]) + msg


async def say_hello(request: bytes, context) -> bytes:
    return _reply(_read_name(request))


async def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(say_hello)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("tritest.Greeter", {"SayHello": handler}),))
    bound = server.add_insecure_port("127.0.0.1:%d" % port)
    await server.start()
    print("PORT %d" % bound, flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main())
