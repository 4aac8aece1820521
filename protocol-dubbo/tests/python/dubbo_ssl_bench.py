"""The Python Dubbo2 consumer dubbo-ssl-python (PyPI, installed by scripts/peers/python-grpc.sh)
as a load generator, for the comparison in BENCHMARKS.md:

    python dubbo_ssl_bench.py HOST:PORT CALLS CONCURRENCY [VERSION]

Calls sayHello("rust") on org.apache.dubbo.demo.DemoService (plain TCP, one shared connection:
the library's pool), CONCURRENCY threads in flight (its client is blocking; the pool's reader
thread completes the calls), and prints one JSON line: calls/s, p50 and p99 in microseconds.
"""
import json
import logging
import sys
import threading
import time

from dubbo_ssl.client import DubboClient

logging.disable(logging.CRITICAL)


def main():
    addr, calls, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    version = sys.argv[4] if len(sys.argv) > 4 else "1.0.0"
    client = DubboClient(
        interface="org.apache.dubbo.demo.DemoService",
        group="",
        version=version,
        dubbo_version="2.4.10",
        host=addr,
        verify=None,
    )
    got = client.call("sayHello", ["rust"], timeout=5)
    if got != "Hello rust":
        print(f"unexpected answer {got!r}", file=sys.stderr)
        sys.exit(1)
    lock = threading.Lock()
    state = {"next": 0, "errors": 0}
    lat = []

    def worker():
        mine = []
        while True:
            with lock:
                if state["next"] >= calls:
                    break
                state["next"] += 1
            t = time.perf_counter_ns()
            try:
                client.call("sayHello", ["rust"], timeout=5)
            except Exception:  # counted, not fatal: the row shows errors
                with lock:
                    state["errors"] += 1
            mine.append((time.perf_counter_ns() - t) / 1e3)
        with lock:
            lat.extend(mine)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    lat.sort()

    def pct(p):
        if not lat:
            return 0
        i = min(len(lat), max(1, -(-len(lat) * p // 1)))
        return lat[int(i) - 1]

    print(json.dumps({
        "client": "python dubbo-ssl-python 0.9.6",
        "calls": len(lat), "errors": state["errors"], "concurrency": conc, "seconds": seconds,
        "calls_per_sec": len(lat) / seconds, "p50_us": pct(0.5), "p99_us": pct(0.99),
        "max_us": lat[-1] if lat else 0,
    }))


if __name__ == "__main__":
    main()
