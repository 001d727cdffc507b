"""Cluster tier: a user replaces the CA in the CA Secret of a running TLS cluster, and the
operator carries it in without refusing a client (mongocluster/decide/tls_ca.py): members trust
a bundle of the old and the new CA (a restart each), their certificates are reissued from the new CA
(rotateCertificates, no restart), the old CA leaves the bundle (a restart each).

Real: the apiserver (the Secrets, status.tls.caRotation as the CRD keeps it, Events),
controller-manager (the StatefulSet's pods replaced in the restarts), the operator process and its
pymongo administration over TLS with its client certificate. What stands in for mongod: the wire
model, each member presenting the certificate its pod mounts and asking clients for one it
verifies against the pod's ``ca.crt``, both read when its pod starts and again on
rotateCertificates (as mongod reads its files); a handshake either side refuses is recorded.
Beside the operator, a client that starts over and over through the change with what the client
Secret holds at its start (as a benchmark client mounts it) dials every member.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
import trustme
from cryptography import x509
from kubernetes import client as k8s
from pymongo.errors import PyMongoError

from localplane.keyfiles import (
    ca_from_pods,
    certificate_from_pods,
    keyfile_from_pods,
    pod_start_from_pods,
)
from localplane.mongomodel import MongoModel
from localplane.objects import GROUP, VERSION, apply, ca_secret, get
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

CA_SECRET = "change-ca"
MEMBERS = 3
PEM_END = "-----END CERTIFICATE-----"


@pytest.fixture
def model(kube_api: k8s.ApiClient) -> Iterator[MongoModel]:
    with MongoModel(
        keyfile=keyfile_from_pods(kube_api),
        catch_up_seconds=0.1,
        tls=certificate_from_pods(kube_api),
        tls_ca=ca_from_pods(kube_api),
        started=pod_start_from_pods(kube_api),
    ) as m:
        yield m


def secret_values(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, str]:
    data = k8s.CoreV1Api(api).read_namespaced_secret(name, namespace).data or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def subject_of(pem: str) -> str:
    return x509.load_pem_x509_certificate(pem.encode()).subject.rfc4514_string()


def issuer_of(pem: str) -> str:
    return x509.load_pem_x509_certificate(pem.encode()).issuer.rfc4514_string()


def cas_in(bundle: str) -> tuple[str, ...]:
    """The subjects of the CAs a ``ca.crt`` holds, in order."""
    return tuple(subject_of(p + PEM_END) for p in bundle.split(PEM_END) if p.strip())


class StartingClients:
    """A client started again and again, each time with the client Secret as it is then (CA and
    certificate, as a benchmark client's pod mounts it), dialling every member; what failed."""

    def __init__(self, api: k8s.ApiClient, namespace: str, addresses: list[str], folder: Path):
        self.api, self.namespace, self.addresses, self.folder = api, namespace, addresses, folder
        self.dials = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> StartingClients:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        ca, pem = self.folder / "client-ca.crt", self.folder / "client.pem"
        while not self._stop.is_set():
            values = secret_values(self.api, self.namespace, "cc-client-tls")
            ca.write_text(values["ca.crt"])
            pem.write_text(values["tls-combined.pem"])
            for address in self.addresses:
                client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
                    f"mongodb://{address}/?directConnection=true",
                    serverSelectionTimeoutMS=3000,
                    tls=True,
                    tlsCAFile=str(ca),
                    tlsCertificateKeyFile=str(pem),
                    tlsAllowInvalidHostnames=True,  # the model listens on 127.0.0.1
                )
                try:
                    client.admin.command("hello")
                    self.dials += 1
                except PyMongoError as exc:
                    self.failures.append(f"{address}: {exc}")
                finally:
                    client.close()
            self._stop.wait(0.3)


def dial(address: str, trust: Path, present: Path | None = None) -> bool:
    """Whether a new client trusting the CAs of `trust` only, presenting the certificate of
    `present` (or none), gets an answer from the member."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        f"mongodb://{address}/?directConnection=true",
        serverSelectionTimeoutMS=3000,
        tls=True,
        tlsCAFile=str(trust),
        tlsAllowInvalidHostnames=True,
        **({"tlsCertificateKeyFile": str(present)} if present else {}),
    )
    try:
        client.admin.command("hello")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


def files(ca: trustme.CA, folder: Path, name: str) -> tuple[Path, Path]:
    """(the CA's certificate, a client certificate and key it signed) as files."""
    authority, leaf = folder / f"{name}-ca.crt", folder / f"{name}-client.pem"
    ca.cert_pem.write_to_path(str(authority))
    ca.issue_cert("client.example").private_key_and_cert_chain_pem.write_to_path(str(leaf))
    return authority, leaf


@pytest.mark.timeout(300)
def test_a_new_ca_replaces_the_old_through_a_trust_bundle_with_no_client_refused(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    old_ca = trustme.CA(organization_name="mongobench old CA")
    new_ca = trustme.CA(organization_name="mongobench new CA")
    hosts = [f"cc-rs0-{i}.cc-rs0-hl.{namespace}.svc.cluster.local:27017" for i in range(MEMBERS)]
    addresses = [model.member(h) for h in hosts]
    apply(plane, namespace, ca_secret(CA_SECRET, old_ca))
    log = tmp_path / "operator.log"
    operator = start_operator(
        plane.kubeconfig,
        [namespace],
        log,
        MONGOBENCH_HOST_MAP=",".join(f"{k}={v}" for k, v in model.host_map.items()),
        # The kubelet's Secret-volume delay (tls_renewal): the model reads the Secret itself.
        MONGOBENCH_TLS_PROPAGATION_SECONDS="1",
    )
    core = k8s.CoreV1Api(kube_api)
    old_subject, new_subject = (
        subject_of(old_ca.cert_pem.bytes().decode()),
        subject_of(new_ca.cert_pem.bytes().decode()),
    )
    # (caRotation phase, CAs the members' ca.crt holds, issuer of their leaf, cluster phase)
    seen: list[tuple[str | None, tuple[str, ...], str, str | None]] = []

    def observe() -> dict[str, Any]:
        status = get(kube_api, namespace, "mongoclusters", "cc").get("status") or {}
        if status.get("phase") != "Ready" and not seen:
            return status  # the certificates may not be issued yet
        member = secret_values(kube_api, namespace, "cc-rs0-tls")
        now = (
            ((status.get("tls") or {}).get("caRotation") or {}).get("phase"),
            cas_in(member["ca.crt"]),
            issuer_of(member["tls.crt"]),
            status.get("phase"),
        )
        if not seen or seen[-1] != now:
            seen.append(now)
        return status

    try:
        apply(plane, namespace, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "MongoCluster",
            "metadata": {"name": "cc"},
            "spec": {"version": "7.0.14", "topology": {"replicaSet": {"members": MEMBERS}},
                     "tls": {"enabled": True, "caSecretName": CA_SECRET}},
        })  # fmt: skip
        wait_until(lambda: observe().get("phase") == "Ready", timeout=120, what="cc Ready")
        pods_before = {h: core.read_namespaced_pod(h.split(".")[0], namespace).metadata.uid
                       for h in hosts}  # fmt: skip
        old_trust, old_client = files(old_ca, tmp_path, "old")
        new_trust, new_client = files(new_ca, tmp_path, "new")
        assert all(dial(a, old_trust, old_client) for a in addresses)
        before = observe()
        assert seen[-1][1:3] == ((old_subject,), old_subject), seen
        # Labelled (ca_secret): the user's replacement below wakes the cluster by its event.
        (watched,) = [c for c in before["conditions"] if c["type"] == "CASecretWatched"]
        assert watched["status"] == "True", watched
        seen.clear()
        model.refused.clear()
        with StartingClients(kube_api, namespace, addresses, tmp_path) as clients:
            apply(plane, namespace, ca_secret(CA_SECRET, new_ca))  # the user's one action

            def completed() -> dict[str, Any] | None:
                if clients.failures or model.refused:  # a refusal fails the test at once
                    pytest.fail(f"refused: {clients.failures[:3]} {model.refused[:3]} {seen}")
                s = observe()
                rotation = s.get("tls", {}).get("caRotation", {})
                return s if rotation.get("phase") == "Completed" and s["phase"] == "Ready" else None

            status = wait_until(
                completed,
                timeout=240,
                interval=0.3,
                what="the CA change Completed",
            )
            wait_until(lambda: clients.dials >= 2 * MEMBERS, timeout=30, what="clients after")
        pods_after = {h: core.read_namespaced_pod(h.split(".")[0], namespace).metadata.uid
                      for h in hosts}  # fmt: skip
        refused_before = len(model.refused)
        served_by_new = [dial(a, new_trust) for a in addresses]
        served_by_old = [dial(a, old_trust) for a in addresses]
        # Presenting a certificate: the members trust the new CA alone now.
        new_accepted = [dial(a, new_trust, new_client) for a in addresses]
        old_accepted = [dial(a, new_trust, old_client) for a in addresses]
        events = [
            e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == "cc"
        ]
        client_secret = secret_values(kube_api, namespace, "cc-client-tls")
    finally:
        operator.stop()

    # The sequence tls_ca documents, in order: the bundle (new CA first, the old kept), the
    # leaves from the new CA with the bundle kept, then the new CA alone.
    phases = list(dict.fromkeys(p for p, _, _, _ in seen if p))
    assert phases == ["Bundling", "Reissuing", "Pruning", "Completed"], seen
    # (What the Secret held when the change began was seen before it: the old CA alone.)
    states = [s for s in dict.fromkeys((cas, i) for _, cas, i, _ in seen)
              if s != ((old_subject,), old_subject)]  # fmt: skip
    assert states == [
        ((new_subject, old_subject), old_subject),
        ((new_subject, old_subject), new_subject),
        ((new_subject,), new_subject),
    ], seen
    assert {phase for _, _, _, phase in seen} <= {"Ready", "Degraded"}, seen
    rotation = status["tls"]["caRotation"]
    assert rotation["startedAt"] <= rotation["completedAt"]
    assert "caRotation" not in (before.get("tls") or {})  # a cluster that never changed CA
    said = [e.message or "" for e in sorted(
        (e for e in events if e.reason == "CARotating"),
        key=lambda e: e.first_timestamp or e.event_time,
    )]  # fmt: skip
    assert [m.split(":")[0] for m in said] == ["Bundling", "Reissuing", "Pruning", "Completed"]

    # Members restarted (onto the bundle, onto the new CA alone: new pods) and took the
    # reissued certificates in by rotateCertificates; they serve the new CA's now.
    assert all(pods_after[h] != pods_before[h] for h in hosts)
    assert sorted(set(model.rotations)) == sorted(hosts)
    assert served_by_new == [True] * MEMBERS and served_by_old == [False] * MEMBERS
    assert issuer_of(client_secret["tls.crt"]) == new_subject
    assert cas_in(client_secret["ca.crt"]) == (new_subject,)
    assert new_accepted == [True] * MEMBERS and old_accepted == [False] * MEMBERS

    # No client was refused at any moment: not the operator (no MongoDB error said), not a
    # client started with what the client Secret held, not a handshake either side refused.
    assert clients.dials > 0 and clients.failures == [], clients.failures[:5]
    assert model.refused[:refused_before] == [], model.refused[:5]
    assert not [e for e in events if e.type == "Warning"], [e.message for e in events]
    assert "PRIVATE KEY" not in log.read_text()
