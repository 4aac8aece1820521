#!/usr/bin/env bash
# bench-dubbo.sh - Dubbo2 calls on loopback against the Java peer (scripts/peers/java-dubbo.sh), in one run,
# alternating in every round: our client (`dubbo-registry invoke --repeat`), the Node sofa-rpc-node consumer
# (scripts/peers/node-dubbo.sh, protocol-dubbo/tests/node/bench.js) and the Python dubbo-ssl-python consumer
# (scripts/peers/python-grpc.sh's venv, protocol-dubbo/tests/python/dubbo_ssl_bench.py), 1 and 64 calls in
# flight, sayHello("rust"); in every round also the raw TCP round trip (64 B to an in-process echo, the
# floor) from the bench crate's dubbo-load bin. Prints one JSON line per measurement, `uptime` first and last.
#
#   bash scripts/bench-dubbo.sh [CALLS_1] [CALLS_64] [ROUNDS]      (defaults 20000, 100000, 2)
# Env: DUBBO_REGISTRY=path/to/release/dubbo-registry (default target/release/dubbo-registry), DUBBO_LOAD
# (default target/release/dubbo-load: `cargo build --release -p bench --bin dubbo-load`), PORT (default
# 20971), PY_CALLS_DIV (default 1: every client makes the same number of calls; N gives Python CALLS/N), NO_PYTHON=1, NO_NODE=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DUBBO_REGISTRY:-$ROOT/target/release/dubbo-registry}
LOAD=${DUBBO_LOAD:-$ROOT/target/release/dubbo-load}
PORT=${PORT:-20971}
N1=${1:-20000}
N64=${2:-100000}
ROUNDS=${3:-2}
DIV=${PY_CALLS_DIV:-1}
PEERS=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
S=org.apache.dubbo.demo.DemoService
bash "$ROOT/scripts/peers/java-dubbo.sh" install >/dev/null
[[ -n ${NO_NODE:-} ]] || bash "$ROOT/scripts/peers/node-dubbo.sh" install >/dev/null
[[ -n ${NO_PYTHON:-} ]] || bash "$ROOT/scripts/peers/python-grpc.sh" install >/dev/null
PY=$PEERS/python-grpc/venv/bin/python
PYBENCH=$ROOT/protocol-dubbo/tests/python/dubbo_ssl_bench.py
LOG=$(mktemp /tmp/bench-dubbo-peer.XXXXXX)
# The peer exits when its stdin closes: keep a pipe open for the run.
exec 3> >(bash "$ROOT/scripts/peers/java-dubbo.sh" run --port "$PORT" >"$LOG" 2>&1)
trap 'exec 3>&-; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do grep -q READY "$LOG" 2>/dev/null && break; sleep 0.2; done
echo "{\"uptime\":\"$(uptime)\"}"
# Our client: the CLI when built, else dubbo-load (the same DubboInvoker call path, fewer dependencies).
ours() {
    if [[ -x $BIN ]]; then
        printf '{"client":"dubbo-registry (protocol-dubbo)",'
        "$BIN" invoke "dubbo://127.0.0.1:$PORT" $S sayHello '["rust"]' --version 1.0.0 --timeout 5000 \
            --repeat "$1" --concurrency "$2" --json | sed 's/^{//'
    else
        "$LOAD" "127.0.0.1:$PORT" "$1" "$2"
    fi
}
node_client() { [[ -n ${NO_NODE:-} ]] || node "$PEERS/node-dubbo/bench.js" "127.0.0.1:$PORT" "$1" "$2"; }
python_client() { [[ -n ${NO_PYTHON:-} ]] || "$PY" "$PYBENCH" "127.0.0.1:$PORT" "$(( $1 / DIV ))" "$2"; }
# Warm the JVM up with every client.
ours 20000 16 >/dev/null
node_client 20000 16 >/dev/null
python_client 8000 16 >/dev/null
for round in $(seq 1 "$ROUNDS"); do
    for c in 1 64; do
        n=$N1; [[ $c == 64 ]] && n=$N64
        echo "{\"round\":$round,\"in_flight\":$c}"
        ours "$n" "$c"
        node_client "$n" "$c"
        python_client "$n" "$c"
    done
    [[ -x $LOAD ]] && "$LOAD" raw "$N1"
done
echo "{\"uptime\":\"$(uptime)\"}"
