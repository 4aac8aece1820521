#!/usr/bin/env bash
# node-dubbo.sh - the Node Dubbo2 test peer: sofa-rpc-node 2.10.0 + dubbo-remoting 2.1.4 + hessian.js 2.11.0
# (MIT, npm), as a provider (protocol-dubbo/tests/node/provider.js) and as a consumer load generator
# for the benchmark comparison (protocol-dubbo/tests/node/bench.js).
#
#   bash scripts/peers/node-dubbo.sh install            # npm install (pinned) into $DUBBO_TEST_PEERS_DIR/node-dubbo
#   bash scripts/peers/node-dubbo.sh provider PORT [V]  # run the provider (prints "READY PORT")
#   bash scripts/peers/node-dubbo.sh bench HOST:PORT CALLS CONCURRENCY [V]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/node-dubbo
SRC=$ROOT/protocol-dubbo/tests/node

install() {
    command -v node >/dev/null || { echo "node-dubbo: node missing (Node 20)" >&2; exit 1; }
    mkdir -p "$DIR"
    cp "$SRC/package.json" "$SRC/provider.js" "$SRC/bench.js" "$DIR/"
    if [[ -d $DIR/node_modules/sofa-rpc-node && -d $DIR/node_modules/dubbo-remoting ]] \
        && cmp -s "$SRC/package.json" "$DIR/.installed-package.json"; then
        echo "node-dubbo: up to date in $DIR"
        return
    fi
    (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error)
    cp "$SRC/package.json" "$DIR/.installed-package.json"
    echo "node-dubbo: installed into $DIR"
}

case "${1:-}" in
    install) install ;;
    provider) shift; install >/dev/null; exec node "$DIR/provider.js" "$@" ;;
    bench) shift; install >/dev/null; exec node "$DIR/bench.js" "$@" ;;
    *) echo "usage: $0 install|provider PORT [VERSION]|bench HOST:PORT CALLS CONCURRENCY [VERSION]" >&2; exit 2 ;;
esac
