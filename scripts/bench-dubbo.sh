#!/usr/bin/env bash
# bench-dubbo.sh - Dubbo2 calls on loopback against the Java peer (scripts/peers/java-dubbo.sh), in one run:
# our client (`dubbo-registry invoke --repeat`) and the Node sofa-rpc-node consumer (scripts/peers/node-dubbo.sh
# bench), 1 and 64 calls in flight, sayHello("rust"). Prints one JSON line per measurement.
#
#   bash scripts/bench-dubbo.sh [CALLS_1] [CALLS_64]      (defaults 20000 and 100000)
# Env: DUBBO_REGISTRY=path/to/release/dubbo-registry (default target/release/dubbo-registry), PORT (default 20971).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DUBBO_REGISTRY:-$ROOT/target/release/dubbo-registry}
PORT=${PORT:-20971}
N1=${1:-20000}
N64=${2:-100000}
S=org.apache.dubbo.demo.DemoService
bash "$ROOT/scripts/peers/java-dubbo.sh" install >/dev/null
bash "$ROOT/scripts/peers/node-dubbo.sh" install >/dev/null
# The peer exits when its stdin closes: keep a pipe open for the run.
exec 3> >(bash "$ROOT/scripts/peers/java-dubbo.sh" run --port "$PORT" >/tmp/bench-dubbo-peer.$$ 2>&1)
trap 'exec 3>&-' EXIT
for _ in $(seq 1 100); do grep -q READY /tmp/bench-dubbo-peer.$$ 2>/dev/null && break; sleep 0.2; done
# Warm the JVM up with both clients.
"$BIN" invoke "dubbo://127.0.0.1:$PORT" $S sayHello '["rust"]' --version 1.0.0 --timeout 5000 --repeat 20000 --concurrency 16 >/dev/null
node "${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/node-dubbo/bench.js" "127.0.0.1:$PORT" 20000 16 >/dev/null
for c in 1 64; do
    n=$N1; [[ $c == 64 ]] && n=$N64
    printf '{"client":"dubbo-registry (protocol-dubbo)",'
    "$BIN" invoke "dubbo://127.0.0.1:$PORT" $S sayHello '["rust"]' --version 1.0.0 --timeout 5000 \
        --repeat "$n" --concurrency "$c" --json | sed 's/^{//'
    node "${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/node-dubbo/bench.js" "127.0.0.1:$PORT" "$n" "$c"
done
rm -f /tmp/bench-dubbo-peer.$$
