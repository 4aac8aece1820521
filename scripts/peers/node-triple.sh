#!/usr/bin/env bash
# node-triple.sh - the npm @apachedubbo/dubbo-node Triple server used as a protocol-triple test peer
# (it routes on tri-service-version/tri-service-group exactly, which tests our routing headers).
#
#   bash scripts/peers/node-triple.sh install   # idempotent; versions pinned by package-lock.json
#
# Installs into $DUBBO_TEST_PEERS_DIR/node-triple (default <repo>/.peers/node-triple) with `npm ci`
# from protocol-triple/tests/peers/node/{package.json,package-lock.json}. The peer program is
# protocol-triple/tests/peers/node_peer.js; tests run it with NODE_PATH pointing at that folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SRC="$ROOT/protocol-triple/tests/peers/node"
DIR="${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/node-triple"

case "${1:-install}" in
install)
    command -v npm >/dev/null || { echo "node-triple: npm is missing (apt-get install -y nodejs npm)" >&2; exit 1; }
    mkdir -p "$DIR"
    if [[ -d "$DIR/node_modules/@apachedubbo/dubbo-node" ]] && cmp -s "$SRC/package-lock.json" "$DIR/package-lock.json"; then
        echo "node-triple: already installed in $DIR"
        exit 0
    fi
    cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
    (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "node-triple: installed in $DIR"
    ;;
*)
    echo "usage: $0 install" >&2
    exit 2
    ;;
esac
