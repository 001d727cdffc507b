"""Where the pinned tool binaries live: the cache built by hack/build-tools.sh, keyed by version."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
VERSIONS_FILE = REPO / "hack" / "versions.env"


@cache
def versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in VERSIONS_FILE.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key] = value
    return out


def cache_dir() -> Path:
    return Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))


# binary name -> the versions.env key that pins it
_PINS = {
    "etcd": "ETCD_VERSION",
    "kube-apiserver": "K8S_VERSION",
    "kube-controller-manager": "K8S_VERSION",
    "kube-scheduler": "K8S_VERSION",
    "kubectl": "K8S_VERSION",
    "kwok": "KWOK_VERSION",
    "helm": "HELM_VERSION",
    "kubeconform": "KUBECONFORM_VERSION",
    "helm-docs": "HELM_DOCS_VERSION",
    "actionlint": "ACTIONLINT_VERSION",
    "ferretdb": "FERRETDB_VERSION",
    "mongodb_exporter": "MONGODB_EXPORTER_VERSION",
    "kind-configcheck": "KIND_VERSION",
    "krew": "KREW_VERSION",
    "validate-krew-manifest": "KREW_VERSION",
    "prometheus-operator": "PROMETHEUS_OPERATOR_VERSION",
    "prometheus-config-reloader": "PROMETHEUS_OPERATOR_VERSION",
    "prometheus": "PROMETHEUS_VERSION",
    "argocd": "ARGOCD_VERSION",
    "kustomize": "KUSTOMIZE_VERSION",
}


def uv() -> Path:
    """The uv `make setup` installs (hack/setup.sh): by its path, never whatever is on PATH."""
    path = cache_dir() / f"uv-{versions()['UV_VERSION']}" / "bin" / "uv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make setup` (hack/setup.sh installs it)")
    return path


def binary(name: str) -> Path:
    """Path of a cached tool binary; a clear error naming the setup step when it is missing."""
    path = cache_dir() / "bin" / f"{name}-{versions()[_PINS[name]]}"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `make setup` (hack/build-tools.sh builds it)"
        )
    return path


@cache
def binding_problem() -> str | None:
    """Why the checkout's YCSB binding (the runner's YCSB home without MONGOBENCH_YCSB_HOME)
    cannot be used as built, or None: not built, or older than its sources. A pull without
    `make setup` meets the runner's new properties with an old jar: a step bounded by
    durationSeconds then ran until YCSB's backstop, 120 s later, with no error saying why."""
    if os.environ.get("MONGOBENCH_YCSB_HOME"):
        return None
    done = subprocess.run(
        ["bash", str(REPO / "hack" / "build-java.sh"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if done.returncode == 0 else done.stderr.strip().removeprefix("build-java: ")


def prometheus_operator_crds() -> Path:
    return cache_dir() / f"prometheus-operator-crds-{versions()['PROMETHEUS_OPERATOR_VERSION']}"


def cert_manager_crds() -> list[dict[str, Any]]:
    """cert-manager's CRDs as the apiserver takes them: the module ships them as Helm templates
    whose only template parts are comments and label values, so the labels are dropped."""
    folder = cache_dir() / f"cert-manager-crds-{versions()['CERT_MANAGER_VERSION']}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is missing: run `make setup` (hack/build-tools.sh)")
    crds = []
    for path in sorted(folder.glob("crd-*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crd["metadata"].pop("labels", None)
        crd["metadata"].pop("annotations", None)
        crds.append(crd)
    return crds
