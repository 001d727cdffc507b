"""Per-step resource profile for status: CPU (benchmarkrun.telemetry.cpu) and disk, network and
memory
(benchmarkrun.telemetry.resources) of the nodes that ran the database and of the clients', and CPU
and
memory of every role's pods (benchmarkrun.telemetry.roles), from Prometheus. One query per step per
figure: the cAdvisor series every part needs (the mongod containers', every role's, the
neighbours') are fetched once (``cpu.query_containers``) and shared.

Cluster nodes are those of the MongoCluster's pods; client nodes those of the step's Job pods
(still present: Jobs are cleaned up only after the run). CpuUnavailable propagates to the
orchestrator, which records the step without them and sets the CPUCollected condition; series
that are missing are listed in each part's `missing` (the ResourcesComplete condition).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Duet, Monitoring, cluster_of
from mongobench.api.schema import field_of
from mongobench.benchmarkrun.act.orchestrate import CpuQuery, ScrapeProbe
from mongobench.benchmarkrun.build import cpu_monitor, jobs
from mongobench.benchmarkrun.telemetry import neighbours, roles
from mongobench.benchmarkrun.telemetry.cpu import (
    ContainerSeries,
    CpuReport,
    CpuUnavailable,
    NodeMapping,
    ResourceProfile,
    WindowQuery,
    query_containers,
    query_instant,
    query_window,
)
from mongobench.benchmarkrun.telemetry.resources import query_resources
from mongobench.config import OperatorConfig
from mongobench.k8s.api import KubeApi


def _nodes_and_pods(
    kube: KubeApi, namespace: str, selector: str
) -> tuple[list[str], list[dict[str, Any]]]:
    pods = kube.list("Pod", namespace, selector)
    nodes = sorted({p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")})
    return nodes, sorted(pods, key=lambda p: str(p["metadata"]["name"]))


def _names(pods: list[dict[str, Any]]) -> list[str]:
    return [str(p["metadata"]["name"]) for p in pods]


def duet_selectors(run: Mapping[str, Any], cluster_pods: list[dict[str, Any]]) -> list[str]:
    """A duet's other side, by its pair labels: the pair's clients, and the database pods of
    the duet the run's own cluster is in. Sharing the nodes with them is the design, so the
    neighbour check does not count them (pure)."""
    duet: Duet | None = field_of(BenchmarkRunSpec, run.get("spec"), "duet")
    if duet is None:
        return []
    out = [f"{jobs.DUET_LABEL}={duet.name}"]
    pairs = {(p["metadata"].get("labels") or {}).get(jobs.DUET_LABEL) for p in cluster_pods}
    out += [f"{jobs.DUET_LABEL}={name}" for name in sorted(n for n in pairs if n)]
    return out


def node_mapping(config: OperatorConfig) -> NodeMapping:
    return NodeMapping(
        mode=cast(Literal["uname", "label"], config.prometheus_node_mapping),
        label=config.prometheus_node_label,
        aliases=dict(config.prometheus_node_aliases),
    )


def fine_cpu_scraped(config: OperatorConfig) -> ScrapeProbe | None:
    """Whether Prometheus has a fine CPU job's series yet (one instant query); None without a
    Prometheus. An unreachable Prometheus counts as scraped: it holds no step, and the step's
    CPU says why it is missing (CPUCollected)."""
    if not config.prometheus_url:
        return None
    url = config.prometheus_url

    def scraped(job: str) -> bool:
        try:
            return bool(query_instant(url, f'count(node_cpu_seconds_total{{job="{job}"}})'))
        except CpuUnavailable:
            return True

    return scraped


def cpu_for_step(kube: KubeApi, config: OperatorConfig) -> CpuQuery | None:
    if not config.prometheus_url:
        return None
    url = config.prometheus_url
    mapping = node_mapping(config)
    profile = ResourceProfile.load()

    def query(
        run: Mapping[str, Any], step: Mapping[str, Any], start: str, end: str
    ) -> dict[str, Any]:
        pods = _step_pods(kube, run, step)
        interval = config.prometheus_scrape_interval
        q = WindowQuery(
            prom_url=url,
            start=start,
            end=end,
            step_seconds=interval,
            cluster_nodes=pods.cluster_nodes,
            client_nodes=pods.client_nodes,
            namespace=pods.namespace,
            pods=pods.mongod_pods,
            scrape_interval=interval,
            mapping=mapping,
            profile=profile,
        )
        series = query_containers(
            url,
            q.window(),
            namespace=pods.namespace,
            pods=(*_names(pods.cluster_pods), *pods.client_pods),
            node_names=q.nodes,
            mapping=mapping,
            profile=profile,
        )
        cpu = _node_cpu(run, q, series=series, fine=_fine_resolution(run))
        return {
            "cpu": cpu.to_status(),
            "resources": query_resources(q, series=series).to_status(),
            **_roles_and_neighbours(q, pods, cpu, series, mapping=mapping, profile=profile),
        }

    return query


@dataclass(frozen=True)
class _StepPods:
    """The pods of one step as the API lists them: the cluster's, the clients' (the step's
    Job), and a duet's other side."""

    namespace: str
    cluster_nodes: list[str]
    cluster_pods: list[dict[str, Any]]
    client_nodes: list[str]
    client_pods: list[str]
    partners: list[str]
    cluster_roles: dict[str, str]

    @property
    def mongod_pods(self) -> list[str]:
        # The mongod containers' figures are of the pods that run one (routers run mongos).
        return [p for p in _names(self.cluster_pods) if self.cluster_roles.get(p) != "mongos"]


def _step_pods(kube: KubeApi, run: Mapping[str, Any], step: Mapping[str, Any]) -> _StepPods:
    namespace = run["metadata"]["namespace"]
    cluster = cluster_of(run.get("spec"))
    cluster_nodes, cluster_pods = (
        _nodes_and_pods(kube, namespace, f"{jobs.CLUSTER_LABEL}={cluster}") if cluster else ([], [])
    )
    client_nodes, clients = _nodes_and_pods(kube, namespace, f"job-name={step['job']}")
    partners = [
        name
        for selector in duet_selectors(run, cluster_pods)
        for name in _names(kube.list("Pod", namespace, selector))
    ]
    return _StepPods(
        namespace=namespace,
        cluster_nodes=cluster_nodes,
        cluster_pods=cluster_pods,
        client_nodes=client_nodes,
        client_pods=_names(clients),
        partners=partners,
        cluster_roles=roles.cluster_pod_roles(cluster_pods),
    )


def _fine_resolution(run: Mapping[str, Any]) -> float | None:
    monitoring: Monitoring = field_of(BenchmarkRunSpec, run.get("spec"), "monitoring")
    return monitoring.cpu_resolution_seconds or None


def _node_cpu(
    run: Mapping[str, Any], q: WindowQuery, *, series: ContainerSeries, fine: float | None
) -> CpuReport:
    """At the run's own resolution where its PodMonitor's series are there, else at
    Prometheus' interval (``q``'s), the status saying which (cpu.resolutionSeconds)."""
    if not fine:
        return query_window(q, series=series)
    meta = run["metadata"]
    job = cpu_monitor.job_label(meta["namespace"], meta["name"])
    report = query_window(
        replace(q, step_seconds=fine, scrape_interval=fine), series=series, job=job
    )
    if report.nodes:
        return report
    coarse = query_window(q, series=series)
    note = (
        f"cpu at {fine:g} s resolution (no series of job {job}: is its PodMonitor "
        f"{cpu_monitor.monitor_name(meta['name'])} scraped?)"
    )
    return replace(coarse, missing=(*coarse.missing, note))


def _roles_and_neighbours(
    q: WindowQuery,
    pods: _StepPods,
    cpu: CpuReport,
    series: ContainerSeries,
    *,
    mapping: NodeMapping,
    profile: ResourceProfile,
) -> dict[str, Any]:
    """Every role's CPU and memory, and the step's neighbours on its nodes."""
    own = (*_names(pods.cluster_pods), *pods.client_pods, *pods.partners)
    return {
        "roles": roles.query_roles(
            q.prom_url,
            q.start,
            q.end,
            q.step_seconds,
            namespace=pods.namespace,
            pods=roles.RolePods(pods.cluster_roles, pods.client_pods),
            scrape_interval=q.scrape_interval,
            mapping=mapping,
            profile=profile,
            series=series,
        ),
        "neighbours": neighbours.query(
            q.prom_url,
            str(q.start),
            str(q.end),
            q.step_seconds,
            nodes=q.nodes,
            own=[(pods.namespace, p) for p in own],
            node_cpus={n: c.cpus for n, c in cpu.nodes.items()},
            scrape_interval=q.scrape_interval,
            mapping=mapping,
            profile=profile,
            series=series,
        ),
    }
