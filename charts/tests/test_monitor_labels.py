"""Unit tier: with the chart's default values, the PodMonitor the operator builds for a sample
MongoCluster carries kube-prometheus-stack's `release` label, so a stock stack scrapes MongoDB.

The chain a user depends on, each link real: the chart rendered by helm, the operator's
configuration parsed from the Deployment's environment exactly as the running operator does,
the PodMonitor built by the operator's builder from the repository's kind sample.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from localplane.tools import REPO, binary
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import OperatorConfig
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS

pytestmark = pytest.mark.unit

CHART = REPO / "charts" / "mongobench"
SAMPLE = REPO / "manifests" / "platforms" / "kind" / "samples" / "mongocluster.yaml"


def operator_config(*sets: str) -> OperatorConfig:
    rendered = subprocess.run(
        [str(binary("helm")), "template", "mb", str(CHART), *[f"--set={s}" for s in sets]],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    deployment = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment")
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    return OperatorConfig.from_env({e["name"]: e["value"] for e in env if "value" in e})


def sample_pod_monitor(config: OperatorConfig, spec_dict: dict[str, Any]) -> dict[str, Any]:
    spec = MongoClusterSpec.parse(spec_dict)
    layout = cluster_layout("rs3", "bench", spec)
    objects = build_workload_objects(spec, layout, PRESETS["kind"], dict(config.monitor_labels))
    (monitor,) = [o for o in objects if o["kind"] == "PodMonitor"]
    return monitor


def test_sample_cluster_pod_monitor_carries_the_stack_release_label_with_chart_defaults() -> None:
    sample = yaml.safe_load(SAMPLE.read_text())["spec"]
    assert "podMonitorLabels" not in sample.get("monitoring", {})
    monitor = sample_pod_monitor(operator_config(), sample)
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_a_renamed_stack_release_and_no_labels_at_all_reach_the_operator() -> None:
    sample = yaml.safe_load(SAMPLE.read_text())["spec"]
    renamed = sample_pod_monitor(operator_config("monitorLabels.release=kps"), sample)
    assert renamed["metadata"]["labels"]["release"] == "kps"
    none = sample_pod_monitor(operator_config("monitorLabels=null"), sample)
    assert "release" not in none["metadata"]["labels"]


def test_operator_refuses_monitor_labels_that_are_not_a_json_object_of_strings() -> None:
    with pytest.raises(SystemExit, match="MONGOBENCH_MONITOR_LABELS"):
        OperatorConfig.from_env({"MONGOBENCH_MONITOR_LABELS": "release=kps"})
    with pytest.raises(SystemExit, match="MONGOBENCH_MONITOR_LABELS"):
        OperatorConfig.from_env({"MONGOBENCH_MONITOR_LABELS": '{"release": 1}'})
