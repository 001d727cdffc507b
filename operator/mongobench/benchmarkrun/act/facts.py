"""The I/O half of a run's provenance: observe what ran (pods, nodes, servers, the apiserver,
node-exporter's info metrics) and hand it to the pure builder (benchmarkrun.build.provenance).

Called by the archive at each upload, so client pods are seen while their Jobs still exist;
what a server says of itself, the apiserver's version and each node are asked once per run
(kept from the previous provenance.json after).
Nothing here makes an upload fail: a fact that cannot be observed is left out and named in
`missing`. MongoDB is reached through mongobench.mongo only, with the cluster's credentials.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Any

from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.build import provenance as prov
from mongobench.benchmarkrun.telemetry.cpu_status import node_mapping
from mongobench.config import OperatorConfig
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError
from mongobench.mongo.errors import MongoAdminError
from mongobench.mongocluster.interface import Cluster

if TYPE_CHECKING:  # the pool is the caller's
    from mongobench.mongo.pool import AdminPool

log = logging.getLogger("mongobench.provenance")

# The operator's build, given by its image (Dockerfile: REVISION) and the chart (the image
# reference, by digest when installed so).
REVISION_ENV = "MONGOBENCH_REVISION"
IMAGE_ENV = "MONGOBENCH_IMAGE"
EXPERIMENT_LABEL = "mongobench.io/experiment"  # experiment.objects' label on the runs it creates
PROMETHEUS_TIMEOUT = 5.0


def operator_build() -> dict[str, Any]:
    try:
        version: str | None = package_version("mongobench")
    except PackageNotFoundError:  # pragma: no cover - the operator is always installed
        version = None
    return {
        "version": version,
        "revision": os.environ.get(REVISION_ENV) or None,
        "image": os.environ.get(IMAGE_ENV) or None,
    }


def _pods(kube: KubeApi, namespace: str, run: str, cluster: str | None) -> list[tuple[str, Any]]:
    pods: list[tuple[str, Any]] = []
    if cluster:
        pods += [
            ("database", p) for p in kube.list("Pod", namespace, f"{jobs.CLUSTER_LABEL}={cluster}")
        ]
    pods += [("client", p) for p in kube.list("Pod", namespace, f"{jobs.RUN_LABEL}={run}")]
    return pods


def _instant(url: str, promql: str) -> list[dict[str, Any]]:
    qs = urllib.parse.urlencode({"query": promql})
    target = f"{url.rstrip('/')}/api/v1/query?{qs}"
    if not target.startswith(("http://", "https://")):
        raise ValueError(f"Prometheus URL {url!r} is not http(s)")
    with urllib.request.urlopen(target, timeout=PROMETHEUS_TIMEOUT) as resp:  # noqa: S310
        body = json.loads(resp.read())
    if body.get("status") != "success":
        raise ValueError(str(body.get("error")))
    return list((body.get("data") or {}).get("result") or [])


def node_metrics(
    config: OperatorConfig, nodes: list[str], missing: list[str]
) -> dict[str, dict[str, Any]]:
    """node-exporter's info metrics per node; {} without Prometheus (a metric it lacks is
    simply absent: node_cpu_info needs --collector.cpu.info)."""
    if not config.prometheus_url or not nodes:
        return {}
    mapping = node_mapping(config)
    try:
        got = {
            name: _instant(config.prometheus_url, name)
            for name in (
                "node_uname_info",
                "node_cpu_info",
                "node_os_info",
                "node_memory_AnonHugePages_bytes",
            )
        }
    except (OSError, ValueError) as exc:
        missing.append(f"node-exporter info metrics: {exc}")
        return {}
    return prov.info_by_node(
        nodes,
        {n: mapping.identity(n) for n in nodes},
        uname=got["node_uname_info"],
        cpu_info=got["node_cpu_info"],
        os_info=got["node_os_info"],
        huge_pages=got["node_memory_AnonHugePages_bytes"],
        label=mapping.label if mapping.mode == "label" else None,
    )


def servers(
    cluster: Cluster, admins: AdminPool, missing: list[str]
) -> tuple[list[prov.ServerObservation], str | None]:
    """Every member's and one mongos's own description, and the FCV."""
    layout = cluster.layout
    observed: list[prov.ServerObservation] = []
    fcv: str | None = None
    with cluster.administration(admins) as admin:
        targets: list[tuple[str, str, str | None]] = [
            (h, rs.role.value, rs.name) for rs in layout.replica_sets for h in rs.hosts
        ]
        if layout.sharded:
            targets.append((layout.mongos_host, "mongos", None))
        for host, role, set_name in targets:
            s = admin.describe_server(host)
            missing.extend(s.errors)
            observed.append(
                prov.ServerObservation(
                    host, role, set_name, s.build_info, s.cmd_line_opts, s.server_status, s.errors
                )
            )
        try:
            fcv = admin.feature_compatibility_version(cluster.fcv_target())
        except MongoAdminError as exc:
            missing.append(f"featureCompatibilityVersion: {exc}")
    return observed, fcv


def known_servers(previous: Mapping[str, Any] | None) -> bool:
    """The previous upload saw every server and the FCV: they are not asked again."""
    if (
        not previous
        or not previous.get("servers")
        or not previous.get("featureCompatibilityVersion")
    ):
        return False
    return not any(s.get("errors") for s in previous["servers"])


def _nodes(
    kube: KubeApi, names: list[str], previous: Mapping[str, Any] | None, missing: list[str]
) -> list[dict[str, Any]]:
    """The nodes not described at an earlier upload of the run: those keep that description
    (build merges it with the roles seen now), so a node is read once per run, not per upload."""
    described = {str(n.get("name")) for n in (previous or {}).get("nodes") or ()}
    nodes = []
    for node in names:
        if node in described:
            continue
        try:
            found = kube.get("Node", None, node)
        except ApiError as exc:
            missing.append(f"node {node}: {exc.reason}")
            continue
        if found is not None:
            nodes.append(found)
    return nodes


def _kubernetes(
    kube: KubeApi, previous: Mapping[str, Any] | None, missing: list[str]
) -> dict[str, Any] | None:
    """GET /version, once per run (None after: build keeps the previous upload's)."""
    if (previous or {}).get("kubernetes"):
        return None
    try:
        return kube.version()
    except ApiError as exc:
        missing.append(f"Kubernetes version: {exc.reason}")
        return None


def collect(
    kube: KubeApi,
    run: Mapping[str, Any],
    cluster: Mapping[str, Any] | None,
    config: OperatorConfig,
    *,
    admins: AdminPool | None,
    previous: Mapping[str, Any] | None,
) -> prov.Facts:
    meta = run["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    missing: list[str] = []
    cluster_name = (cluster or {}).get("metadata", {}).get("name")
    pods = _pods(kube, namespace, name, cluster_name)
    node_names = sorted({str(n) for _, p in pods if (n := (p.get("spec") or {}).get("nodeName"))})
    nodes = _nodes(kube, node_names, previous, missing)
    kubernetes = _kubernetes(kube, previous, missing)
    observed: list[prov.ServerObservation] = []
    fcv: str | None = None
    secrets: list[str] = []
    if cluster is not None:
        try:
            target = Cluster.of(kube, cluster)
            secrets = target.secret_values()
            if admins is not None and not known_servers(previous):
                observed, fcv = servers(target, admins, missing)
        except (MongoAdminError, ApiError, LookupError, KeyError, ValueError) as exc:
            missing.append(f"servers: {exc}")
    experiment = None
    owner = (meta.get("labels") or {}).get(EXPERIMENT_LABEL)
    if owner:
        try:
            experiment = kube.get("BenchmarkExperiment", namespace, owner)
        except ApiError as exc:
            missing.append(f"experiment {owner}: {exc.reason}")
    status = run.get("status") or {}
    return prov.Facts(
        run=run,
        cluster=cluster,
        operator=operator_build(),
        kubernetes=kubernetes,
        pods=pods,
        nodes=nodes,
        node_metrics=node_metrics(config, node_names, missing),
        servers=observed,
        fcv=fcv,
        prometheus=prov.prometheus_window(
            status.get("steps") or [], config.prometheus_scrape_interval, config.prometheus_url
        ),
        seeds=prov.seeds(run, experiment),
        previous=previous,
        missing=missing,
        secrets=secrets,
    )
