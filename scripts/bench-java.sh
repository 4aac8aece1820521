#!/usr/bin/env bash
# bench-java.sh - consumers calling the same warmed real Java Dubbo 3.3.6 provider (scripts/peers/java-dubbo3.sh,
# com.example.peer.DemoService#sayHello("bench")), in one run: ours (`dubbo-registry invoke --repeat`, release build),
# the real Java Dubbo 3.3.6 consumer (full JIT, warmed up with JAVA_WARMUP calls in the same JVM before measuring),
# the dubbo-go 3.3.2 consumer (scripts/peers/go-dubbo.sh consumer) and the provider's floor (scripts/bench-floor.py:
# the same call as fixed bytes from a client that does no work, the most any client can get from this provider).
# Dubbo2 (Hessian2) and Triple (wrapper mode, Hessian2), 1 and 64 calls in flight, the clients alternated in ROUNDS
# rounds. The provider runs on CPU PROVIDER_CPU, every client on CPU CLIENT_CPU (taskset), so client and provider never
# share a core; each round starts with the next client in turn.
#
#   bash scripts/bench-java.sh [CALLS_1] [CALLS_64] [ROUNDS]        (defaults 5000, 20000 and 3)
#
# Self-contained: installs the peers (pinned, cached), builds the release CLI, starts the provider, warms it up,
# measures, prints one JSON line per run and then a table of the medians per (protocol, in flight, client), with
# ours/Java ratios. Per run: calls/s, p50/p99 (µs), the client's own CPU time per measured call (getrusage /
# the JVM's process CPU time) and the provider's CPU time per call (/proc/PID/stat over the client's run, its warm-up
# calls included in the count).
# Env: JAVA_WARMUP (default 20000), WARMUP (ours and Go, default 2000), PROVIDER_CPU (1), CLIENT_CPU (0), NO_PIN=1
#      (no taskset), PROTOCOLS ("dubbo tri"), CLIENTS ("rust java go floor"), CONCURRENCY ("1 64"),
#      DUBBO_REGISTRY (a built binary; skips the cargo build), OUT (also append the JSON lines to this file).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N1=${1:-5000}
N64=${2:-20000}
ROUNDS=${3:-3}
JAVA_WARMUP=${JAVA_WARMUP:-20000}
WARMUP=${WARMUP:-2000}
PROTOCOLS=${PROTOCOLS:-dubbo tri}
CLIENTS=${CLIENTS:-rust java go floor}
CONCURRENCY=${CONCURRENCY:-1 64}
SERVICE=com.example.peer.DemoService
export DUBBO_TEST_PEERS_DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
PROVIDER_PIN=()
CLIENT_PIN=()
if [[ ${NO_PIN:-0} != 1 ]]; then
    PROVIDER_PIN=(taskset -c "${PROVIDER_CPU:-1}")
    CLIENT_PIN=(taskset -c "${CLIENT_CPU:-0}")
fi

# ---- install and build -------------------------------------------------------------------------------------------
bash "$ROOT/scripts/peers/java-dubbo3.sh" install >&2
bash "$ROOT/scripts/peers/go-dubbo.sh" install >&2
if [[ -z ${DUBBO_REGISTRY:-} ]]; then
    (cd "$ROOT" && cargo build --release -q -p cli --bin dubbo-registry) >&2
    DUBBO_REGISTRY=$ROOT/target/release/dubbo-registry
fi
BIN=$DUBBO_REGISTRY

# ---- the provider --------------------------------------------------------------------------------------------------
TMP=$(mktemp -d /tmp/bench-java.XXXXXX)
PROVIDER=
cleanup() {
    if [[ -n $PROVIDER ]]; then
        kill -TERM "$PROVIDER" 2>/dev/null || true
        wait "$PROVIDER" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
DPORT=$(free_port)
TPORT=$(free_port)
MPORT=$(free_port)
# Full JIT (JAVA_JIT empty): the peer script's default is C1 only, for fast test start-up.
JAVA_JIT= "${PROVIDER_PIN[@]}" bash "$ROOT/scripts/peers/java-dubbo3.sh" provider --app bench-java-provider \
    --protocols dubbo,tri --services demo --version 1.0.0 \
    --dubbo-port "$DPORT" --tri-port "$TPORT" --metadata-port "$MPORT" >"$TMP/provider.log" 2>&1 &
PROVIDER=$!
for _ in $(seq 1 300); do
    grep -aq '^READY\|^FAILED' "$TMP/provider.log" 2>/dev/null && break
    sleep 0.2
done
grep -aq '^READY' "$TMP/provider.log" || { echo "bench-java: the provider did not start" >&2; tail -20 "$TMP/provider.log" >&2; exit 1; }
JVM=$(grep -a '^READY' "$TMP/provider.log" | sed 's/^READY //' | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$JVM/stat"; }

target() { if [[ $1 == dubbo ]]; then echo "dubbo://127.0.0.1:$DPORT"; else echo "tri://127.0.0.1:$TPORT"; fi; }

# Warm the provider up on both protocols (its JIT), with our client, many calls in flight and then one: the first
# client measured at 1 in flight after a warm-up under load alone paid for the provider's recompilation (twice the
# provider CPU per call, whichever client it was).
for p in $PROTOCOLS; do
    "$BIN" invoke "$(target "$p")" $SERVICE sayHello '["bench"]' --version 1.0.0 --timeout 5000 --repeat 30000 \
        --concurrency 16 >/dev/null
    "$BIN" invoke "$(target "$p")" $SERVICE sayHello '["bench"]' --version 1.0.0 --timeout 5000 --repeat 10000 \
        --concurrency 1 >/dev/null
done
# Its JIT keeps compiling for seconds after the warm-up, on the provider's one CPU: the first client measured would
# share that CPU with the compiler (provider CPU per call doubles, p99 grows tenfold). Wait until the idle provider
# uses under 2 % of a CPU over a second (at most a minute).
settle() {
    local a b
    for _ in $(seq 1 60); do
        a=$(ticks)
        sleep 1
        b=$(ticks)
        (((b - a) * 100 <= 2 * HZ)) && return
    done
    echo "bench-java: the provider never settled (still busy after a minute)" >&2
}
settle

# ---- one run -------------------------------------------------------------------------------------------------------
# run ROUND PROTOCOL CONCURRENCY CLIENT: prints one normalized JSON line.
run() {
    local round=$1 proto=$2 c=$3 client=$4 n warm before after raw
    n=$N1
    [[ $c == 64 ]] && n=$N64
    local t
    t=$(target "$proto")
    case $client in
        rust)
            warm=$WARMUP
            before=$(ticks)
            raw=$("${CLIENT_PIN[@]}" "$BIN" invoke "$t" $SERVICE sayHello '["bench"]' --version 1.0.0 --timeout 5000 \
                --repeat "$n" --concurrency "$c" --warmup "$warm" --json | tail -1)
            after=$(ticks)
            warm=$((warm + 1)) # the connecting call
            ;;
        java)
            warm=$JAVA_WARMUP
            before=$(ticks)
            raw=$(JAVA_JIT= "${CLIENT_PIN[@]}" bash "$ROOT/scripts/peers/java-dubbo3.sh" consumer --url "$t" \
                --version 1.0.0 --method sayHello --args '["bench"]' --timeout 5000 --retries 0 \
                --repeat "$n" --concurrency "$c" --warmup "$warm" 2>"$TMP/java-consumer.log" | tail -1)
            after=$(ticks)
            ;;
        floor)
            warm=$WARMUP
            before=$(ticks)
            raw=$("${CLIENT_PIN[@]}" python3 "$ROOT/scripts/bench-floor.py" "$proto" "${t##*:}" "$n" "$c" "$warm")
            after=$(ticks)
            ;;
        go)
            warm=$WARMUP
            before=$(ticks)
            raw=$("${CLIENT_PIN[@]}" bash "$ROOT/scripts/peers/go-dubbo.sh" consumer --url "$t" --version 1.0.0 \
                --method sayHello --arg bench --repeat "$n" --concurrency "$c" --warmup "$warm" \
                2>"$TMP/go-consumer.log" | tail -1)
            after=$(ticks)
            ;;
    esac
    python3 - "$round" "$proto" "$c" "$client" "$n" "$warm" "$((after - before))" "$HZ" "$raw" <<'EOF'
import json, sys
round_, proto, c, client, n, warm, ticks, hz, raw = sys.argv[1:]
try:
    r = json.loads(raw)
except ValueError:
    r = {"errors": -1, "raw": raw[-300:]}
ms = lambda k: r[k] * 1000 if isinstance(r.get(k), (int, float)) else None
out = {
    "round": int(round_), "protocol": proto, "concurrency": int(c),
    "client": {"rust": "dubbo-registry", "java": "Java Dubbo 3.3.6", "go": "dubbo-go 3.3.2",
           "floor": "no-work floor"}[client],
    "calls": int(n), "errors": r.get("errors"),
    "calls_per_sec": round(r.get("calls_per_sec", 0), 1),
    "p50_us": r.get("p50_us", ms("p50_ms")), "p99_us": r.get("p99_us", ms("p99_ms")),
    "client_cpu_us_per_call": round(r.get("cpu_us_per_call", 0), 1),
    "provider_cpu_us_per_call": round(int(ticks) * 1e6 / int(hz) / (int(n) + int(warm)), 1),
}
if "raw" in r:
    out["raw"] = r["raw"]
print(json.dumps(out))
EOF
}

# ---- rounds ------------------------------------------------------------------------------------------------------
echo "# $(uptime | sed 's/^ *//') | pin: provider ${PROVIDER_PIN[*]:-none}, clients ${CLIENT_PIN[*]:-none}" >&2
LINES=$TMP/lines.jsonl
read -r -a ORDER <<<"$CLIENTS"
for r in $(seq 1 "$ROUNDS"); do
    for proto in $PROTOCOLS; do
        for c in $CONCURRENCY; do
            # Each round starts with the next client, so no client always runs right after another one.
            for i in "${!ORDER[@]}"; do
                client=${ORDER[$(((i + r - 1) % ${#ORDER[@]}))]}
                line=$(run "$r" "$proto" "$c" "$client")
                echo "$line"
                echo "$line" >>"$LINES"
                [[ -n ${OUT:-} ]] && echo "$line" >>"$OUT"
            done
        done
    done
done
echo "# $(uptime | sed 's/^ *//')" >&2

# ---- medians -------------------------------------------------------------------------------------------------------
python3 - "$LINES" <<'EOF' >&2
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r["protocol"], r["concurrency"]) for r in rows}, key=lambda k: (k[0] != "dubbo", k[1]))
clients = ["dubbo-registry", "Java Dubbo 3.3.6", "dubbo-go 3.3.2", "no-work floor"]
med = lambda xs: statistics.median(xs) if xs else float("nan")
print("| protocol | in flight | client | calls/s | p50 µs | p99 µs | client CPU µs/call | provider CPU µs/call | errors |")
print("|---|---|---|---|---|---|---|---|---|")
summary = {}
for k in keys:
    for cl in clients:
        rs = [r for r in rows if (r["protocol"], r["concurrency"]) == k and r["client"] == cl]
        if not rs:
            continue
        m = {f: med([r[f] for r in rs if isinstance(r.get(f), (int, float))]) for f in
             ["calls_per_sec", "p50_us", "p99_us", "client_cpu_us_per_call", "provider_cpu_us_per_call"]}
        m["errors"] = sum(r["errors"] if isinstance(r.get("errors"), int) else 1 for r in rs)
        summary[(k, cl)] = m
        print(f"| {k[0]} | {k[1]} | {cl} | {m['calls_per_sec']:.0f} | {m['p50_us']:.0f} | {m['p99_us']:.0f} | "
              f"{m['client_cpu_us_per_call']:.1f} | {m['provider_cpu_us_per_call']:.1f} | {m['errors']} |")
print()
print("| protocol | in flight | ours / Java calls/s | Java p99 / ours p99 | Java client CPU / ours | ours / dubbo-go calls/s "
      "| ours / floor calls/s | floor / Java calls/s |")
print("|---|---|---|---|---|---|---|---|")
for k in keys:
    o, j, g, f = (summary.get((k, c)) for c in clients)
    if not o or not j:
        continue
    gr = f"{o['calls_per_sec'] / g['calls_per_sec']:.2f}" if g else "-"
    fo = f"{o['calls_per_sec'] / f['calls_per_sec']:.2f}" if f else "-"
    fj = f"{f['calls_per_sec'] / j['calls_per_sec']:.2f}" if f else "-"
    print(f"| {k[0]} | {k[1]} | {o['calls_per_sec'] / j['calls_per_sec']:.2f} | {j['p99_us'] / o['p99_us']:.2f} | "
          f"{j['client_cpu_us_per_call'] / max(o['client_cpu_us_per_call'], 1e-9):.2f} | {gr} | {fo} | {fj} |")
EOF
