"""Cluster tier: the Helm chart installs on a real apiserver, and the operator runs with exactly
the RBAC the chart grants (a token of the chart's ServiceAccount, not the admin certificate),
with peering electing one active replica among several.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO, binary

pytestmark = pytest.mark.cluster

CHART = REPO / "charts" / "mongobench"
SAMPLE = REPO / "manifests" / "samples" / "mongocluster-minimal.yaml"


def helm(plane: Plane, *args: str) -> str:
    proc = subprocess.run(
        [str(binary("helm")), f"--kubeconfig={plane.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def service_account_kubeconfig(plane: Plane, namespace: str, sa: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount (TokenRequest API)."""
    token = plane.kubectl("create", "token", sa, "-n", namespace, "--duration=1h").stdout.strip()
    ca = base64.b64encode(plane.pki.ca_crt.read_bytes()).decode()
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "p",
                        "cluster": {"server": plane.server, "certificate-authority-data": ca},
                    }
                ],
                "users": [{"name": sa, "user": {"token": token}}],
                "contexts": [{"name": "p", "context": {"cluster": "p", "user": sa}}],
                "current-context": "p",
            }
        )
    )
    return path


def peers(api: k8s.ApiClient, namespace: str) -> dict[str, Any]:
    obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "kopf.dev", "v1", namespace, "kopfpeerings", "mongobench"
    )
    return dict(obj.get("status") or {})


def phase(api: k8s.ApiClient, namespace: str, name: str) -> Any:
    obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "mongobench.io", "v1alpha1", namespace, "mongoclusters", name
    )
    return obj.get("status", {}).get("phase")


def test_chart_installs_and_operator_runs_with_chart_rbac_and_peering(
    make_plane: Any, tmp_path: Path
) -> None:
    # A plane of its own: a fresh cluster, as a user installs on, with no CRDs applied beforehand.
    plane = make_plane()
    kube_api = plane.api_client()
    namespace = "mongobench"
    plane.kubectl("create", "namespace", namespace)
    plane.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    helm(
        plane,
        "install",
        "mb",
        str(CHART),
        "-n",
        namespace,
        f"--set=watchNamespaces={{{namespace}}}",
        "--wait",
        "--timeout=60s",
    )
    # The operator pod passed the namespace's restricted Pod Security admission and is Running.
    pods = k8s.CoreV1Api(kube_api).list_namespaced_pod(
        namespace, label_selector="app.kubernetes.io/name=mongobench-operator"
    )
    assert [p.status.phase for p in pods.items] == ["Running"]
    # One ConfigMap per generated dashboard for the Grafana sidecar, the JSON intact.
    configmaps = k8s.CoreV1Api(kube_api).list_namespaced_config_map(
        namespace, label_selector="grafana_dashboard=1"
    )
    dashboards = {p.name: json.loads(p.read_text()) for p in (CHART / "dashboards").glob("*.json")}
    assert len(configmaps.items) == len(dashboards) == 4
    assert {k: json.loads(v) for cm in configmaps.items for k, v in cm.data.items()} == dashboards

    kubeconfig = service_account_kubeconfig(
        plane, namespace, "mb-operator", tmp_path / "sa.kubeconfig"
    )
    peering = {"MONGOBENCH_PEERING_MANDATORY": "true"}
    active = start_operator(
        kubeconfig, [namespace], tmp_path / "a.log", MONGOBENCH_PRIORITY="200", **peering
    )
    standby = start_operator(
        kubeconfig, [namespace], tmp_path / "b.log", MONGOBENCH_PRIORITY="100", **peering
    )
    try:
        # Both replicas have announced themselves in the chart's KopfPeering object.
        wait_until(lambda: len(peers(kube_api, namespace)) == 2, timeout=30, what="two peers")
        plane.kubectl("apply", "-n", namespace, "-f", str(SAMPLE))
        wait_until(lambda: phase(kube_api, namespace, "minimal"), what="status")
        assert "minimal" not in (tmp_path / "b.log").read_text()  # the standby did nothing
        assert "Forbidden" not in (tmp_path / "a.log").read_text()

        # The active replica goes away; the standby takes over and reconciles new resources.
        active.stop()
        second = SAMPLE.read_text().replace("name: minimal", "name: second")
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=second)
        wait_until(lambda: phase(kube_api, namespace, "second"), timeout=60, what="takeover")
        assert "Forbidden" not in (tmp_path / "b.log").read_text()
    finally:
        active.stop()
        standby.stop()
    helm(plane, "uninstall", "mb", "-n", namespace, "--wait")
