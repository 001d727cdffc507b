"""CPU of the step's noisy neighbours: containers on its nodes that are neither the step's
clients nor the database's pods, from cAdvisor (the kubelet's container_cpu_usage_seconds_total
with kube-prometheus-stack's `node` label), as a share of each node's CPUs.

The series are the step's shared ``cpu.ContainerSeries`` (the profile's ``containerCpu``,
fetched once for the mongod containers, every role and this); which pods are the benchmark's is
decided here (pure ``summarise``). Without any cAdvisor series on the step's nodes the check
cannot be made: ``cadvisor`` is False and no neighbour is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mongobench.benchmarkrun.telemetry.cpu import (
    ContainerSeries,
    NodeMapping,
    ResourceProfile,
    query_containers,
    step_window,
)

TOP_PODS = 3  # the busiest neighbours named per node


def summarise(
    series: ContainerSeries,
    nodes: Iterable[str],
    own: Iterable[tuple[str, str]],
    node_cpus: Mapping[str, float],
) -> dict[str, Any]:
    """{"cadvisor": any series seen on ``nodes``, "nodes": [{node, cores, share, pods}]} from
    the step's container CPU; ``own`` are the benchmark's (namespace, pod) (pure)."""
    mine, wanted = set(own), set(nodes)
    per_node: dict[str, dict[str, float]] = {}
    for (node, namespace, pod, _), points in (series.cpu or {}).items():
        if node not in wanted or not points:
            continue
        pods = per_node.setdefault(node, {})
        if (namespace, pod) not in mine:
            # A pod's containers add up: the pod is the neighbour.
            name = f"{namespace}/{pod}"
            pods[name] = pods.get(name, 0.0) + sum(v for _, v in points) / len(points)
    out = []
    for node, pods in sorted(per_node.items()):
        cores = sum(pods.values())
        cpus = node_cpus.get(node) or 0.0
        busiest = sorted(pods.items(), key=lambda kv: -kv[1])[:TOP_PODS]
        out.append(
            {
                "node": node,
                "cores": round(cores, 3),
                "share": round(cores / cpus, 3) if cpus else None,
                "pods": [p for p, c in busiest if c >= 0.01],
            }
        )
    return {"cadvisor": bool(per_node), "nodes": out}


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
    series: ContainerSeries | None = None,
) -> dict[str, Any]:
    """The step's neighbours (see summarise), from ``series`` when the step fetched them
    already, else fetched here; CpuUnavailable as the CPU profile."""
    if not nodes:
        return {"cadvisor": False, "nodes": []}
    if series is None:
        series = query_containers(
            prom_url,
            step_window(start, end, step_seconds, scrape_interval),
            namespace="",
            pods=(),
            node_names=nodes,
            mapping=mapping,
            profile=profile,
            timeout=timeout,
        )
    return summarise(series, nodes, own, node_cpus)
