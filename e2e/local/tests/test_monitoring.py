"""Unit tier: localplane.monitoring's pure parts, the places where the plane's monitoring
differs from a cluster's (the cluster tier's test_plane.py runs the stack itself)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from localplane.monitoring import (
    CADVISOR_PATH,
    KUBELET_JOB,
    NODE_EXPORTER_COLLECTORS,
    RELEASE_LABELS,
    SERVED_PORTS,
    kubelet_monitor,
    local_config,
    named_host,
    prometheus_resource,
    scrape_annotations,
)

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

# The shape of what the Prometheus Operator v0.79.2 generates (two jobs, one without discovery).
RENDERED = """
global:
  scrape_interval: 1s
  external_labels:
    prometheus_replica: prometheus-kube-prometheus-stack-prometheus-0
rule_files:
- /etc/prometheus/rules/prometheus-kube-prometheus-stack-prometheus-rulefiles-0/*.yaml
scrape_configs:
- job_name: serviceMonitor/monitoring/node-exporter/0
  kubernetes_sd_configs:
  - role: endpoints
    namespaces:
      names: [monitoring]
- job_name: podMonitor/bench/rs3/0
  kubernetes_sd_configs:
  - role: pod
    namespaces:
      names: [bench]
  - role: pod
    namespaces:
      names: [other]
- job_name: static
  static_configs:
  - targets: [127.0.0.1:9]
- job_name: serviceMonitor/monitoring/kube-prometheus-stack-kubelet/0
  honor_labels: true
  scheme: https
  authorization:
    type: Bearer
    credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token
  tls_config:
    ca_file: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    insecure_skip_verify: true
  metrics_path: /metrics/cadvisor
  kubernetes_sd_configs:
  - role: endpoints
    namespaces:
      names: [kube-system]
  relabel_configs:
  - source_labels: [__metrics_path__]
    target_label: metrics_path
    action: replace
"""


def test_each_kubernetes_discovery_reads_the_planes_kubeconfig_and_rules_the_copies() -> None:
    kubeconfig, rules = Path("/plane/kubeconfig"), Path("/stack/rules")
    config = yaml.safe_load(local_config(RENDERED, kubeconfig, rules))
    blocks = [sd for job in config["scrape_configs"] for sd in job.get("kubernetes_sd_configs", [])]
    assert len(blocks) == 4
    assert {sd["kubeconfig_file"] for sd in blocks} == {str(kubeconfig)}
    assert config["rule_files"] == [
        f"{rules}/prometheus-kube-prometheus-stack-prometheus-rulefiles-0/*.yaml"
    ]
    # Nothing else changes.
    original = yaml.safe_load(RENDERED)
    assert config["global"] == original["global"]
    assert config["scrape_configs"][2] == original["scrape_configs"][2]


def test_the_prometheus_selects_release_labelled_monitors_and_rewrites_addresses() -> None:
    spec = prometheus_resource("5s")["spec"]
    for kind in ("serviceMonitor", "podMonitor", "probe", "scrapeConfig", "rule"):
        assert spec[f"{kind}Selector"] == {"matchLabels": RELEASE_LABELS}
        assert spec[f"{kind}NamespaceSelector"] == {}
    assert spec["scrapeInterval"] == "5s"
    (scrape_class,) = spec["scrapeClasses"]
    assert scrape_class["default"] is True
    # `instance` first keeps the pod's address; then one address rule per served port name,
    # reading the annotation scrape_annotations writes.
    first, *rules = scrape_class["relabelings"]
    assert first["targetLabel"] == "instance"
    assert len(rules) == len(SERVED_PORTS)
    (key,) = scrape_annotations({"metrics": 9}).keys()
    # Prometheus's name for a pod annotation: every character outside [a-zA-Z0-9_] made `_`.
    meta = "__meta_kubernetes_pod_annotation_" + re.sub(r"\W", "_", key)
    metrics = next(r for r in rules if r["regex"].startswith("metrics;"))
    assert metrics["sourceLabels"] == ["__meta_kubernetes_pod_container_port_name", meta]
    assert metrics["targetLabel"] == "__address__"


def test_the_kubelet_job_alone_scrapes_the_stacks_cadvisor_endpoint_per_node() -> None:
    kubeconfig, rules = Path("/plane/kubeconfig"), Path("/stack/rules")
    config = yaml.safe_load(local_config(RENDERED, kubeconfig, rules, "127.0.0.1:7"))
    original = yaml.safe_load(RENDERED)
    kubelet = next(j for j in config["scrape_configs"] if j["job_name"].startswith(KUBELET_JOB))
    # Plain HTTP on loopback: no token or CA a pod would have.
    assert kubelet["scheme"] == "http"
    assert "authorization" not in kubelet and "tls_config" not in kubelet
    assert kubelet["honor_labels"] is True
    # The monitor's own rules first (metrics_path keeps the cluster's path), then the two
    # appended: the node's path on the stack's endpoint, and its address.
    kept, path, address = (
        kubelet["relabel_configs"][:-2],
        *kubelet["relabel_configs"][-2:],
    )
    assert kept == original["scrape_configs"][3]["relabel_configs"]
    assert path["source_labels"] == ["__meta_kubernetes_endpoint_address_target_name"]
    assert path["target_label"] == "__metrics_path__"
    assert re.sub(r"\$\{1\}", "kind-worker", path["replacement"]) == CADVISOR_PATH.format(
        node="kind-worker"
    )
    assert address == {"target_label": "__address__", "replacement": "127.0.0.1:7"}
    # Other jobs keep their scheme and relabelling.
    for job, before in zip(
        config["scrape_configs"][:3], original["scrape_configs"][:3], strict=True
    ):
        assert {k: v for k, v in job.items() if k != "kubernetes_sd_configs"} == {
            k: v for k, v in before.items() if k != "kubernetes_sd_configs"
        }
    # Without an endpoint to send it to, the kubelet job is left as rendered.
    plain = yaml.safe_load(local_config(RENDERED, kubeconfig, rules))
    assert plain["scrape_configs"][3]["scheme"] == "https"


def test_the_kubelet_monitor_is_kube_prometheus_stacks_cadvisor_endpoint() -> None:
    monitor = kubelet_monitor()
    assert monitor["metadata"]["labels"]["release"] == RELEASE_LABELS["release"]
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": ["kube-system"]}
    assert spec["jobLabel"] == "k8s-app"  # job="kubelet"
    (endpoint,) = spec["endpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["honorLabels"]) == (
        "https-metrics",
        "/metrics/cadvisor",
        True,
    )
    # The series the operator reads are not among the ones it drops.
    drops = [r["regex"] for r in endpoint["metricRelabelings"] if r["sourceLabels"] == ["__name__"]]
    for kept in (
        "container_cpu_usage_seconds_total",
        "container_cpu_cfs_periods_total",
        "container_cpu_cfs_throttled_periods_total",
        "container_memory_working_set_bytes",
    ):
        assert not any(re.fullmatch(d, kept) for d in drops), kept
    assert any(re.fullmatch(d, "container_cpu_user_seconds_total") for d in drops)


def test_a_node_exporter_runs_as_its_nodes_host() -> None:
    cmd = named_host("kind-worker2", ["/usr/bin/prometheus-node-exporter", "--x"])
    assert cmd[:2] == ["unshare", "--uts"]
    script = cmd.index("-c") + 1
    # sh's $0, then the host name, then the command exec'd with its arguments intact.
    assert cmd[script + 1 :] == ["sh", "kind-worker2", "/usr/bin/prometheus-node-exporter", "--x"]


# node-exporter's collector of each family of series (its source: collector/<name>_linux.go).
COLLECTOR_OF = {
    "node_cpu_": "cpu",
    "node_memory_": "meminfo",
    "node_disk_": "diskstats",
    "node_network_": "netdev",
    "node_uname_": "uname",
    "node_os_": "os",
}
# Where the project names node-exporter series: the operator (telemetry profiles, run facts),
# the dashboards, the alerts and the charts.
READERS = ("operator/mongobench", "dashboards", "alerts", "charts")


def test_node_exporter_runs_every_collector_whose_series_the_project_reads() -> None:
    series = set()
    for folder in READERS:
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".yaml", ".yml", ".json") and "tests" not in path.parts:
                series |= set(
                    re.findall(r"\bnode_[a-z]+_\w*?(?:total|bytes|info)\b", path.read_text())
                )
    assert {"node_cpu_seconds_total", "node_uname_info", "node_memory_MemTotal_bytes"} <= series
    enabled = {flag.removeprefix("--collector.") for flag in NODE_EXPORTER_COLLECTORS}
    assert "--collector.disable-defaults" in NODE_EXPORTER_COLLECTORS
    for name in sorted(series):
        prefix = next((p for p in COLLECTOR_OF if name.startswith(p)), None)
        assert prefix is not None, f"{name}: which node-exporter collector exports it?"
        assert COLLECTOR_OF[prefix] in enabled, f"{name} needs --collector.{COLLECTOR_OF[prefix]}"
