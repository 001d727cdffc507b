"""Per-step disk, network and memory from Prometheus, beside the CPU of
``benchmarkrun.telemetry.cpu``.

The queries are the ``figures`` of ``profiles/resources.yaml``: per node (node-exporter, found
through the same node mapping as CPU); the mongod containers' memory comes from the step's
shared cAdvisor series (``cpu.ContainerSeries``, the profile's ``containerMemory``). Each figure
of a step is the mean of its points over the step's window (``cpu.step_window``) and, where the
profile asks, the largest point. Nodes are reported one by one and as groups: the database's
nodes (``cluster``) apart from the benchmark clients' (``clients``). Series that are not there
are reported in ``missing``, never as zero. Summarising is pure; only :func:`query_resources`
does I/O (through ``benchmarkrun.telemetry.cpu.query_range``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.benchmarkrun.telemetry.cpu import (
    ContainerSeries,
    Figure,
    NodeMapping,
    ResourceProfile,
    Window,
    WindowQuery,
    iso_utc,
    parse_matrix,
    query_containers,
    query_range,
)

# The mongod containers' figure, as status names it.
MONGOD_MEMORY = "memoryWorkingSetBytes"

# Decimals kept in status, by unit: whole bytes, tenths of a percent, ...
_DECIMALS = {"bytes": 0, "bytes/s": 0, "percent": 1, "ops/s": 1, "packets/s": 1, "ms": 2}


@dataclass(frozen=True)
class Value:
    """A figure over the window: mean and largest point; None where no point was finite."""

    avg: float | None
    max: float | None


# node (or pod) -> "group.name" -> value
Figures = Mapping[str, Mapping[str, Value]]


def summarise_points(points: Sequence[tuple[float, float]]) -> Value:
    values = [v for _, v in points if math.isfinite(v)]
    if not values:
        return Value(None, None)
    return Value(sum(values) / len(values), max(values))


def group_values(per_node: Iterable[Value]) -> Value:
    """The mean node of a group; its max is the largest node's max."""
    found = list(per_node)
    avgs = [v.avg for v in found if v.avg is not None]
    maxes = [v.max for v in found if v.max is not None]
    return Value(sum(avgs) / len(avgs) if avgs else None, max(maxes) if maxes else None)


def _round(value: float | None, unit: str) -> float | int | None:
    if value is None:
        return None
    digits = _DECIMALS.get(unit, 3)
    return round(value) if digits == 0 else round(value, digits)


def figure_status(figures: Sequence[Figure], values: Mapping[str, Value]) -> dict[str, Any]:
    """{group: {name: avg, nameMax: max}} of the figures found (pure)."""
    out: dict[str, dict[str, Any]] = {}
    for f in figures:
        key = f"{f.group}.{f.name}"
        if key not in values:
            continue
        v = values[key]
        entry = out.setdefault(f.group, {})
        entry[f.name] = _round(v.avg, f.unit)
        if f.keep_max:
            entry[f"{f.name}Max"] = _round(v.max, f.unit)
    return out


@dataclass(frozen=True)
class ResourceReport:
    window: Window
    cluster_nodes: tuple[str, ...]
    client_nodes: tuple[str, ...]
    node_figures: tuple[Figure, ...]
    nodes: Figures  # node -> figure -> value
    # mongod pod -> its memory working set; None when cAdvisor had no series at all: missing,
    # not zero.
    containers: Mapping[str, Value] | None
    missing: tuple[str, ...] = ()

    def group(self, members: Sequence[str]) -> dict[str, Any] | None:
        found = [self.nodes[n] for n in dict.fromkeys(members) if n in self.nodes]
        if not found:
            return None
        keys = {k for node in found for k in node}
        values = {k: group_values(node[k] for node in found if k in node) for k in keys}
        return {"nodes": len(found), **figure_status(self.node_figures, values)}

    def to_status(self) -> dict[str, Any]:
        """Figures only, no series (like the CPU profile): fit for a CR status."""

        def role(n: str) -> str:
            both = n in self.cluster_nodes and n in self.client_nodes
            return "both" if both else "cluster" if n in self.cluster_nodes else "client"

        names = list(dict.fromkeys((*self.cluster_nodes, *self.client_nodes)))
        status: dict[str, Any] = {
            "window": {
                "start": iso_utc(self.window.start),
                "end": iso_utc(self.window.end_time),
                "stepSeconds": self.window.step,
            },
            "nodes": [
                {"name": n, "role": role(n), **figure_status(self.node_figures, self.nodes[n])}
                for n in names
                if n in self.nodes
            ],
            "cluster": self.group(self.cluster_nodes),
            "clients": self.group(self.client_nodes),
            "mongod": None
            if self.containers is None
            else [
                {
                    "pod": p,
                    MONGOD_MEMORY: _round(v.avg, "bytes"),
                    f"{MONGOD_MEMORY}Max": _round(v.max, "bytes"),
                }
                for p, v in sorted(self.containers.items())
            ],
        }
        if self.missing:
            status["missing"] = list(self.missing)
        return status


def query_resources(q: WindowQuery, *, series: ContainerSeries | None = None) -> ResourceReport:
    """Disk, network and memory of one step's window, per node, per group and per mongod
    container (from ``series`` when the step fetched them already, else fetched here). Raises
    CpuUnavailable (Prometheus unreachable or refusing a query) as the CPU profile does;
    absent series go to ``missing``."""
    mapping = q.mapping or NodeMapping()
    profile = q.profile or ResourceProfile.load()
    w = q.window()
    node_figures = tuple(f for f in profile.figures if f.query.scope == "node")
    per_node, absent = _node_figures(q, w, mapping, profile, node_figures)
    containers: dict[str, Value] | None = None
    container_absent: list[str] = []
    if q.pods:
        if series is None:
            series = query_containers(
                q.prom_url,
                w,
                namespace=q.namespace,
                pods=q.pods,
                node_names=(),
                mapping=mapping,
                profile=profile,
                timeout=q.timeout,
            )
        containers, container_absent = _mongod_memory(series, q.pods)
    return ResourceReport(
        window=w,
        cluster_nodes=tuple(q.cluster_nodes),
        client_nodes=tuple(q.client_nodes),
        node_figures=node_figures,
        nodes={n: v for n, v in per_node.items() if v},
        containers=containers,
        missing=tuple(_missing(per_node, absent, containers, container_absent)),
    )


def _node_figures(
    q: WindowQuery,
    w: Window,
    mapping: NodeMapping,
    profile: ResourceProfile,
    node_figures: Sequence[Figure],
) -> tuple[dict[str, dict[str, Value]], dict[str, list[str]]]:
    """Each node's figures over the window (one query per figure), and each node's absent ones."""
    nodes = q.nodes
    key_label = profile.node_label(mapping)
    per_node: dict[str, dict[str, Value]] = {n: {} for n in nodes}
    absent: dict[str, list[str]] = {n: [] for n in nodes}
    for f in node_figures if nodes else ():
        promql = profile.render(
            f.query.name, mapping=mapping, nodes=nodes, range_seconds=w.rate_range
        )
        raw = parse_matrix(
            query_range(q.prom_url, promql, w.first, w.end, w.step, timeout=q.timeout), key_label
        )
        for n in nodes:
            node_raw = raw.get(mapping.identity(n))
            if node_raw is None:
                absent[n].append(f"{f.group}.{f.name}")
            else:
                per_node[n][f"{f.group}.{f.name}"] = summarise_points(node_raw.get("", []))
    return per_node, absent


def _mongod_memory(
    series: ContainerSeries, pods: Sequence[str]
) -> tuple[dict[str, Value] | None, list[str]]:
    """The mongod containers' memory (None: no cAdvisor series at all), and what is absent."""
    if series.memory is None:
        return None, [f"mongod.{MONGOD_MEMORY}"]
    containers: dict[str, Value] = {}
    absent: list[str] = []
    for p in pods:
        points = series.memory.get((p, "mongod"))
        if points is None:
            absent.append(f"mongod.{MONGOD_MEMORY} of {p}")
        else:
            containers[p] = summarise_points(points)
    return containers, absent


def _missing(
    per_node: Mapping[str, Mapping[str, Value]],
    absent: Mapping[str, Sequence[str]],
    containers: Mapping[str, Value] | None,
    container_absent: Sequence[str],
) -> list[str]:
    """What status lists as missing: a node's absent figures (all of them: no node-exporter),
    then the mongod containers'."""
    missing = [
        f"node {n} ({', '.join(a)})" if per_node[n] else f"node {n} (no node-exporter series)"
        for n, a in absent.items()
        if a
    ]
    if container_absent:
        missing.append(
            f"mongod containers ({', '.join(container_absent)}: no cAdvisor series)"
            if containers is None
            else f"mongod containers ({', '.join(container_absent)})"
        )
    return missing
