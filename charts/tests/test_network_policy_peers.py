"""Unit tier: a MongoCluster's NetworkPolicy admits the operator the chart installs.

The chain, each link real: the chart rendered by helm into a namespace and release of its own,
the operator's configuration parsed from the Deployment's environment as the running operator
does (the namespace from the downward API, as the kubelet fills it), the policy built by the
operator's builder for the kind sample with `networkPolicy.enabled`; its operator peer must
select the Deployment's pod template in that namespace, and its scraper peer the namespace the
chart names.
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


def installed(namespace: str, *sets: str) -> tuple[dict[str, str], OperatorConfig]:
    """The operator pod's labels and the configuration it starts with."""
    rendered = subprocess.run(
        [str(binary("helm")), "template", "perf", str(CHART), "--namespace", namespace,
         *[f"--set={s}" for s in sets]],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    deployment = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment")
    template = deployment["spec"]["template"]
    env: dict[str, str] = {}
    for e in template["spec"]["containers"][0]["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
        elif e["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[e["name"]] = namespace
    return template["metadata"]["labels"], OperatorConfig.from_env(env)


def member_policy(config: OperatorConfig) -> dict[str, Any]:
    spec_dict = yaml.safe_load(SAMPLE.read_text())["spec"]
    spec = MongoClusterSpec.parse({**spec_dict, "networkPolicy": {"enabled": True}})
    layout = cluster_layout("rs3", "bench", spec)
    objects = build_workload_objects(spec, layout, PRESETS["kind"], peers=config.network_peers)
    return next(o for o in objects if o["kind"] == "NetworkPolicy")


def peers_on_port(policy: dict[str, Any], port: int) -> list[dict[str, Any]]:
    rule = next(r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == port)
    return list(rule["from"])


@pytest.mark.parametrize("namespace", ["mongobench", "platform-tools"])
def test_policy_admits_the_installed_operators_pods_in_its_namespace(namespace: str) -> None:
    pod_labels, config = installed(namespace)
    operator = next(
        p for p in peers_on_port(member_policy(config), 27017) if "namespaceSelector" in p
    )
    assert operator["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": namespace
    }
    assert operator["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert "app.kubernetes.io/instance" in operator["podSelector"]["matchLabels"]  # this release


def test_scraper_namespace_follows_the_chart_value() -> None:
    _, default = installed("mongobench")
    (scraper,) = peers_on_port(member_policy(default), 9216)
    assert scraper == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}
    }
    _, custom = installed(
        "mongobench",
        r"networkPolicy.scraperNamespaceLabels.kubernetes\.io/metadata\.name=observability",
    )
    (scraper,) = peers_on_port(member_policy(custom), 9216)
    assert scraper == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}
    }


def test_operator_refuses_pod_labels_that_are_not_a_json_object_of_strings() -> None:
    with pytest.raises(SystemExit, match="MONGOBENCH_OPERATOR_POD_LABELS"):
        OperatorConfig.from_env({"MONGOBENCH_OPERATOR_POD_LABELS": "app=x"})
