"""A test-harness kubelet for benchmark client pods: runs their container commands for real.

KWOK makes pods labelled `mongobench.io/component=benchmark-client` Running/Ready and then leaves
them alone (stages.py). `PodExecutor` watches those pods in one namespace and, for each Running
one, does a kubelet's share of the work on loopback:

- resolves the container's environment as the kubelet does (envFrom, `value` with `$(VAR)`
  expansion, secretKeyRef / configMapKeyRef / fieldRef / resourceFieldRef) and expands `$(VAR)`
  in command and args; a missing Secret/ConfigMap/key leaves the container waiting with
  CreateContainerConfigError (retried), as a kubelet would;
- rewrites MongoDB URIs (the cluster's Service DNS names) with `uri_rewrite`, e.g. to FerretDB;
- maps the image's entrypoint to this checkout's (`mongobench-runner` -> the venv's);
- gives the process the pod's identity: a TokenRequest token for its ServiceAccount bound to the
  pod, the plane's CA, and the apiserver as KUBERNETES_SERVICE_HOST/PORT, so results reach the
  API through the runner's in-cluster path and RBAC applies;
- annotates the pod with where its `metrics` port is served (the runner's --metrics-port moved
  to a free loopback port), which the plane's Prometheus scrapes (localplane.monitoring);
- points the runner's termination log at a per-pod file, and when the process exits patches the
  pod status (phase, containerStatuses[].state.terminated) so the Job controller counts it;
- writes the keys of ConfigMap and Secret volumes into the pod's folder and points every
  argument and variable under their mountPath there (a missing object or key waits, as a
  kubelet's FailedMount does: reported as CreateContainerConfigError here).

`max_processes` caps the container processes running at once, as a node's capacity would: a
pod past the cap stays Running (KWOK's doing) with its process queued until a slot frees. A
benchmark that starts hundreds of clients on a small machine sets it, so the JVMs do not starve
the apiserver and the operator it measures (make bench-scale); tests leave it unset.

- runs each container in a CPU cgroup whose CFS quota is its CPU limit, and a memory cgroup,
  as a kubelet does (localplane.cgroups; where this user may create cgroups), and lists the
  running containers (`running_containers`) whose CPU time, throttling and memory working set
  the plane's kubelet cAdvisor endpoints serve (localplane.monitoring).

What it does not do: init containers (KWOK reports them completed), other volumes (emptyDir,
projected, ...), probes, memory limits, runAsUser; restartPolicy Always is run once like Never
(the pods it is for are Job pods). Everything runs on loopback under the test's own user.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes.utils import parse_quantity

from localplane import cgroups
from localplane.monitoring import scrape_annotations
from localplane.net import free_port
from localplane.plane import Plane
from localplane.stages import BENCHMARK_CLIENT_LABEL
from localplane.tools import REPO

Pod = dict[str, Any]
PodPredicate = Callable[[Pod], bool]

# Both client images (bench-jobs/Dockerfile.*) have ENTRYPOINT ["mongobench-runner"].
DEFAULT_ENTRYPOINT = ["mongobench-runner"]
DEFAULT_TERMINATION_PATH = "/dev/termination-log"
TERMINATION_LIMIT = 4096  # what a kubelet keeps of the message
_URI_RE = re.compile(r"mongodb(?:\+srv)?://[^\s\"']+")
_ENV_NAME_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_FIELD_KEY_RE = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
REDACTED_URI = "mongodb://<redacted>"


class ContainerConfigError(RuntimeError):
    """What a kubelet reports as CreateContainerConfigError (it keeps retrying)."""


def image_id(image: str) -> str:
    """`repository@sha256:...` for an image reference, as a kubelet reports a pulled image."""
    repository = image.partition("@")[0]
    name, _, tag = repository.rpartition(":")
    if "/" in tag or not name:  # a registry port, not a tag
        name = repository
    return f"{name}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


@dataclass(frozen=True)
class PodRun:
    """One container process (or injected failure) the executor finished."""

    pod: str
    container: str
    argv: tuple[str, ...]  # as executed, MongoDB URIs redacted
    exit_code: int
    reason: str  # Completed | Error | DeadlineExceeded
    message: str  # the termination message
    duration_s: float
    injected: bool = False
    output_tail: str = ""


@dataclass
class _Container:
    name: str
    image: str
    restart_count: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    last_state: dict[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None


@dataclass
class _PodState:
    uid: str
    name: str
    gone: threading.Event = field(default_factory=threading.Event)
    containers: dict[str, _Container] = field(default_factory=dict)
    thread: threading.Thread | None = None


_AUTH_OPTIONS = ("authSource", "authMechanism", "authMechanismProperties")


def rewrite_hosts(
    target: str,
    *,
    credentials: bool = False,
    drop_options: tuple[str, ...] = ("replicaSet",),
) -> Callable[[str], str]:
    """A `uri_rewrite` sending any MongoDB URI to `target` (`host:port`), keeping its database
    and options except `drop_options` (FerretDB is no replica set). Credentials and auth options
    go too unless `credentials` (the harness's FerretDB runs without authentication)."""
    dropped = drop_options if credentials else (*drop_options, *_AUTH_OPTIONS)

    def rewrite(uri: str) -> str:
        parts = urllib.parse.urlsplit(uri.replace("mongodb+srv://", "mongodb://", 1))
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{target}" if userinfo and credentials else target
        query = [
            (k, v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            if k not in dropped
        ]
        path = parts.path or "/"
        return urllib.parse.urlunsplit(("mongodb", netloc, path, urllib.parse.urlencode(query), ""))

    return rewrite


def redact_uris(text: str) -> str:
    return _URI_RE.sub(REDACTED_URI, text)


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Kubernetes `$(VAR)` expansion (k8s.io/kubernetes/third_party/forked/golang/expansion):
    `$$` is a literal `$`, unknown references stay as written."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close == -1:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                value = lookup(name)
                out.append(f"$({name})" if value is None else value)
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def _own_ports(argv: list[str]) -> list[str]:
    """Every pod has its own network namespace; here all share the host's loopback, so a port a
    container listens on (--metrics-port) gets a free one instead of colliding."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--metrics-port" and out[i + 1].isdigit():
            out[i + 1] = str(free_port())
    return out


def served_ports(container: dict[str, Any], argv: list[str]) -> dict[str, int]:
    """The container's named ports this harness serves on loopback: a runner's `metrics` port
    is its --metrics-port (a free port here, _own_ports)."""
    names = {p.get("name") for p in container.get("ports") or []}
    if "metrics" in names and "--metrics-port" in argv[:-1]:
        value = argv[argv.index("--metrics-port") + 1]
        if value.isdigit():
            return {"metrics": int(value)}
    return {}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Api:
    """Tiny JSON client for the plane's apiserver as its admin (the kubelet's own credentials
    would be a Node identity; admin is enough for a harness). A fresh connection per request
    keeps it thread-safe."""

    unreachable_seconds = 90.0

    def __init__(self, plane: Plane) -> None:
        self.port = plane.ports["apiserver"]
        self.ctx = ssl.create_default_context(cafile=str(plane.pki.ca_crt))
        self.ctx.load_cert_chain(str(plane.pki.admin_crt), str(plane.pki.admin_key))

    def connect(self, timeout: float = 30) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.ctx, timeout=timeout
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        # A kubelet keeps retrying while the apiserver is away (restarted, upgraded): a pod's
        # token and final status must not be lost to a refused connection.
        deadline = time.monotonic() + self.unreachable_seconds
        while True:
            conn = self.connect()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                if resp.status not in (429, 503) or time.monotonic() > deadline:
                    break  # 429/503: overloaded, or up before all its paths are installed
            except (ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
            finally:
                conn.close()
            time.sleep(0.5)
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {"message": raw.decode(errors="replace")[:500]}
        return resp.status, payload

    def get(self, path: str) -> dict[str, Any] | None:
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {body.get('message', body)}")
        return body


class PodExecutor:
    """Runs benchmark-client pods of `namespace` for real; see the module docstring.

    `uri_rewrite` maps each MongoDB URI found in env values and args (e.g. `rewrite_hosts(...)`).
    `image_commands` maps an image (exact, or without its tag) to its entrypoint, used when a
    container has no `command`; default `mongobench-runner`. `timeout` bounds every process;
    `max_processes` (default: no cap) is how many run at once. `cpuset`: the CPUs every container
    runs on (a kubelet's static CPU manager gives a Guaranteed pod cores of its own); None: any.
    """

    def __init__(
        self,
        plane: Plane,
        namespace: str,
        *,
        uri_rewrite: Callable[[str], str],
        image_commands: dict[str, list[str]] | None = None,
        timeout: float = 300.0,
        restart_backoff: float = 1.0,
        workdir: Path | None = None,
        max_processes: int | None = None,
        cpu_limits: bool = True,
        cpuset: frozenset[int] | None = None,
    ) -> None:
        self.plane = plane
        self.cpuset = cpuset
        self.namespace = namespace
        self.uri_rewrite = uri_rewrite
        self.image_commands = dict(image_commands or {})
        self.timeout = timeout
        self.restart_backoff = restart_backoff
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="mongobench-executor-"))
        self.errors: list[str] = []  # unexpected failures of the executor itself
        self._api = _Api(plane)
        self._lock = threading.Lock()
        self._runs: list[PodRun] = []
        self._pods: dict[str, _PodState] = {}
        self._failing: list[tuple[PodPredicate, int, str]] = []
        self._delays: list[tuple[PodPredicate, float]] = []
        self._holds: list[tuple[PodPredicate, Callable[[], bool]]] = []
        self._slots = threading.Semaphore(max_processes) if max_processes else None
        self._peak_lock = threading.Lock()
        self._live = 0
        self.peak_processes = 0  # the most container processes that ran at once
        # CPU limits enforced through cgroups as a kubelet does (localplane.cgroups); None:
        # this user cannot create cgroups here, containers run unconfined.
        self.cgroups = cgroups.available() if cpu_limits else None
        # (namespace, pod, container, node) -> the running container's cgroup: what the
        # kubelets' cAdvisor endpoints report (running_containers).
        self.containers: dict[cgroups.ContainerKey, cgroups.ContainerCgroup] = {}
        self._stop = threading.Event()
        self._watch_conn: http.client.HTTPSConnection | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> PodExecutor:
        self._thread = threading.Thread(target=self._loop, name="pod-executor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops watching and kills every process it started (no status is written then)."""
        self._stop.set()
        with self._lock:
            conn = self._watch_conn
            pods = list(self._pods.values())
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # unblocks the watch read
        for pod in pods:
            pod.gone.set()
            self._kill(pod, grace=2.0)
        if self._thread is not None:
            self._thread.join(timeout=15)
        for pod in pods:
            if pod.thread is not None:
                pod.thread.join(timeout=15)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PodExecutor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test hooks ----------------------------------------------------------------------------
    def fail_pods(
        self,
        predicate: PodPredicate,
        *,
        exit_code: int = 1,
        message: str = "injected failure (PodExecutor.fail_pods)",
    ) -> None:
        """Pods matching `predicate(pod_dict)` exit `exit_code` without running anything."""
        with self._lock:
            self._failing.append((predicate, exit_code, message))

    def delay_pods(self, predicate: PodPredicate, seconds: float) -> None:
        """Pods matching `predicate(pod_dict)` start their process `seconds` late, as a pod
        whose image pull or scheduling took longer than its peers'."""
        with self._lock:
            self._delays.append((predicate, seconds))

    def hold_pods(self, predicate: PodPredicate, until: Callable[[], bool]) -> None:
        """Pods matching `predicate(pod_dict)` start only once `until()` is true: their env
        (Secrets included) is read then, as for a pod whose image pull lasted until then."""
        with self._lock:
            self._holds.append((predicate, until))

    @property
    def runs(self) -> list[PodRun]:
        with self._lock:
            return list(self._runs)

    def taken(self) -> set[str]:
        """Pods it has taken on: process running, queued for a slot, or ended."""
        with self._lock:
            return {p.name for p in self._pods.values()}

    def running(self) -> dict[str, int]:
        """Pods with a live process: pod name -> pid (the process group leader)."""
        with self._lock:
            pods = list(self._pods.values())
        return {
            p.name: c.proc.pid
            for p in pods
            for c in p.containers.values()
            if c.proc is not None and c.proc.poll() is None
        }

    def wait_runs(self, count: int, timeout: float = 120) -> list[PodRun]:
        """Blocks until `count` runs finished; all runs so far. TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.runs
            if len(runs) >= count:
                return runs
            if self.errors:
                raise RuntimeError(f"pod executor failed: {self.errors}")
            time.sleep(0.1)
        raise TimeoutError(f"{len(self.runs)}/{count} pod runs after {timeout}s: {self.runs}")

    # -- the watch -----------------------------------------------------------------------------
    def _pods_path(self) -> str:
        selector = urllib.parse.quote(f"{BENCHMARK_CLIENT_LABEL[0]}={BENCHMARK_CLIENT_LABEL[1]}")
        return f"/api/v1/namespaces/{self.namespace}/pods?labelSelector={selector}"

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                listing = self._api.get(self._pods_path()) or {"items": [], "metadata": {}}
                items = listing.get("items", [])
                alive = {p["metadata"]["uid"] for p in items}
                with self._lock:
                    vanished = [s for uid, s in self._pods.items() if uid not in alive]
                for state in vanished:
                    self._on_deleted(state)
                for pod in items:
                    self._on_pod(pod)
                self._watch(listing["metadata"].get("resourceVersion", ""))
            except Exception as e:
                if self._stop.is_set():
                    return
                self.errors.append(f"watch: {type(e).__name__}: {e}")
                time.sleep(0.5)

    def _watch(self, resource_version: str) -> None:
        conn = self._api.connect(timeout=60)
        with self._lock:
            self._watch_conn = conn
        try:
            path = (
                f"{self._pods_path()}&watch=1&timeoutSeconds=30&resourceVersion={resource_version}"
            )
            conn.request("GET", path, headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                return  # relist
            for line in resp:
                if self._stop.is_set():
                    return
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object", {})
                if event.get("type") == "ERROR":
                    return  # e.g. 410 Gone: relist
                if event.get("type") == "DELETED":
                    with self._lock:
                        state = self._pods.get(obj["metadata"]["uid"])
                    if state is not None:
                        self._on_deleted(state)
                else:
                    self._on_pod(obj)
        except OSError:
            if not self._stop.is_set():
                raise
        finally:
            with self._lock:
                self._watch_conn = None
            conn.close()

    def _on_pod(self, pod: Pod) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        with self._lock:
            state = self._pods.get(uid)
        if state is not None:
            # A kubelet stops the containers of a pod being deleted (graceful deletion).
            if meta.get("deletionTimestamp") and not state.gone.is_set():
                self._on_deleted(state, pod)
            return
        if meta.get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
            return
        state = _PodState(uid=uid, name=meta["name"])
        state.thread = threading.Thread(
            target=self._run_pod, args=(pod, state), name=f"pod-{meta['name']}", daemon=True
        )
        with self._lock:
            if self._stop.is_set():
                return
            self._pods[uid] = state
        state.thread.start()

    def _on_deleted(self, state: _PodState, pod: Pod | None = None) -> None:
        state.gone.set()
        grace = 0.0
        if pod is not None:
            grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        self._kill(state, grace=min(max(grace, 1.0), 10.0))

    def _kill(self, state: _PodState, grace: float) -> None:
        procs = [c.proc for c in state.containers.values() if c.proc is not None]
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)
        if not procs:
            return

        def reap() -> None:
            deadline = time.monotonic() + grace
            for proc in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
                _signal_group(proc, signal.SIGKILL)

        threading.Thread(target=reap, daemon=True).start()

    # -- one pod -------------------------------------------------------------------------------
    def _run_pod(self, pod: Pod, state: _PodState) -> None:
        try:
            self._run_pod_inner(pod, state)
        except Exception as e:
            if not (state.gone.is_set() or self._stop.is_set()):
                self.errors.append(f"pod {state.name}: {type(e).__name__}: {e}")

    def _run_pod_inner(self, pod: Pod, state: _PodState) -> None:
        spec = pod["spec"]
        podir = self.workdir / f"{state.name}-{state.uid[:8]}"
        podir.mkdir(parents=True, exist_ok=True)
        for c in spec["containers"]:
            state.containers[c["name"]] = _Container(c["name"], c.get("image", ""))
        sa_dir = self._identity(pod, podir)
        deadline_s = spec.get("activeDeadlineSeconds")
        deadline = time.monotonic() + float(deadline_s) if deadline_s else None
        results: dict[str, tuple[int, str]] = {}

        def run(container: dict[str, Any]) -> None:
            results[container["name"]] = self._run_container(
                pod, state, container, podir, sa_dir, deadline
            )

        # Containers of a pod run side by side; the pod ends when all have.
        threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in spec["containers"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if state.gone.is_set() or self._stop.is_set() or len(results) != len(threads):
            return
        failed = any(code != 0 for code, _ in results.values())
        timed_out = any(reason == "DeadlineExceeded" for _, reason in results.values())
        phase = "Failed" if failed else "Succeeded"
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": _conditions(pod, "PodFailed" if failed else "PodCompleted"),
            "containerStatuses": self._container_statuses(state),
        }
        if timed_out:
            status["reason"] = "DeadlineExceeded"
            status["message"] = f"Pod was active on the node longer than {deadline_s}s"
        self._patch_status(pod, status)

    def _identity(self, pod: Pod, podir: Path) -> Path:
        """The pod's projected service-account volume, as a directory the runner is pointed at
        (MONGOBENCH_SA_DIR): a pod-bound token from the TokenRequest API, the CA, namespace."""
        sa_dir = podir / "serviceaccount"
        sa_dir.mkdir(exist_ok=True)
        spec = pod["spec"]
        if spec.get("automountServiceAccountToken") is False:
            return sa_dir  # a kubelet mounts nothing then: the runner finds no token
        account = spec.get("serviceAccountName") or "default"
        meta = pod["metadata"]
        status, body = self._api.request(
            "POST",
            f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    # What the kubelet asks for a projected token (default API audience).
                    "expirationSeconds": 3607,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                },
            },
        )
        if status != 201:
            raise RuntimeError(
                f"TokenRequest for {self.namespace}/{account}: HTTP {status}: "
                f"{body.get('message', body)}"
            )
        token = sa_dir / "token"
        token.write_text(body["status"]["token"])
        token.chmod(0o600)
        shutil.copyfile(self.plane.pki.ca_crt, sa_dir / "ca.crt")
        (sa_dir / "namespace").write_text(self.namespace)
        return sa_dir

    def _run_container(
        self,
        pod: Pod,
        state: _PodState,
        container: dict[str, Any],
        podir: Path,
        sa_dir: Path,
        deadline: float | None,
    ) -> tuple[int, str]:
        """Runs (and for restartPolicy OnFailure re-runs) one container; (exit code, reason)."""
        cstate = state.containers[container["name"]]
        policy = pod["spec"].get("restartPolicy", "Always")
        with self._lock:
            holds = list(self._holds)
        for until in (u for p, u in holds if p(pod)):
            while not until():
                if state.gone.wait(0.5) or self._stop.is_set():
                    return (-1, "Gone")
        while True:
            argv, env = self._prepare_until_ready(pod, state, container)
            if argv is None:
                return (-1, "Gone")
            code, reason = self._exec(pod, state, container, argv, env, podir, sa_dir, deadline)
            if code == 0 or policy != "OnFailure" or reason == "DeadlineExceeded":
                return code, reason
            if state.gone.is_set() or self._stop.is_set():
                return code, reason
            # A kubelet restarts the container in place; the Job controller counts restarts
            # against backoffLimit and deletes the pod when exceeded (we then see it go).
            time.sleep(self.restart_backoff * 2 ** min(cstate.restart_count, 5))
            cstate.restart_count += 1
            cstate.last_state, cstate.state = cstate.state, {"running": {"startedAt": _now()}}
            self._patch_status(pod, {"containerStatuses": self._container_statuses(state)})

    def _prepare_until_ready(
        self, pod: Pod, state: _PodState, container: dict[str, Any]
    ) -> tuple[list[str] | None, dict[str, str]]:
        reported = ""
        while not (state.gone.is_set() or self._stop.is_set()):
            try:
                argv, env = self.resolve(pod, container)
                mounts = self._mount(pod, container, self.workdir / f"{state.name}-{state.uid[:8]}")
                return remount(argv, mounts), {k: remount([v], mounts)[0] for k, v in env.items()}
            except ContainerConfigError as e:
                if str(e) != reported:
                    reported = str(e)
                    cstate = state.containers[container["name"]]
                    cstate.state = {
                        "waiting": {"reason": "CreateContainerConfigError", "message": reported}
                    }
                    self._patch_status(pod, {"containerStatuses": self._container_statuses(state)})
                time.sleep(1.0)
        return None, {}

    def _exec(
        self,
        pod: Pod,
        state: _PodState,
        container: dict[str, Any],
        argv: list[str],
        env: dict[str, str],
        podir: Path,
        sa_dir: Path,
        deadline: float | None,
    ) -> tuple[int, str]:
        cdir = podir / container["name"]
        cdir.mkdir(exist_ok=True)
        # Stands in for the file the kubelet mounts at terminationMessagePath: the runner writes
        # its summary only into a file that exists.
        term_path = container.get("terminationMessagePath") or DEFAULT_TERMINATION_PATH
        term_file = cdir / "termination-log"
        term_file.write_bytes(b"")
        argv = [
            str(term_file) if a == term_path else a.replace(f"={term_path}", f"={term_file}")
            for a in argv
        ]
        env = {
            **env,
            "MONGOBENCH_TERMINATION_LOG": str(term_file),
            "MONGOBENCH_SA_DIR": str(sa_dir),
        }
        if ports := served_ports(container, argv):
            self._annotate(pod, scrape_annotations(ports))
        with self._lock:
            delay = max((d for p, d in self._delays if p(pod)), default=0.0)
        if delay and state.gone.wait(delay):
            return 137, "Error"
        if not self._take_slot(state):
            return 137, "Error"
        try:
            return self._exec_in_slot(pod, state, container, argv, env, cdir, term_file, deadline)
        finally:
            self._give_slot()

    def _cgroup(
        self, pod: Pod, state: _PodState, container: dict[str, Any]
    ) -> tuple[cgroups.ContainerKey, cgroups.ContainerCgroup] | None:
        """The container's cgroup, created, with its CPU limit as the CFS quota."""
        if self.cgroups is None:
            return None
        limit = ((container.get("resources") or {}).get("limits") or {}).get("cpu")
        cores = float(parse_quantity(limit)) if limit is not None else None  # type: ignore[no-untyped-call]
        group = cgroups.ContainerCgroup(f"{state.uid}-{container['name']}", cores, self.cgroups)
        group.create()
        node = pod["spec"].get("nodeName") or ""
        return (self.namespace, state.name, container["name"], node), group

    def running_containers(self) -> list[tuple[cgroups.ContainerKey, cgroups.ContainerCgroup]]:
        """The running containers and their cgroups (Monitoring.kubelet_containers serves them
        as each node's kubelet cAdvisor endpoint)."""
        with self._lock:
            return list(self.containers.items())

    def _take_slot(self, state: _PodState) -> bool:
        """Waits for a free process slot (max_processes); False if the pod went meanwhile."""
        if self._slots is not None:
            while not self._slots.acquire(timeout=0.2):
                if state.gone.is_set() or self._stop.is_set():
                    return False
        with self._peak_lock:
            self._live += 1
            self.peak_processes = max(self.peak_processes, self._live)
        return True

    def _give_slot(self) -> None:
        with self._peak_lock:
            self._live -= 1
        if self._slots is not None:
            self._slots.release()

    def _exec_in_slot(
        self,
        pod: Pod,
        state: _PodState,
        container: dict[str, Any],
        argv: list[str],
        env: dict[str, str],
        cdir: Path,
        term_file: Path,
        deadline: float | None,
    ) -> tuple[int, str]:
        cstate = state.containers[container["name"]]
        started_at = _now()
        cstate.state = {"running": {"startedAt": started_at}}
        log = cdir / "output.log"
        t0 = time.monotonic()
        injected = self._injected(pod)
        if injected is not None:
            code, message = injected
            reason = "Completed"
            log.write_text(message + "\n")
        else:
            code, reason, message = self._run_process(
                state, container, argv, env, log, term_file, deadline, t0, pod
            )
        finished_at = _now()
        duration = time.monotonic() - t0
        output = log.read_text(errors="replace")
        if (
            not message
            and code != 0
            and container.get("terminationMessagePolicy") == "FallbackToLogsOnError"
        ):
            message = "\n".join(output.splitlines()[-80:])[-2048:]
        if reason == "Completed" and code != 0:
            reason = "Error"
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": reason,
            "startedAt": started_at,
            "finishedAt": finished_at,
        }
        if message:
            terminated["message"] = message
        cstate.state = {"terminated": terminated}
        with self._lock:
            self._runs.append(
                PodRun(
                    pod=state.name,
                    container=container["name"],
                    argv=tuple(redact_uris(a) for a in argv),
                    exit_code=code,
                    reason=reason,
                    message=message,
                    duration_s=duration,
                    injected=injected is not None,
                    output_tail=redact_uris(output[-4000:]),
                )
            )
        return code, reason

    def _run_process(
        self,
        state: _PodState,
        container: dict[str, Any],
        argv: list[str],
        env: dict[str, str],
        log: Path,
        term_file: Path,
        deadline: float | None,
        t0: float,
        pod: Pod,
    ) -> tuple[int, str, str]:
        """The container's program as a local process group in the log's folder, its output
        into the log, in a CPU cgroup with the container's limit; (exit code, reason,
        termination message)."""
        cstate = state.containers[container["name"]]
        reason = "Completed"
        group = self._cgroup(pod, state, container)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                argv,
                env=env,
                cwd=log.parent,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # one group: the runner's JVM goes with it
            )
        if self.cpuset:
            # Inherited by every thread and process it starts (the runner's JVM), as a cgroup.
            os.sched_setaffinity(proc.pid, self.cpuset)
        if group is not None:
            # Before it starts anything (the runner takes a second to start its JVM): what
            # it starts stays inside.
            key, cgroup = group
            cgroup.add(proc.pid)
            with self._lock:
                self.containers[key] = cgroup
        cstate.proc = proc
        if state.gone.is_set() or self._stop.is_set():
            _signal_group(proc, signal.SIGKILL)
        limit = self.timeout if deadline is None else min(self.timeout, deadline - t0)
        try:
            code = proc.wait(timeout=max(limit, 0.1))
        except subprocess.TimeoutExpired:
            code = _terminate_group(proc)
            if deadline is not None and limit < self.timeout:
                reason = "DeadlineExceeded"
            else:
                self.errors.append(
                    f"pod {state.name}/{container['name']}: killed after {limit:.0f}s "
                    "(PodExecutor timeout)"
                )
        cstate.proc = None
        if group is not None:
            with self._lock:
                self.containers.pop(group[0], None)
            group[1].remove()
        if code < 0:  # killed by a signal: what a container runtime reports
            code = 128 - code
        message = term_file.read_text(errors="replace")[:TERMINATION_LIMIT]
        return code, reason, message

    def _injected(self, pod: Pod) -> tuple[int, str] | None:
        with self._lock:
            failing = list(self._failing)
        for predicate, code, message in failing:
            if predicate(pod):
                return code, message
        return None

    def _local_executable(self, exe: str) -> str:
        """The image's program as found in this checkout's venv (the one running the tests, else
        REPO/.venv), else on PATH; absolute image paths map by their basename."""
        name = Path(exe).name
        for bindir in (Path(sys.executable).parent, REPO / ".venv" / "bin"):
            candidate = bindir / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
        found = shutil.which(name)
        if found is None:
            raise ContainerConfigError(f'executable "{exe}" not found locally')
        return found

    def _container_statuses(self, state: _PodState) -> list[dict[str, Any]]:
        out = []
        for c in state.containers.values():
            running = "running" in c.state
            entry: dict[str, Any] = {
                "name": c.name,
                "image": c.image,
                # As a kubelet reports it, repository@digest; the harness runs no image, so the
                # digest is the reference's (stable per image, which is what provenance needs).
                "imageID": image_id(c.image),
                "ready": running,
                "started": running,
                "restartCount": c.restart_count,
                "state": c.state,
            }
            if c.last_state:
                entry["lastState"] = c.last_state
            out.append(entry)
        return out

    def _annotate(self, pod: Pod, annotations: dict[str, str]) -> None:
        """Where the pod's ports are served (localplane.monitoring's scrape class reads it)."""
        meta = pod["metadata"]
        body = {"metadata": {"uid": meta["uid"], "annotations": annotations}}
        code, resp = self._api.request(
            "PATCH",
            f"/api/v1/namespaces/{self.namespace}/pods/{meta['name']}",
            body,
            content_type="application/strategic-merge-patch+json",
        )
        if code not in (200, 404, 409):
            raise RuntimeError(f"annotating pod {meta['name']}: HTTP {code}: {resp}")

    def _patch_status(self, pod: Pod, status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        body = {"metadata": {"uid": meta["uid"]}, "status": status}  # uid: never another pod
        code, resp = self._api.request(
            "PATCH",
            f"/api/v1/namespaces/{self.namespace}/pods/{meta['name']}/status",
            body,
            content_type="application/strategic-merge-patch+json",
        )
        if code not in (200, 404, 409):  # 404/409: deleted or replaced meanwhile
            raise RuntimeError(f"patching pod {meta['name']} status: HTTP {code}: {resp}")

    def _mount(self, pod: Pod, container: dict[str, Any], podir: Path) -> dict[str, str]:
        """ConfigMap and Secret volumes of the container written under the pod's folder:
        {mountPath: local folder}. ContainerConfigError when one (or an item's key) is missing."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        out: dict[str, str] = {}
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"], {})
            if "configMap" in volume:
                kind, source, name = "ConfigMap", volume["configMap"], volume["configMap"]["name"]
            elif "secret" in volume:
                kind, source, name = "Secret", volume["secret"], volume["secret"]["secretName"]
            else:
                continue
            data = self._object_data(kind, name, bool(source.get("optional")))
            folder = podir / "volumes" / mount["name"]
            folder.mkdir(parents=True, exist_ok=True)
            items = source.get("items") or [{"key": k, "path": k} for k in sorted(data or {})]
            for item in items:
                if item["key"] not in (data or {}):
                    raise ContainerConfigError(f'{kind.lower()} "{name}" has no key {item["key"]}')
                (folder / item["path"]).write_text((data or {})[item["key"]])
            out[mount["mountPath"].rstrip("/")] = str(folder)
        return out

    # -- environment ---------------------------------------------------------------------------
    def resolve(self, pod: Pod, container: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
        """(argv, env) as a kubelet would build them, URIs rewritten. ContainerConfigError when
        a referenced Secret/ConfigMap/key is missing and not optional."""
        service_env = {
            # The kubernetes Service's variables; the apiserver here is on loopback.
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.plane.ports["apiserver"]),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(self.plane.ports["apiserver"]),
        }
        env: dict[str, str] = {}
        for source in container.get("envFrom") or []:
            env.update(self._env_from(source))
        for var in container.get("env") or []:
            name = var["name"]
            if "valueFrom" in var:
                value = self._value_from(pod, container, var["valueFrom"])
                if value is None:  # optional and missing: the variable is not set
                    continue
            else:
                value = expand(var.get("value", ""), lambda k: env.get(k, service_env.get(k)))
            env[name] = value
        for key, value in service_env.items():
            env.setdefault(key, value)
        env = {k: self._rewrite(v) for k, v in env.items()}

        command = container.get("command") or []
        args = container.get("args")
        if not command:
            image = container.get("image", "")
            command = self.image_commands.get(
                image, self.image_commands.get(image.rsplit(":", 1)[0], DEFAULT_ENTRYPOINT)
            )
            # No args given: the image's CMD, which for our images only prints help.
            args = args if args is not None else []
        argv = [self._rewrite(expand(a, env.get)) for a in [*command, *(args or [])]]
        if not argv:
            raise ContainerConfigError("no command specified")
        argv[0] = self._local_executable(argv[0])
        return _own_ports(argv), {**self._base_env(pod), **env}

    def _base_env(self, pod: Pod) -> dict[str, str]:
        """What the image would provide: PATH (with this venv first), a HOME, a locale, Java;
        a container never inherits the test process's environment."""
        venv_bin = str(Path(sys.executable).parent)
        base = {
            "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
            "HOSTNAME": pod["spec"].get("hostname") or pod["metadata"]["name"],
        }
        for key in ("JAVA_HOME", "JAVA", "TMPDIR"):
            if key in os.environ:
                base[key] = os.environ[key]
        return base

    def _rewrite(self, value: str) -> str:
        return _URI_RE.sub(lambda m: self.uri_rewrite(m.group(0)), value)

    def _object_data(self, kind: str, name: str, optional: bool) -> dict[str, str] | None:
        plural = "secrets" if kind == "Secret" else "configmaps"
        obj = self._api.get(f"/api/v1/namespaces/{self.namespace}/{plural}/{name}")
        if obj is None:
            if optional:
                return None
            raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
        if kind == "Secret":
            return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return dict(obj.get("data") or {})

    def _env_from(self, source: Mapping[str, Any]) -> dict[str, str]:
        prefix = source.get("prefix", "")
        for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            ref = source.get(key)
            if ref is not None:
                data = self._object_data(kind, ref["name"], bool(ref.get("optional")))
                # Keys that are no valid variable names are skipped (the kubelet emits an event).
                return {
                    prefix + k: v for k, v in (data or {}).items() if _ENV_NAME_RE.match(prefix + k)
                }
        return {}

    def _value_from(
        self, pod: Pod, container: dict[str, Any], source: Mapping[str, Any]
    ) -> str | None:
        for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
            ref = source.get(key)
            if ref is not None:
                optional = bool(ref.get("optional"))
                data = self._object_data(kind, ref["name"], optional)
                if data is None:
                    return None
                if ref["key"] not in data:
                    if optional:
                        return None
                    raise ContainerConfigError(
                        f"couldn't find key {ref['key']} in {kind} {self.namespace}/{ref['name']}"
                    )
                return data[ref["key"]]
        if "fieldRef" in source:
            return field_value(pod, source["fieldRef"]["fieldPath"])
        if "resourceFieldRef" in source:
            return self._resource_value(pod, container, source["resourceFieldRef"])
        raise ContainerConfigError(f"unsupported valueFrom: {dict(source)}")

    def _resource_value(self, pod: Pod, container: dict[str, Any], ref: Mapping[str, Any]) -> str:
        target = container
        if ref.get("containerName"):
            target = next(c for c in pod["spec"]["containers"] if c["name"] == ref["containerName"])
        kind, _, resource = ref["resource"].partition(".")
        resources = target.get("resources") or {}
        value = (resources.get(kind) or {}).get(resource)
        if value is None and kind == "requests":
            value = (resources.get("limits") or {}).get(resource)
        if value is None and kind == "limits":
            # Unset limit: the node's allocatable, as the kubelet does.
            node = self._api.get(f"/api/v1/nodes/{pod['spec'].get('nodeName', '')}") or {}
            value = node.get("status", {}).get("allocatable", {}).get(resource)
        if value is None:
            return "0"
        divisor = parse_quantity(ref.get("divisor") or "1")  # type: ignore[no-untyped-call]
        quantity = parse_quantity(value) / divisor  # type: ignore[no-untyped-call]
        return str(math.ceil(quantity))


def remount(values: list[str], mounts: Mapping[str, str]) -> list[str]:
    """Paths under a mountPath (as a whole argument or after `=`) pointed at the local folder."""
    out = []
    for value in values:
        text = value
        for path, local in mounts.items():
            if text == path or text.startswith(f"{path}/"):
                text = local + text[len(path) :]
            elif f"={path}/" in text:
                text = text.replace(f"={path}/", f"={local}/", 1)
        out.append(text)
    return out


def field_value(pod: Pod, path: str) -> str:
    """A downward-API fieldRef as the kubelet resolves it."""
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
    keyed = _FIELD_KEY_RE.match(path)
    if keyed:
        return str((meta.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{k}="{v}"' for k, v in items)
    simple: dict[str, Callable[[], Any]] = {
        "metadata.name": lambda: meta.get("name"),
        "metadata.namespace": lambda: meta.get("namespace"),
        "metadata.uid": lambda: meta.get("uid"),
        "spec.nodeName": lambda: spec.get("nodeName"),
        "spec.serviceAccountName": lambda: spec.get("serviceAccountName"),
        "status.hostIP": lambda: status.get("hostIP"),
        "status.podIP": lambda: status.get("podIP"),
        "status.hostIPs": lambda: ",".join(i["ip"] for i in status.get("hostIPs") or []),
        "status.podIPs": lambda: ",".join(i["ip"] for i in status.get("podIPs") or []),
    }
    if path not in simple:
        raise ContainerConfigError(f"unsupported fieldRef {path!r}")
    return str(simple[path]() or "")


def _conditions(pod: Pod, reason: str) -> list[dict[str, Any]]:
    now = _now()
    out = []
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            out.append({**cond, "status": "False", "reason": reason, "lastTransitionTime": now})
        else:
            out.append(cond)
    return out


def _terminate_group(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then SIGKILL after 10 s; the exit code."""
    # The runner handles SIGTERM (stops YCSB, stores a Failed document).
    _signal_group(proc, signal.SIGTERM)
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@contextlib.contextmanager
def pod_executor(plane: Plane, namespace: str, **kw: Any) -> Iterator[PodExecutor]:
    """`with pod_executor(plane, ns, uri_rewrite=...) as ex:` — started, always stopped."""
    ex = PodExecutor(plane, namespace, **kw).start()
    try:
        yield ex
    finally:
        ex.stop()
