"""Cluster tier: a running cluster rolled onto TLS step by step, under a BenchmarkRun, with no
failed operation; and the wire model's TLS modes it rests on (protocol tier).

Real: the apiserver (the spec change, status.tls as the CRD keeps it, Events), controller-manager
(the StatefulSet's pods replaced in the rolling restarts), the operator process and its pymongo
administration, the run's client pods executed by the harness kubelet (runner and YCSB, reading
the connection URI from the Secret at their start, as on a cluster), FerretDB as the data path
listening plain and with TLS over one database. What stands in for mongod: the wire model, each
member answering as the --tlsMode its pod was started with (read once per pod start, as mongod
reads its options): plain only without TLS, both under allowTLS and preferTLS, TLS only under
requireTLS.

How "no failed operation" is shown, as the credential rotation's test shows it: every step of the
run has zero errors per operation, the run spans the switch (started before the roll, ended
after the URI switched), the steps that started before the URI switched dialled plain and the
later ones TLS (what the harness kubelet handed each client), and the last step (requireTLS)
came only after no plain client ran. After the roll the members refuse plain connections.
"""

from __future__ import annotations

import base64
import datetime
import itertools
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
import trustme
from cryptography import x509
from kubernetes import client as k8s
from pymongo.errors import PyMongoError

from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.keyfiles import (
    ca_from_pods,
    certificate_from_pods,
    cluster_auth_from_pods,
    keyfile_from_pods,
    tls_mode_from_pods,
)
from localplane.mongomodel import MongoModel
from localplane.objects import GROUP, VERSION, apply, ca_secret, get
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build.certificates import issue
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.tls import certificate_requests

CA_SECRET = "roll-ca"
MEMBERS = 3


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="mongobench roll CA")


def _files(ca: trustme.CA, folder: Path) -> tuple[Path, Path, Path]:
    served = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, authority = folder / "srv.crt", folder / "srv.key", folder / "ca.crt"
    served.cert_chain_pems[0].write_to_path(str(cert))
    served.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(authority))
    return cert, key, authority


@pytest.fixture
def ferretdb(ca: trustme.CA, tmp_path: Path) -> Iterator[FerretDB]:
    """One database, a plain and a TLS listener: clients before and after the switch share it."""
    cert, key, _ = _files(ca, tmp_path)
    with running_ferretdb(tmp_path / "db", tls=(cert, key), plain_too=True) as server:
        yield server


@pytest.fixture
def model(kube_api: k8s.ApiClient) -> Iterator[MongoModel]:
    with MongoModel(
        keyfile=keyfile_from_pods(kube_api),
        catch_up_seconds=0.1,
        tls=certificate_from_pods(kube_api),
        tls_mode=tls_mode_from_pods(kube_api),
        tls_ca=ca_from_pods(kube_api),
        cluster_auth=cluster_auth_from_pods(kube_api),
    ) as m:
        yield m


class Dialled:
    """What the harness kubelet handed each client: (when, whether its URI asks for TLS)."""

    def __init__(self, ferretdb: FerretDB) -> None:
        self.seen: list[tuple[float, bool]] = []
        self._plain = rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
        self._tls = rewrite_hosts(f"{ferretdb.host}:{ferretdb.tls_port}")

    def __call__(self, uri: str) -> str:
        tls = "tls=true" in uri
        self.seen.append((time.time(), tls))
        return self._tls(uri) if tls else self._plain(uri)


@pytest.fixture
def dialled(ferretdb: FerretDB) -> Dialled:
    return Dialled(ferretdb)


@pytest.fixture
def executor(plane: Plane, namespace: str, dialled: Dialled) -> Iterator[PodExecutor]:
    with pod_executor(plane, namespace, uri_rewrite=dialled) as ex:
        yield ex


def cluster(tls: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"version": "7.0.14", "topology": {"replicaSet": {"members": MEMBERS}}}
    if tls is not None:
        spec["tls"] = tls
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": "tr"},
        "spec": spec,
    }


def start(plane: Plane, namespace: str, model: MongoModel, log: Path) -> OperatorProcess:
    hosts = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    return start_operator(plane.kubeconfig, [namespace], log, MONGOBENCH_HOST_MAP=hosts)


def epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def dial(address: str, **tls: Any) -> bool:
    """Whether a new connection to `address` answers hello (plain, or with `tls` options)."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        f"mongodb://{address}/?directConnection=true", serverSelectionTimeoutMS=3000, **tls
    )
    try:
        client.admin.command("hello")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


@pytest.mark.cluster
@pytest.mark.timeout(900)  # a roll of three restarts under a run of JVM clients, 2 shared cores
def test_a_running_cluster_rolls_onto_tls_under_a_run_with_no_failed_operation(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    ca: trustme.CA,
    model: MongoModel,
    executor: PodExecutor,
    dialled: Dialled,
    tmp_path: Path,
) -> None:
    hosts = [f"tr-rs0-{i}.tr-rs0-hl.{namespace}.svc.cluster.local:27017" for i in range(MEMBERS)]
    for host in hosts:
        model.member(host)
    apply(plane, namespace, ca_secret(CA_SECRET, ca))
    log = tmp_path / "operator.log"
    operator = start(plane, namespace, model, log)
    core = k8s.CoreV1Api(kube_api)
    seen: list[tuple[str | None, str | None, str | None]] = []  # (phase, tls mode, tls phase)

    def observe() -> dict[str, Any]:
        status = get(kube_api, namespace, "mongoclusters", "tr").get("status") or {}
        tls = status.get("tls") or {}
        now = (status.get("phase"), tls.get("mode"), tls.get("phase"))
        if not seen or seen[-1] != now:
            seen.append(now)
        return status

    try:
        apply(plane, namespace, cluster(None))
        wait_until(lambda: observe().get("phase") == "Ready", timeout=120, what="tr Ready")
        plain_before = [dial(model.host_map[h]) for h in hosts]
        run = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchmarkRun",
            "metadata": {"name": "spans-roll"},
            "spec": {
                "clusterRef": {"name": "tr"},
                "workloads": [{"name": w} for w in "ab"],
                "load": {"recordCount": 200, "threads": 1},
                # Bounded by operations: 15 s of measured phase per step at most, whatever a
                # loaded machine's JVM and first TLS handshake take before it.
                "run": {"operationCount": 300, "threads": 1, "targetOpsPerSecond": 20},
                "repetitions": 1,
                "clients": {"parallelism": 1},
                "validity": LENIENT_VALIDITY,
            },
        }
        apply(plane, namespace, run)

        def last_step(pod: dict[str, Any]) -> bool:  # its runner's `--phase run --workload b`
            args = [a for c in pod["spec"]["containers"] for a in c.get("args") or []]
            said = dict(itertools.pairwise(args))
            return said.get("--phase") == "run" and said.get("--workload") == "b"

        def switched() -> bool:
            # The status's clientsSince is recorded before the Secret is written (a crash
            # resumes from the record): the URI itself says when a client would read TLS.
            secret = core.read_namespaced_secret("tr-connection", namespace)
            uris = (base64.b64decode(v).decode() for v in (secret.data or {}).values())
            return any("tls=true" in u for u in uris)

        # The last step's client starts after the URI switched, however fast the other steps
        # go on this machine (as a client whose image pull lasted that long): at least one
        # client dials TLS, and requireTLS waits for the plain ones before it.
        executor.hold_pods(last_step, switched)

        def load_running() -> bool:
            status = get(kube_api, namespace, "benchmarkruns", "spans-roll").get("status") or {}
            steps = {s["kind"]: s for s in status.get("steps") or []}
            return steps.get("load", {}).get("phase") == "Running"

        wait_until(load_running, timeout=180, interval=0.2, what="the load step running")
        pods_before = {p.metadata.name: p.metadata.uid for p in _pods(core, namespace)}
        seen.clear()  # from the roll on
        apply(plane, namespace, cluster({"enabled": True, "caSecretName": CA_SECRET}))
        rolled = wait_until(
            lambda: (
                (s := observe()).get("tls", {}).get("phase") == "Completed"
                and s.get("phase") == "Ready"
                and s
            ),
            timeout=600,
            interval=0.5,
            what="the roll onto requireTLS Completed",
        )
        done = wait_until(
            lambda: (
                (o := get(kube_api, namespace, "benchmarkruns", "spans-roll"))
                .get("status", {})
                .get("phase")
                in ("Succeeded", "Failed")
                and o
            ),
            timeout=600,
            interval=0.5,
            what="the run ended",
        )
        pods_after = {p.metadata.name: p.metadata.uid for p in _pods(core, namespace)}
        _, _, authority = _files(ca, tmp_path)
        plain_after = [dial(model.host_map[h]) for h in hosts]
        tls_after = [dial(model.host_map[h], tls=True, tlsCAFile=str(authority),
                          tlsAllowInvalidHostnames=True) for h in hosts]  # fmt: skip
        events = [
            e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == "tr"
        ]
        sts = k8s.AppsV1Api(kube_api).read_namespaced_stateful_set("tr-rs0", namespace)
    finally:
        operator.stop()

    status = done["status"]
    steps = status.get("steps") or []
    failed = [f"{r.pod}: {r.message}\n{r.output_tail[-3000:]}" for r in executor.runs
              if r.exit_code != 0]  # fmt: skip
    for said in failed:
        print(said)  # the client's own words, in the test's output
    assert status["phase"] == "Succeeded", ([s.get("message") for s in steps], failed)
    for step in (s for s in steps if s["kind"] in ("load", "run")):
        for name, op in step["result"]["operations"].items():
            assert op["errors"] == 0, (step["label"], name, op)

    # The documented sequence, one mode per rolling restart, recorded as it went.
    modes = [mode for _, mode, _ in seen if mode]
    assert list(dict.fromkeys(modes)) == ["allowTLS", "preferTLS", "requireTLS"], seen
    assert {phase for phase, _, _ in seen} <= {"Ready", "Degraded"}, seen
    tls = rolled["tls"]
    assert tls["mode"] == "requireTLS" and tls["phase"] == "Completed"
    rolling = [e for e in events if e.reason == "TLSModeRolling"]
    ordered = sorted(rolling, key=lambda e: e.first_timestamp or e.event_time)
    said = [next(m for m in ("allowTLS", "preferTLS", "requireTLS") if m in e.message or "")
            for e in ordered]  # fmt: skip
    assert said == ["allowTLS", "preferTLS", "requireTLS"], [e.message for e in ordered]
    assert [e.reason for e in events].count("TLSRolled") == 1
    # Every member restarted (three times: the last pods are new ones) and runs requireTLS.
    assert set(pods_after) == set(pods_before)
    assert all(pods_after[p] != pods_before[p] for p in pods_before)
    mongod = next(c for c in sts.spec.template.spec.containers if c.name == "mongod")
    assert mongod.args[mongod.args.index("--tlsMode") + 1] == "requireTLS"

    # The run started before the roll and ran on after the URI switched (its last step is held
    # until then); its clients dialled plain before the switch and TLS after it. (Whether it
    # outlasts requireTLS's restarts too is the machine's speed: CI once saw it end 4 s before.)
    started, ended = epoch(status["startTime"]), epoch(status["completionTime"])
    switched = epoch(tls["clientsSince"])
    assert started <= epoch(tls["startedAt"]) and switched <= ended
    assert any(not t for _, t in dialled.seen) and any(t for _, t in dialled.seen), dialled.seen
    assert all(t for at, t in dialled.seen if at > switched + 1), dialled.seen

    # Plain accepted before; after the roll refused by every member, TLS accepted.
    assert plain_before == [True] * MEMBERS
    assert plain_after == [False] * MEMBERS and tls_after == [True] * MEMBERS
    assert {h for h, why in model.refused if "plain" in why} >= set(hosts)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_a_replaced_certificate_is_rotated_into_every_member_without_a_restart(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, ca: trustme.CA, model: MongoModel,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Nothing ticks a Ready cluster: the Secret's own event wakes it (the cluster follows its
    certificate Secrets), and the sync queued for when the kubelet has written the files sends
    rotateCertificates to every member (the kubelet's delay shortened for the test: the wire
    model reads the Secret itself, there are no files)."""
    hosts = [f"tw-rs0-{i}.tw-rs0-hl.{namespace}.svc.cluster.local:27017" for i in range(MEMBERS)]
    for host in hosts:
        model.member(host)
    apply(plane, namespace, ca_secret(CA_SECRET, ca))
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    operator = start_operator(
        plane.kubeconfig,
        [namespace],
        tmp_path / "operator.log",
        MONGOBENCH_HOST_MAP=host_map,
        MONGOBENCH_TLS_PROPAGATION_SECONDS="3",
    )
    core = k8s.CoreV1Api(kube_api)
    manifest = cluster({"enabled": True, "caSecretName": CA_SECRET})
    manifest["metadata"]["name"] = "tw"
    try:
        apply(plane, namespace, manifest)
        wait_until(
            lambda: (
                (get(kube_api, namespace, "mongoclusters", "tw").get("status") or {}).get("phase")
                == "Ready"
            ),
            timeout=120,
            what="tw Ready",
        )
        _, _, authority = _files(ca, tmp_path)
        before = _served_serials(model, hosts, authority)
        pods = {p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(namespace).items}
        assert model.rotations == []

        # A new certificate for the members, from the same CA (what a renewal writes).
        spec = MongoClusterSpec.parse(manifest["spec"])
        request = next(
            r for r in certificate_requests(cluster_layout("tw", namespace, spec))
            if r.secret == "tw-rs0-tls"
        )  # fmt: skip
        ca_values = {"tls.crt": ca.cert_pem.bytes().decode(),
                     "tls.key": ca.private_key_pem.bytes().decode()}  # fmt: skip
        values = issue(ca_values, CA_SECRET, request, datetime.datetime.now(datetime.UTC))
        data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
        replaced = time.monotonic()
        core.patch_namespaced_secret("tw-rs0-tls", namespace, {"data": data})
        wait_until(
            lambda: set(model.rotations) >= set(hosts),
            timeout=60,
            interval=0.2,
            what="rotateCertificates on every member",
        )
        took = time.monotonic() - replaced
        after = _served_serials(model, hosts, authority)
        pods_after = {
            p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(namespace).items
        }
        events = [
            e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == "tw"
        ]
        kept = core.read_namespaced_secret("tw-rs0-tls", namespace).data["tls.crt"]
    finally:
        operator.stop()

    new_serial = x509.load_pem_x509_certificate(values["tls.crt"].encode()).serial_number
    assert sorted(model.rotations) == sorted(hosts)  # once each
    assert after == [new_serial] * MEMBERS and before != after
    assert pods_after == pods  # no member restarted
    assert kept == data["tls.crt"]  # the operator kept the certificate it was given
    assert 3 <= took < 45, took  # after the kubelet's delay, woken, not polled for
    rotated = [e for e in events if e.reason == "CertificatesRotated"]
    assert rotated and "rotate" in (rotated[0].message or "")


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_x509_members_are_ready_with_tls_required_and_the_keyfile_refused(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, ca: trustme.CA, model: MongoModel,
    tmp_path: Path,
) -> None:  # fmt: skip
    """memberAuth x509: every member runs --clusterAuthMode x509 (the model then refuses the
    keyfile) and the operator bootstraps as __system by presenting its client certificate,
    whose O and OU are the members' (the model verifies it against the member's ca.crt). The CA
    Secret lacks the watch label: the certificates come from it, CASecretWatched says False."""
    hosts = [f"tx-rs0-{i}.tx-rs0-hl.{namespace}.svc.cluster.local:27017" for i in range(MEMBERS)]
    for host in hosts:
        model.member(host)
    # A CA Secret as a user creates it, without the watch label: used all the same.
    apply(plane, namespace, ca_secret(CA_SECRET, ca, watched=False))
    operator = start(plane, namespace, model, tmp_path / "operator.log")
    manifest = cluster({"enabled": True, "caSecretName": CA_SECRET, "memberAuth": "x509"})
    manifest["metadata"]["name"] = "tx"
    try:
        apply(plane, namespace, manifest)
        status = wait_until(
            lambda: (
                (s := get(kube_api, namespace, "mongoclusters", "tx").get("status") or {}).get(
                    "phase"
                )
                in ("Ready", "Failed")
                and s
            ),
            timeout=120,
            what="tx Ready",
        )
        core = k8s.CoreV1Api(kube_api)
        keyfile = base64.b64decode(
            core.read_namespaced_secret("tx-keyfile", namespace).data["keyfile"]
        ).decode()
        sts = k8s.AppsV1Api(kube_api).read_namespaced_stateful_set("tx-rs0", namespace)
    finally:
        operator.stop()

    assert status["phase"] == "Ready", status
    (watched,) = [c for c in status["conditions"] if c["type"] == "CASecretWatched"]
    assert (watched["status"], watched["reason"]) == ("False", "LabelMissing"), watched
    mongod = next(c for c in sts.spec.template.spec.containers if c.name == "mongod")
    assert mongod.args[mongod.args.index("--clusterAuthMode") + 1] == "x509"
    assert mongod.args[mongod.args.index("--tlsMode") + 1] == "requireTLS"
    # The operator logged in by certificate (the keyfile could not have let it in) ...
    assert model.x509_logins and set(model.x509_logins) <= set(hosts)
    # ... and the keyfile is refused by every member, a certificate of another O/OU too.
    _, _, authority = _files(ca, tmp_path)
    tls = {"tls": True, "tlsCAFile": str(authority), "tlsAllowInvalidHostnames": True}
    for host in hosts:
        assert not _logs_in(model.host_map[host], username="__system", password=keyfile,
                            authSource="local", authMechanism="SCRAM-SHA-256", **tls)  # fmt: skip
    stranger = ca.issue_cert("stranger.example", organization_name="elsewhere",
                             organization_unit_name="tx")  # fmt: skip
    pem = tmp_path / "stranger.pem"
    pem.write_bytes(stranger.private_key_pem.bytes() + stranger.cert_chain_pems[0].bytes())
    assert not _logs_in(model.host_map[hosts[0]], authMechanism="MONGODB-X509",
                        tlsCertificateKeyFile=str(pem), **tls)  # fmt: skip


def _logs_in(address: str, **options: Any) -> bool:
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        f"mongodb://{address}/?directConnection=true", serverSelectionTimeoutMS=5000, **options
    )
    try:
        client.admin.command("ping")
        return True
    except pymongo.errors.OperationFailure as exc:
        assert exc.code == 18, exc  # AuthenticationFailed, nothing else
        return False
    finally:
        client.close()


def _served_serials(model: MongoModel, hosts: list[str], authority: Path) -> list[int]:
    """The serial number of the certificate each member presents in a TLS handshake."""
    context = ssl.create_default_context(cafile=str(authority))
    context.check_hostname = False
    serials = []
    for host in hosts:
        address, port = model.host_map[host].rsplit(":", 1)
        with (
            socket.create_connection((address, int(port)), timeout=5) as raw,
            context.wrap_socket(raw) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        serials.append(x509.load_der_x509_certificate(der).serial_number)
    return serials


def _pods(core: Any, namespace: str) -> list[Any]:
    listed = core.list_namespaced_pod(namespace, label_selector="mongobench.io/cluster=tr").items
    return [p for p in listed if p.metadata.name.startswith("tr-rs0-")]


# --- the wire model's modes (protocol tier: pymongo over TCP, no plane) ---------------------


@pytest.mark.protocol
@pytest.mark.parametrize(
    ("mode", "plain", "tls"),
    [
        ("disabled", True, False),
        ("allowTLS", True, True),
        ("preferTLS", True, True),
        ("requireTLS", False, True),
    ],
)
def test_a_modelled_member_answers_as_its_tls_mode(
    ca: trustme.CA, tmp_path: Path, mode: str, plain: bool, tls: bool
) -> None:
    served = ca.issue_cert("127.0.0.1", "localhost")
    pem = served.private_key_pem.bytes().decode() + served.cert_chain_pems[0].bytes().decode()
    _, _, authority = _files(ca, tmp_path)
    with MongoModel(keyfile="k", tls=lambda _: pem, tls_mode=lambda _: mode) as model:
        address = model.member("m-0:27017")
        assert dial(address) is plain
        assert dial(address, tls=True, tlsCAFile=str(authority)) is tls
    assert bool(model.plain_connections) is plain
    assert bool(model.tls_connections) is tls
