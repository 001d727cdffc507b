"""Unit tier: localplane.monitoring's pure parts, the two places where the plane's monitoring
differs from a cluster's (the cluster tier's test_plane.py runs the stack itself)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from localplane.monitoring import (
    RELEASE_LABELS,
    SERVED_PORTS,
    local_config,
    prometheus_resource,
    scrape_annotations,
)

pytestmark = pytest.mark.unit

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
"""


def test_each_kubernetes_discovery_reads_the_planes_kubeconfig_and_rules_the_copies() -> None:
    kubeconfig, rules = Path("/plane/kubeconfig"), Path("/stack/rules")
    config = yaml.safe_load(local_config(RENDERED, kubeconfig, rules))
    blocks = [sd for job in config["scrape_configs"] for sd in job.get("kubernetes_sd_configs", [])]
    assert len(blocks) == 3
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
