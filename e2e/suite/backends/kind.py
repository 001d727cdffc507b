"""The `kind` backend: a real cluster made by `make e2e-kind` (e2e/kind/e2e.sh), real everything.

Expects, in the cluster KUBECONFIG points at: the mongobench chart installed as release
`mongobench` in namespace `mongobench`, watching every namespace, with the images `make images`
built; kube-prometheus-stack as release `kube-prometheus-stack` in `monitoring`. Members, mongos
and Prometheus are reached from this process by `kubectl port-forward` (loopback inside the pod:
the suite's own logins never count as the operator's, which come from the operator pod's IP).

On a failure inside `env()`, the namespace's objects, events and logs are collected
(e2e/kind/collect.sh) into $MONGOBENCH_E2E_ARTIFACTS before the namespace is deleted.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from backends.base import RESTRICTED, Backend, Env, http_json, namespace_name
from backends.manifests import Manifest
from backends.mongo import MongoView
from localplane.tools import REPO

OPERATOR_NAMESPACE = "mongobench"
OPERATOR_SELECTOR = "app.kubernetes.io/name=mongobench,app.kubernetes.io/component=operator"
CLIENT_SELECTOR = "app.kubernetes.io/name=mongobench-client"  # the BenchmarkRun Jobs' pods
PROMETHEUS = ("monitoring", "svc/kube-prometheus-stack-prometheus", 9090)
COLLECT = REPO / "e2e" / "kind" / "collect.sh"
_FORWARDING = re.compile(rb"Forwarding from 127\.0\.0\.1:(\d+) ->")


def forward_target(host: str) -> tuple[str, str, int]:
    """A member or mongos DNS name -> (namespace, kubectl port-forward target, port):
    `pod.service.ns.svc.cluster.local:27017` is that pod, `service.ns.svc...` the Service."""
    name, _, port = host.rpartition(":")
    labels = name.split(".")
    if len(labels) > 2 and labels[2] == "svc":
        return labels[1], f"svc/{labels[0]}", int(port)
    return labels[2], f"pod/{labels[0]}", int(port)


def forwarded_port(line: bytes) -> int | None:
    """The local port of kubectl port-forward's `Forwarding from 127.0.0.1:PORT -> ...`."""
    m = _FORWARDING.search(line)
    return int(m.group(1)) if m else None


@dataclass
class PortForwards:
    """`kubectl port-forward` processes, one per target, restarted when asked to forget one."""

    kubectl: list[str]
    _procs: dict[tuple[str, str, int], tuple[subprocess.Popen[bytes], int]] = field(
        default_factory=dict
    )

    def address(self, namespace: str, target: str, port: int, timeout: float = 30) -> str:
        key = (namespace, target, port)
        known = self._procs.get(key)
        if known and known[0].poll() is None:
            return f"127.0.0.1:{known[1]}"
        proc = subprocess.Popen(
            [*self.kubectl, "port-forward", "-n", namespace, "--address", "127.0.0.1", target,
             f":{port}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None
        deadline, seen = time.monotonic() + timeout, b""
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                line = proc.stdout.readline()
                seen += line
                local = forwarded_port(line)
                if local:
                    self._procs[key] = (proc, local)
                    return f"127.0.0.1:{local}"
        proc.kill()
        seen += proc.communicate()[0]  # what it said before it exited
        raise RuntimeError(f"port-forward {namespace}/{target} failed: {seen.decode()[-500:]}")

    def forget(self, namespace: str, target: str, port: int) -> None:
        known = self._procs.pop((namespace, target, port), None)
        if known:
            known[0].kill()
            known[0].wait()

    def close(self, namespace: str | None = None) -> None:
        for key in [k for k in self._procs if namespace in (None, k[0])]:
            self.forget(*key)


def kubectl_binary() -> str:
    found = shutil.which("kubectl")
    if found is None:
        raise FileNotFoundError("kubectl is not on PATH (the kind backend drives the cluster)")
    return found


class KindEnv(Env):
    backend = "kind"
    time_scale = 6.0  # real pods pull, start mongod and elect: slower than the local plane
    container_metrics = True  # kube-prometheus-stack scrapes the kubelets' cAdvisor
    enforces_network_policy = True  # Calico (e2e/kind/e2e.sh)

    def __init__(self, backend: KindBackend, namespace: str) -> None:
        self._backend = backend
        self.namespace = namespace
        self.api = backend.api
        self.started = datetime.now(UTC)
        self._previous_logs = ""  # of operator pods this Env crashed

        def reach(host: str) -> str:
            return backend.forwards.address(*forward_target(host))

        def forget(host: str) -> None:
            backend.forwards.forget(*forward_target(host))

        self.mongo = MongoView(self.api, namespace, reach, forget=forget)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self._backend.kubectl(*args, input=input, check=check)

    def _operator_pods(self) -> list[Any]:
        pods = k8s.CoreV1Api(self.api).list_namespaced_pod(
            OPERATOR_NAMESPACE, label_selector=OPERATOR_SELECTOR
        )
        return [p for p in pods.items if not p.metadata.deletion_timestamp]

    def crash_operator(self) -> None:
        self._previous_logs += self.operator_log()
        old = {p.metadata.uid for p in self._operator_pods()}
        self.kubectl(
            "delete", "pod", "-n", OPERATOR_NAMESPACE, "-l", OPERATOR_SELECTOR,
            "--grace-period=0", "--force", "--wait=false",
        )  # fmt: skip

        def replaced() -> bool:
            pods = [p for p in self._operator_pods() if p.metadata.uid not in old]
            return any(
                c.type == "Ready" and c.status == "True"
                for p in pods
                for c in (p.status.conditions or [])
            )

        self.wait(replaced, 20, "a new operator pod Ready")

    def prometheus(self, endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
        address = self._backend.forwards.address(*PROMETHEUS)
        return http_json(f"http://{address}/api/v1/{endpoint}", params)

    def operator_log(self) -> str:
        since = self.started.strftime("%Y-%m-%dT%H:%M:%SZ")
        out = self.kubectl(
            "logs", "-n", OPERATOR_NAMESPACE, "-l", OPERATOR_SELECTOR, "--tail=-1",
            f"--since-time={since}", "--max-log-requests=10", check=False,
        ).stdout  # fmt: skip
        return self._previous_logs + out

    def client_failures(self) -> list[str]:
        # The pods of failed client containers still there (a finished run's Jobs are deleted).
        pods = self.kubectl(
            "get", "pods", "-n", self.namespace, "-l", CLIENT_SELECTOR,
            "--field-selector=status.phase=Failed", "-o", "name", check=False,
        ).stdout.split()  # fmt: skip
        return [
            f"{pod}:\n"
            + self.kubectl("logs", "-n", self.namespace, pod, "--tail=40", check=False).stdout
            for pod in pods
        ]


class KindBackend(Backend):
    name = "kind"

    def __init__(self, kubeconfig: str, artifacts: Path) -> None:
        self.kubeconfig = kubeconfig
        self.artifacts = artifacts
        self.api = k8s_config.new_client_from_config(config_file=kubeconfig)
        self.forwards = PortForwards([kubectl_binary(), f"--kubeconfig={kubeconfig}"])
        self.open: set[str] = set()  # namespaces of Envs in use
        self._check_installed()

    @classmethod
    def from_environment(cls) -> KindBackend:
        kubeconfig = os.environ.get("KUBECONFIG", "")
        if not kubeconfig or not Path(kubeconfig).is_file():
            raise RuntimeError(
                "the kind backend needs KUBECONFIG naming the cluster `make e2e-kind` made"
            )
        artifacts = Path(os.environ.get("MONGOBENCH_E2E_ARTIFACTS", "e2e-artifacts"))
        return cls(kubeconfig, artifacts)

    def _check_installed(self) -> None:
        """A clear error instead of a first scenario timing out."""
        apps, core = k8s.AppsV1Api(self.api), k8s.CoreV1Api(self.api)
        operators = apps.list_namespaced_deployment(
            OPERATOR_NAMESPACE, label_selector=OPERATOR_SELECTOR
        ).items
        if not any((d.status.ready_replicas or 0) > 0 for d in operators):
            raise RuntimeError(f"no mongobench operator is ready in {OPERATOR_NAMESPACE}")
        namespace, service, _ = PROMETHEUS
        names = {s.metadata.name for s in core.list_namespaced_service(namespace).items}
        if service.removeprefix("svc/") not in names:
            raise RuntimeError(f"kube-prometheus-stack's {service} is not in {namespace}")

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [kubectl_binary(), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    @contextmanager
    def env(
        self, slug: str, *, clusters: Sequence[Manifest] = (), clients: bool = False
    ) -> Iterator[KindEnv]:
        namespace = namespace_name(slug)
        body: Any = {"metadata": {"name": namespace, "labels": RESTRICTED}}
        core = k8s.CoreV1Api(self.api)
        core.create_namespace(body)
        env = KindEnv(self, namespace)
        self.open.add(namespace)
        try:
            yield env
        except BaseException:
            self.collect(namespace)
            raise
        finally:
            self.open.discard(namespace)
            env.mongo.close()
            self.forwards.close(namespace)
            core.delete_namespace(namespace, propagation_policy="Background")

    def collect_open(self) -> None:
        for namespace in sorted(self.open):
            self.collect(namespace)

    def collect(self, namespace: str) -> None:
        """Objects, events and logs of the namespace (and the operator's) for the post-mortem."""
        out = self.artifacts / namespace
        env = {**os.environ, "KUBECONFIG": self.kubeconfig}
        subprocess.run(["bash", str(COLLECT), str(out), namespace], env=env, check=False)

    def close(self) -> None:
        self.forwards.close()
        self.api.close()  # type: ignore[no-untyped-call]
