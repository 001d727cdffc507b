#!/usr/bin/env bash
# Builds the local test plane's binaries from pinned Go modules into a cache outside the checkout,
# keyed by version, so a fresh clone (CI) reuses them. A binary already in the cache is not rebuilt.
#   MONGOBENCH_CACHE (default ~/.cache/mongobench) holds bin/<name>-<version>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=hack/versions.env
source "$here/versions.env"
cache=${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}
bin=$cache/bin
mkdir -p "$bin"
export GOFLAGS=-mod=mod

need() { [ ! -x "$bin/$1" ]; }
log() { echo "build-tools: $*" >&2; }

# Builds package $3 of the wrapper module in $2 into $bin/$1 (atomic rename: an interrupted build
# leaves no half-written binary that would later count as cached).
build_wrapper() {
  local out=$1 dir=$2 pkg=$3 ldflags=${4:-}
  need "$out" || return 0
  log "building $out"
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$bin/.$out.tmp" "$pkg")
  mv "$bin/.$out.tmp" "$bin/$out"
}

# `go install` of a module at an exact version, renamed into the cache.
install_module() {
  local out=$1 module=$2
  need "$out" || return 0
  log "installing $module"
  local gobin
  gobin=$(mktemp -d)
  GOBIN=$gobin go install "$module"
  mv "$gobin"/* "$bin/$out"
  rm -rf "$gobin"
}

k8s_ldflags() {
  local v=${K8S_VERSION#v}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

build_plane() {
  build_wrapper "etcd-$ETCD_VERSION" "$repo/e2e/local/gomod/etcd" . "-s -w"
  local f
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    f=$(k8s_ldflags)
    build_wrapper "$c-$K8S_VERSION" "$repo/e2e/local/gomod/kube" "./cmd/$c" "$f"
  done
  install_module "kwok-$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  install_module "helm-$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# The real Prometheus Operator CRDs (ServiceMonitor, PodMonitor, PrometheusRule) from its module.
fetch_promop_crds() {
  local dest=$cache/prometheus-operator-crds-$PROMETHEUS_OPERATOR_VERSION
  [ -d "$dest" ] && return 0
  log "fetching prometheus-operator CRDs $PROMETHEUS_OPERATOR_VERSION"
  local dir
  dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$dest.tmp"
  cp "$dir"/example/prometheus-operator-crd/*.yaml "$dest.tmp/"
  chmod -R u+w "$dest.tmp"
  mv "$dest.tmp" "$dest"
}

build_ferretdb() {
  local out=ferretdb-$FERRETDB_VERSION
  need "$out" || return 0
  log "building FerretDB $FERRETDB_VERSION"
  local dir src
  dir=$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  src=$(mktemp -d)
  cp -r "$dir"/. "$src"
  chmod -R u+w "$src"
  echo "$FERRETDB_VERSION" > "$src/build/version/version.txt"
  (cd "$src" && go build -trimpath -o "$bin/.$out.tmp" ./cmd/ferretdb)
  mv "$bin/.$out.tmp" "$bin/$out"
  rm -rf "$src"
}

case "${1:-all}" in
  plane) build_plane; fetch_promop_crds ;;
  ferretdb) build_ferretdb ;;
  kubeconform) install_module "kubeconform-$KUBECONFORM_VERSION" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" ;;
  mongodb-exporter) install_module "mongodb_exporter-$MONGODB_EXPORTER_VERSION" "github.com/percona/mongodb_exporter@$MONGODB_EXPORTER_VERSION" ;;
  all) build_plane; fetch_promop_crds; build_ferretdb ;;
  *) echo "usage: $0 [plane|ferretdb|kubeconform|mongodb-exporter|all]" >&2; exit 2 ;;
esac
