"""Unit tier: the platform recipes build clusters the chart accepts (kubeVersion >=1.30).

The Magnum recipe runs for real with a stand-in `openstack` CLI on PATH that answers `image show`
and records every other call: it must refuse an image Magnum would not hand to its Cluster API
driver or whose Kubernetes is too old, before creating anything, and create the template and
node groups otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from localplane.tools import REPO

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
