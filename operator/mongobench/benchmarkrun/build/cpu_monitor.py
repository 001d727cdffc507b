"""A finer CPU resolution for one run: the PodMonitor that scrapes node-exporter at the run's
``spec.monitoring.cpuResolutionSeconds`` while the run lasts (pure builder).

Why a PodMonitor the operator owns, not a chart value: the interval is a property of one
experiment, not of the installation, and a Prometheus Operator user lowers a scrape interval
with a monitor. Lowering the cluster's node-exporter ServiceMonitor instead would put every node
at 1 s for every run and forever; this one exists from the run's start to its end (owned by the
run, deleted at cleanup), and keeps only the two series the CPU figures need
(``node_cpu_seconds_total`` and ``node_uname_info``). It selects every node-exporter pod, not
only the run's nodes: the clients' nodes are known only once their Job is scheduled, and a
Prometheus Operator takes seconds to a minute to load a changed monitor, so a monitor made per
step would miss the start of its window. Even one made at the start can be late for a short
prepare: the next Job waits for the series (decide.WaitForCpuScrape, within
CPU_SCRAPE_WAIT_SECONDS).

Its series carry their own ``job`` label (:func:`job_label`): the run's CPU queries select it
(the cluster's own node-exporter job keeps scraping at its interval, and summing both would
count every CPU twice). Where no Prometheus Operator serves PodMonitors, or none selects this
one, those series never appear and the step falls back to the default interval, saying so in
its status (``cpu.resolutionSeconds``, ``missing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

API = ("monitoring.coreos.com/v1", "podmonitors")
# What the figures need from a fine scrape: CPU time per mode, and the host name to join on.
KEPT_METRICS = "node_cpu_seconds_total|node_uname_info"
# Prometheus refuses a scrape timeout above the interval; 10 s is its default.
MAX_TIMEOUT = 10


def monitor_name(run: str) -> str:
    """The PodMonitor's name (run names are at most 56 characters)."""
    return f"{run}-cpu"


def job_label(namespace: str, run: str) -> str:
    """The ``job`` of the fine series, what the run's CPU queries select."""
    return f"mongobench-cpu/{namespace}/{run}"


def build_cpu_monitor(
    run: Mapping[str, Any],
    seconds: int,
    *,
    exporter_namespace: str,
    exporter_selector: Mapping[str, str],
    exporter_port: str,
    node_label: str | None,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The run's PodMonitor: node-exporter every ``seconds``, labelled as the run's queries
    expect: ``node_label`` is the label the operator's node mapping finds a node by (mapping
    "label"; None for "uname", which joins on node_uname_info); ``labels`` are those a
    Prometheus selects monitors by (the chart's monitorLabels)."""
    meta = run["metadata"]
    name, namespace = str(meta["name"]), str(meta["namespace"])
    return {
        "apiVersion": API[0],
        "kind": "PodMonitor",
        "metadata": {
            "name": monitor_name(name),
            "namespace": namespace,
            "labels": {
                **dict(sorted(labels.items())),
                "app.kubernetes.io/managed-by": "mongobench",
                "mongobench.io/run": name,
            },
            "ownerReferences": [_owner_reference(run)],
        },
        "spec": {
            "namespaceSelector": {"matchNames": [exporter_namespace]},
            "selector": {"matchLabels": dict(exporter_selector)},
            "podMetricsEndpoints": [
                {
                    "port": exporter_port,
                    "interval": f"{seconds}s",
                    "scrapeTimeout": f"{min(seconds, MAX_TIMEOUT)}s",
                    "relabelings": _relabelings(namespace, name, node_label),
                    "metricRelabelings": [
                        {"action": "keep", "sourceLabels": ["__name__"], "regex": KEPT_METRICS}
                    ],
                }
            ],
        },
    }


def _owner_reference(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run owns its monitor: deleted with it."""
    return {
        "apiVersion": str(run.get("apiVersion", "mongobench.io/v1alpha1")),
        "kind": "BenchmarkRun",
        "name": str(run["metadata"]["name"]),
        "uid": str(run["metadata"]["uid"]),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _relabelings(namespace: str, name: str, node_label: str | None) -> list[dict[str, Any]]:
    relabelings: list[dict[str, Any]] = [
        {"action": "replace", "targetLabel": "job", "replacement": job_label(namespace, name)}
    ]
    if node_label is not None:
        # The node mapping finds a node's series by this label: give the fine ones it too.
        relabelings.append(
            {
                "action": "replace",
                "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                "targetLabel": node_label,
            }
        )
    return relabelings
