#!/usr/bin/env python3
"""grpcio's own client as the baseline for protocol-triple benchmarks.

usage: grpc_bench_client.py HOST:PORT CALLS CONCURRENCY
Calls /tritest.Greeter/SayHello {name: "bench"} CALLS times with CONCURRENCY in flight on one
channel (grpc.aio), prints one JSON line: calls, concurrency, seconds, calls_per_sec, p50_us, p99_us.
"""
import asyncio
import json
import sys
import time

import grpc

REQ = b"\x0a\x05bench"  # HelloRequest{name: "bench"}


async def main():
    addr, calls, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    async with grpc.aio.insecure_channel(addr) as ch:
        rpc = ch.unary_unary("/tritest.Greeter/SayHello")
        await rpc(REQ)  # connect + warm up
        lat = []
        left = [calls]

        async def worker():
            while left[0] > 0:
                left[0] -= 1
                t = time.perf_counter()
                await rpc(REQ, timeout=10)
                lat.append(time.perf_counter() - t)

        start = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(conc)])
        secs = time.perf_counter() - start
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, max(0, int(len(lat) * p + 0.999999) - 1))] * 1e6
    print(json.dumps({"client": "grpcio-aio", "calls": len(lat), "concurrency": conc, "seconds": secs,
                      "calls_per_sec": len(lat) / secs, "p50_us": pct(0.5), "p99_us": pct(0.99)}))


asyncio.run(main())
