"""Operator configuration, from the environment (the Helm chart sets it), validated at start."""

from __future__ import annotations

import json
import os
import socket
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from mongobench.mongo.budget import MONGO_CLIENTS
from mongobench_archive import ArchiveError
from mongobench_archive.layout import parse_location

# The label Kubernetes gives every namespace, its name: selects a namespace by name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Peers:
    """Who besides a MongoCluster's own pods and clients may connect under its NetworkPolicy
    (mongocluster.build.networkpolicy); the defaults are the install's: release `mongobench` in
    namespace `mongobench`, and kube-prometheus-stack in `monitoring`."""

    operator_namespace: str = "mongobench"
    # Sorted (key, value) pairs: the chart's selector labels of the operator's pods.
    operator_pod_labels: tuple[tuple[str, str], ...] = (
        ("app.kubernetes.io/component", "operator"),
        ("app.kubernetes.io/name", "mongobench"),
    )
    # The scraper's namespaces when the spec names none (spec.networkPolicy.scraperNamespaceLabels).
    scraper_namespace_labels: tuple[tuple[str, str], ...] = ((NAMESPACE_NAME_LABEL, "monitoring"),)


@dataclass(frozen=True)
class OperatorConfig:
    # Namespaces to watch; empty means the whole cluster.
    namespaces: tuple[str, ...] = ()
    # Seconds before a failed handler is retried (kopf's default of 60 s is far too slow here).
    retry_backoff: float = 5.0
    # Handlers running at once (threads). Each mostly waits on the apiserver or MongoDB, so
    # more than the cores: with Python's default (cores + 4) hundreds of clusters queue.
    workers: int = 16
    # MongoDB clients open at once across every cluster (mongo.budget): each holds two threads
    # and its sockets; beyond it the least recently used idle one is closed and reopened when
    # next needed. A client in use is never closed, so the handlers (`workers`) may exceed it.
    mongo_clients: int = MONGO_CLIENTS
    metrics_port: int = 8000
    probe_port: int = 8080
    # Operators sharing a peering name elect one active replica; the others stand by.
    peering: str = "mongobench"
    peering_mandatory: bool = False
    priority: int = field(default_factory=lambda: _default_priority())  # noqa: PLW0108 - defined below
    # Seconds a replica's keep-alive holds (kopf's default): a replica killed without a goodbye
    # keeps the others paused that long.
    peering_lifetime: int = 60
    json_logs: bool = True
    verbose: bool = False
    prometheus_url: str | None = None
    # How node names map to node-exporter series: "uname" (node_uname_info{nodename}) or
    # "label" (a scrape label holding the node name, e.g. kube-prometheus's instance).
    prometheus_node_mapping: str = "uname"
    prometheus_node_label: str = "instance"
    prometheus_scrape_interval: float = 15.0
    # Labels of the PodMonitors the operator creates for MongoClusters whose spec names none
    # (the chart's monitorLabels; kube-prometheus-stack selects on `release: <its release>`).
    monitor_labels: tuple[tuple[str, str], ...] = ()
    # The node-exporter pods a run's own PodMonitor scrapes for a finer CPU resolution
    # (spec.monitoring.cpuResolutionSeconds): their namespace, labels and metrics port name
    # (kube-prometheus-stack's by default).
    node_exporter_namespace: str = "monitoring"
    node_exporter_selector: tuple[tuple[str, str], ...] = (
        ("app.kubernetes.io/name", "prometheus-node-exporter"),
    )
    node_exporter_port: str = "http-metrics"
    # Who may reach a MongoCluster's members under its NetworkPolicy besides the cluster's own
    # pods and clients: the operator's pods (namespace from the downward API, the chart's
    # selector labels) and the scraper's namespaces (the chart's monitoring namespace).
    network_peers: Peers = field(default_factory=Peers)
    # node=host pairs for nodes whose exporter reports another name (tests, odd setups).
    prometheus_node_aliases: tuple[tuple[str, str], ...] = ()
    # Largest ConfigMap part a client writes its result in (default: the runner's 900 KiB).
    result_part_bytes: int | None = None
    ycsb_image: str = "ghcr.io/mongobench/ycsb:0.1.0"
    locust_image: str = "ghcr.io/mongobench/locust:0.1.0"
    # The default run archive (s3://BUCKET/PREFIX, or a folder); a run's spec.archive overrides
    # fields of it. Credentials: the usual AWS variables of the operator's environment.
    archive_url: str | None = None
    archive_endpoint: str | None = None
    archive_region: str | None = None
    # Seconds before a failed upload is tried again, doubling per failure up to the maximum.
    archive_retry_base: float = 5.0
    archive_retry_max: float = 300.0
    # Seconds a renewed certificate Secret takes to reach the pods' files (the kubelet's sync
    # period and cache TTL, about a minute by default): rotateCertificates waits for it.
    tls_propagation_seconds: float = 120.0
    # Seconds between an unfinished experiment's looks at its clusters and runs (nothing else
    # wakes it): each switch of a cell's cluster waits up to three of them.
    experiment_tick_seconds: float = 2.0

    @classmethod
    def current(cls) -> OperatorConfig:
        """The configuration the running operator was started with (defaults before that)."""
        return _current[0]

    def make_current(self) -> None:
        _current[0] = self

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> OperatorConfig:
        env = dict(os.environ if env is None else env)
        defaults = cls()

        def get(name: str, default: str) -> str:
            return env.get(f"MONGOBENCH_{name}", default)

        namespaces = tuple(n for n in get("NAMESPACES", "").replace(",", " ").split() if n)
        try:
            return cls(
                namespaces=namespaces,
                retry_backoff=float(get("RETRY_BACKOFF", str(defaults.retry_backoff))),
                workers=int(get("WORKERS", str(defaults.workers))),
                mongo_clients=_positive(
                    "MONGO_CLIENTS", get("MONGO_CLIENTS", str(defaults.mongo_clients))
                ),
                metrics_port=int(get("METRICS_PORT", str(defaults.metrics_port))),
                probe_port=int(get("PROBE_PORT", str(defaults.probe_port))),
                peering=get("PEERING", defaults.peering),
                peering_mandatory=get("PEERING_MANDATORY", "false").lower() == "true",
                priority=int(get("PRIORITY", str(defaults.priority))),
                peering_lifetime=int(get("PEERING_LIFETIME", str(defaults.peering_lifetime))),
                json_logs=get("LOG_FORMAT", "json") == "json",
                verbose=get("VERBOSE", "false").lower() == "true",
                prometheus_url=get("PROMETHEUS_URL", "") or None,
                prometheus_node_mapping=get("PROMETHEUS_NODE_MAPPING", "uname"),
                prometheus_node_label=get("PROMETHEUS_NODE_LABEL", "instance"),
                prometheus_scrape_interval=float(get("PROMETHEUS_SCRAPE_INTERVAL", "15")),
                monitor_labels=_monitor_labels(get("MONITOR_LABELS", "")),
                node_exporter_namespace=get(
                    "NODE_EXPORTER_NAMESPACE", defaults.node_exporter_namespace
                ),
                node_exporter_selector=_selector(get("NODE_EXPORTER_SELECTOR", ""))
                or defaults.node_exporter_selector,
                node_exporter_port=get("NODE_EXPORTER_PORT", defaults.node_exporter_port),
                network_peers=_network_peers(get, defaults.network_peers),
                prometheus_node_aliases=_node_aliases(get("PROMETHEUS_NODE_ALIASES", "")),
                result_part_bytes=int(get("RESULT_PART_BYTES", "0")) or None,
                ycsb_image=get("YCSB_IMAGE", defaults.ycsb_image),
                locust_image=get("LOCUST_IMAGE", defaults.locust_image),
                archive_url=_archive_url(get("ARCHIVE_URL", "")),
                archive_endpoint=get("ARCHIVE_ENDPOINT", "") or None,
                archive_region=get("ARCHIVE_REGION", "") or None,
                archive_retry_base=float(get("ARCHIVE_RETRY_BASE", "5")),
                archive_retry_max=float(get("ARCHIVE_RETRY_MAX", "300")),
                tls_propagation_seconds=float(get("TLS_PROPAGATION_SECONDS", "120")),
                experiment_tick_seconds=float(get("EXPERIMENT_TICK_SECONDS", "2")),
            )
        except ValueError as exc:
            raise SystemExit(f"mongobench: invalid MONGOBENCH_* setting: {exc}") from None


_current: list[OperatorConfig] = []


def _network_peers(get: Callable[[str, str], str], defaults: Peers) -> Peers:
    """Who may reach the cluster's pods: the operator's namespace and pods, the scrapers'."""
    return Peers(
        operator_namespace=get("OPERATOR_NAMESPACE", defaults.operator_namespace),
        operator_pod_labels=_labels(
            "OPERATOR_POD_LABELS", get("OPERATOR_POD_LABELS", ""), defaults.operator_pod_labels
        ),
        scraper_namespace_labels=_labels(
            "SCRAPER_NAMESPACE_LABELS",
            get("SCRAPER_NAMESPACE_LABELS", ""),
            defaults.scraper_namespace_labels,
        ),
    )


def _node_aliases(text: str) -> tuple[tuple[str, str], ...]:
    """`node=alias` pairs, comma or space separated; a word without `=` is ignored."""
    return tuple(
        tuple(pair.split("=", 1))  # type: ignore[misc]
        for pair in text.replace(",", " ").split()
        if "=" in pair
    )


def _archive_url(url: str) -> str | None:
    """MONGOBENCH_ARCHIVE_URL, checked at start (a bad one is refused, not found per run)."""
    if not url.strip():
        return None
    try:
        parse_location(url)
    except ArchiveError as exc:
        raise ValueError(f"MONGOBENCH_ARCHIVE_URL: {exc}") from None
    return url.strip()


def _selector(text: str) -> tuple[tuple[str, str], ...]:
    """A label selector of equalities, `a=b,c=d` (MONGOBENCH_NODE_EXPORTER_SELECTOR)."""
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    if any("=" not in p for p in pairs):
        raise ValueError(f"MONGOBENCH_NODE_EXPORTER_SELECTOR: {text!r} is not a=b,c=d")
    return tuple((k.strip(), v.strip()) for k, v in (p.split("=", 1) for p in pairs))


def _monitor_labels(text: str) -> tuple[tuple[str, str], ...]:
    """MONGOBENCH_MONITOR_LABELS: a JSON object of string labels (the chart's toJson), or empty."""
    return _labels("MONITOR_LABELS", text, ())


def _labels(
    name: str, text: str, default: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str], ...]:
    """MONGOBENCH_<name>: a JSON object of string labels (the chart's toJson); empty: default."""
    if not text.strip():
        return default
    try:
        labels = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"MONGOBENCH_{name} is not JSON: {exc}") from None
    if labels is None:
        return default
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ValueError(f"MONGOBENCH_{name} must be a JSON object of string values")
    return tuple(sorted(labels.items()))


def _positive(name: str, text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"MONGOBENCH_{name} must be at least 1, not {value}")
    return value


def _default_priority() -> int:
    # Distinct per replica (from the pod's hostname) so peering keeps exactly one active:
    # kopf pauses operators that see a peer of the same or higher priority.
    return 1 + zlib.crc32(socket.gethostname().encode()) % 1_000_000


_current.append(OperatorConfig())
