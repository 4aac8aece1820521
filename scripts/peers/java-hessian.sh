#!/usr/bin/env bash
# java-hessian.sh - the Java Hessian golden-vector generator/reader for the hessian2 crate
# (hessian2/tests/java/hpeer/*.java) on real Java Hessian: Debian libhessian-java 4.0.38 (Caucho), JDK 17.
#
#   bash scripts/peers/java-hessian.sh install  # apt-get install libhessian-java if missing, check the JDK,
#                                               # javac into $DUBBO_TEST_PEERS_DIR/java-hessian/classes (idempotent)
#   bash scripts/peers/java-hessian.sh gen      # print the golden vectors (name, exact, count, hex, what Java reads)
#   bash scripts/peers/java-hessian.sh read     # read "name TAB count TAB hex" lines on stdin, print what Java sees
#
# The tests (hessian2/tests/java_peer.rs) compile the same sources themselves into the cargo target dir.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/java-hessian
SRC=$ROOT/hessian2/tests/java
JAR=${DUBBO_TEST_HESSIAN_JAR:-/usr/share/java/hessian-4.0.38.jar}

install() {
    if [[ ! -f $JAR ]] && command -v apt-get >/dev/null; then
        apt-get install -y libhessian-java >/dev/null
    fi
    [[ -f $JAR ]] || { echo "java-hessian: $JAR missing (apt-get install libhessian-java)" >&2; exit 1; }
    command -v javac >/dev/null || { echo "java-hessian: javac missing (JDK 17)" >&2; exit 1; }
    command -v java >/dev/null || { echo "java-hessian: java missing (JDK 17)" >&2; exit 1; }
    mkdir -p "$DIR"
    local sum
    sum=$(cd "$SRC" && find . -name '*.java' | sort | xargs cat | sha256sum | cut -d' ' -f1)
    if [[ -f $DIR/classes/.sum && $(cat "$DIR/classes/.sum") == "$sum" ]]; then
        echo "java-hessian: up to date in $DIR"
        return
    fi
    rm -rf "$DIR/classes.tmp"
    mkdir -p "$DIR/classes.tmp"
    (cd "$SRC" && javac -nowarn -cp "$JAR" -d "$DIR/classes.tmp" $(find . -name '*.java'))
    echo "$sum" >"$DIR/classes.tmp/.sum"
    rm -rf "$DIR/classes"
    mv "$DIR/classes.tmp" "$DIR/classes"
    echo "java-hessian: compiled into $DIR/classes"
}

case "${1:-}" in
    install) install ;;
    gen | read)
        install >/dev/null
        exec java --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED \
            -cp "$JAR:$DIR/classes" hpeer.HessianPeer "$1"
        ;;
    *) echo "usage: $0 install|gen|read" >&2; exit 2 ;;
esac
