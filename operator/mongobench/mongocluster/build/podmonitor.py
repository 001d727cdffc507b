"""The PodMonitor (Prometheus Operator) scraping every exporter sidecar of the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.build.podspec import object_meta

# Benchmark phases last minutes; the Prometheus default of 30-60 s would leave few points each.
SCRAPE_INTERVAL = "15s"
# Copied onto every series as mongobench_io_cluster, mongobench_io_replset and
# app_kubernetes_io_component: the MongoDB dashboards and alerts group by them.
TARGET_LABELS = [lbl.CLUSTER, lbl.REPLSET, lbl.COMPONENT]


def build_pod_monitor(
    spec: MongoClusterSpec, layout: ClusterLayout, default_labels: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """None when there is nothing to scrape (no exporter) or none is wanted.

    Labelled with the spec's `monitoring.podMonitorLabels` when it names any, else with
    `default_labels` (the operator's MONGOBENCH_MONITOR_LABELS, from the chart's monitorLabels):
    the labels a Prometheus selects monitors by, e.g. kube-prometheus-stack's `release`.
    """
    if not (spec.monitoring.exporter and spec.monitoring.pod_monitor):
        return None
    selected = spec.monitoring.pod_monitor_labels or default_labels or {}
    labels = {
        **dict(sorted(selected.items())),
        **lbl.cluster_labels(layout.name),
    }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": object_meta(layout.pod_monitor, layout.namespace, labels),
        "spec": {
            "selector": {"matchLabels": lbl.cluster_labels(layout.name)},
            "podTargetLabels": TARGET_LABELS,
            "podMetricsEndpoints": [
                {"port": "metrics", "path": "/metrics", "interval": SCRAPE_INTERVAL}
            ],
        },
    }
