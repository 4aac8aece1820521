#!/usr/bin/env bash
# test-all.sh - the whole test suite on a fresh machine (Debian, root, Rust, Java 17):
# installs and starts a real ZooKeeper (standalone + a 3-node ensemble) and real Nacos-compatible
# servers (rnacos, built once into ~/.cargo/bin), runs `cargo test --workspace` with the servers
# REQUIRED (a missing server fails the run), runs the conformance runner on ../shared vectors
# when present, the differential tests against Dubbo 3.3.6's own classes (scripts/differential.sh),
# and stops the servers it started.
#
# Env: ZK_PORT (2181), NACOS_PORT (8848), NACOS_AUTH_PORT (8850), NACOS_SHORT_PORT (8852),
#      ZK_ENSEMBLE_BASE (21810), TEST_ARGS (extra args for cargo test).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"

ZK_PORT=${ZK_PORT:-2181}
NACOS_PORT=${NACOS_PORT:-8848}
NACOS_AUTH_PORT=${NACOS_AUTH_PORT:-8850}
NACOS_SHORT_PORT=${NACOS_SHORT_PORT:-8852}
ZK_ENSEMBLE_BASE=${ZK_ENSEMBLE_BASE:-21810}
export ZK_STATE_DIR=${ZK_STATE_DIR:-/tmp/dubbo-rs-zk}
export NACOS_STATE_DIR=${NACOS_STATE_DIR:-/tmp/dubbo-rs-nacos}

log() { echo "test-all: $*"; }

# A one-off build gains nothing from incremental state (it was ~20 GB on a developer machine), and
# CI disks can be small: build without it unless the caller asks, and show the free space at the
# start and the end so a full disk is named in the log.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
log "free disk at start: $(df -h . | awk 'NR==2 {print $4 " free of " $2}')"

cleanup() {
    log "free disk at the end: $(df -h . | awk 'NR==2 {print $4 " free of " $2}'), target: $(du -sh target 2>/dev/null | cut -f1)"
    log "stopping servers"
    bash scripts/zk-server.sh ensemble-stop "$ZK_ENSEMBLE_BASE" >/dev/null 2>&1 || true
    bash scripts/zk-server.sh stop >/dev/null 2>&1 || true
    bash scripts/nacos-server.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

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

# The differential-test oracle (Apache Dubbo 3.3.6 from Maven Central, javac) builds while the
# servers settle; the peer loop below finds it up to date.
ORACLE_LOG=$(mktemp)
bash scripts/peers/java-oracle.sh install >"$ORACLE_LOG" 2>&1 &
ORACLE_PID=$!

# Test peers (third-party clients/providers: Java Hessian, Node/Python Dubbo and Nacos peers, ...).
# Every scripts/peers/*.sh installs one peer, idempotently, into $DUBBO_TEST_PEERS_DIR/<name>;
# the tests start the peer processes themselves on free 127.0.0.1 ports.
export DUBBO_TEST_PEERS_DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}
mkdir -p "$DUBBO_TEST_PEERS_DIR"
if ! wait "$ORACLE_PID"; then
    cat "$ORACLE_LOG" >&2
    log "building the differential-test oracle failed"
    exit 1
fi
rm -f "$ORACLE_LOG"
for peer in scripts/peers/*.sh; do
    [[ -f "$peer" ]] || continue
    log "installing test peer $(basename "$peer" .sh)"
    bash "$peer" install
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
        cargo run -q -p cli --bin dubbo-registry -- conformance "$f"
    done
else
    log "no ../shared/conformance: skipping the conformance runner"
fi
log "differential tests against Apache Dubbo 3.3.6's own classes (10,000 cases per operation)"
bash scripts/differential.sh
log "all tests passed"
