#!/usr/bin/env bash
# Post-mortem of a cluster into one folder: nodes, and for each namespace every object described,
# the custom resources and workloads as YAML, events in time order, and every container's log (the
# operator's, mongod's, mongos', the clients', previous instances too). Secrets only by name:
# `describe` shows their sizes, never their values.
#   e2e/kind/collect.sh OUTDIR [NAMESPACE...]
# Without namespaces: mongobench, monitoring and every e2e-* namespace. Uses kubectl (KUBECTL
# overrides) with the current KUBECONFIG; never fails on what it cannot read (a pod without a
# kubelet to ask, an API that is not served): it notes the error and goes on.
set -uo pipefail
out=${1:?usage: collect.sh OUTDIR [NAMESPACE...]}
shift
KUBECTL=${KUBECTL:-kubectl}
KINDS=pods,services,endpoints,statefulsets,deployments,replicasets,jobs,persistentvolumeclaims
KINDS+=,poddisruptionbudgets,configmaps,secrets,serviceaccounts,roles,rolebindings
CUSTOM=mongoclusters.mongobench.io,benchmarkruns.mongobench.io
MONITORS=servicemonitors.monitoring.coreos.com,podmonitors.monitoring.coreos.com

k() { "$KUBECTL" "$@"; }
# Runs a kubectl command into a file; its errors go to the file too.
save() {
  local file=$1
  shift
  k "$@" >"$file" 2>&1 || echo "(kubectl $* failed)" >>"$file"
}

mkdir -p "$out"
namespaces=("$@")
if [ ${#namespaces[@]} -eq 0 ]; then
  mapfile -t namespaces < <(k get namespaces -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' |
    grep -E '^(mongobench|monitoring|e2e-.*)$')
fi

save "$out/nodes.txt" get nodes -o wide --show-labels
save "$out/nodes-describe.txt" describe nodes
save "$out/storage.txt" get storageclasses,persistentvolumes -o wide
save "$out/crds.txt" get customresourcedefinitions

for ns in "${namespaces[@]}"; do
  dir=$out/$ns
  mkdir -p "$dir/logs"
  save "$dir/objects.txt" get "$KINDS,$CUSTOM" -n "$ns" -o wide
  save "$dir/describe.txt" describe "$KINDS" -n "$ns"
  save "$dir/describe-custom.txt" describe "$CUSTOM" -n "$ns"
  save "$dir/custom-resources.yaml" get "$CUSTOM" -n "$ns" -o yaml
  save "$dir/workloads.yaml" get statefulsets,deployments,jobs,pods -n "$ns" -o yaml
  save "$dir/monitors.yaml" get "$MONITORS" -n "$ns" -o yaml
  save "$dir/events.txt" get events -n "$ns" --sort-by=.lastTimestamp -o wide
  while read -r pod; do
    [ -n "$pod" ] || continue
    save "$dir/logs/$pod.log" logs -n "$ns" "$pod" --all-containers --prefix --timestamps
    if k get pod -n "$ns" "$pod" -o jsonpath='{.status.containerStatuses[*].restartCount}' 2>/dev/null |
      grep -qv '^[0 ]*$'; then
      save "$dir/logs/$pod.previous.log" logs -n "$ns" "$pod" --all-containers --prefix --previous
    fi
  done < <(k get pods -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null)
done
echo "collect: $(find "$out" -type f | wc -l) files in $out" >&2
