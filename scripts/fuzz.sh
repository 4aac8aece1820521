#!/usr/bin/env bash
# fuzz.sh - runs the cargo-fuzz targets in fuzz/ (libFuzzer) on the machine's single stable
# toolchain, each for a number of executions. Not part of CI or test-all.sh: a full run takes
# a while (see docs/fuzzing.md for the recorded runs).
#
# Usage: scripts/fuzz.sh [RUNS] [TARGET...]
#   RUNS    executions per target (default 10000000 = 10^7)
#   TARGET  target names (default: every target `cargo fuzz list` shows)
# Env:
#   FUZZ_SANITIZER  none (default) | address   (address: ~3x slower; the workspace is
#                   `unsafe`-free, so `none` plus debug assertions is the default)
#   FUZZ_ASSERTIONS 1 (default): build with debug assertions (overflow checks, debug_assert!)
#                   so arithmetic slips panic instead of wrapping; 0: plain release build
#   FUZZ_NICE       nice level of the fuzzing processes (default 10)
#   FUZZ_MAX_LEN    libFuzzer -max_len (default 8192)
#   FUZZ_ARGS       extra libFuzzer arguments
#   FUZZ_RSS_MB     libFuzzer -rss_limit_mb (default per target: 512 for the decoders that run
#                   with the production limits, hessian2_decode and dubbo_frame, whose memory
#                   budget bounds any input; 4096 for the others)
#   FUZZ_PARALLEL   1: run the targets at the same time (one process each) instead of in turn
#
# How it works on stable Rust: cargo-fuzz needs a few nightly-only rustc flags; RUSTC_BOOTSTRAP=1
# lets the stable compiler accept them. libfuzzer-sys builds libFuzzer's C++ with the system
# g++. Corpora grow in fuzz/corpus/<target> (git-ignored; seeded from fuzz/seeds/<target>);
# crashes land in fuzz/artifacts/<target>; each run's log in fuzz/artifacts/<target>.log.
# Exit status: non-zero when a target found a crash (the artifact path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"

CARGO_FUZZ_VERSION=0.13.2
RUNS=${1:-10000000}
[ $# -gt 0 ] && shift
SAN=${FUZZ_SANITIZER:-none}
NICE=${FUZZ_NICE:-10}
MAX_LEN=${FUZZ_MAX_LEN:-8192}
BUILD_FLAGS=(-O -s "$SAN")
[ "${FUZZ_ASSERTIONS:-1}" = 1 ] && BUILD_FLAGS+=(-a)

log() { echo "fuzz.sh: $*" >&2; }

rss_limit() {
    if [ -n "${FUZZ_RSS_MB:-}" ]; then
        echo "$FUZZ_RSS_MB"
        return
    fi
    case "$1" in
    hessian2_decode | dubbo_frame) echo 512 ;;
    *) echo 4096 ;;
    esac
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi
if ! command -v g++ >/dev/null 2>&1; then
    log "installing g++ (libfuzzer-sys compiles libFuzzer)"
    apt-get install -y g++
fi

export RUSTC_BOOTSTRAP=1
if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo fuzz list)
fi

log "building ${TARGETS[*]} (sanitizer: $SAN)"
nice -n "$NICE" cargo fuzz build "${BUILD_FLAGS[@]}"

run_target() {
    local t=$1
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    if [ -d "fuzz/seeds/$t" ]; then
        cp -n fuzz/seeds/"$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
    fi
    local logf="fuzz/artifacts/$t.log"
    log "running $t for $RUNS executions (log: $logf)"
    local start
    start=$(date +%s)
    # shellcheck disable=SC2086
    if nice -n "$NICE" cargo fuzz run "${BUILD_FLAGS[@]}" "$t" "fuzz/corpus/$t" -- \
        -runs="$RUNS" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb="$(rss_limit "$t")" \
        -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$logf" 2>&1; then
        local secs execs cov
        secs=$(( $(date +%s) - start ))
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logf" | grep -o '[0-9]*$' || echo "?")
        cov=$(grep -o 'cov: [0-9]*' "$logf" | tail -1 || true)
        log "$t: ok, $execs executions in ${secs}s, $cov, corpus $(ls "fuzz/corpus/$t" | wc -l) inputs"
    else
        log "$t: FAILED; see $logf"
        grep -E 'Test unit written to|panicked at' "$logf" | head -5 >&2 || true
        return 1
    fi
}

failed=0
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
    pids=()
    for t in "${TARGETS[@]}"; do
        run_target "$t" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do
        wait "$p" || failed=1
    done
else
    for t in "${TARGETS[@]}"; do
        run_target "$t" || failed=1
    done
fi
exit $failed
