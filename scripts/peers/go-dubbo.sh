#!/usr/bin/env bash
# go-dubbo.sh - the dubbo-go 3.3.2 test provider (tests/peers/go-dubbo, a Go module pinned by its
# go.mod/go.sum; modules from the Go module proxy into the shared module cache).
#
#   bash scripts/peers/go-dubbo.sh install          # go build into $DIR/go-dubbo-peer (idempotent:
#                                                   # skipped when the sources' checksum is unchanged)
#   bash scripts/peers/go-dubbo.sh provider ARGS    # run in the foreground; prints "READY <json>"
#   bash scripts/peers/go-dubbo.sh consumer ARGS    # call a provider (--url dubbo://H:P|tri://H:P, --repeat,
#                                                   # --concurrency, --warmup); one JSON line
#
# $DIR = $DUBBO_TEST_PEERS_DIR/go-dubbo (default <repo>/.peers/go-dubbo). The first build takes
# 2-5 minutes on 2 cores; Go's build cache (GOCACHE) keeps later ones short.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/go-dubbo
SRC=$ROOT/tests/peers/go-dubbo
export GOFLAGS=${GOFLAGS:--buildvcs=false}
# The official Go tarball installs into /usr/local/go; Debian's golang (1.19) is too old for dubbo-go.
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

checksum() {
    (cd "$SRC" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort \
        | xargs sha256sum | sha256sum | cut -d' ' -f1)
}

# A subshell: the build lock (fd 9) is released when it ends, never inherited by a peer.
install() (
    command -v go >/dev/null || { echo "go-dubbo: go missing (Go 1.25+, e.g. the go.dev tarball in /usr/local/go)" >&2; exit 1; }
    # One build at a time: test binaries running in parallel may all ask for it.
    mkdir -p "$DIR"
    exec 9>"$DIR/.install.lock"
    flock 9
    local sum
    sum=$(checksum)
    if [[ -f $DIR/.sum && $(cat "$DIR/.sum") == "$sum" && -x $DIR/go-dubbo-peer ]]; then
        echo "go-dubbo: up to date in $DIR"
        return
    fi
    mkdir -p "$DIR"
    (cd "$SRC" && go build -mod=readonly -o "$DIR/go-dubbo-peer.tmp" .)
    mv "$DIR/go-dubbo-peer.tmp" "$DIR/go-dubbo-peer"
    echo "$sum" >"$DIR/.sum"
    echo "go-dubbo: built $DIR/go-dubbo-peer"
)

case "${1:-}" in
    install) install ;;
    provider)
        shift
        [[ -x $DIR/go-dubbo-peer ]] || { echo "go-dubbo: not installed (run $0 install)" >&2; exit 1; }
        exec "$DIR/go-dubbo-peer" "$@"
        ;;
    consumer)
        shift
        [[ -x $DIR/go-dubbo-peer ]] || { echo "go-dubbo: not installed (run $0 install)" >&2; exit 1; }
        exec "$DIR/go-dubbo-peer" consumer "$@"
        ;;
    *) echo "usage: $0 install|provider|consumer [ARGS]" >&2; exit 2 ;;
esac
