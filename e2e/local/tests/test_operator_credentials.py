"""Cluster tier: the operator's own API client (mongobench.k8s.client, no `kubernetes` package)
authenticates to a real kube-apiserver over TLS the ways a user's cluster asks:

- in a pod: the service account's projected token and CA (in-cluster credentials), read again
  when the kubelet rotates the token;
- from a workstation against EKS: a kubeconfig whose user is an exec plugin (`aws eks
  get-token`); here a script prints a real service-account token. The operator process runs with
  it, kopf's watches included (through the operator's login handler).

Client certificates (kind, Magnum) are what every other cluster-tier test runs with.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO
from mongobench.k8s import client as kube
from mongobench.k8s.credentials import in_cluster, load

pytestmark = pytest.mark.cluster


def service_account_token(kubectl: Any, namespace: str, name: str, admin: bool = False) -> str:
    kubectl("create", "serviceaccount", name, "-n", namespace)
    if admin:
        kubectl(
            "create", "clusterrolebinding", f"{namespace}-{name}",
            "--clusterrole=cluster-admin", f"--serviceaccount={namespace}:{name}",
        )  # fmt: skip
    return str(kubectl("create", "token", name, "-n", namespace).stdout.strip())


def who_am_i(api: kube.ApiClient) -> str:
    review = api.request(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    return str(review["status"]["userInfo"]["username"])


def test_in_a_pod_the_service_account_token_is_used_and_reread_when_rotated(
    plane: Plane, namespace: str, kubectl: Any, tmp_path: Path
) -> None:
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text(service_account_token(kubectl, namespace, "first"))
    (root / "ca.crt").write_bytes(plane.pki.ca_crt.read_bytes())
    (root / "namespace").write_text(namespace)
    host, port = plane.server.removeprefix("https://").rsplit(":", 1)
    creds = in_cluster({"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}, root)
    assert creds is not None and creds.namespace == namespace
    api = kube.ApiClient(creds)
    try:
        assert who_am_i(api) == f"system:serviceaccount:{namespace}:first"
        # The kubelet writes a new token; the old one is revoked with its service account.
        (root / "token").write_text(service_account_token(kubectl, namespace, "second"))
        kubectl("delete", "serviceaccount", "first", "-n", namespace)
        assert wait_until(
            lambda: who_am_i(api) == f"system:serviceaccount:{namespace}:second",
            what="the rotated token",
        )
    finally:
        api.close()


def exec_kubeconfig(plane: Plane, token: str, into: Path) -> Path:
    """The plane's cluster with an exec-plugin user, as `aws eks update-kubeconfig` writes."""
    plugin = into / "get-token.py"
    plugin.write_text(
        "import json\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1',\n"
        f"  'kind': 'ExecCredential', 'status': {{'token': {token!r}}}}}))\n"
    )
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["users"] = [
        {
            "name": "mongobench-admin",
            "user": {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": sys.executable,
                    "args": [str(plugin)],
                    "interactiveMode": "Never",
                }
            },
        }
    ]
    path = into / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_operator_runs_with_an_exec_plugin_kubeconfig(
    plane: Plane, namespace: str, kubectl: Any, tmp_path: Path
) -> None:
    token = service_account_token(kubectl, namespace, "operator", admin=True)
    kubeconfig = exec_kubeconfig(plane, token, tmp_path)
    api = kube.ApiClient(load({"KUBECONFIG": str(kubeconfig)}))
    try:
        assert who_am_i(api) == f"system:serviceaccount:{namespace}:operator"
    finally:
        api.close()
    proc = start_operator(kubeconfig, [namespace], tmp_path / "operator.log")
    try:
        kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            str(REPO / "manifests/samples/mongocluster-minimal.yaml"),
        )
        # kopf's watch saw the object and the operator's client wrote its status and children.
        wait_until(
            lambda: (
                kubectl(
                    "get",
                    "mongocluster",
                    "minimal",
                    "-n",
                    namespace,
                    "-o",
                    "jsonpath={.status.phase}",
                ).stdout
            ),
            what="a phase written by the operator",
        )
        assert kubectl("get", "statefulsets", "-n", namespace, "-o", "name").stdout.strip()
    finally:
        proc.stop()
    assert "Unauthorized" not in (tmp_path / "operator.log").read_text()
    assert base64.b64encode(token.encode()).decode() not in (tmp_path / "operator.log").read_text()
    assert token not in (tmp_path / "operator.log").read_text()
