#!/usr/bin/env bash
# java-oracle.sh - the differential-test oracle (differential/oracle): Apache Dubbo 3.3.6's own classes
# answering JSON questions, one request per line (differential/oracle/src/main/java/oracle/Main.java).
#
#   bash scripts/peers/java-oracle.sh install   # resolve org.apache.dubbo:dubbo:3.3.6 and its dependencies from
#                                               # Maven Central into ~/.m2 (mvn), javac the sources into
#                                               # $DUBBO_TEST_PEERS_DIR/java-oracle/classes; skipped when the
#                                               # checksum of the sources and the pom is unchanged (idempotent)
#   bash scripts/peers/java-oracle.sh run       # run it in the foreground (stdin/stdout JSON lines)
#   bash scripts/peers/java-oracle.sh cmd       # print the java command line that runs it
#
# scripts/differential.sh installs and runs it; the differential crate finds it through
# DUBBO_DIFF_ORACLE_CMD (the output of `cmd`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/java-oracle
SRC=$ROOT/differential/oracle
# Pinned: the plugin that prints the dependency class path (no other Maven plugin is needed).
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:2.8

sum_sources() {
    (cd "$SRC" && { cat pom.xml; find src -name '*.java' | sort | xargs cat; }) | sha256sum | cut -d' ' -f1
}

install() {
    command -v javac >/dev/null || { echo "java-oracle: javac missing (JDK 17)" >&2; exit 1; }
    if ! command -v mvn >/dev/null; then
        if command -v apt-get >/dev/null; then
            apt-get install -y maven >/dev/null
        fi
    fi
    command -v mvn >/dev/null || { echo "java-oracle: mvn missing (apt-get install maven)" >&2; exit 1; }
    mkdir -p "$DIR"
    local sum
    sum=$(sum_sources)
    if [[ -f $DIR/classes/.sum && $(cat "$DIR/classes/.sum") == "$sum" && -f $DIR/classpath ]]; then
        echo "java-oracle: up to date in $DIR"
        return
    fi
    (cd "$SRC" && mvn -B -q "$DEP_PLUGIN:build-classpath" -Dmdep.outputFile="$DIR/classpath.tmp" >&2)
    mv "$DIR/classpath.tmp" "$DIR/classpath"
    rm -rf "$DIR/classes.tmp"
    mkdir -p "$DIR/classes.tmp"
    (cd "$SRC" && javac -nowarn -encoding UTF-8 --release 17 -cp "$(cat "$DIR/classpath")" \
        -d "$DIR/classes.tmp" $(find src/main/java -name '*.java') 2>&1 | grep -v '^Note:' >&2 || true)
    [[ -f $DIR/classes.tmp/oracle/Main.class ]] || { echo "java-oracle: javac failed" >&2; exit 1; }
    echo "$sum" >"$DIR/classes.tmp/.sum"
    rm -rf "$DIR/classes"
    mv "$DIR/classes.tmp" "$DIR/classes"
    echo "java-oracle: compiled into $DIR/classes"
}

cmd() {
    # -Xshare:auto and a small tiered start keep start-up short; Dubbo's own logging goes to stderr.
    echo "java -XX:+UseSerialGC -Xss4m --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.math=ALL-UNNAMED -Ddubbo.application.logger=jdk -cp $DIR/classes:$(cat "$DIR/classpath") oracle.Main"
}

case "${1:-}" in
    install) install ;;
    cmd)
        install >/dev/null
        cmd
        ;;
    run)
        install >/dev/null
        # shellcheck disable=SC2046
        exec $(cmd)
        ;;
    *) echo "usage: $0 install|run|cmd" >&2; exit 2 ;;
esac
