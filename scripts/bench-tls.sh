#!/usr/bin/env bash
# bench-tls.sh - calls/s with TLS vs without, same run: two real Apache Dubbo 3.3.6 (Java) providers
# (scripts/peers/java-dubbo3.sh, C2 JIT), one plaintext and one with Dubbo's SslConfig (a P-256
# certificate made here with the openssl CLI), both serving dubbo and tri; the release
# `dubbo-registry invoke --repeat N --concurrency C --json` calls DemoService.sayHello on each, in
# alternating rounds, with 1 and 64 calls in flight, over Dubbo2 and Triple. Prints one JSON line per
# run and a table (calls/s, p50, p99, and the client's CPU time per call, the steadier number on a
# busy machine).
#
#   bash scripts/bench-tls.sh [ROUNDS (3)] [CALLS_1 (4000)] [CALLS_64 (20000)]
#
# Needs: JDK 17 + Maven (the peer installs itself), openssl, cargo (builds the release CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
CALLS_1=${2:-4000}
CALLS_64=${3:-20000}

cargo build -q --release -p cli --bin dubbo-registry
CLI=target/release/dubbo-registry
bash scripts/peers/java-dubbo3.sh install >/dev/null

WORK=$(mktemp -d -t bench-tls.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# A throw-away CA and a server certificate for 127.0.0.1.
(
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
        -days 1 -subj /CN=bench-ca 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
        -subj /CN=provider 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 \
        -extfile ext 2>/dev/null
    openssl pkcs8 -topk8 -nocrypt -in server.key -out server.p8.key
)

# start NAME ARGS...: a provider in the background (its pid kept for the cleanup); waits for READY
# and writes "DUBBO_PORT TRI_PORT" to $WORK/NAME.ports.
start() {
    local name=$1 out
    shift
    out="$WORK/$name.out"
    JAVA_JIT= bash scripts/peers/java-dubbo3.sh provider --registry none --protocols dubbo,tri \
        --services demo --version 1.0.0 "$@" >"$out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    for _ in $(seq 1 120); do
        if grep -q '^READY ' "$out"; then
            sed -n 's/^READY //p' "$out" | python3 -c 'import json,sys; p=json.load(sys.stdin)["ports"]; print(p["dubbo"], p["tri"])' >"$WORK/$name.ports"
            return
        fi
        grep -q '^FAILED' "$out" && { cat "$out" "$WORK/$name.err" >&2; exit 1; }
        sleep 0.5
    done
    echo "bench-tls: provider $name did not start" >&2
    exit 1
}

start plain
start tls --ssl-server-cert "$WORK/server.pem" --ssl-server-key "$WORK/server.p8.key" --ssl-enabled true
read -r PLAIN_DUBBO PLAIN_TRI <"$WORK/plain.ports"
read -r TLS_DUBBO TLS_TRI <"$WORK/tls.ports"

run() { # protocol port in_flight calls tls(yes|no)
    local flags=()
    [[ $5 == yes ]] && flags=(--tls --tls-ca "$WORK/ca.pem")
    "$CLI" invoke "$1://127.0.0.1:$2" com.example.peer.DemoService sayHello '["rust"]' --version 1.0.0 \
        --timeout 5000 --repeat "$4" --concurrency "$3" --json "${flags[@]}"
}

RESULTS="$WORK/results"
# Warm both JVMs up (C2) on every path before measuring.
for p in dubbo tri; do
    for t in no yes; do
        if [[ $p == dubbo ]]; then port=$([[ $t == yes ]] && echo "$TLS_DUBBO" || echo "$PLAIN_DUBBO"); else
            port=$([[ $t == yes ]] && echo "$TLS_TRI" || echo "$PLAIN_TRI"); fi
        run "$p" "$port" 64 "$CALLS_64" "$t" >/dev/null
    done
done
for round in $(seq 1 "$ROUNDS"); do
    for p in dubbo tri; do
        for c in 1 64; do
            calls=$([[ $c == 1 ]] && echo "$CALLS_1" || echo "$CALLS_64")
            for t in no yes; do
                if [[ $p == dubbo ]]; then port=$([[ $t == yes ]] && echo "$TLS_DUBBO" || echo "$PLAIN_DUBBO"); else
                    port=$([[ $t == yes ]] && echo "$TLS_TRI" || echo "$PLAIN_TRI"); fi
                line=$(run "$p" "$port" "$c" "$calls" "$t")
                echo "{\"round\":$round,\"protocol\":\"$p\",\"tls\":\"$t\",\"stats\":$line}" | tee -a "$RESULTS"
            done
        done
    done
done

echo
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| protocol | in flight | round | plaintext calls/s, p50, p99 | TLS calls/s, p50, p99 | calls/s TLS / plaintext | client CPU µs per call, plaintext / TLS |")
print("|---|---|---|---|---|---|---|")
key = lambda r: (r["protocol"], r["stats"]["concurrency"], r["round"])
by = {}
for r in rows:
    by.setdefault(key(r), {})[r["tls"]] = r["stats"]
for (p, c, rnd), m in sorted(by.items()):
    a, b = m["no"], m["yes"]
    fmt = lambda s: f'{s["calls_per_sec"]:,.0f}, {s["p50_us"]:.0f} µs, {s["p99_us"]:.0f} µs'
    cpu = f'{a["cpu_us_per_call"]:.1f} / {b["cpu_us_per_call"]:.1f}'
    print(f'| {p} | {c} | {rnd} | {fmt(a)} | {fmt(b)} | {b["calls_per_sec"] / a["calls_per_sec"]:.2f} | {cpu} |')
EOF
