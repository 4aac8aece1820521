#!/usr/bin/env bash
# differential.sh - differential tests against Apache Dubbo 3.3.6's own classes.
#
#   bash scripts/differential.sh [--cases N] [--op NAME] [--seed S] [--list]
#
# Builds the Java oracle when its sources changed (scripts/peers/java-oracle.sh: Maven Central
# dependencies into ~/.m2, javac), then runs every operation of the `differential` crate (or the
# --op ones) with N generated cases each (default 10,000) on both sides. Prints one line per
# operation, `NAME: N cases, D differ` (with the first unlisted difference shrunk to a minimal
# input), and ends with `P passed, F failed`: an operation passes when every difference is a
# divergence listed in docs/divergences.json. Exit status 0 only when every operation passes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
bash scripts/peers/java-oracle.sh install >&2
DUBBO_DIFF_ORACLE_CMD=$(bash scripts/peers/java-oracle.sh cmd)
export DUBBO_DIFF_ORACLE_CMD
cargo build -q --release -p differential
exec target/release/differential "$@"
