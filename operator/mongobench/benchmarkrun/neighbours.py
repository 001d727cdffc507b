"""CPU of the step's noisy neighbours: containers on its nodes that are neither the step's
clients nor the database's pods, from cAdvisor (the kubelet's container_cpu_usage_seconds_total
with kube-prometheus-stack's `node` label), as a share of each node's CPUs.

The PromQL is `containerCpuByPod` in profiles/resources.yaml; which pods are the benchmark's is
decided here (pure `summarise`), only `query` does I/O. Without any cAdvisor series on the
step's nodes the check cannot be made: `cadvisor` is False and no neighbour is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mongobench.benchmarkrun.cpu import NodeMapping, ResourceProfile, query_range, step_window

TOP_PODS = 3  # the busiest neighbours named per node


def summarise(
    result: Sequence[Mapping[str, Any]],
    own: Iterable[tuple[str, str]],
    node_cpus: Mapping[str, float],
) -> dict[str, Any]:
    """{"cadvisor": any series seen, "nodes": [{node, cores, share, pods}]} from the matrix
    of containerCpuByPod; `own` are the benchmark's (namespace, pod)."""
    mine = set(own)
    per_node: dict[str, dict[str, float]] = {}
    for item in result:
        metric = item.get("metric") or {}
        points = [float(v) for _, v in item.get("values") or ()]
        if not points:
            continue
        node = str(metric.get("node", ""))
        key = (str(metric.get("namespace", "")), str(metric.get("pod", "")))
        per_node.setdefault(node, {})
        if key not in mine:
            per_node[node][f"{key[0]}/{key[1]}"] = sum(points) / len(points)
    nodes = []
    for node, pods in sorted(per_node.items()):
        cores = sum(pods.values())
        cpus = node_cpus.get(node) or 0.0
        busiest = sorted(pods.items(), key=lambda kv: -kv[1])[:TOP_PODS]
        nodes.append(
            {
                "node": node,
                "cores": round(cores, 3),
                "share": round(cores / cpus, 3) if cpus else None,
                "pods": [p for p, c in busiest if c >= 0.01],
            }
        )
    return {"cadvisor": bool(result), "nodes": nodes}


def query(
    prom_url: str,
    start: str,
    end: str,
    step_seconds: float,
    *,
    nodes: Sequence[str],
    own: Iterable[tuple[str, str]],
    node_cpus: Mapping[str, float],
    scrape_interval: float,
    mapping: NodeMapping,
    profile: ResourceProfile,
    timeout: float = 5.0,
) -> dict[str, Any]:
    """The step's neighbours (see summarise); CpuUnavailable as the CPU profile."""
    if not nodes:
        return {"cadvisor": False, "nodes": []}
    w = step_window(start, end, step_seconds, scrape_interval)
    promql = profile.render(
        "containerCpuByPod", mapping=mapping, node_names=nodes, range_seconds=w.rate_range
    )
    result = query_range(prom_url, promql, w.first, w.end, w.step, timeout=timeout)
    return summarise(result, own, node_cpus)
