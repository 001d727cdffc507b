"""Cluster tier: the GitOps experiments chart's superseded-runs hook on a real apiserver (issue 24).

Argo CD's controller is not run here (test_argocd.py runs it): what it would do is played by its
own steps. Each Git revision of the values is rendered by helm and server-side applied (the
runs and the hook's ServiceAccount, Role and RoleBinding); the hook Job's kubectl command is run
exactly as rendered, as the Job's ServiceAccount (impersonated), so the label selector and the
least-privilege Role are the ones a sync would use. The runs' health is then assessed by Argo
CD's own code (`argocd admin settings resource-overrides health` with argocd-cm-health.yaml:
localplane.argocd.resource_health), as its application controller would. No operator runs: the
runs' status is written through the status subresource.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.argocd import not_built, resource_health
from localplane.plane import Plane
from localplane.tools import REPO, binary

pytestmark = pytest.mark.cluster

EXPERIMENTS = REPO / "manifests" / "gitops" / "experiments"
RELEASE = "exp"
SUPERSEDED = {"argocd.argoproj.io/ignore-healthcheck": "true", "mongobench.io/superseded": "true"}


def render(namespace: str, values: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    helm = [str(binary("helm")), "template", RELEASE, str(EXPERIMENTS), "--namespace", namespace]
    proc = subprocess.run(
        [*helm, "-f", str(path)], capture_output=True, text=True, check=True, timeout=60
    )
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def sync(plane: Plane, namespace: str, objs: list[dict[str, Any]]) -> list[str]:
    """Apply what Argo CD applies as resources, then run the Sync hook's command; the hook Job's
    args are returned."""
    resources = [d for d in objs if d["kind"] != "Job"]
    plane.kubectl(
        "apply", "--server-side", "-n", namespace, "-f", "-",
        input="\n---\n".join(yaml.safe_dump(d) for d in resources),
    )  # fmt: skip
    job = next(d for d in objs if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    account = f"system:serviceaccount:{namespace}:{pod['serviceAccountName']}"
    for container in [*pod.get("initContainers", []), *pod["containers"]]:  # in the pod's order
        assert container["command"] == ["kubectl"]
        plane.kubectl(*container["args"], f"--as={account}")
    args: list[str] = pod["containers"][0]["args"]
    return args


def fail(plane: Plane, namespace: str, name: str) -> None:
    status = {
        "phase": "Failed",
        "conditions": [
            {
                "type": "Succeeded",
                "status": "False",
                "reason": "Failed",
                "message": f"run a #1 failed: Job {name}-3-run-a-r1 failed",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    plane.kubectl(
        "patch", "benchmarkrun", name, "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def runs(plane: Plane, namespace: str) -> dict[str, dict[str, Any]]:
    out = plane.kubectl("get", "benchmarkruns", "-n", namespace, "-o", "json").stdout
    return {r["metadata"]["name"]: r for r in json.loads(out)["items"]}


def marked(run: dict[str, Any]) -> bool:
    annotations = run["metadata"].get("annotations") or {}
    return all(annotations.get(k) == v for k, v in SUPERSEDED.items())


@pytest.mark.skipif(not_built() is not None, reason=not_built() or "")
def test_a_run_replaced_in_git_is_marked_and_its_failure_stops_counting(
    plane: Plane, namespace: str, tmp_path: Path
) -> None:
    values = yaml.safe_load((EXPERIMENTS / "examples" / "kind.yaml").read_text())
    # Revision 1: the example; its run fails.
    first = render(namespace, values, tmp_path)
    sync(plane, namespace, first)
    (old,) = runs(plane, namespace)
    fail(plane, namespace, old)
    # The current run failed.
    assert resource_health(runs(plane, namespace)[old])["status"] == "Degraded"

    # Revision 2: the cluster reshaped in place: a new run, the old one kept, marked by the hook.
    values["clusters"][0]["spec"]["topology"]["replicaSet"]["members"] = 5
    second = render(namespace, values, tmp_path)
    args = sync(plane, namespace, second)
    (new,) = set(runs(plane, namespace)) - {old}
    fail(plane, namespace, new)
    live = runs(plane, namespace)
    assert marked(live[old]) and not marked(live[new])
    assert resource_health(live[old]) == {
        "status": "Healthy",
        "message": "Superseded, kept for its results: Failed: run a #1 failed: "
        f"Job {old}-3-run-a-r1 failed",
    }
    assert resource_health(live[new])["status"] == "Degraded"  # the run Git names still counts
    assert live[old]["status"]["phase"] == "Failed"  # its results stay as they were

    # The hook again at the next sync: idempotent, and nothing else is touched.
    plane.kubectl(*args, f"--as=system:serviceaccount:{namespace}:{RELEASE}-superseded-runs")
    assert not marked(runs(plane, namespace)[new])

    # Revision 4 before 3: Git reverted to revision 1. Its run is current again: unmarked, and its
    # failure counts again; the other one is superseded now.
    first_values = yaml.safe_load((EXPERIMENTS / "examples" / "kind.yaml").read_text())
    sync(plane, namespace, render(namespace, first_values, tmp_path))
    live = runs(plane, namespace)
    assert not marked(live[old]) and marked(live[new])
    assert not SUPERSEDED.keys() & (live[old]["metadata"].get("annotations") or {}).keys()
    assert resource_health(live[old])["status"] == "Degraded"
    values["runs"] = first_values["runs"]  # back to revision 2's cluster: `new` is current again
    sync(plane, namespace, render(namespace, values, tmp_path))
    live = runs(plane, namespace)
    assert marked(live[old]) and not marked(live[new])

    # Revision 3: the run removed from Git: every run of the release is superseded. The live
    # listing of current runs differs from the new render: Argo CD sees OutOfSync and syncs.
    values["runs"] = []
    third = render(namespace, values, tmp_path)
    listing = next(d for d in third if d["kind"] == "ConfigMap")
    live_listing = plane.kubectl(
        "get", "configmap", listing["metadata"]["name"], "-n", namespace, "-o", "json"
    ).stdout
    assert json.loads(live_listing)["data"]["runs"] == new != listing["data"]["runs"]
    sync(plane, namespace, third)
    live = runs(plane, namespace)
    assert marked(live[old]) and marked(live[new])
    assert resource_health(live[new])["status"] == "Healthy"


def test_the_hook_succeeds_when_no_run_is_superseded_and_its_pod_is_admitted_as_restricted(
    plane: Plane, namespace: str, tmp_path: Path
) -> None:
    values = yaml.safe_load((EXPERIMENTS / "examples" / "kind.yaml").read_text())
    objs = render(namespace, values, tmp_path)
    sync(plane, namespace, objs)  # raises when kubectl fails
    assert not any(marked(r) for r in runs(plane, namespace).values())
    # The experiments Application's namespace enforces the restricted Pod Security profile (as
    # this test's namespace does): the hook's pod must pass it, or the sync would never finish.
    job = next(d for d in objs if d["kind"] == "Job")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "superseded-runs-dry-run"},
        "spec": job["spec"]["template"]["spec"],
    }
    plane.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-", input=json.dumps(pod))
    pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    refused = plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", input=json.dumps(pod),
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "restricted" in refused.stderr
