#!/usr/bin/env bash
# python-nacos.sh - the independent Nacos gRPC peer: PyPI nacos-sdk-python 3.2.0 (its v2 API
# speaks gRPC) in a venv under $DUBBO_TEST_PEERS_DIR/python-nacos (default <repo>/.peers/python-nacos).
#
#   python-nacos.sh install    create the venv and install the pinned package (idempotent)
#   python-nacos.sh python     print the venv's python path (exit 1 when not installed)
#
# The tests (tests/tests/nacos_python_peer.rs) write small scripts that register/list/watch
# naming instances and publish/watch config with it, against 127.0.0.1 only.
set -euo pipefail

VERSION=3.2.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/python-nacos"
PY="$DIR/venv/bin/python"

case "${1:-}" in
install)
    if [[ -x "$PY" ]] && "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('nacos-sdk-python') != '$VERSION')" 2>/dev/null; then
        echo "python-nacos: nacos-sdk-python $VERSION already installed in $DIR"
        exit 0
    fi
    mkdir -p "$DIR"
    python3 -m venv "$DIR/venv"
    "$PY" -m pip install --quiet --disable-pip-version-check "nacos-sdk-python==$VERSION"
    "$PY" -c "import v2.nacos" && echo "python-nacos: installed nacos-sdk-python $VERSION in $DIR"
    ;;
python)
    [[ -x "$PY" ]] || exit 1
    echo "$PY"
    ;;
*)
    echo "usage: $0 install|python" >&2
    exit 2
    ;;
esac
