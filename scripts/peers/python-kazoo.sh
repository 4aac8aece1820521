#!/usr/bin/env bash
# python-kazoo.sh - the third-party ZooKeeper client that writes governance rules in the
# end-to-end rule tests (tests/tests/rules_e2e.rs): kazoo (PyPI) in a venv, plus
# scripts/peers/kazoo_rules.py (put/delete/get a config-centre key) copied next to it.
#
#   bash scripts/peers/python-kazoo.sh install   # idempotent
#   bash scripts/peers/python-kazoo.sh path      # prints the venv python
#
# Installs into $DUBBO_TEST_PEERS_DIR/python-kazoo (default <repo>/.peers/python-kazoo).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KAZOO_VERSION=2.11.0
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/python-kazoo
PY=$DIR/bin/python

case "${1:-install}" in
install)
    if [ -x "$PY" ] && "$PY" -c "import kazoo, sys; sys.exit(0 if kazoo.version.__version__ == '$KAZOO_VERSION' else 1)" 2>/dev/null; then
        cp "$HERE/kazoo_rules.py" "$DIR/kazoo_rules.py"
        echo "python-kazoo: kazoo $KAZOO_VERSION already installed in $DIR"
        exit 0
    fi
    if ! python3 -m venv --help >/dev/null 2>&1; then
        apt-get install -y python3-venv
    fi
    mkdir -p "$DIR"
    python3 -m venv "$DIR"
    "$PY" -m pip install --quiet --disable-pip-version-check "kazoo==$KAZOO_VERSION"
    cp "$HERE/kazoo_rules.py" "$DIR/kazoo_rules.py"
    echo "python-kazoo: kazoo $KAZOO_VERSION installed in $DIR"
    ;;
path)
    echo "$PY"
    ;;
*)
    echo "usage: $0 install|path" >&2
    exit 2
    ;;
esac
