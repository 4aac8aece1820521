#!/usr/bin/env bash
# java-dubbo.sh - the Java Dubbo2 test provider (protocol-dubbo/tests/java/DubboPeer.java): the Dubbo2
# framing by hand, every body encoded/decoded by real Java Hessian (Debian libhessian-java 4.0.38, JDK 17).
#
#   bash scripts/peers/java-dubbo.sh install   # apt-get install libhessian-java if missing; javac into
#                                              # $DUBBO_TEST_PEERS_DIR/java-dubbo/classes (idempotent)
#   bash scripts/peers/java-dubbo.sh run ARGS  # run it in the foreground (prints "READY <port>")
#
# The tests (protocol-dubbo/tests/*.rs) start it themselves on a free 127.0.0.1 port.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/java-dubbo
SRC=$ROOT/protocol-dubbo/tests/java
JAR=/usr/share/java/hessian-4.0.38.jar

# A subshell: the build lock (fd 9) is released when it ends, never inherited by a peer.
install() (
    if [[ ! -f $JAR ]]; then
        if command -v apt-get >/dev/null; then
            apt-get install -y libhessian-java >/dev/null
        fi
    fi
    [[ -f $JAR ]] || { echo "java-dubbo: $JAR missing (apt-get install libhessian-java)" >&2; exit 1; }
    command -v javac >/dev/null || { echo "java-dubbo: javac missing (JDK 17)" >&2; exit 1; }
    # One build at a time: test binaries running in parallel may all ask for it.
    mkdir -p "$DIR"
    exec 9>"$DIR/.install.lock"
    flock 9
    local sum
    sum=$(cd "$SRC" && find . -name '*.java' | sort | xargs cat | sha256sum | cut -d' ' -f1)
    if [[ -f $DIR/classes/.sum && $(cat "$DIR/classes/.sum") == "$sum" ]]; then
        echo "java-dubbo: up to date in $DIR"
        return
    fi
    rm -rf "$DIR/classes.tmp"
    mkdir -p "$DIR/classes.tmp"
    (cd "$SRC" && javac -nowarn -cp "$JAR" -d "$DIR/classes.tmp" $(find . -name '*.java'))
    echo "$sum" >"$DIR/classes.tmp/.sum"
    rm -rf "$DIR/classes"
    mv "$DIR/classes.tmp" "$DIR/classes"
    echo "java-dubbo: compiled into $DIR/classes"
)

case "${1:-}" in
    install) install ;;
    run)
        shift
        install >/dev/null
        exec java --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED \
            -cp "$JAR:$DIR/classes" DubboPeer "$@"
        ;;
    *) echo "usage: $0 install|run [ARGS]" >&2; exit 2 ;;
esac
