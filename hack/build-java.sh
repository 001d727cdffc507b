#!/usr/bin/env bash
# Builds the project's YCSB MongoDB binding (bench-jobs/ycsb-binding) into target/ycsb/lib, the
# YCSB home the runner uses (binding jar + YCSB core + driver).
#   hack/build-java.sh        build, skipped when pom.xml and src/main are unchanged since the last
#                             successful build (hash stamp): seconds when warm
#   hack/build-java.sh test   the binding's own JUnit tests (mvn test) and nothing else
#   hack/build-java.sh check  exit 1, saying so, when the built jar is missing or older than its
#                             sources (a checkout pulled without `make setup`): the tests' guard
# Maven runs offline (-o) first; only when the local repository (~/.m2, outside the checkout)
# lacks an artifact does it go online to Maven Central.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
proj=$repo/bench-jobs/ycsb-binding
stamp=$proj/target/.build-stamp

log() { echo "build-java: $*" >&2; }

need_mvn() {
  command -v mvn >/dev/null || { log "mvn not found (Maven 3.8+ and a JDK 17 are needed)"; exit 1; }
}

# Hash of everything that shapes the build output.
source_hash() {
  (cd "$proj" && find pom.xml src/main -type f -print0 | sort -z | xargs -0 sha256sum) |
    sha256sum | cut -d' ' -f1
}

# mvn offline; when that fails for want of an artifact, once more online.
mvn_offline_first() {
  local out
  out=$(mktemp)
  if (cd "$proj" && mvn -B -q -Dstyle.color=never -o "$@") >"$out" 2>&1; then
    rm -f "$out"; return 0
  fi
  if grep -qE "offline mode|has not been downloaded|Cannot access .* in offline|Could not resolve" "$out"; then
    rm -f "$out"
    log "local Maven repository incomplete: resolving from Maven Central"
    (cd "$proj" && mvn -B -q -Dstyle.color=never "$@")
    return
  fi
  cat "$out" >&2; rm -f "$out"; return 1
}

build() {
  local want
  want=$(source_hash)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$proj/target/ycsb/lib" ]; then
    return 0
  fi
  log "building the YCSB binding"
  rm -rf "$proj/target/ycsb" "$stamp"  # no stale jars on the YCSB classpath
  # -DskipTests still compiles the tests, so their dependencies are cached for `test` offline.
  mvn_offline_first -DskipTests package
  echo "$want" > "$stamp"
}

check() {
  if [ ! -d "$proj/target/ycsb/lib" ]; then
    log "the YCSB binding is not built: run make setup"; return 1
  fi
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$(source_hash)" ]; then
    log "the YCSB binding jar is older than its sources: run make setup"; return 1
  fi
}

case "${1:-build}" in
  build) need_mvn; build ;;
  test) need_mvn; mvn_offline_first test ;;
  check) check ;;
  *) echo "usage: $0 [build|test|check]" >&2; exit 2 ;;
esac
