"""A real Kubernetes control plane on loopback: the project's own "envtest".

etcd (tmpfs, no fsync) + kube-apiserver + kube-controller-manager + kube-scheduler, built from
pinned Go modules (hack/build-tools.sh), with KWOK as the kubelet of fake Nodes. Everything binds
127.0.0.1 on free ports and keeps its state in a per-plane directory, so two suites can run at
once. `Plane.stop()` leaves nothing behind; a plane whose owner was killed is reaped by the next
`cleanup_stale()` (state and pids are recorded in `<workdir>/plane.json` and on tmpfs).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from localplane import procs
from localplane.net import free_port
from localplane.nodes import NodeSet
from localplane.pki import Pki, client_cert, make_pki
from localplane.stages import write_stages
from localplane.tools import binary

SHM_ROOT = Path(os.environ.get("MONGOBENCH_SHM", "/dev/shm"))
SHM_PREFIX = "mongobench-plane-"
# Fixed by the in-tree hostPath provisioner (pkg/volume/hostpath): /tmp/hostpath_pv/<uuid>.
HOSTPATH_ROOT = Path("/tmp/hostpath_pv")
_HOSTPATH_RE = re.compile(
    rb"/tmp/hostpath_pv/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
STATE_FILE = "plane.json"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
_NOT_READY_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
DEFAULT_STORAGE_CLASS = "standard"
FIXED_STORAGE_CLASS = "standard-fixed"

# What a kubeadm/kind cluster runs, minus what needs a cloud, a CNI or a real kubelet.
CONTROLLERS = [
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "statefulset-controller",
    "deployment-controller",
    "replicaset-controller",
    "replicationcontroller-controller",
    "daemonset-controller",
    "disruption-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-expander-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "ephemeral-volume-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "resourcequota-controller",
    "clusterrole-aggregation-controller",
    "pod-garbage-collector-controller",
    # Lifts the not-ready taint the TaintNodesByCondition admission puts on every new Node
    # once KWOK reports it Ready (else nothing schedules); NoExecute evictions like a real one.
    "node-lifecycle-controller",
    "taint-eviction-controller",
]


class PlaneStartError(RuntimeError):
    pass


# Tries at booting the plane when a component finds its port taken.
_BIND_ATTEMPTS = 3


@dataclass
class Plane:
    workdir: Path
    shm: Path
    ports: dict[str, int]
    keep_workdir: bool = False
    detached: bool = False
    owner: dict[str, int] | None = None
    # Write an apiserver audit log (logs/audit.log, one JSON event per request): benchmarks count
    # the requests a client made from it.
    audit: bool = False
    procs: list[procs.Proc] = field(default_factory=list)
    started_in: float = 0.0
    node_names: list[str] = field(default_factory=list)
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _stopped: bool = False
    _api_client: k8s.ApiClient | None = field(default=None, repr=False)
    _commands: dict[str, list[str]] = field(default_factory=dict, repr=False)

    # -- paths and endpoints --------------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def pki(self) -> Pki:
        return Pki(self.workdir / "pki")

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    # -- lifecycle --------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        workdir: Path | str | None = None,
        *,
        nodes: NodeSet | Sequence[NodeSet] | None = None,
        keep_workdir: bool = False,
        detached: bool = False,
        timeout: float = 90.0,
        audit: bool = False,
    ) -> Plane:
        """Start a plane; `nodes` defaults to one kind worker. Raises PlaneStartError."""
        t0 = time.monotonic()
        if workdir is None:
            workdir = Path(tempfile.mkdtemp(prefix="mongobench-plane-"))
        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        SHM_ROOT.mkdir(parents=True, exist_ok=True)
        nodesets = (
            [NodeSet()] if nodes is None else [nodes] if isinstance(nodes, NodeSet) else nodes
        )
        for attempt in range(1, _BIND_ATTEMPTS + 1):
            shm = Path(tempfile.mkdtemp(prefix=SHM_PREFIX, dir=SHM_ROOT))
            ports = {n: free_port() for n in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler")}
            plane = cls(
                workdir,
                shm,
                ports,
                keep_workdir=keep_workdir,
                detached=detached,
                owner=None if detached else procs.owner_record(),
                audit=audit,
            )
            plane._save_state()  # before any spawn: a crash from here on is reapable
            try:
                plane._boot(nodesets, timeout)
                break
            except PlaneStartError as e:
                # Another program may bind a port between our pick and the component's own bind;
                # that is the machine's doing, not the plane's, so pick again.
                retry = attempt < _BIND_ATTEMPTS and "address already in use" in str(e)
                plane.keep_workdir = not retry
                plane.stop()
                if not retry:
                    raise
                workdir.mkdir(parents=True, exist_ok=True)
            except BaseException:
                # Keep the logs the error message points at; processes and tmpfs still go.
                plane.keep_workdir = True
                plane.stop()
                raise
        plane.started_in = time.monotonic() - t0
        plane._save_state()
        return plane

    @property
    def audit_log(self) -> Path:
        return self.logs / "audit.log"

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log's events, each a dict. The apiserver writes the log while tests read
        it: the text after its last newline may be an event half written, left for a later read."""
        if not self.audit_log.exists():
            return []
        lines = self.audit_log.read_text().split("\n")[:-1]
        return [json.loads(line) for line in lines if line.strip()]

    def _audit_args(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\n"
            "omitStages: [RequestReceived]\nrules:\n"
            # Bodies of mongobench.io requests (no secrets there) explain what a write was.
            "  - level: Request\n    resources: [{group: mongobench.io}]\n"
            "  - level: Metadata\n"
        )
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
        ]

    def _boot(self, nodesets: Sequence[NodeSet], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self.logs.mkdir(exist_ok=True)
        pki = make_pki(self.workdir / "pki")
        self._write_kubeconfig(pki)
        stages = write_stages(self.workdir / "kwok-stages.yaml")
        p = self.ports
        etcd_url = f"http://127.0.0.1:{p['etcd']}"
        peer_url = f"http://127.0.0.1:{p['etcd_peer']}"
        self._spawn("etcd", [
            str(binary("etcd")),
            "--name=plane", f"--data-dir={self.shm / 'etcd'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=plane={peer_url}",
            "--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=2147483648",
        ])  # fmt: skip
        # The apiserver retries etcd itself: starting both at once saves a round trip.
        self._spawn("kube-apiserver", [
            str(binary("kube-apiserver")),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={p['apiserver']}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_crt}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_crt}",
            "--anonymous-auth=false",
            "--authorization-mode=Node,RBAC",
            # All on by default in 1.32; named so the intent (PSA must reject) is visible.
            "--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,PodSecurity,"
            "DefaultStorageClass,PersistentVolumeClaimResize,StorageObjectInUseProtection",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # No kubelet registers the apiserver's own endpoints; nothing needs them.
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            *self._audit_args(),
        ])  # fmt: skip
        self._wait("etcd", lambda: _port_open(p["etcd"]), deadline)
        self._wait("kube-apiserver", lambda: self._get_ok(p["apiserver"], "/readyz"), deadline)

        kubeconfig = str(self.kubeconfig)
        self._spawn("kube-controller-manager", [
            str(binary("kube-controller-manager")),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={p['kcm']}",
            f"--cert-dir={self.workdir / 'kcm-certs'}",
            "--leader-elect=false",
            f"--controllers={','.join(CONTROLLERS)}",
            "--enable-hostpath-provisioner",
            "--pvclaimbinder-sync-period=1s",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_crt}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--kube-api-qps=200", "--kube-api-burst=400",
            "--concurrent-gc-syncs=5",
        ])  # fmt: skip
        self._spawn("kube-scheduler", [
            str(binary("kube-scheduler")),
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={p['scheduler']}",
            f"--cert-dir={self.workdir / 'scheduler-certs'}",
            "--leader-elect=false",
        ])  # fmt: skip
        self._spawn(
            "kwok",
            [
                str(binary("kwok")),
                f"--kubeconfig={kubeconfig}",
                f"--config={stages}",
                # Every node of this plane is fake. (Not --manage-all-nodes=false together
                # with an annotation selector: see shared/toolchain.md.)
                "--manage-all-nodes=true",
                "--node-lease-duration-seconds=40",
                f"--cidr={POD_CIDR}",
            ],
            # Keeps kwok from merging a user's ~/.kwok/kwok.yaml into our config.
            env={**os.environ, "KWOK_WORKDIR": str(self.workdir / "kwok")},
        )
        self._create_storage_classes()
        for nodeset in nodesets:
            self.add_nodes(nodeset, wait=False)

        core = k8s.CoreV1Api(self._api())
        self._wait(
            "kube-controller-manager",
            lambda: self._get_ok(p["kcm"], "/healthz", client_cert=False),
            deadline,
        )
        self._wait(
            "kube-scheduler",
            lambda: self._get_ok(p["scheduler"], "/healthz", client_cert=False),
            deadline,
        )
        self._wait(
            "kube-controller-manager",
            lambda: _exists(lambda: core.read_namespaced_service_account("default", "default")),
            deadline,
            what="the default ServiceAccount",
        )
        self.wait_nodes_ready(self.node_names, deadline - time.monotonic())

    def stop(self) -> None:
        """Stop every component, remove tmpfs, this plane's hostPath PVs, and the workdir."""
        if self._stopped:
            return
        self._stopped = True
        pv_paths: set[Path] = set()
        if any(p.name == "kube-apiserver" and p.alive() for p in self.procs):
            with contextlib.suppress(Exception):
                pv_paths |= self._hostpath_pvs_from_api()
        if self._api_client is not None:
            self._api_client.close()  # type: ignore[no-untyped-call]
        procs.terminate(self.procs, self._children)
        # Also PVs the API listing missed (created while stopping, or the API was down): their
        # paths are in etcd's files verbatim. UUID names, so nothing of another plane matches.
        pv_paths |= _hostpath_pvs_in(self.shm / "etcd")
        for path in pv_paths:
            if path.parent == HOSTPATH_ROOT:
                shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(self.shm, ignore_errors=True)
        if self.keep_workdir:
            self._save_state()
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart_apiserver(self, down: float = 0.0, timeout: float = 60) -> float:
        """Crash the kube-apiserver (SIGKILL) and start it again with the same flags after `down`
        seconds, as a control-plane crash or upgrade does: clients see refused connections, then
        the same state (etcd keeps it). Returns the seconds until it was ready again."""
        port = self.ports["apiserver"]
        return self._restart("kube-apiserver", down, timeout, lambda: self._get_ok(port, "/readyz"))

    def restart_controller_manager(self, timeout: float = 60) -> float:
        """kube-controller-manager started again (SIGKILL, same flags): its garbage collector
        then maps every resource served now from its first discovery. Started before CRDs were
        applied, it learns them only at its 30 s resync, and an owner it failed to map by then
        waits out its retry backoff: children of a deleted custom resource outlived it by 45-85 s
        here. Returns the seconds until it was healthy again."""
        port = self.ports["kcm"]
        return self._restart(
            "kube-controller-manager",
            0.0,
            timeout,
            lambda: self._get_ok(port, "/healthz", client_cert=False),
        )

    def _restart(self, name: str, down: float, timeout: float, ready: Callable[[], bool]) -> float:
        t0 = time.monotonic()
        old = next(p for p in self.procs if p.name == name and p.alive())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(old.pid, signal.SIGKILL)
        while old.alive() and time.monotonic() - t0 < 10:
            procs.terminate([], self._children)  # reaps
            time.sleep(0.02)
        self.procs.remove(old)
        self._children.pop(old.pid, None)
        time.sleep(down)
        self._spawn(name, self._commands[name])
        self._wait(name, ready, time.monotonic() + timeout)
        return time.monotonic() - t0

    def __enter__(self) -> Plane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- API access -------------------------------------------------------------------------
    def api_client(self) -> k8s.ApiClient:
        """A fresh kubernetes ApiClient authenticated as the plane's admin."""
        cfg = k8s.Configuration()
        cfg.host = self.server
        cfg.ssl_ca_cert = str(self.pki.ca_crt)
        cfg.cert_file = str(self.pki.admin_crt)
        cfg.key_file = str(self.pki.admin_key)
        return k8s.ApiClient(cfg)

    def _api(self) -> k8s.ApiClient:
        # One client for the plane's own calls (each ApiClient holds a connection pool).
        if self._api_client is None:
            self._api_client = self.api_client()
        return self._api_client

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [kubectl_path(), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
            )
        return proc

    def apply(self, *paths: Path, timeout: float = 60) -> list[str]:
        """Server-side apply of manifest files; CRDs among them are waited for (Established)."""
        files: list[str] = []
        for path in paths:
            if path.is_dir():
                files += [str(f) for f in sorted(path.glob("*.y*ml"))]
            else:
                files.append(str(path))
        if not files:
            return []
        args = ["apply", "--server-side", "--force-conflicts", "--field-manager=localplane"]
        for f in files:
            args += ["-f", f]
        # `-o name` rather than parsing the YAML here: kubectl's parser is the reference (the
        # Prometheus Operator CRDs hold a `=` scalar PyYAML's safe loader refuses).
        out = self.kubectl(*args, "-o", "name", timeout=timeout).stdout.split()
        prefix = "customresourcedefinition.apiextensions.k8s.io/"
        crds = [line.removeprefix(prefix) for line in out if line.startswith(prefix)]
        if crds:
            self.wait_crds_established(crds, timeout)
        return crds

    def wait_crds_established(self, names: Iterable[str], timeout: float = 60) -> None:
        ext = k8s.ApiextensionsV1Api(self._api())
        pending = set(names)
        deadline = time.monotonic() + timeout
        while pending:
            for name in list(pending):
                crd = ext.read_custom_resource_definition(name)
                conds = (crd.status and crd.status.conditions) or []
                if any(c.type == "Established" and c.status == "True" for c in conds):
                    pending.discard(name)
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"CRDs not Established after {timeout}s: {sorted(pending)}")
                time.sleep(0.1)

    # -- nodes ------------------------------------------------------------------------------
    def add_nodes(self, nodeset: NodeSet, *, wait: bool = True, timeout: float = 30) -> list[str]:
        core = k8s.CoreV1Api(self._api())
        names = []
        for manifest in nodeset.manifests():
            core.create_node(_body(manifest))
            names.append(manifest["metadata"]["name"])
        self.node_names += names
        self._save_state()
        if wait:
            self.wait_nodes_ready(names, timeout)
        return names

    def wait_nodes_ready(self, names: Iterable[str], timeout: float = 30) -> None:
        core = k8s.CoreV1Api(self._api())
        pending = set(names)
        deadline = time.monotonic() + timeout
        while pending:
            self._check_alive()
            for node in core.list_node().items:
                conds = (node.status and node.status.conditions) or []
                ready = any(c.type == "Ready" and c.status == "True" for c in conds)
                taints = {t.key for t in (node.spec and node.spec.taints) or []}
                if ready and not taints & _NOT_READY_TAINTS and node.metadata:
                    pending.discard(node.metadata.name or "")
            if pending:
                if time.monotonic() > deadline:
                    raise PlaneStartError(
                        f"nodes not Ready after {timeout:.0f}s: {sorted(pending)}\n"
                        f"--- kwok log tail ---\n{procs.tail(self.logs / 'kwok.log')}"
                    )
                time.sleep(0.1)

    # -- introspection ----------------------------------------------------------------------
    def rss_bytes(self) -> int:
        return procs.rss_bytes(self.procs)

    def alive(self) -> bool:
        return bool(self.procs) and all(p.alive() for p in self.procs)

    # -- state ------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {
            "workdir": str(self.workdir),
            "shm": str(self.shm),
            "ports": self.ports,
            "keep_workdir": self.keep_workdir,
            "detached": self.detached,
            "owner": self.owner,
            "procs": [p.to_json() for p in self.procs],
            "node_names": self.node_names,
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
        }

    def _save_state(self) -> None:
        text = json.dumps(self._state(), indent=2)
        for directory in (self.workdir, self.shm):
            if directory.is_dir():
                tmp = directory / f".{STATE_FILE}.{uuid.uuid4().hex}"
                tmp.write_text(text)
                tmp.replace(directory / STATE_FILE)

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> Plane:
        return cls(
            Path(state["workdir"]),
            Path(state["shm"]),
            {k: int(v) for k, v in state["ports"].items()},
            keep_workdir=bool(state.get("keep_workdir")),
            detached=bool(state.get("detached")),
            owner=state.get("owner"),
            procs=[procs.Proc.from_json(p) for p in state.get("procs", [])],
            node_names=list(state.get("node_names", [])),
        )

    @classmethod
    def attach(cls, workdir: Path | str) -> Plane:
        """The plane recorded in `workdir` (e.g. started detached by `dev up`)."""
        return cls._from_state(json.loads((Path(workdir) / STATE_FILE).read_text()))

    # -- helpers ----------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self._commands[name] = cmd
        proc, popen = procs.spawn(
            name, cmd, self.logs / f"{name}.log", detached=self.detached, env=env, cwd=self.workdir
        )
        self.procs.append(proc)
        self._children[proc.pid] = popen
        self._save_state()

    def _check_alive(self) -> None:
        for p in self.procs:
            if not p.alive():
                raise PlaneStartError(f"{p.name} exited\n--- {p.log} ---\n{procs.tail(p.log)}")

    def _wait(
        self, name: str, ready: Callable[[], bool], deadline: float, what: str | None = None
    ) -> None:
        while True:
            self._check_alive()
            if ready():
                return
            if time.monotonic() > deadline:
                log = self.logs / f"{name}.log"
                raise PlaneStartError(
                    f"{what or name} not ready in time\n--- {log} ---\n{procs.tail(log)}"
                )
            time.sleep(0.05)

    def _get_ok(self, port: int, path: str, client_cert: bool = True) -> bool:
        if client_cert:
            ctx = ssl.create_default_context(cafile=str(self.pki.ca_crt))
            ctx.load_cert_chain(str(self.pki.admin_crt), str(self.pki.admin_key))
        else:  # controller-manager/scheduler serve a self-signed cert; health only
            ctx = ssl._create_unverified_context()
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
        try:
            conn.request("GET", path)
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def user_kubeconfig(self, user: str) -> Path:
        """A kubeconfig like `kubeconfig` (an admin) for a user of its own: two processes told
        apart in the audit log (e.g. two operator replicas)."""
        crt, key = client_cert(self.pki, user)
        path = self.workdir / f"kubeconfig-{user}"
        self._write_kubeconfig(self.pki, path, crt, key, user)
        return path

    def _write_kubeconfig(
        self,
        pki: Pki,
        path: Path | None = None,
        crt: Path | None = None,
        key: Path | None = None,
        user: str = "mongobench-admin",
    ) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        path = path or self.kubeconfig

        # Inline data: the file is self-contained (kopf, kubectl, helm all read it as is).
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "mongobench-local",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": b64(pki.ca_crt),
                    },
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(crt or pki.admin_crt),
                        "client-key-data": b64(key or pki.admin_key),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "mongobench-local",
                    "context": {"cluster": "mongobench-local", "user": user},
                }
            ],
            "current-context": "mongobench-local",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    def _create_storage_classes(self) -> None:
        storage = k8s.StorageV1Api(self._api())
        for name, default, expand in (
            (DEFAULT_STORAGE_CLASS, True, True),
            (FIXED_STORAGE_CLASS, False, False),
        ):
            storage.create_storage_class(
                _body(
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "StorageClass",
                        "metadata": {
                            "name": name,
                            "annotations": {
                                "storageclass.kubernetes.io/is-default-class": str(default).lower()
                            },
                        },
                        "provisioner": "kubernetes.io/host-path",
                        "reclaimPolicy": "Delete",
                        "volumeBindingMode": "Immediate",
                        "allowVolumeExpansion": expand,
                    }
                )
            )

    def _hostpath_pvs_from_api(self) -> set[Path]:
        core = k8s.CoreV1Api(self._api())
        out = set()
        for pv in core.list_persistent_volume(_request_timeout=5).items:
            host_path = pv.spec and pv.spec.host_path
            if host_path and host_path.path:
                out.add(Path(host_path.path))
        return out


def kubectl_path() -> str:
    """The pinned kubectl from the tool cache (same version as the plane), else PATH's."""
    try:
        return str(binary("kubectl"))
    except (FileNotFoundError, KeyError):
        exe = shutil.which("kubectl")
        if exe is None:
            raise FileNotFoundError("no kubectl: run `make setup`") from None
        return exe


def _hostpath_pvs_in(directory: Path) -> set[Path]:
    out: set[Path] = set()
    if not directory.is_dir():
        return out
    # Another session may be removing this directory at the same time: walk defensively.
    with contextlib.suppress(OSError):
        for f in directory.rglob("*"):
            with contextlib.suppress(OSError):
                if f.is_file():
                    out |= {Path(m.decode()) for m in _HOSTPATH_RE.findall(f.read_bytes())}
    return out


def _body(manifest: dict[str, Any]) -> Any:
    """The client's typed signatures want V1 models; it serialises a plain dict as is."""
    return manifest


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _exists(read: Callable[[], object]) -> bool:
    try:
        read()
    except k8s.ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def cleanup_stale(shm_root: Path | None = None) -> list[Path]:
    """Reap planes whose owning process is gone (a killed test session). Detached planes
    (`dev up`) have no owner and are left to `dev down`. Returns the workdirs reaped."""
    reaped = []
    for shm in sorted((shm_root or SHM_ROOT).glob(f"{SHM_PREFIX}*")):
        state_file = shm / STATE_FILE
        try:
            state = json.loads(state_file.read_text())
        except (OSError, ValueError):
            # Killed before its first state write (milliseconds after mkdtemp): nothing runs.
            if time.time() - shm.stat().st_mtime > 600:
                shutil.rmtree(shm, ignore_errors=True)
            continue
        owner = state.get("owner")
        if owner is None or procs.start_time(int(owner["pid"])) == int(owner["start"]):
            continue
        plane = Plane._from_state(state)
        plane.stop()
        reaped.append(plane.workdir)
    return reaped
