#!/usr/bin/env bash
# bench-nacos.sh - Nacos over gRPC, release builds, one private rnacos, all clients in the same run:
#   (1) register/unregister -> consumer-sees-it latency of ours (registry-nacos, release), the official
#       `nacos-sdk` crate (bench/nacos-sdk-peer, release) and PyPI nacos-sdk-python 3.2 (when installed),
#       all subscribed to the same service at once; alternating rounds of push mode and the opt-in
#       ServiceQuery mode (nacos.query-interval=QUERY_MS);
#   (2) CPU and memory of 1,000 subscribed services on one connection: ours, then nacos-sdk.
# One JSON object per measurement on stdout (and in $OUT/*.json); `uptime` before and after.
#
#   bash scripts/bench-nacos.sh [ROUNDS] [CHANGES]        (defaults 2 and 60; each round ~1.5 s per change)
# Env: NACOS_BENCH_PORT (private rnacos HTTP port, default 8880; gRPC = +1000), QUERY_MS (default 200),
#      SUBS (default 1000), OUT (default target/bench-nacos), DUBBO_TEST_PEERS_DIR (python peer, optional),
#      SKIP_BUILD=1 (use the binaries already built).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-2}
CHANGES=${2:-60}
PORT=${NACOS_BENCH_PORT:-8880}
QUERY_MS=${QUERY_MS:-200}
SUBS=${SUBS:-1000}
OUT=${OUT:-$ROOT/target/bench-nacos}
PEERS=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
PY=$PEERS/python-nacos/venv/bin/python
SDK=$ROOT/bench/nacos-sdk-peer/target/release/nacos-sdk-peer
OURS=$ROOT/target/release/examples/nacos_latency
mkdir -p "$OUT"

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    (cd "$ROOT" && cargo build --release -p registry-nacos --example nacos_latency)
    (cd "$ROOT/bench/nacos-sdk-peer" && cargo build --release --locked)
fi
[[ -x $OURS && -x $SDK ]] || { echo "bench-nacos: build the binaries first" >&2; exit 1; }

export NACOS_STATE_DIR=${NACOS_STATE_DIR:-/tmp/bench-nacos-state}
bash "$ROOT/scripts/nacos-server.sh" start "$PORT" >&2
trap 'bash "$ROOT/scripts/nacos-server.sh" stop "$PORT" >&2 || true' EXIT
ADDR=127.0.0.1:$PORT

PEER_ARGS=(--sdk "$SDK")
if [[ -x $PY ]]; then PEER_ARGS+=(--python "$PY"); else echo "bench-nacos: python peer not installed; skipped" >&2; fi

echo "{\"uptime_before\":\"$(uptime)\"}"
for r in $(seq 1 "$ROUNDS"); do
    for mode in push query; do
        extra=()
        [[ $mode == query ]] && extra=(--query-interval "$QUERY_MS")
        "$OURS" --addr "$ADDR" --transport grpc --changes "$CHANGES" --services 5 --idle-secs 10 \
            "${extra[@]}" "${PEER_ARGS[@]}" | tr -d '\n ' | sed "s/^{/{\"round\":$r,\"mode\":\"$mode\",/" \
            | tee "$OUT/latency-$mode-$r.json"
        echo
    done
done
# 1,000 subscriptions on one connection: ours, then the nacos-sdk crate.
"$OURS" --addr "$ADDR" --transport grpc --changes 2 --services "$SUBS" --idle-secs 10 | tr -d '\n ' \
    | sed 's/^{/{"client":"registry-nacos",/' | tee "$OUT/subs-ours.json"
echo
"$SDK" many "$ADDR" "bench-sdk-$$" org.bench.Idle "$SUBS" 10 | sed 's/^{/{"client":"nacos-sdk",/' \
    | tee "$OUT/subs-sdk.json"
echo "{\"uptime_after\":\"$(uptime)\"}"
