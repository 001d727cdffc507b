#!/usr/bin/env bash
# Idempotent setup of everything the tests need on a fresh machine of this kind; seconds when warm.
#   python   : uv (pinned, from PyPI), the locked virtualenv .venv, the S3 test server (moto)
#   tools    : control plane, KWOK, helm, the Prometheus Operator and Prometheus 3, FerretDB,
#              mongodb_exporter from pinned Go modules (hack/build-tools.sh)
#   gitops   : Argo CD and its kustomize (hack/build-tools.sh gitops): not in `all`, see there
#   system   : promtool (Debian's prometheus package), node-exporter, PostgreSQL and Redis from
#              Debian (only when missing)
#   java     : the YCSB binding (bench-jobs/ycsb-binding), built when its sources changed
#   demo     : only what `make demo` runs: the virtualenv, the system packages, the control plane,
#              Prometheus, FerretDB and the YCSB binding
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}
# shellcheck source=hack/versions.env
source "$here/versions.env"
uv=$cache/uv-$UV_VERSION/bin/uv

# `uv sync --frozen` fetches the locked wheels by URL and never reads the package index, so uv's
# cache holds no index pages; the tests' offline installs (hack/image/install-python.sh with
# OFFLINE=1, as the images install) resolve through the index and find nothing on a new machine.
# One online dry run of the whole lock into an empty environment caches those pages (about a
# second); skipped when an offline dry run already succeeds.
warm_index_cache() {
  local tmp
  tmp=$(mktemp -d)
  (cd "$repo" && "$uv" export --frozen --all-packages --all-groups --no-emit-workspace --no-header \
    --quiet -o "$tmp/requirements.txt")
  python3.11 -m venv --without-pip "$tmp/venv"
  if ! "$uv" pip install --offline --dry-run --quiet --no-deps -r "$tmp/requirements.txt" \
    --python "$tmp/venv/bin/python" 2>/dev/null; then
    echo "setup: caching the package index pages of uv.lock's packages (offline installs)" >&2
    "$uv" pip install --dry-run --quiet --no-deps -r "$tmp/requirements.txt" \
      --python "$tmp/venv/bin/python"
  fi
  rm -rf "$tmp"
}

setup_venv() {
  if [ ! -x "$uv" ]; then
    echo "setup: installing uv $UV_VERSION" >&2
    rm -rf "$cache/uv-$UV_VERSION.tmp"
    python3 -m pip install --quiet --disable-pip-version-check --target "$cache/uv-$UV_VERSION.tmp" "uv==$UV_VERSION"
    mv "$cache/uv-$UV_VERSION.tmp" "$cache/uv-$UV_VERSION"
  fi
  # Bytecode compiled at install, as pip does for a user: uv does not by default, and with
  # PYTHONDONTWRITEBYTECODE set every `mongobench` command recompiled scipy (1.3 s of 2.6).
  (cd "$repo" && "$uv" sync --frozen --quiet --python python3.11 --compile-bytecode)
}

setup_python() {
  setup_venv
  warm_index_cache

  # moto (the archive tests' S3 server) in its own locked environment, keyed by its lock; see
  # hack/s3server/pyproject.toml for why it cannot share .venv.
  local s3env
  s3env=$cache/s3server-$(sha256sum "$here/s3server/uv.lock" | cut -c1-12)
  if [ ! -x "$s3env/bin/python" ]; then
    echo "setup: installing the S3 test server (moto) into $s3env" >&2
    (cd "$here/s3server" && UV_PROJECT_ENVIRONMENT="$s3env" "$uv" sync --frozen --quiet --python python3.11 --compile-bytecode)
  fi
}

setup_system() {
  local missing=()
  # promtool (alerts/check.py); the tests' Prometheus itself is built (hack/build-tools.sh).
  command -v promtool >/dev/null || missing+=(prometheus)
  command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
  command -v openssl >/dev/null || missing+=(openssl)
  # The demo's second database backend (FerretDB on PostgreSQL): the server, not only psql.
  compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
  # Argo CD's cache (e2e/local/localplane/argocd.py starts one on loopback).
  command -v redis-server >/dev/null || missing+=(redis-server)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: apt-get install ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian starts the services on install; the tests run their own on loopback ports.
    # Only the services just installed: another suite's Prometheus may be running.
    for s in "${missing[@]}"; do
      case $s in
        prometheus | prometheus-node-exporter)
          (command -v systemctl >/dev/null && systemctl stop "$s" 2>/dev/null) || true
          pkill -x "$s" 2>/dev/null || true
          ;;
        redis-server)
          (command -v systemctl >/dev/null && systemctl stop redis-server 2>/dev/null) || true
          ;;
        postgresql)
          # Debian's own cluster (main, port 5432): the demo starts a throwaway one of its own.
          (command -v systemctl >/dev/null && systemctl stop postgresql 2>/dev/null) || true
          pkill -u postgres -x postgres 2>/dev/null || true
          ;;
      esac
    done
  fi
}

case "${1:-all}" in
  python) setup_python ;;
  tools) bash "$here/build-tools.sh" all ;;
  gitops)
    setup_system
    bash "$here/build-tools.sh" gitops
    ;;
  system) setup_system ;;
  demo)
    # What `make demo` starts and nothing else (no lint tools, exporter, krew, helm or S3 server):
    # on a new machine the rest is most of the building.
    setup_venv
    setup_system
    bash "$here/build-tools.sh" demo
    bash "$here/build-java.sh"
    ;;
  all)
    setup_python
    setup_system
    bash "$here/build-tools.sh" all
    if [ -x "$here/build-java.sh" ]; then bash "$here/build-java.sh"; fi
    ;;
  *) echo "usage: $0 [python|tools|system|demo|gitops|all]" >&2; exit 2 ;;
esac
