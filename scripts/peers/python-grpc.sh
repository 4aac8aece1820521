#!/usr/bin/env bash
# python-grpc.sh - the grpcio (PyPI) Triple/gRPC test peer for protocol-triple.
#
#   bash scripts/peers/python-grpc.sh install   # idempotent; pinned versions
#   bash scripts/peers/python-grpc.sh python    # prints the venv's python path
#
# Installs a venv into $DUBBO_TEST_PEERS_DIR/python-grpc (default <repo>/.peers/python-grpc) with
# grpcio + grpcio-tools (the strict gRPC server and the .proto compiler used at peer start-up)
# and dubbo-ssl-python (its Hessian2 codec, for the hand-made wrapper-mode peer). The peer program
# itself is protocol-triple/tests/peers/grpc_peer.py; tests start it on a free 127.0.0.1 port.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
DIR="${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/python-grpc"
PINS=(grpcio==1.85.3 grpcio-tools==1.85.1 protobuf==7.36.2 dubbo-ssl-python==0.9.6)
STAMP="$DIR/.installed-$(echo "${PINS[*]}" | md5sum | cut -c1-12)"

case "${1:-install}" in
install)
    if [[ -f "$STAMP" && -x "$DIR/venv/bin/python" ]]; then
        echo "python-grpc: already installed in $DIR"
        exit 0
    fi
    mkdir -p "$DIR"
    python3 -m venv "$DIR/venv"
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}"
    "$DIR/venv/bin/python" -c 'import grpc, grpc_tools, dubbo_ssl; print("python-grpc: grpcio", grpc.__version__)'
    rm -f "$DIR"/.installed-*
    touch "$STAMP"
    ;;
python)
    echo "$DIR/venv/bin/python"
    ;;
*)
    echo "usage: $0 install|python" >&2
    exit 2
    ;;
esac
