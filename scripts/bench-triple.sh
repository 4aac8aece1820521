#!/usr/bin/env bash
# bench-triple.sh - Triple calls on loopback against the grpcio peers (scripts/peers/python-grpc.sh), in one run,
# alternating the clients for ROUNDS rounds on each peer: our client through the CLI (`dubbo-registry invoke
# tri://... --proto ... --repeat`), grpcio's own client (grpc.aio, protocol-triple/tests/peers/grpc_bench_client.py),
# and, when it is built, the bench crate's `triple-load` (TripleClient with write coalescing on and
# off, and tonic 0.14 Grpc::unary), 1 and 64 calls in flight, SayHello{name:"bench"}; wrapper-mode sayHello on the
# thread-pool peer. Two peers: the thread-pool test peer (grpc_peer.py, 80 threads) and the asyncio peer
# (grpc_aio_peer.py). Then Triple vs Dubbo2 from the same binary: Dubbo2 sayHello on the Java Dubbo2 peer
# (scripts/peers/java-dubbo.sh) when it is installed. One JSON line per measurement, with the peer's CPU time per call
# (`peer_cpu_us`, from /proc/PID/stat, warm-up calls included in the count); `uptime` before and after.
#
#   cargo build --release -p cli && cargo build --release -p bench --bin triple-load
#   bash scripts/bench-triple.sh [CALLS_1] [CALLS_64] [ROUNDS]      (defaults 5000, 20000 and 2)
# Env: PIN=1 runs each peer on CPU 1 and every client on CPU 0 (taskset), so client and server never share a core
#      (the steadier setting on a 2-core machine, and the shape of a provider limited to one CPU);
#      PEER_KINDS="thread aio" (default both); DUBBO_REGISTRY=path/to/release/dubbo-registry;
#      TRIPLE_LOAD=path/to/triple-load; PORT (default 50961; the asyncio peer uses PORT+2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DUBBO_REGISTRY:-$ROOT/target/release/dubbo-registry}
PORT=${PORT:-50961}
N1=${1:-5000}
N64=${2:-20000}
ROUNDS=${3:-2}
LOAD=${TRIPLE_LOAD:-$ROOT/target/release/triple-load}
PEERS=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
PY=$PEERS/python-grpc/venv/bin/python
PROTO=$ROOT/protocol-triple/tests/fixtures/proto/test.proto
PEER_KINDS=${PEER_KINDS:-thread aio}
SERVER_CPU=()
CLIENT_CPU=()
if [[ ${PIN:-0} == 1 ]]; then
    SERVER_CPU=(taskset -c 1)
    CLIENT_CPU=(taskset -c 0)
fi
bash "$ROOT/scripts/peers/python-grpc.sh" install >/dev/null
LOG=/tmp/bench-triple-peer.$$
PEER=
trap 'if [[ -n $PEER ]]; then kill $PEER 2>/dev/null || true; fi; rm -f $LOG /tmp/bench-triple-java.$$' EXIT

ticks() { awk '{print $14 + $15}' "/proc/$PEER/stat"; }

# measure PEER_LABEL CALLS_COUNTED command... : runs a client, prints its JSON line with the peer label and the
# peer's CPU µs per call added.
measure() {
    local label=$1 counted=$2
    shift 2
    local hz before line after
    hz=$(getconf CLK_TCK)
    before=$(ticks)
    line=$("${CLIENT_CPU[@]}" "$@" | tail -1)
    after=$(ticks)
    printf '{"peer":"%s","peer_cpu_us":%s,%s\n' "$label" \
        "$(awk -v t=$((after - before)) -v n="$counted" -v hz="$hz" 'BEGIN{printf "%.0f", t * 1e6 / hz / n}')" \
        "${line#\{}"
}

start_peer() {
    local kind=$1 port=$2
    if [[ $kind == thread ]]; then
        "${SERVER_CPU[@]}" "$PY" "$ROOT/protocol-triple/tests/peers/grpc_peer.py" "$port" \
            "$ROOT/protocol-triple/tests/fixtures/proto" >"$LOG" 2>&1 &
    else
        "${SERVER_CPU[@]}" "$PY" "$ROOT/protocol-triple/tests/peers/grpc_aio_peer.py" "$port" >"$LOG" 2>&1 &
    fi
    PEER=$!
    for _ in $(seq 1 100); do grep -q PORT "$LOG" 2>/dev/null && break; sleep 0.2; done
}

echo "# $(uptime) pin=${PIN:-0}"
for kind in $PEER_KINDS; do
    port=$PORT
    [[ $kind == aio ]] && port=$((PORT + 2))
    start_peer "$kind" "$port"
    T=tri://127.0.0.1:$port
    "$BIN" invoke "$T" tritest.Greeter SayHello '[{"name":"bench"}]' --proto "$PROTO" --timeout 5000 --repeat 2000 \
        --concurrency 16 >/dev/null
    for c in 1 64; do
        n=$N1; [[ $c == 64 ]] && n=$N64
        warm=$((n < 2000 ? n : 2000))
        for r in $(seq 1 "$ROUNDS"); do
            measure "$kind" "$n" "$BIN" invoke "$T" tritest.Greeter SayHello '[{"name":"bench"}]' --proto "$PROTO" \
                --timeout 5000 --repeat "$n" --concurrency "$c" --json | sed "s/^{/{\"round\":$r,\"client\":\"dubbo-registry (protocol-triple, IDL)\",/"
            measure "$kind" "$((n + 1))" "$PY" "$ROOT/protocol-triple/tests/peers/grpc_bench_client.py" \
                "127.0.0.1:$port" "$n" "$c" | sed "s/^{/{\"round\":$r,/"
            if [[ -x $LOAD ]]; then
                measure "$kind" "$((n + warm + 1))" "$LOAD" "127.0.0.1:$port" "$n" "$c" 1 client \
                    | sed "s/^{/{\"coalescing\":true,/; s/\"round\":1/\"round\":$r/"
                TRIPLE_LOAD_COALESCE=0 measure "$kind" "$((n + warm + 1))" "$LOAD" "127.0.0.1:$port" "$n" "$c" 1 \
                    client | sed "s/^{/{\"coalescing\":false,/; s/\"round\":1/\"round\":$r/"
                measure "$kind" "$((n + warm + 1))" "$LOAD" "127.0.0.1:$port" "$n" "$c" 1 tonic \
                    | sed "s/\"round\":1/\"round\":$r/"
            fi
            if [[ $kind == thread ]]; then
                measure "$kind" "$n" "$BIN" invoke "$T" org.apache.dubbo.tritest.DemoService sayHello '["rust"]' \
                    --types java.lang.String --timeout 5000 --repeat "$n" --concurrency "$c" --json \
                    | sed "s/^{/{\"round\":$r,\"client\":\"dubbo-registry (protocol-triple, wrapper)\",/"
            fi
        done
    done
    kill "$PEER" 2>/dev/null || true
    wait "$PEER" 2>/dev/null || true
    PEER=
done
echo "# $(uptime)"
if [[ -d $PEERS/java-dubbo/classes ]]; then
    DPORT=$((PORT + 1))
    exec 3> >(bash "$ROOT/scripts/peers/java-dubbo.sh" run --port "$DPORT" >/tmp/bench-triple-java.$$ 2>&1)
    for _ in $(seq 1 100); do grep -q READY /tmp/bench-triple-java.$$ 2>/dev/null && break; sleep 0.2; done
    S=org.apache.dubbo.demo.DemoService
    "$BIN" invoke "dubbo://127.0.0.1:$DPORT" $S sayHello '["rust"]' --version 1.0.0 --timeout 5000 --repeat 20000 \
        --concurrency 16 >/dev/null
    for c in 1 64; do
        n=$N1; [[ $c == 64 ]] && n=$N64
        printf '{"client":"dubbo-registry (protocol-dubbo, Java peer)",'
        "${CLIENT_CPU[@]}" "$BIN" invoke "dubbo://127.0.0.1:$DPORT" $S sayHello '["rust"]' --version 1.0.0 \
            --timeout 5000 --repeat "$n" --concurrency "$c" --json | sed 's/^{//'
    done
    exec 3>&-
fi
