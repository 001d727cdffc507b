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

# The local control plane: etcd, the Kubernetes components and kubectl, KWOK (what `make demo`
# starts); build_plane adds helm, which the chart's tests use.
build_control_plane() {
  build_wrapper "etcd-$ETCD_VERSION" "$repo/e2e/local/gomod/etcd" . "-s -w"
  local f
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    f=$(k8s_ldflags)
    build_wrapper "$c-$K8S_VERSION" "$repo/e2e/local/gomod/kube" "./cmd/$c" "$f"
  done
  install_module "kwok-$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

build_plane() {
  build_control_plane
  build_helm
  build_monitoring
}

# The plane's monitoring (localplane.monitoring): the real Prometheus Operator and its config
# reloader (the wrapper module pins them; the version flag names the reloader image's tag in
# the StatefulSet it generates, else `v`), and Prometheus, whose Kubernetes service discovery
# Debian's 2.42 lacks.
build_monitoring() {
  local v=${PROMETHEUS_OPERATOR_VERSION#v} c
  for c in operator prometheus-config-reloader; do
    build_wrapper "prometheus-${c#prometheus-}-$PROMETHEUS_OPERATOR_VERSION" \
      "$repo/e2e/local/gomod/prometheus-operator" \
      "github.com/prometheus-operator/prometheus-operator/cmd/$c" \
      "-s -w -X github.com/prometheus/common/version.Version=$v"
  done
  build_prometheus
}

# Prometheus from its downloaded module: `go install` refuses a module whose go.mod has a
# replace directive, and v0.305.0's has one (fsnotify).
build_prometheus() {
  local out=prometheus-$PROMETHEUS_VERSION
  need "$out" || return 0
  log "building Prometheus $PROMETHEUS_VERSION (module $PROMETHEUS_MODULE_VERSION, ~9 min cold)"
  local dir
  dir=$(go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  (cd "$dir" && go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION#v}" -o "$bin/.$out.tmp" ./cmd/prometheus)
  mv "$bin/.$out.tmp" "$bin/$out"
}

# helm with the -X flags of an official build (helm's Makefile): its version, and the Kubernetes
# version of its client-go as the default of `helm template` (else it assumes 1.20 and a chart's
# kubeVersion constraint fails without --kube-version). A cached binary built without them is
# replaced.
build_helm() {
  local out=helm-$HELM_VERSION
  if [ -x "$bin/$out" ] && [ "$("$bin/$out" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]; then
    return 0
  fi
  log "building helm $HELM_VERSION (official version flags)"
  local dir tmpbin client_go major minor
  dir=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  client_go=$(awk '$1 == "k8s.io/client-go" {print $2}' "$dir/go.mod")  # v0.32.2 -> Kubernetes 1.32
  client_go=${client_go#v}
  major=$(( ${client_go%%.*} + 1 ))
  minor=${client_go#*.}
  minor=${minor%%.*}
  local p=helm.sh/helm/v3
  local ldflags="-w -s -X $p/internal/version.version=$HELM_VERSION -X $p/internal/version.metadata="
  ldflags+=" -X $p/internal/version.gitTreeState=clean"
  ldflags+=" -X $p/pkg/lint/rules.k8sVersionMajor=$major -X $p/pkg/lint/rules.k8sVersionMinor=$minor"
  ldflags+=" -X $p/pkg/chartutil.k8sVersionMajor=$major -X $p/pkg/chartutil.k8sVersionMinor=$minor"
  tmpbin=$(mktemp -d)
  CGO_ENABLED=0 GOBIN=$tmpbin go install -trimpath -ldflags "$ldflags" "$p/cmd/helm@$HELM_VERSION"
  mv "$tmpbin/helm" "$bin/.$out.tmp"
  mv "$bin/.$out.tmp" "$bin/$out"
  rm -rf "$tmpbin"
}

# Static checks of the chart, manifests and CI workflows.
build_lint_tools() {
  install_module "kubeconform-$KUBECONFORM_VERSION" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  install_module "helm-docs-$HELM_DOCS_VERSION" "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION"
  install_module "actionlint-$ACTIONLINT_VERSION" "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  build_kind_configcheck
}

# krew and its own manifest validator (cmd/validate-krew-manifest): the CLI's krew archive and
# manifest are installed with them in cli/tests/test_krew.py. kubectl is built with the plane.
build_krew() {
  install_module "krew-$KREW_VERSION" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION"
  install_module "validate-krew-manifest-$KREW_VERSION" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
}

# kind's own config loader and validation, for e2e/kind/kind-config.yaml without Docker: the pinned
# kind module copied, with e2e/kind/configcheck/main.go inside it (its loader is internal to kind).
build_kind_configcheck() {
  local out=kind-configcheck-$KIND_VERSION
  need "$out" || return 0
  log "building kind-configcheck (kind $KIND_VERSION's config loader)"
  local dir src
  dir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  src=$(mktemp -d)
  cp -r "$dir"/. "$src"
  chmod -R u+w "$src"
  mkdir -p "$src/pkg/mongobenchconfigcheck"
  cp "$repo/e2e/kind/configcheck/main.go" "$src/pkg/mongobenchconfigcheck/"
  (cd "$src" && go build -trimpath -o "$bin/.$out.tmp" ./pkg/mongobenchconfigcheck)
  mv "$bin/.$out.tmp" "$bin/$out"
  rm -rf "$src"
}

# Argo CD from the wrapper module e2e/local/gomod/argocd (argo-cd's go.mod replaces gitops-engine
# by a directory its module zip lacks, so `go install ...@version` fails).
build_argocd() {
  local out=argocd-$ARGOCD_VERSION
  need "$out" || return 0
  log "building Argo CD $ARGOCD_VERSION (about 12 minutes cold)"
  local p=github.com/argoproj/argo-cd/v3
  local ldflags="-s -w -X $p/common.version=${ARGOCD_VERSION#v} -X $p/common.gitTag=$ARGOCD_VERSION"
  ldflags+=" -X $p/common.gitTreeState=clean"
  (cd "$repo/e2e/local/gomod/argocd" && GOTOOLCHAIN=$ARGOCD_GO_TOOLCHAIN go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$bin/.$out.tmp" "$p/cmd")
  mv "$bin/.$out.tmp" "$bin/$out"
}

# What running Argo CD on the plane needs from its module, keyed by version: its CRDs,
# core-install.yaml (the ConfigMaps and Secret) and the repo server's hack/git-verify-wrapper.sh.
fetch_argocd_files() {
  local dest=$cache/argocd-$ARGOCD_VERSION
  [ -x "$dest/git-verify-wrapper.sh" ] && return 0
  log "fetching Argo CD $ARGOCD_VERSION's CRDs and install manifests"
  local dir
  dir=$(cd "$repo/e2e/local/gomod/argocd" && GOTOOLCHAIN=$ARGOCD_GO_TOOLCHAIN go mod download -json "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$dest.tmp" "$dest"
  mkdir -p "$dest.tmp/crds"
  cp "$dir"/manifests/crds/*-crd.yaml "$dest.tmp/crds/"
  cp "$dir/manifests/core-install.yaml" "$dir/hack/git-verify-wrapper.sh" "$dest.tmp/"
  chmod -R u+w "$dest.tmp"
  chmod +x "$dest.tmp/git-verify-wrapper.sh"  # the module cache keeps it 0444
  mv "$dest.tmp" "$dest"
}

# The kustomize Argo CD ships, which its repo server runs for kustomize sources.
build_kustomize() {
  GOTOOLCHAIN=$ARGOCD_GO_TOOLCHAIN install_module "kustomize-$KUSTOMIZE_VERSION" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
}

build_argocd_all() {
  build_argocd
  fetch_argocd_files
  build_kustomize
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

# cert-manager's CRDs from its module (Helm-templated only in comments and label values, which
# the test harness drops: localplane.tools.cert_manager_crds).
fetch_cert_manager_crds() {
  local dest=$cache/cert-manager-crds-$CERT_MANAGER_VERSION
  [ -d "$dest" ] && return 0
  log "fetching cert-manager CRDs $CERT_MANAGER_VERSION"
  local dir
  dir=$(go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$dest.tmp"
  cp "$dir"/deploy/crds/crd-certificates.yaml "$dir"/deploy/crds/crd-certificaterequests.yaml \
    "$dir"/deploy/crds/crd-issuers.yaml "$dir"/deploy/crds/crd-clusterissuers.yaml "$dest.tmp/"
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

# mongodb_exporter, built from its downloaded module (`go install` asks the proxy for the module's
# version list, which it refuses), and beside it the documents of a real mongod that its own tests
# use (exporter/testdata): the e2e dashboards test serves them to the exporter from a scripted peer.
build_mongodb_exporter() {
  local out=mongodb_exporter-$MONGODB_EXPORTER_VERSION
  local data=$cache/$out-testdata
  need "$out" || [ ! -d "$data" ] || return 0
  log "building mongodb_exporter $MONGODB_EXPORTER_VERSION"
  local dir
  dir=$(go mod download -json "github.com/percona/mongodb_exporter@$MONGODB_EXPORTER_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  (cd "$dir" && go build -trimpath -o "$bin/.$out.tmp" .)
  rm -rf "$data.tmp"
  mkdir -p "$data.tmp"
  cp "$dir"/exporter/testdata/*.json "$data.tmp/"
  chmod -R u+w "$data.tmp"
  rm -rf "$data"
  mv "$data.tmp" "$data"
  mv "$bin/.$out.tmp" "$bin/$out"
}

case "${1:-all}" in
  plane) build_plane; fetch_promop_crds; fetch_cert_manager_crds ;;
  demo) build_control_plane; build_prometheus; build_ferretdb ;;
  ferretdb) build_ferretdb ;;
  helm) build_helm ;;
  lint) build_lint_tools ;;
  kind-configcheck) build_kind_configcheck ;;
  argocd) build_argocd_all ;;
  mongodb-exporter) build_mongodb_exporter ;;
  monitoring) build_monitoring ;;
  krew) build_krew ;;
  all) build_plane; fetch_promop_crds; fetch_cert_manager_crds; build_ferretdb; build_lint_tools; build_mongodb_exporter; build_krew; build_argocd_all ;;
  *) echo "usage: $0 [plane|demo|helm|ferretdb|lint|kind-configcheck|argocd|mongodb-exporter|monitoring|krew|all]" >&2; exit 2 ;;
esac
