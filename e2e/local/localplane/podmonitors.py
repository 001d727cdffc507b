"""The Prometheus Operator's part on the local plane, for PodMonitors of node-exporter pods.

The Prometheus Operator turns each PodMonitor endpoint into a Prometheus scrape job
(`podMonitor/<namespace>/<name>/<index>`: its interval, scrape timeout, relabelings and metric
relabelings, after setting `job` to `<namespace>/<name>`) whose targets are the pods it selects,
and reloads Prometheus. `PodMonitorSync` does that here, from the apiserver's PodMonitors, for
the one pod kind the local plane has a real process for: node-exporter. The plane's fake nodes
have no node-exporter pods (one real node-exporter serves them all), so a PodMonitor whose
namespace and label selector match the node-exporter pods named here gets that node-exporter as
its target. Everything the PodMonitor says is translated as the Prometheus Operator does, so a
test proves what the PodMonitor makes a real Prometheus scrape, not what it should.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any, cast

from kubernetes import client as k8s

from localplane.prometheus import Prometheus, set_monitor_jobs

GROUP, VERSION, PLURAL = "monitoring.coreos.com", "v1", "podmonitors"
# PodMonitor relabeling fields -> Prometheus relabel_config fields.
_RELABEL_FIELDS = {
    "sourceLabels": "source_labels",
    "targetLabel": "target_label",
    "regex": "regex",
    "replacement": "replacement",
    "separator": "separator",
    "modulus": "modulus",
}


def _relabel(rule: Mapping[str, Any]) -> dict[str, Any]:
    out = {_RELABEL_FIELDS[k]: v for k, v in rule.items() if k in _RELABEL_FIELDS}
    if "action" in rule:
        out["action"] = str(rule["action"]).lower()
    return out


def selects(
    pm: Mapping[str, Any], namespace: str, pod_labels: Mapping[str, str], pm_namespace: str
) -> bool:
    """Whether the PodMonitor (in ``pm_namespace``) selects pods with these labels in
    ``namespace`` (matchLabels and namespaceSelector.matchNames / any)."""
    spec = pm.get("spec") or {}
    ns_sel = spec.get("namespaceSelector") or {}
    names = ns_sel.get("matchNames")
    if not ns_sel.get("any") and namespace not in (names or [pm_namespace]):
        return False
    wanted = (spec.get("selector") or {}).get("matchLabels") or {}
    return all(pod_labels.get(k) == v for k, v in wanted.items())


def scrape_jobs(pm: Mapping[str, Any], target: str) -> list[dict[str, Any]]:
    """The Prometheus scrape jobs of a PodMonitor's endpoints, each scraping ``target``."""
    meta = pm["metadata"]
    ns, name = meta["namespace"], meta["name"]
    jobs = []
    for i, ep in enumerate((pm.get("spec") or {}).get("podMetricsEndpoints") or []):
        job: dict[str, Any] = {
            "job_name": f"podMonitor/{ns}/{name}/{i}",
            "metrics_path": ep.get("path", "/metrics"),
            "static_configs": [{"targets": [target]}],
            "relabel_configs": [
                {"target_label": "job", "replacement": f"{ns}/{name}"},
                *(_relabel(r) for r in ep.get("relabelings") or []),
            ],
            "metric_relabel_configs": [_relabel(r) for r in ep.get("metricRelabelings") or []],
        }
        if "interval" in ep:
            job["scrape_interval"] = ep["interval"]
        if "scrapeTimeout" in ep:
            job["scrape_timeout"] = ep["scrapeTimeout"]
        jobs.append(job)
    return jobs


class PodMonitorSync:
    """Keeps ``prometheus``'s jobs equal to the PodMonitors in ``namespace`` that select the
    node-exporter pods (``exporter_namespace``, ``exporter_labels``), polling every
    ``period`` seconds (the real operator watches; its reload takes seconds too)."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        prometheus: Prometheus,
        *,
        exporter_namespace: str,
        exporter_labels: Mapping[str, str],
        period: float = 0.5,
    ) -> None:
        self.custom = k8s.CustomObjectsApi(api)
        self.namespace = namespace
        self.prometheus = prometheus
        self.exporter_namespace = exporter_namespace
        self.exporter_labels = dict(exporter_labels)
        self.period = period
        self.loaded: list[dict[str, Any]] = []  # the jobs Prometheus has now
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="podmonitors", daemon=True)

    def sync(self) -> None:
        found = cast(
            "dict[str, Any]",
            self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL),
        )
        target = f"127.0.0.1:{self.prometheus.node_exporter_port}"
        jobs = [
            job
            for pm in sorted(found.get("items", []), key=lambda p: p["metadata"]["name"])
            if selects(pm, self.exporter_namespace, self.exporter_labels, self.namespace)
            for job in scrape_jobs(pm, target)
        ]
        if jobs != self.loaded:
            set_monitor_jobs(self.prometheus, jobs)
            self.loaded = jobs

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.sync()
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def __enter__(self) -> PodMonitorSync:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
