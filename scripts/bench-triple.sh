#!/usr/bin/env bash
# bench-triple.sh - Triple calls on loopback against the grpcio peer (scripts/peers/python-grpc.sh), in one run,
# alternating for ROUNDS rounds: our client through the CLI (`dubbo-registry invoke tri://... --proto ... --repeat`),
# grpcio's own client (grpc.aio, protocol-triple/tests/peers/grpc_bench_client.py), and, when the example is built,
# protocol-triple's `triple_load` example (TripleInvoker, TripleClient and tonic 0.14 Grpc::unary in one process),
# 1 and 64 calls in flight, SayHello{name:"bench"}; wrapper-mode sayHello on the grpcio wrapper peer; then Triple vs
# Dubbo2 from the same binary: Dubbo2 sayHello on the Java Dubbo2 peer (scripts/peers/java-dubbo.sh) when it is
# installed. One JSON line per measurement; `uptime` before and after.
#
#   cargo build --release -p cli && cargo build --release -p protocol-triple --example triple_load
#   bash scripts/bench-triple.sh [CALLS_1] [CALLS_64] [ROUNDS]      (defaults 5000, 20000 and 2)
# Env: DUBBO_REGISTRY=path/to/release/dubbo-registry (default target/release/dubbo-registry),
#      TRIPLE_LOAD=path/to/triple_load (default target/release/examples/triple_load), PORT (default 50961).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DUBBO_REGISTRY:-$ROOT/target/release/dubbo-registry}
PORT=${PORT:-50961}
N1=${1:-5000}
N64=${2:-20000}
ROUNDS=${3:-2}
LOAD=${TRIPLE_LOAD:-$ROOT/target/release/examples/triple_load}
PEERS=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
PY=$PEERS/python-grpc/venv/bin/python
PROTO=$ROOT/protocol-triple/tests/fixtures/proto/test.proto
bash "$ROOT/scripts/peers/python-grpc.sh" install >/dev/null
"$PY" "$ROOT/protocol-triple/tests/peers/grpc_peer.py" "$PORT" "$ROOT/protocol-triple/tests/fixtures/proto" \
    >/tmp/bench-triple-peer.$$ 2>&1 &
PEER=$!
trap 'kill $PEER 2>/dev/null; rm -f /tmp/bench-triple-peer.$$' EXIT
for _ in $(seq 1 100); do grep -q PORT /tmp/bench-triple-peer.$$ 2>/dev/null && break; sleep 0.2; done
T=tri://127.0.0.1:$PORT
"$BIN" invoke "$T" tritest.Greeter SayHello '[{"name":"bench"}]' --proto "$PROTO" --timeout 5000 --repeat 2000 \
    --concurrency 16 >/dev/null
echo "# $(uptime)"
for c in 1 64; do
    n=$N1; [[ $c == 64 ]] && n=$N64
    for r in $(seq 1 "$ROUNDS"); do
        printf '{"round":%s,"client":"dubbo-registry (protocol-triple, IDL)",' "$r"
        "$BIN" invoke "$T" tritest.Greeter SayHello '[{"name":"bench"}]' --proto "$PROTO" --timeout 5000 \
            --repeat "$n" --concurrency "$c" --json | sed 's/^{//'
        "$PY" "$ROOT/protocol-triple/tests/peers/grpc_bench_client.py" "127.0.0.1:$PORT" "$n" "$c"
        if [[ -x $LOAD ]]; then
            "$LOAD" "127.0.0.1:$PORT" "$n" "$c" 1 invoker,client,tonic
        fi
        printf '{"round":%s,"client":"dubbo-registry (protocol-triple, wrapper)",' "$r"
        "$BIN" invoke "$T" org.apache.dubbo.tritest.DemoService sayHello '["rust"]' --types java.lang.String \
            --timeout 5000 --repeat "$n" --concurrency "$c" --json | sed 's/^{//'
    done
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
        "$BIN" invoke "dubbo://127.0.0.1:$DPORT" $S sayHello '["rust"]' --version 1.0.0 --timeout 5000 \
            --repeat "$n" --concurrency "$c" --json | sed 's/^{//'
    done
    exec 3>&-
    rm -f /tmp/bench-triple-java.$$
fi
