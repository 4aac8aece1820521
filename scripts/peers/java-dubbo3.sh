#!/usr/bin/env bash
# java-dubbo3.sh - real Apache Dubbo 3.3.6 (Java) test peers, built from tests/peers/java-dubbo3 (Maven):
# a provider (DemoService, EchoService, ProtoService and the IDL Greeter over dubbo + tri), a consumer
# (calls with numbers, or prints the provider list a Java consumer ends up with) and a nacos-client 2.5.1
# driver. Pinned in the pom; dependencies come from Maven Central into the shared ~/.m2.
#
#   bash scripts/peers/java-dubbo3.sh install          # resolve + compile into $DIR (idempotent: skipped
#                                                      # when the sources' checksum is unchanged)
#   bash scripts/peers/java-dubbo3.sh provider ARGS    # run in the foreground; prints "READY <json>"
#   bash scripts/peers/java-dubbo3.sh consumer ARGS    # one JSON line, exit 0/1/2
#   bash scripts/peers/java-dubbo3.sh nacos ARGS       # JSON commands on stdin, JSON lines on stdout
#   bash scripts/peers/java-dubbo3.sh classpath        # the classpath (for `java -cp`)
#
# $DIR = $DUBBO_TEST_PEERS_DIR/java-dubbo3 (default <repo>/.peers/java-dubbo3). JAVA_OPTS adds JVM options.
# JAVA_JIT (default -XX:TieredStopAtLevel=1: C1 only, READY in ~3 s instead of ~8 s on a busy 2-core
# machine) - set it empty (JAVA_JIT=) for throughput measurements, which need C2.
# Arguments: tests/peers/java-dubbo3/README.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${DUBBO_TEST_PEERS_DIR:-$ROOT/.peers}/java-dubbo3
SRC=$ROOT/tests/peers/java-dubbo3

checksum() {
    (cd "$SRC" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}

# A subshell: the build lock (fd 9) is released when it ends, never inherited by a peer.
install() (
    if ! command -v mvn >/dev/null && command -v apt-get >/dev/null; then
        apt-get install -y maven >/dev/null
    fi
    command -v mvn >/dev/null || { echo "java-dubbo3: mvn missing (apt-get install maven)" >&2; exit 1; }
    command -v javac >/dev/null || { echo "java-dubbo3: javac missing (JDK 17)" >&2; exit 1; }
    # One build at a time: test binaries running in parallel may all ask for it.
    mkdir -p "$DIR"
    exec 9>"$DIR/.install.lock"
    flock 9
    local sum
    sum=$(checksum)
    if [[ -f $DIR/.sum && $(cat "$DIR/.sum") == "$sum" && -d $DIR/classes && -d $DIR/lib && -d $DIR/lib-obs ]]; then
        echo "java-dubbo3: up to date in $DIR"
        return
    fi
    mkdir -p "$DIR"
    # Build in a copy: the source tree stays clean, and a half-done build never replaces a good one.
    rm -rf "$DIR/build"
    mkdir -p "$DIR/build"
    cp -r "$SRC/pom.xml" "$SRC/src" "$DIR/build/"
    # lib: what every run gets; lib-obs: the profile `observability` adds (Dubbo's metrics and tracing need
    # micrometer, and with micrometer present Dubbo collects metrics by default, so only runs that ask for
    # them get these jars). The classes are compiled with the profile on.
    (cd "$DIR/build" && mvn -B -q -Dstyle.color=never dependency:copy-dependencies -DoutputDirectory="$DIR/build/lib" \
        -DincludeScope=runtime &&
        mvn -B -q -Dstyle.color=never -Pobservability dependency:copy-dependencies \
            -DoutputDirectory="$DIR/build/lib-all" -DincludeScope=runtime &&
        mvn -B -q -Dstyle.color=never -Pobservability compile)
    mkdir -p "$DIR/build/lib-obs"
    local jar
    for jar in "$DIR/build/lib-all"/*.jar; do
        [[ -e $DIR/build/lib/$(basename "$jar") ]] || mv "$jar" "$DIR/build/lib-obs/"
    done
    rm -rf "$DIR/classes" "$DIR/lib" "$DIR/lib-obs"
    mv "$DIR/build/target/classes" "$DIR/classes"
    mv "$DIR/build/lib" "$DIR/lib"
    mv "$DIR/build/lib-obs" "$DIR/lib-obs"
    rm -rf "$DIR/build"
    echo "$sum" >"$DIR/.sum"
    echo "java-dubbo3: built into $DIR"
)

classpath() {
    [[ -d $DIR/classes && -d $DIR/lib && -d $DIR/lib-obs ]] || { echo "java-dubbo3: not installed (run $0 install)" >&2; exit 1; }
    echo "$DIR/classes:$DIR/lib/*"
}

run() {
    local main=$1
    shift
    local cp arg
    cp=$(classpath)
    # Dubbo's metrics and tracing jars only for the runs that use them (see install).
    # lib-obs goes first: it holds newer versions of jars lib has too (micrometer-core, simpleclient).
    for arg in "$@"; do
        case $arg in
            --metrics-out | --metrics-out=* | --tracing | --tracing=*) cp="$DIR/classes:$DIR/lib-obs/*:$DIR/lib/*" ;;
        esac
    done
    # shellcheck disable=SC2086
    exec java -Xms64m -Xmx512m -XX:+UseSerialGC ${JAVA_JIT--XX:TieredStopAtLevel=1} \
        --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED \
        --add-opens java.base/java.math=ALL-UNNAMED --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
        --add-opens java.base/java.net=ALL-UNNAMED --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
        ${JAVA_OPTS:-} -cp "$cp" "$main" "$@"
}

case "${1:-}" in
    install) install ;;
    classpath) classpath ;;
    provider) shift; run com.example.peer.Provider "$@" ;;
    consumer) shift; run com.example.peer.Consumer "$@" ;;
    nacos) shift; run com.example.peer.NacosPeer "$@" ;;
    *) echo "usage: $0 install|provider|consumer|nacos|classpath [ARGS]" >&2; exit 2 ;;
esac
