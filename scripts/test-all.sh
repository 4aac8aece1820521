#!/usr/bin/env bash
# test-all.sh - the whole test suite on a fresh machine (Debian, root, Rust, Java 17):
# installs and starts a real ZooKeeper (standalone + a 3-node ensemble) and real Nacos-compatible
# servers (rnacos, built once into ~/.cargo/bin), runs `cargo test --workspace` with the servers
# REQUIRED (a missing server fails the run), runs the conformance runner on ../shared vectors
# when present, the differential tests against Dubbo 3.3.6's own classes (scripts/differential.sh),
# and stops the servers it started.
#
# It runs beside what you already run: its servers get free ports on 127.0.0.1 chosen at start
# (a ZooKeeper of your own on 2181 or a Nacos on 8848 is left alone) and keep their state in a
# directory of this run. Set a port variable to pin it.
#
# Env: ZK_PORT, NACOS_PORT, NACOS_AUTH_PORT, NACOS_SHORT_PORT, ZK_ENSEMBLE_BASE (default: free
#      ports), ZK_STATE_DIR / NACOS_STATE_DIR (default: a fresh directory per run, removed after a
#      passing run), TEST_ARGS (extra args for cargo test).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"

log() { echo "test-all: $*"; }

# Free ports, chosen now: a block at a random base below the ephemeral range (restarted servers
# must find their port again), every port of it unused (no listener on 127.0.0.1). Layout from
# the base B: ZooKeeper B, Nacos B+10 / B+12 (auth) / B+14 (short timeouts) with gRPC on +1000,
# the servers tests start and stop themselves at B+20 (ZooKeeper), B+30 and B+32 (Nacos), the
# 3-node ensemble at B+200 (clients B+200..202, quorum/election B+300..305), a test's private
# 3-node Nacos cluster at B+40..42 (gRPC B+1040..1042) and private ensemble at B+400 (clients
# B+400..402, quorum/election B+500..505).
port_busy() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
block_free() {
    local b=$1 p
    for p in $b $((b + 10)) $((b + 12)) $((b + 14)) $((b + 1010)) $((b + 1012)) $((b + 1014)) \
        $((b + 20)) $((b + 30)) $((b + 32)) $((b + 1030)) $((b + 1032)) \
        $((b + 200)) $((b + 201)) $((b + 202)) $((b + 300)) $((b + 301)) $((b + 302)) $((b + 303)) \
        $((b + 304)) $((b + 305)) $((b + 40)) $((b + 41)) $((b + 42)) $((b + 1040)) $((b + 1041)) \
        $((b + 1042)) $((b + 400)) $((b + 401)) $((b + 402)) $((b + 500)) $((b + 501)) $((b + 502)) \
        $((b + 503)) $((b + 504)) $((b + 505)); do
        if port_busy "$p"; then return 1; fi
    done
}
BASE=
for _ in $(seq 1 50); do
    candidate=$((20000 + (RANDOM % 180) * 50))
    if block_free "$candidate"; then
        BASE=$candidate
        break
    fi
done
[[ -n "$BASE" ]] || { log "no free block of ports found in 20000-29999"; exit 1; }
ZK_PORT=${ZK_PORT:-$BASE}
NACOS_PORT=${NACOS_PORT:-$((BASE + 10))}
NACOS_AUTH_PORT=${NACOS_AUTH_PORT:-$((BASE + 12))}
NACOS_SHORT_PORT=${NACOS_SHORT_PORT:-$((BASE + 14))}
ZK_ENSEMBLE_BASE=${ZK_ENSEMBLE_BASE:-$((BASE + 200))}
export DUBBO_TEST_ZK_KILL9_PORT=${DUBBO_TEST_ZK_KILL9_PORT:-$((BASE + 20))}
export DUBBO_TEST_NACOS_RESTART_PORT=${DUBBO_TEST_NACOS_RESTART_PORT:-$((BASE + 30))}
export DUBBO_TEST_NACOS_GRPC_RESTART_PORT=${DUBBO_TEST_NACOS_GRPC_RESTART_PORT:-$((BASE + 32))}
export DUBBO_TEST_NACOS_CLUSTER_BASE=${DUBBO_TEST_NACOS_CLUSTER_BASE:-$((BASE + 40))}
export DUBBO_TEST_ZK_ENSEMBLE_PRIVATE_BASE=${DUBBO_TEST_ZK_ENSEMBLE_PRIVATE_BASE:-$((BASE + 400))}
RUN_STATE=$(mktemp -d -t dubbo-rs-test.XXXXXX)
export ZK_STATE_DIR=${ZK_STATE_DIR:-$RUN_STATE/zk}
export NACOS_STATE_DIR=${NACOS_STATE_DIR:-$RUN_STATE/nacos}
log "servers on 127.0.0.1: ZooKeeper $ZK_PORT, ensemble base $ZK_ENSEMBLE_BASE, Nacos $NACOS_PORT (auth $NACOS_AUTH_PORT, short timeouts $NACOS_SHORT_PORT); state in $RUN_STATE"

# A one-off build gains nothing from incremental state (it was ~20 GB on a developer machine), and
# CI disks can be small: build without it unless the caller asks, and show the free space at the
# start and the end so a full disk is named in the log.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
log "free disk at start: $(df -h . | awk 'NR==2 {print $4 " free of " $2}')"

# The slow test peers (the Maven resolve + compile of the real Java Dubbo peers and of the
# differential-test oracle, the dubbo-go build) start now, in the background beside the servers' start-up and the cargo build, and are
# waited for before `cargo test`. Each logs to $DUBBO_TEST_PEERS_DIR/<name>.install.log.
export DUBBO_TEST_PEERS_DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
mkdir -p "$DUBBO_TEST_PEERS_DIR"
SLOW_PEERS=(java-dubbo3 java-oracle go-dubbo)
declare -A SLOW_PIDS=()
for peer in "${SLOW_PEERS[@]}"; do
    log "building test peer $peer in the background"
    bash "scripts/peers/$peer.sh" install >"$DUBBO_TEST_PEERS_DIR/$peer.install.log" 2>&1 &
    SLOW_PIDS[$peer]=$!
done

cleanup() {
    for pid in "${SLOW_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    log "free disk at the end: $(df -h . | awk 'NR==2 {print $4 " free of " $2}'), target: $(du -sh target 2>/dev/null | cut -f1)"
    log "stopping the servers this run started"
    bash scripts/zk-server.sh ensemble-stop "$ZK_ENSEMBLE_BASE" >/dev/null 2>&1 || true
    for port in "$ZK_PORT" "$DUBBO_TEST_ZK_KILL9_PORT"; do
        bash scripts/zk-server.sh stop "$port" >/dev/null 2>&1 || true
    done
    for port in "$NACOS_PORT" "$NACOS_AUTH_PORT" "$NACOS_SHORT_PORT" "$DUBBO_TEST_NACOS_RESTART_PORT" \
        "$DUBBO_TEST_NACOS_GRPC_RESTART_PORT"; do
        bash scripts/nacos-server.sh stop "$port" >/dev/null 2>&1 || true
    done
    if [[ $PASSED == 1 ]]; then rm -rf "$RUN_STATE"; else log "server logs kept in $RUN_STATE"; fi
}
PASSED=0
trap cleanup EXIT

# cargo-deny (bans, licenses, duplicate versions, sources; checked at the end): pinned,
# installed once into ~/.cargo/bin, built in the background meanwhile (it takes minutes).
CARGO_DENY_VERSION=0.20.2
DENY_LOG=$(mktemp -t cargo-deny-install.XXXXXX)
if cargo deny --version 2>/dev/null | grep -qx "cargo-deny $CARGO_DENY_VERSION"; then
    DENY_PID=
else
    log "installing cargo-deny $CARGO_DENY_VERSION in the background"
    nice cargo install cargo-deny --locked --version "$CARGO_DENY_VERSION" >"$DENY_LOG" 2>&1 &
    DENY_PID=$!
fi

# The hostile-input tests measure a child's peak memory with GNU time under a prlimit cap.
if [[ ! -x /usr/bin/time || ! -x /usr/bin/prlimit ]]; then
    log "installing time and util-linux (peak-memory measurements)"
    apt-get install -y -q time util-linux >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q time util-linux >/dev/null; }
fi

# Build first (and rnacos in parallel on a fresh machine: it takes ~12 minutes).
log "starting ZooKeeper on 127.0.0.1:$ZK_PORT"
ZK_FRESH=1 bash scripts/zk-server.sh start "$ZK_PORT"
log "starting Nacos (rnacos) on 127.0.0.1:$NACOS_PORT"
NACOS_FRESH=1 bash scripts/nacos-server.sh start "$NACOS_PORT"
log "starting Nacos with open-API auth on 127.0.0.1:$NACOS_AUTH_PORT"
NACOS_FRESH=1 RNACOS_ENABLE_OPEN_API_AUTH=true RNACOS_INIT_ADMIN_USERNAME=nacos \
    RNACOS_INIT_ADMIN_PASSWORD=nacos bash scripts/nacos-server.sh start "$NACOS_AUTH_PORT"
log "starting Nacos with short instance timeouts on 127.0.0.1:$NACOS_SHORT_PORT"
NACOS_FRESH=1 RNACOS_NAMING_HEALTH_TIMEOUT_SECOND=1 RNACOS_NAMING_INSTANCE_TIMEOUT_SECOND=2 \
    bash scripts/nacos-server.sh start "$NACOS_SHORT_PORT"

# Test peers (third-party clients/providers: Java Hessian, Node/Python Dubbo and Nacos peers, ...).
# Every scripts/peers/*.sh installs one peer, idempotently, into $DUBBO_TEST_PEERS_DIR/<name>;
# the tests start the peer processes themselves on free 127.0.0.1 ports.
log "cargo build of the tests (beside the peer builds)"
# shellcheck disable=SC2086
cargo test --workspace --no-run ${TEST_ARGS:-} >/dev/null
for peer in scripts/peers/*.sh; do
    [[ -f "$peer" ]] || continue
    name=$(basename "$peer" .sh)
    [[ -n "${SLOW_PIDS[$name]:-}" ]] && continue
    log "installing test peer $name"
    bash "$peer" install
done
for peer in "${SLOW_PEERS[@]}"; do
    log "waiting for the test peer $peer"
    if ! wait "${SLOW_PIDS[$peer]}"; then
        cat "$DUBBO_TEST_PEERS_DIR/$peer.install.log" >&2
        log "installing test peer $peer failed"
        exit 1
    fi
    unset "SLOW_PIDS[$peer]"
    tail -n 1 "$DUBBO_TEST_PEERS_DIR/$peer.install.log"
done

export DUBBO_TEST_REQUIRE_SERVERS=1
export DUBBO_TEST_ZK="127.0.0.1:$ZK_PORT"
export DUBBO_TEST_ZK_ENSEMBLE_BASE="$ZK_ENSEMBLE_BASE"
export DUBBO_TEST_NACOS="127.0.0.1:$NACOS_PORT"
export DUBBO_TEST_NACOS_AUTH="127.0.0.1:$NACOS_AUTH_PORT"
export DUBBO_TEST_NACOS_SHORT="127.0.0.1:$NACOS_SHORT_PORT"
export DUBBO_TEST_SCRIPTS="$ROOT/scripts"

log "cargo test --workspace"
# shellcheck disable=SC2086
cargo test --workspace --no-fail-fast ${TEST_ARGS:-}

log "examples against the real servers"
cargo run -q -p cli --example custom_transport
cargo run -q -p cli --example zk_consumer -- "zookeeper://127.0.0.1:$ZK_PORT"
cargo run -q -p cli --example nacos_watch -- "nacos://127.0.0.1:$NACOS_PORT"

log "the demo on memory:// and on the real registries"
cargo run -q -p cli --bin dubbo-registry -- demo --calls 50 >/dev/null
cargo run -q -p cli --bin dubbo-registry -- demo --calls 50 --registry "zookeeper://127.0.0.1:$ZK_PORT?group=/demo-$$" >/dev/null
cargo run -q -p cli --bin dubbo-registry -- demo --calls 50 --registry "nacos://127.0.0.1:$NACOS_PORT?group=demo-$$" >/dev/null

if [[ -f ../shared/conformance/dubbo-vectors-public.json ]]; then
    log "conformance runner on ../shared/conformance"
    for f in ../shared/conformance/*.json; do
        cargo run -q -p conformance --bin dubbo-conformance -- "$f"
    done
else
    log "no ../shared/conformance: skipping the conformance runner"
fi
log "cargo deny: bans, licenses, duplicate versions, sources (deny.toml)"
if [[ -n "$DENY_PID" ]]; then
    wait "$DENY_PID" || { cat "$DENY_LOG"; log "cargo-deny install failed"; exit 1; }
fi
cargo deny --locked check bans licenses sources
log "differential tests against Apache Dubbo 3.3.6's own classes (10,000 cases per operation)"
bash scripts/differential.sh
PASSED=1
log "all tests passed"
