"""Unit tier: where the operator's API credentials come from (mongobench.k8s.credentials), the
kubeconfig read as kubectl reads it; errors are one line that names the file or the entry."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mongobench.k8s.credentials import CredentialsError, from_kubeconfig, in_cluster, load

pytestmark = pytest.mark.unit


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def kubeconfig(
    current: str | None = "dev", cluster: Any = None, user: Any = None, namespace: str = "lab"
) -> dict[str, Any]:
    return {
        "current-context": current,
        "contexts": [
            {"name": "dev", "context": {"cluster": "c", "user": "u", "namespace": namespace}}
        ],
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://10.0.0.1:6443/"}}],
        "users": [{"name": "u", "user": user or {"token": "abc"}}],
    }


def test_relative_files_resolve_against_their_own_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "pki" / "me.crt").write_bytes(b"CERT")
    key = base64.b64encode(b"KEY").decode()
    doc = kubeconfig(
        cluster={"server": "https://10.0.0.1:6443/", "certificate-authority": "pki/ca.crt"},
        user={"client-certificate": "pki/me.crt", "client-key-data": key},
    )
    creds = from_kubeconfig([write(tmp_path / "kubeconfig", doc)])
    assert creds.server == "https://10.0.0.1:6443"
    assert (creds.ca_data, creds.cert_data, creds.key_data) == (b"CA", b"CERT", b"KEY")
    assert creds.namespace == "lab" and creds.token is None
    assert "KEY" not in repr(creds)  # keys and tokens stay out of logs


def test_merged_kubeconfigs_first_file_wins_as_in_kubectl(tmp_path: Path) -> None:
    first = write(
        tmp_path / "a",
        {"current-context": "dev", "users": [{"name": "u", "user": {"token": "first"}}]},
    )
    second = write(tmp_path / "b", kubeconfig(current="other", user={"token": "second"}))
    creds = from_kubeconfig(env={"KUBECONFIG": f"{first}:{second}", "HOME": str(tmp_path)})
    assert creds.token == "first" and creds.server == "https://10.0.0.1:6443"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (kubeconfig(current=None), "context (current-context unset) not found"),
        (
            kubeconfig(cluster={"insecure-skip-tls-verify": True}),
            "kubeconfig cluster c has no server",
        ),
        (kubeconfig(user={"auth-provider": {"name": "gcp"}}), "auth-provider is not supported"),
        (
            kubeconfig(cluster={"server": "https://x", "proxy-url": "socks5://p:1080"}),
            "only an HTTP(S) proxy-url is supported",
        ),
        (
            kubeconfig(cluster={"server": "https://x", "certificate-authority": "no/such.crt"}),
            "certificate-authority",
        ),
    ],
)
def test_an_unusable_kubeconfig_is_one_line_that_names_the_entry(
    tmp_path: Path, doc: dict[str, Any], message: str
) -> None:
    with pytest.raises(CredentialsError, match=re.escape(message)) as refused:
        from_kubeconfig([write(tmp_path / "kubeconfig", doc)])
    assert "\n" not in str(refused.value)


def test_no_credentials_at_all_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(
        CredentialsError, match=r"not in a pod, and no kubeconfig at .*\.kube/config"
    ):
        load(env={"HOME": str(tmp_path)})


def test_in_a_pod_the_service_account_is_used(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "namespace").write_text("mongobench-system")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    creds = in_cluster(env, root=tmp_path)
    assert creds is not None
    assert creds.server == "https://[fd00::1]:443"
    assert (creds.ca_data, creds.namespace, creds.token_file) == (
        b"CA",
        "mongobench-system",
        tmp_path / "token",
    )
    assert in_cluster({}, root=tmp_path) is None  # not in a pod


def test_a_failing_exec_plugin_says_why(tmp_path: Path) -> None:
    doc = kubeconfig(
        user={
            "exec": {
                "command": sys.executable,
                "args": ["-c", "import sys; sys.exit('expired SSO session')"],
            }
        }
    )
    with pytest.raises(CredentialsError, match="exited 1: expired SSO session"):
        load(env={"KUBECONFIG": str(write(tmp_path / "kubeconfig", doc))})
