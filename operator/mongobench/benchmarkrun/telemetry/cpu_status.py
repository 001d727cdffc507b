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
from dataclasses import replace
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
    query_containers,
    query_instant,
    query_window,
    step_window,
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

    def node_cpu(
        run: Mapping[str, Any],
        start: str,
        end: str,
        *,
        series: ContainerSeries,
        window: dict[str, Any],
    ) -> CpuReport:
        """At the run's own resolution where its PodMonitor's series are there, else at
        Prometheus' interval, the status saying which (cpu.resolutionSeconds)."""
        interval = config.prometheus_scrape_interval
        monitoring: Monitoring = field_of(BenchmarkRunSpec, run.get("spec"), "monitoring")
        fine = monitoring.cpu_resolution_seconds
        if fine:
            meta = run["metadata"]
            job = cpu_monitor.job_label(meta["namespace"], meta["name"])
            report = query_window(
                url, start, end, fine, series=series, job=job, **{**window, "scrape_interval": fine}
            )
            if report.nodes:
                return report
            coarse = query_window(url, start, end, interval, series=series, **window)
            note = (
                f"cpu at {fine:g} s resolution (no series of job {job}: is its PodMonitor "
                f"{cpu_monitor.monitor_name(meta['name'])} scraped?)"
            )
            return replace(coarse, missing=(*coarse.missing, note))
        return query_window(url, start, end, interval, series=series, **window)

    def query(
        run: Mapping[str, Any], step: Mapping[str, Any], start: str, end: str
    ) -> dict[str, Any]:
        namespace = run["metadata"]["namespace"]
        cluster = cluster_of(run.get("spec"))
        cluster_nodes, cluster_pods = (
            _nodes_and_pods(kube, namespace, f"{jobs.CLUSTER_LABEL}={cluster}")
            if cluster
            else ([], [])
        )
        client_nodes, clients = _nodes_and_pods(kube, namespace, f"job-name={step['job']}")
        partners = [
            name
            for selector in duet_selectors(run, cluster_pods)
            for name in _names(kube.list("Pod", namespace, selector))
        ]
        cluster_roles = roles.cluster_pod_roles(cluster_pods)
        client_pods = _names(clients)
        # The mongod containers' figures are of the pods that run one (routers run mongos).
        mongod_pods = [p for p in _names(cluster_pods) if cluster_roles.get(p) != "mongos"]
        window: dict[str, Any] = {
            "cluster_nodes": cluster_nodes,
            "client_nodes": client_nodes,
            "namespace": namespace,
            "pods": mongod_pods,
            "scrape_interval": config.prometheus_scrape_interval,
            "mapping": mapping,
            "profile": profile,
        }
        interval = config.prometheus_scrape_interval
        pod_roles = roles.RolePods(cluster_roles, client_pods)
        nodes = list(dict.fromkeys((*cluster_nodes, *client_nodes)))
        series = query_containers(
            url,
            step_window(start, end, interval, interval),
            namespace=namespace,
            pods=(*_names(cluster_pods), *client_pods),
            node_names=nodes,
            mapping=mapping,
            profile=profile,
        )
        cpu = node_cpu(run, start, end, series=series, window=window)
        return {
            "cpu": cpu.to_status(),
            "resources": query_resources(
                url, start, end, interval, series=series, **window
            ).to_status(),
            "roles": roles.query_roles(
                url,
                start,
                end,
                interval,
                namespace=namespace,
                pods=pod_roles,
                scrape_interval=interval,
                mapping=mapping,
                profile=profile,
                series=series,
            ),
            "neighbours": neighbours.query(
                url,
                start,
                end,
                interval,
                nodes=nodes,
                own=[(namespace, p) for p in (*_names(cluster_pods), *client_pods, *partners)],
                node_cpus={n: c.cpus for n, c in cpu.nodes.items()},
                scrape_interval=interval,
                mapping=mapping,
                profile=profile,
                series=series,
            ),
        }

    return query
