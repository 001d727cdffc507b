"""Unit tier: the platform recipes build clusters the chart accepts (kubeVersion >=1.30).

The Magnum recipe runs for real with a stand-in `openstack` CLI on PATH that answers `image show`
and records every other call: it must refuse an image Magnum would not hand to its Cluster API
driver or whose Kubernetes is too old, before creating anything, and create the template and
node groups otherwise. The studies' node pools (eks/studies-nodegroups.yaml, the Magnum
studies-nodegroups.sh run the same way) hold each study's largest cell with no node to spare, as
the operator's own PlacementFeasible check judges the pods' placement rules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.tools import REPO
from mongobench.api import BenchmarkExperimentSpec, MongoClusterSpec
from mongobench.experiment.decide import matrix as mx
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.placement import feasibility

pytestmark = pytest.mark.unit

PLATFORMS = REPO / "manifests" / "platforms"
CHART_MINOR = int(
    re.search(r'kubeVersion: ">=1\.(\d+)', (REPO / "charts/mongobench/Chart.yaml").read_text())[1]
)

FAKE_OPENSTACK = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
case "$*" in
  "image show"*) echo "$IMAGE_JSON" ;;
  "coe cluster show"*) echo CREATE_COMPLETE ;;
esac
"""


def magnum(
    tmp_path: Path, properties: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "openstack").write_text(FAKE_OPENSTACK)
    (bindir / "openstack").chmod(0o755)
    calls = tmp_path / "calls"
    calls.touch()
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "IMAGE": "ubuntu-kube",
        "IMAGE_JSON": json.dumps({"properties": properties}),
    }
    proc = subprocess.run(
        ["bash", str(PLATFORMS / "magnum" / "cluster.sh")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return proc, calls.read_text()


def test_magnum_recipe_uses_the_cluster_api_driver_with_a_supported_kubernetes(
    tmp_path: Path,
) -> None:
    proc, calls = magnum(tmp_path, {"os_distro": "ubuntu", "kube_version": "v1.31.4"})
    assert proc.returncode == 0, proc.stderr
    (template,) = [c for c in calls.splitlines() if c.startswith("coe cluster template create")]
    assert "--image ubuntu-kube" in template
    # No Heat-driver settings: the Cluster API driver takes the version from the image.
    assert not re.search(r"kube_tag|--docker-storage-driver|--network-driver", template)
    assert [c.split()[4] for c in calls.splitlines() if c.startswith("coe nodegroup create")] == [
        "database",
        "clients",
    ]


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"os_distro": "fedora-coreos"}, "Cluster API driver"),
        ({"os_distro": "ubuntu"}, "Cluster API driver"),
        ({"os_distro": "ubuntu", "kube_version": "v1.29.9"}, "needs >= 1.30"),
    ],
)
def test_magnum_recipe_refuses_images_before_creating_anything(
    tmp_path: Path, properties: dict[str, str], message: str
) -> None:
    proc, calls = magnum(tmp_path, properties)
    assert proc.returncode != 0 and message in proc.stderr
    assert "create" not in calls


def test_eks_recipe_pins_a_kubernetes_the_chart_accepts() -> None:
    config = yaml.safe_load((PLATFORMS / "eks" / "cluster.yaml").read_text())
    major, minor = map(int, str(config["metadata"]["version"]).split("."))
    assert (major, minor) >= (1, CHART_MINOR)


@pytest.mark.parametrize(
    "recipe", ["kind/kind-config.yaml", "eks/cluster.yaml", "magnum/cluster.sh"]
)
def test_each_recipe_states_the_versions_it_was_written_for(recipe: str) -> None:
    assert "Written for" in (PLATFORMS / recipe).read_text()


# --- the studies' node pools ----------------------------------------------------------------

STUDIES = REPO / "manifests" / "studies"
ROLE_KEYS = {"eks": "mongobench.io/role", "magnum": "magnum.openstack.org/role"}


def study_groups(tmp_path: Path, study: str) -> list[str]:
    """The Magnum recipe's `create STUDY`, run with the stand-in CLI: its calls."""
    bindir = tmp_path / f"bin{study}"
    bindir.mkdir()
    (bindir / "openstack").write_text(FAKE_OPENSTACK)
    (bindir / "openstack").chmod(0o755)
    calls = tmp_path / f"calls{study}"
    calls.touch()
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "CALLS": str(calls)}
    proc = subprocess.run(
        ["bash", str(PLATFORMS / "magnum" / "studies-nodegroups.sh"), "create", study],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return calls.read_text().splitlines()


def pools(tmp_path: Path) -> dict[str, dict[str, int]]:
    """Platform -> role -> nodes, as the two study recipes create them."""
    eks = yaml.safe_load((PLATFORMS / "eks" / "studies-nodegroups.yaml").read_text())
    out = {
        "eks": {
            g["labels"][ROLE_KEYS["eks"]]: g["desiredCapacity"] for g in eks["managedNodeGroups"]
        }
    }
    magnum: dict[str, int] = {}
    for study in ("1", "2", "3"):
        (call,) = study_groups(tmp_path, study)
        words = call.split()
        assert words[:4] == ["coe", "nodegroup", "create", "mongobench"], call
        magnum[words[words.index("--role") + 1]] = int(words[words.index("--node-count") + 1])
    out["magnum"] = magnum
    return out


def required_role(affinity: dict[str, Any], platform: str) -> str:
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expr,) = [e for t in terms for e in t["matchExpressions"] if e["key"] == ROLE_KEYS[platform]]
    (role,) = expr["values"]
    return str(role)


@pytest.mark.parametrize("platform", ["eks", "magnum"])
def test_each_study_pool_holds_its_largest_cell_and_no_node_more(
    tmp_path: Path, platform: str
) -> None:
    """Unit tier: the node pool the study's database pods require (their nodeAffinity, one term
    per platform) exists in the platform's recipe with just the nodes the study's largest cell
    needs, judged by the operator's own PlacementFeasible check; its clients' pool exists in the
    platform's cluster recipe."""
    have = pools(tmp_path)[platform]
    if platform == "eks":
        groups = yaml.safe_load((PLATFORMS / "eks" / "cluster.yaml").read_text())
        cluster_roles = {g["labels"][ROLE_KEYS["eks"]] for g in groups["managedNodeGroups"]}
    else:
        script = (PLATFORMS / "magnum" / "cluster.sh").read_text()
        cluster_roles = set(re.findall(r"--role (\w+)", script))
    studied = set()
    for path in sorted(STUDIES.glob("*/full/experiment.yaml")):
        spec = yaml.safe_load(path.read_text())["spec"]
        role = required_role(spec["cluster"]["placement"]["nodeAffinity"], platform)
        clients = spec["run"]["clients"]
        if not clients.get("besideDatabase"):  # beside the mongod: on the study's own pool
            assert required_role(clients["nodeAffinity"], platform) in cluster_roles
        nodes = have[role]
        studied.add(role)
        needed = 0
        for group in mx.expand(BenchmarkExperimentSpec.parse(spec)).groups:
            cluster = MongoClusterSpec.parse(dict(group))
            layout = cluster_layout("study", "studies", cluster)
            pool = [
                {"kind": "Node", "spec": {}, "metadata": {"name": f"n{i}", "labels": {
                    "kubernetes.io/hostname": f"n{i}", ROLE_KEYS[platform]: role}}}
                for i in range(nodes)
            ]  # fmt: skip
            assert feasibility(cluster, layout, pool)[0] == "True", (path, group)
            if cluster.placement.preset is None:  # no hard rule: the recipe gives a node a mongod
                fewest = sum(rs.members for rs in layout.replica_sets)
            else:  # the fewest nodes the preset's hard rules accept
                fewest = next(
                    n for n in range(1, nodes + 1)
                    if feasibility(cluster, layout, pool[:n])[0] == "True"
                )  # fmt: skip
            needed = max(needed, fewest)
        assert needed == nodes, f"{path}: the pool {role} has {nodes} nodes, {needed} needed"
    assert studied == set(have) == {"study-1", "study-2", "study-3"}


def test_the_study_recipe_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    script = str(PLATFORMS / "magnum" / "studies-nodegroups.sh")
    for args in ([], ["create", "4"], ["grow", "1"]):
        proc = subprocess.run(["bash", script, *args], capture_output=True, text=True, check=False)
        assert proc.returncode == 2 and "usage:" in proc.stderr, args
