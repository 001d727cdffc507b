"""Per-step CPU and memory of every role: shard mongod, config server mongod, mongos, clients.

A pod's role comes from its labels (``app.kubernetes.io/component`` of the MongoCluster's pods,
the step's Job pods are the clients); its figures from cAdvisor's series of the role's main
container (the step's shared ``cpu.ContainerSeries``: ``containerCpu`` and ``containerMemory``
in ``profiles/resources.yaml``), so
a mongos is counted by its ``mongos`` container and an exporter sidecar by nothing. Each pod
gets the mean and the largest point over the step's window (``cpu.step_window``); each role the
sum over its pods (at every point, then mean and largest) and the mean pod. A pod or a whole
figure without series is listed in ``missing``, never reported as zero. Summarising is pure;
only :func:`query_roles` does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mongobench.benchmarkrun.telemetry.cpu import (
    ContainerSeries,
    NodeMapping,
    Points,
    ResourceProfile,
    query_containers,
    step_window,
)
from mongobench.mongocluster.build import labels

# Status names of the roles, in the order status and reports show them.
ROLES = ("mongod", "configServer", "mongos", "clients")
# The container that is the role's work (the others in its pod are sidecars).
ROLE_CONTAINER = {"mongod": "mongod", "configServer": "mongod", "mongos": "mongos"}
CLIENT_CONTAINER = "client"
_COMPONENT_ROLE = {
    "shard": "mongod",
    "replicaset": "mongod",
    "standalone": "mongod",
    "configsvr": "configServer",
    "mongos": "mongos",
}
# figure -> (status key, decimals)
_FIGURES = {"cpu": ("cpuCores", 3), "memory": ("memoryWorkingSetBytes", 0)}


def cluster_pod_roles(pods: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """pod name -> role of the MongoCluster's pods, from their component label (pure)."""
    out: dict[str, str] = {}
    for p in pods:
        meta = p.get("metadata") or {}
        role = _COMPONENT_ROLE.get((meta.get("labels") or {}).get(labels.COMPONENT, ""))
        if role is not None:
            out[str(meta["name"])] = role
    return out


def _container(role: str) -> str:
    return ROLE_CONTAINER.get(role, CLIENT_CONTAINER)


def _round(value: float, digits: int) -> float | int:
    return round(value) if digits == 0 else round(value, digits)


def _role_figure(
    role: str,
    pods: Sequence[str],
    figure: str,
    found: Mapping[tuple[str, str], Points],
    *,
    per_pod: dict[str, dict[str, Any]],
    missing: list[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One figure of one role: fills ``per_pod`` and ``missing``; returns (sum, mean)."""
    key, digits = _FIGURES[figure]
    summed: dict[float, float] = {}
    avgs: list[float] = []
    for p in pods:
        points = found.get((p, _container(role)))
        if not points:
            missing.append(f"{figure} of {role} pod {p}")
            continue
        values = [v for _, v in points]
        avg = sum(values) / len(values)
        avgs.append(avg)
        per_pod[p][key] = _round(avg, digits)
        per_pod[p][f"{key}Max"] = _round(max(values), digits)
        for t, v in points:
            summed[t] = summed.get(t, 0.0) + v
    if not avgs:
        return {}, {}
    # The mean of the pointwise sum is the sum of the pods' means where every pod has every
    # point; the largest is the busiest instant of the role as a whole, not the sum of peaks.
    total = {key: _round(sum(avgs), digits), f"{key}Max": _round(max(summed.values()), digits)}
    return total, {key: _round(sum(avgs) / len(avgs), digits)}


def summarise(
    pod_roles: Mapping[str, str],
    series: Mapping[str, Mapping[tuple[str, str], Points] | None],
) -> dict[str, Any]:
    """The ``roles`` of a step's status from the series of each figure ("cpu", "memory"; None
    where the figure had no series at all) (pure).

    {role: {pods: [{pod, cpuCores, cpuCoresMax, memoryWorkingSetBytes, ...Max}], sum: {pods,
    cpuCores, cpuCoresMax, ...}, mean: {cpuCores, memoryWorkingSetBytes}}, missing: [...]}
    """
    status: dict[str, Any] = {}
    missing = [f"{f} of every role (no cAdvisor series)" for f, s in series.items() if s is None]
    for role in ROLES:
        pods = sorted(p for p, r in pod_roles.items() if r == role)
        if not pods:
            continue  # e.g. no mongos in a replica set: nothing to report, nothing missing
        per_pod: dict[str, dict[str, Any]] = {p: {"pod": p} for p in pods}
        total: dict[str, Any] = {}
        mean: dict[str, Any] = {}
        for figure, found in series.items():
            if found is not None:
                t, m = _role_figure(role, pods, figure, found, per_pod=per_pod, missing=missing)
                total.update(t)
                mean.update(m)
        status[role] = {
            "pods": list(per_pod.values()),
            # Over the pods found (the others are in `missing`).
            "sum": {"pods": len(pods), **total} if total else None,
            "mean": mean or None,
        }
    if missing:
        status["missing"] = missing
    return status


@dataclass(frozen=True)
class RolePods:
    """The pods of a step by role: the cluster's (from labels) and the step's clients."""

    cluster: Mapping[str, str]  # pod -> mongod | configServer | mongos
    clients: Sequence[str]

    def roles(self) -> dict[str, str]:
        return {**self.cluster, **{p: "clients" for p in self.clients}}


def query_roles(
    prom_url: str,
    start: datetime | float | str,
    end: datetime | float | str,
    step_seconds: float,
    *,
    namespace: str,
    pods: RolePods,
    scrape_interval: float = 15.0,
    mapping: NodeMapping | None = None,
    profile: ResourceProfile | None = None,
    timeout: float = 5.0,
    series: ContainerSeries | None = None,
) -> dict[str, Any]:
    """CPU and memory of every role over one step's window (see ``summarise``), from
    ``series`` when the step fetched them already, else fetched here. Raises
    CpuUnavailable as the CPU profile does; absent series go to ``missing``."""
    mapping = mapping or NodeMapping()
    profile = profile or ResourceProfile.load()
    pod_roles = pods.roles()
    if not pod_roles:
        return {}
    if series is None:
        series = query_containers(
            prom_url,
            step_window(start, end, step_seconds, scrape_interval),
            namespace=namespace,
            pods=pod_roles,
            node_names=(),
            mapping=mapping,
            profile=profile,
            timeout=timeout,
        )
    return summarise(pod_roles, {"cpu": series.pod_cpu(namespace) or None, "memory": series.memory})
