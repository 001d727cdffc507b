"""The real Argo CD (hack/versions.env ARGOCD_VERSION) on a local plane, and its health engine.

One binary, built by hack/build-tools.sh, is the `argocd` CLI or a component by the name it runs
under (ARGOCD_BINARY_NAME). `start_argocd` runs what syncs Applications, as processes on loopback:
Debian's `redis-server` (the components' cache), `argocd-repo-server` (clones the repository and
renders it: plain YAML, kustomize and Helm with the cached binaries on its PATH) and
`argocd-application-controller` (compares, syncs, assesses health and writes each Application's
status). argocd-server (the API and UI) is left out: tests read an Application's status from the
apiserver, as `kubectl get application -o yaml` does.

`install` sets the plane up as an Argo CD install would: Argo CD's CRDs and the ConfigMaps and
Secret of its `manifests/core-install.yaml` (from the module, cached beside the binary), the
`default` AppProject, the project's health checks merged into `argocd-cm` with the command
docs/install.md gives, and the plane registered as a cluster Secret: the controller would take
`https://kubernetes.default.svc` from a pod's in-cluster configuration, which a process on this
machine has not, so Applications name the plane by its address.

`resource_health` runs `argocd admin settings resource-overrides health`: Argo CD's own code
assessing one object with the health checks of an `argocd-cm` file.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localplane import procs
from localplane.net import free_port, wait_for_port
from localplane.plane import Plane
from localplane.tools import REPO, binary, cache_dir, versions

NAMESPACE = "argocd"
HEALTH_CM = REPO / "manifests" / "gitops" / "argocd" / "argocd-cm-health.yaml"
CLUSTER_NAME = "local-plane"
# How users merge the health checks into their install (docs/install.md shows this line; a unit
# test holds the page to it), run from the repository's root.
INSTALL_HEALTH = (
    "kubectl -n argocd patch configmap argocd-cm"
    " --patch-file manifests/gitops/argocd/argocd-cm-health.yaml"
)
REDIS_HINT = "apt-get install -y redis-server (or `make setup`)"


def not_built() -> str | None:
    """Why Argo CD cannot run here, or None. `make setup` leaves it out (hack/build-tools.sh says
    why); the tests that need it skip with this reason, which names the command that builds it."""
    needed = [cache_dir() / "bin" / f"{n}-{versions()[k]}" for n, k in
              (("argocd", "ARGOCD_VERSION"), ("kustomize", "KUSTOMIZE_VERSION"))]  # fmt: skip
    needed.append(cache_dir() / f"argocd-{versions()['ARGOCD_VERSION']}" / "core-install.yaml")
    if all(p.is_file() for p in needed):
        return None
    return (
        f"Argo CD {versions()['ARGOCD_VERSION']} is not built here: `make setup-gitops` builds it"
        " (about 12 minutes cold; `make setup` leaves it out), `make test-gitops` runs these tests"
    )


def files() -> Path:
    """What running Argo CD needs from its module: crds/, core-install.yaml and the repo
    server's git-verify-wrapper.sh (hack/build-tools.sh caches them beside the binary)."""
    folder = cache_dir() / f"argocd-{versions()['ARGOCD_VERSION']}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is missing: run `make setup` (hack/build-tools.sh)")
    return folder


# --- pure builders ---------------------------------------------------------------------------


def settings_objects(core_install: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """The ConfigMaps and Secrets of core-install.yaml, in Argo CD's namespace: the settings its
    components read (the Deployments, RBAC and Services are the cluster's share, played here by
    processes with the admin's credentials)."""
    out = []
    for doc in core_install:
        if doc and doc["kind"] in ("ConfigMap", "Secret"):
            obj = dict(doc)
            obj["metadata"] = {**doc["metadata"], "namespace": NAMESPACE}
            out.append(obj)
    return out


def default_project() -> dict[str, Any]:
    """The `default` AppProject argocd-server creates at its start (it does not run here)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "default", "namespace": NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"namespace": "*", "server": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }


def cluster_secret(server: str, ca: bytes, cert: bytes, key: bytes) -> dict[str, Any]:
    """A declarative cluster registration (Argo CD's `argocd.argoproj.io/secret-type: cluster`)
    authenticating with a client certificate; `config` is JSON (Argo CD refuses YAML there)."""
    config = {
        "tlsClientConfig": {
            "caData": base64.b64encode(ca).decode(),
            "certData": base64.b64encode(cert).decode(),
            "keyData": base64.b64encode(key).decode(),
        }
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{CLUSTER_NAME}",
            "namespace": NAMESPACE,
            "labels": {"argocd.argoproj.io/secret-type": "cluster"},
        },
        "stringData": {"name": CLUSTER_NAME, "server": server, "config": json.dumps(config)},
    }


def parse_health(output: str) -> dict[str, str]:
    """`argocd admin settings resource-overrides health`'s answer ("STATUS: x" then
    "MESSAGE: y") as an Application's resource health; a kind without a check is an error."""
    lines = output.splitlines()
    if not lines or not lines[0].startswith("STATUS: "):
        raise ValueError(f"no health assessed: {output.strip()!r}")
    health = {"status": lines[0].removeprefix("STATUS: ")}
    message = "\n".join(lines[1:]).removeprefix("MESSAGE: ")
    if message:
        health["message"] = message
    return health


# --- the CLI ---------------------------------------------------------------------------------


def resource_health(obj: dict[str, Any], argocd_cm: Path = HEALTH_CM) -> dict[str, str]:
    """Argo CD's health of `obj` under the checks of `argocd_cm` (an argocd-cm ConfigMap file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="argocd-health-") as f:
        yaml.safe_dump(obj, f)
        f.flush()
        proc = subprocess.run(
            [str(binary("argocd")), "admin", "settings", "resource-overrides", "health",
             f.name, "--argocd-cm-path", str(argocd_cm)],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"argocd admin failed ({proc.returncode}): {proc.stderr.strip()}")
    return parse_health(proc.stdout)


# --- on a plane ------------------------------------------------------------------------------


def install(plane: Plane) -> None:
    """Argo CD's CRDs and settings, the default project, the health checks and the plane as a
    registered cluster (the module's docstring says why each)."""
    plane.apply(files() / "crds")
    plane.kubectl("create", "namespace", NAMESPACE)
    docs = yaml.safe_load_all((files() / "core-install.yaml").read_text())
    objs = [*settings_objects(docs), default_project()]
    pki = plane.pki
    objs.append(
        cluster_secret(
            plane.server,
            pki.ca_crt.read_bytes(),
            pki.admin_crt.read_bytes(),
            pki.admin_key.read_bytes(),
        )
    )
    plane.kubectl("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(o) for o in objs))
    # The health checks, as docs/install.md tells users (the file's path made absolute).
    *args, path = shlex.split(INSTALL_HEALTH)[1:]
    plane.kubectl(*args, str(REPO / path))


@dataclass
class ArgoCD:
    workdir: Path
    procs: list[procs.Proc] = field(default_factory=list)
    # Seconds from each component's start to its port answering.
    start_seconds: dict[str, float] = field(default_factory=dict)
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    def rss_bytes(self) -> dict[str, int]:
        return {p.name: procs.rss_bytes([p]) for p in self.procs}

    def log(self, name: str) -> str:
        return procs.tail(self.workdir / f"{name}.log", 60)

    def stop(self) -> None:
        procs.terminate(self.procs, self._children)

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str], port: int) -> None:
        began = time.monotonic()
        proc, popen = procs.spawn(
            name, cmd, self.workdir / f"{name}.log", detached=False, env=env, cwd=self.workdir
        )
        self.procs.append(proc)
        self._children[proc.pid] = popen
        try:
            wait_for_port(port, timeout=60)
        except TimeoutError:
            raise RuntimeError(f"{name} did not listen on {port}\n{self.log(name)}") from None
        self.start_seconds[name] = time.monotonic() - began


def _tool_path(workdir: Path) -> str:
    """PATH of the repo server: the pinned helm and kustomize, Argo CD's git-verify-wrapper.sh,
    then this machine's (git)."""
    tools = workdir / "bin"
    tools.mkdir(exist_ok=True)
    (tools / "helm").symlink_to(binary("helm"))
    (tools / "kustomize").symlink_to(binary("kustomize"))
    (tools / "git-verify-wrapper.sh").symlink_to(files() / "git-verify-wrapper.sh")
    return f"{tools}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


def start_argocd(plane: Plane, workdir: Path, *, reconciliation: int = 10) -> ArgoCD:
    """Redis, the repo server and the application controller against `plane` (after `install`).
    `reconciliation`: seconds within which a commit is seen, as argocd-cm's
    `timeout.reconciliation` sets them (3 minutes by default, and a random delay of up to a
    minute more, none here): how often the controller compares with Git and how long the repo
    server keeps what a branch resolved to."""
    workdir.mkdir(parents=True, exist_ok=True)
    argocd = ArgoCD(workdir)
    home, tmp = workdir / "home", workdir / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    # A home and temporary folder of its own: no git or helm configuration of this machine's
    # user, and the clones and renders stay in the workdir.
    base = {
        **os.environ,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "ARGOCD_GPG_ENABLED": "false",
        "ARGOCD_RECONCILIATION_TIMEOUT": f"{reconciliation}s",
        "ARGOCD_RECONCILIATION_JITTER": "0s",
    }
    redis = free_port()
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise FileNotFoundError(f"redis-server is not installed: {REDIS_HINT}")
    argo = str(binary("argocd"))
    common = [f"--redis=127.0.0.1:{redis}", "--loglevel=info", "--logformat=text"]
    try:
        argocd._spawn(
            "redis",
            [redis_server, "--port", str(redis), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(workdir)],
            base, redis,
        )  # fmt: skip
        repo_server = free_port()
        argocd._spawn(
            "argocd-repo-server",
            [argo, f"--port={repo_server}", "--address=127.0.0.1", f"--metrics-port={free_port()}",
             "--metrics-address=127.0.0.1", "--disable-tls", "--client-ca-path=", *common],
            {**base, "ARGOCD_BINARY_NAME": "argocd-repo-server", "PATH": _tool_path(workdir)},
            repo_server,
        )  # fmt: skip
        metrics = free_port()
        argocd._spawn(
            "argocd-application-controller",
            [argo, f"--kubeconfig={plane.kubeconfig}", f"--namespace={NAMESPACE}",
             f"--repo-server=127.0.0.1:{repo_server}", "--repo-server-plaintext",
             f"--metrics-port={metrics}",
             # Each resource's health in the Application's status, where tests read it (Argo CD
             # 3 keeps it in Redis for argocd-server's resource tree by default).
             "--persist-resource-health", *common],
            {**base, "ARGOCD_BINARY_NAME": "argocd-application-controller"},
            metrics,
        )  # fmt: skip
    except BaseException:
        argocd.stop()
        raise
    return argocd


@contextmanager
def running_argocd(plane: Plane, workdir: Path, **kw: Any) -> Iterator[ArgoCD]:
    argocd = start_argocd(plane, workdir, **kw)
    try:
        yield argocd
    finally:
        argocd.stop()
