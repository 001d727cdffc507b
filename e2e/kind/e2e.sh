#!/usr/bin/env bash
# End to end on kind with real mongod: the e2e suite (e2e/suite) on its `kind` backend.
#   e2e/kind/e2e.sh all            check, up, test; on failure collect (what `make e2e-kind` runs)
#   e2e/kind/e2e.sh check          refuse clearly unless Docker, kind, kubectl and helm are there
#   e2e/kind/e2e.sh up             kind cluster, images, kube-prometheus-stack, the mongobench chart
#   e2e/kind/e2e.sh test           the suite against that cluster (pytest -m e2e e2e/suite)
#   e2e/kind/e2e.sh collect [DIR]  objects, events and logs of every namespace it uses, into DIR
#   e2e/kind/e2e.sh down           delete the cluster (what `make e2e-kind-down` runs)
#   e2e/kind/e2e.sh images         the mongod and exporter images `up` loads, one a line
# Environment: KIND_CLUSTER (default mongobench-e2e), E2E_ARTIFACTS (default
# e2e-artifacts/<UTC time>), PYTEST_ARGS (extra pytest arguments, e.g. `-k upgrade`).
# Pinned: kind, its node image, kube-prometheus-stack, the mongo images (hack/versions.env).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=hack/versions.env
source "$repo/hack/versions.env"
CLUSTER=${KIND_CLUSTER:-mongobench-e2e}
STATE=$repo/.e2e-kind
KUBECONFIG_FILE=$STATE/kubeconfig
ARTIFACTS=${E2E_ARTIFACTS:-$repo/e2e-artifacts/$(date -u +%Y%m%dT%H%M%SZ)}
KPS_CHART=oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack
CALICO_MANIFEST=https://raw.githubusercontent.com/projectcalico/calico/$CALICO_VERSION/manifests/calico.yaml
EXPORTER_IMAGE=percona/mongodb_exporter:${MONGODB_EXPORTER_VERSION#v}
# One image per supported series (the upgrade scenario's pair is among them).
MONGO_IMAGES=("mongo:$MONGO_5_0_VERSION" "mongo:$MONGO_6_0_VERSION" "mongo:$MONGO_7_0_VERSION"
  "mongo:$MONGO_8_0_VERSION" "$EXPORTER_IMAGE")
HELM=${HELM:-${MONGOBENCH_CACHE:-$HOME/.cache/mongobench}/bin/helm-$HELM_VERSION}

log() { echo "e2e-kind: $*" >&2; }
refuse() {
  log "$*"
  exit 2
}

check() {
  command -v docker >/dev/null ||
    refuse "Docker is not installed: this suite runs kind and real mongod containers. Without Docker, \`make test-e2e\` runs the same scenarios on the local plane."
  docker info >/dev/null 2>&1 ||
    refuse "Docker is installed but does not answer (\`docker info\` fails): start it, or run as a user allowed to use it."
  command -v kind >/dev/null ||
    refuse "kind is not installed: \`go install sigs.k8s.io/kind@$KIND_VERSION\` (or its release binary from https://kind.sigs.k8s.io)."
  local version
  version=$(kind version | awk '{print $2}')
  if [ "$version" != "$KIND_VERSION" ]; then
    log "warning: kind $version here, the suite pins $KIND_VERSION (node image $KIND_NODE_IMAGE)"
  fi
  command -v kubectl >/dev/null || refuse "kubectl is not installed (https://kubernetes.io/docs/tasks/tools/)."
  if [ ! -x "$HELM" ]; then
    if command -v go >/dev/null; then
      bash "$repo/hack/build-tools.sh" helm
    else
      HELM=$(command -v helm) || refuse "helm is not installed and Go is not there to build the pinned $HELM_VERSION (hack/build-tools.sh helm)."
    fi
  fi
  [ -x "$repo/.venv/bin/pytest" ] || bash "$repo/hack/setup.sh" python
}

kc() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }

up() {
  mkdir -p "$STATE"
  if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "reusing kind cluster $CLUSTER"
  else
    log "creating kind cluster $CLUSTER ($KIND_NODE_IMAGE)"
    # No --wait: without a CNI (kind-config.yaml disables kind's) no node is Ready before Calico.
    kind create cluster --name "$CLUSTER" --config "$here/kind-config.yaml" \
      --kubeconfig "$KUBECONFIG_FILE"
  fi
  kind export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG_FILE"

  log "installing Calico $CALICO_VERSION (enforces NetworkPolicy)"
  # Server-side: its CRDs are too large for the last-applied annotation of a client-side apply.
  kc apply --server-side --force-conflicts -f "$CALICO_MANIFEST" >/dev/null
  kc -n kube-system rollout status daemonset/calico-node --timeout 5m
  kc wait --for=condition=Ready nodes --all --timeout 5m

  log "building and loading the operator, YCSB and Locust images"
  make -C "$repo" images
  KIND_CLUSTER=$CLUSTER make -C "$repo" kind-load
  # mongod (and its exporter sidecar) runs on the database nodes only: loaded there, not pulled
  # by every scenario.
  local nodes image
  nodes=$(kc get nodes -l mongobench.io/role=database -o jsonpath='{.items[*].metadata.name}' | tr ' ' ',')
  for image in "${MONGO_IMAGES[@]}"; do
    docker image inspect "$image" >/dev/null 2>&1 || docker pull "$image"
    kind load docker-image --name "$CLUSTER" --nodes "$nodes" "$image"
  done

  log "installing kube-prometheus-stack $KUBE_PROMETHEUS_STACK_VERSION"
  "$HELM" --kubeconfig "$KUBECONFIG_FILE" upgrade --install kube-prometheus-stack "$KPS_CHART" \
    --version "$KUBE_PROMETHEUS_STACK_VERSION" -n monitoring --create-namespace \
    -f "$here/values/kube-prometheus-stack.yaml" --wait --timeout 10m
  log "installing the mongobench charts (CRDs, then the operator)"
  "$HELM" --kubeconfig "$KUBECONFIG_FILE" upgrade --install mongobench-crds "$repo/charts/mongobench-crds" \
    -n mongobench --create-namespace --wait --timeout 2m
  "$HELM" --kubeconfig "$KUBECONFIG_FILE" upgrade --install mongobench "$repo/charts/mongobench" \
    -n mongobench --create-namespace -f "$here/values/mongobench.yaml" --wait --timeout 5m
}

run_suite() {
  log "running the e2e suite on kind (artifacts of failures: $ARTIFACTS)"
  # shellcheck disable=SC2086  # PYTEST_ARGS is a list of arguments
  KUBECONFIG=$KUBECONFIG_FILE MONGOBENCH_E2E_BACKEND=kind MONGOBENCH_E2E_ARTIFACTS=$ARTIFACTS \
    "$repo/.venv/bin/pytest" -m e2e "$repo/e2e/suite" -p no:cacheprovider -rA \
    --timeout=2400 --junitxml="$ARTIFACTS/junit.xml" ${PYTEST_ARGS:-}
}

collect() {
  local out=${1:-$ARTIFACTS/cluster}
  log "collecting objects, events and logs into $out"
  KUBECONFIG=$KUBECONFIG_FILE bash "$here/collect.sh" "$out"
}

down() {
  command -v kind >/dev/null || refuse "kind is not installed: nothing to delete."
  kind delete cluster --name "$CLUSTER"
  rm -rf "$STATE"
}

all() {
  check
  mkdir -p "$ARTIFACTS"
  if ! up; then
    collect
    refuse "setting up the cluster failed; see $ARTIFACTS (cluster kept: make e2e-kind-down)"
  fi
  if ! run_suite; then
    collect
    log "FAILED: artifacts in $ARTIFACTS (cluster kept for inspection: make e2e-kind-down)"
    exit 1
  fi
  log "passed; the cluster is kept (KUBECONFIG=$KUBECONFIG_FILE); remove it: make e2e-kind-down"
}

case "${1:-}" in
  all) all ;;
  check) check ;;
  up) check && up ;;
  test) run_suite ;;
  collect) collect "${2:-}" ;;
  down) down ;;
  images) printf '%s\n' "${MONGO_IMAGES[@]}" ;;
  *)
    echo "usage: $0 all|check|up|test|collect [DIR]|down|images" >&2
    exit 2
    ;;
esac
