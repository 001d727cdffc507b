"""Cluster tier: TLS end to end from a CA Secret, and TLS as an experiment dimension.

cert-manager's controller is not built here (see docs/operations/tls.md), so the CA-Secret
path is the one proved on the plane: the operator issues member and client certificates from the
user's CA into Secrets the cluster owns. Real: the apiserver, controller-manager, the operator
process, its pymongo administration over TLS, the benchmark Jobs executed by the harness
kubelet (runner and YCSB for real, trusting the CA the Job mounts), FerretDB listening with TLS
as the data path. The wire model stands in for mongod; with ``tls`` its peers accept TLS only,
presenting the certificate the member's pod mounts (so Ready proves the operator dialled every
member over TLS and trusted the certificates it issued).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
import trustme
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.keyfiles import certificate_from_pods, keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.objects import GROUP, VERSION, apply, ca_secret, get
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.tools import cert_manager_crds

pytestmark = pytest.mark.cluster

CA_SECRET = "bench-ca"
RUN: dict[str, Any] = {
    "workloads": [{"name": "a"}],
    "load": {"recordCount": 200, "threads": 2},
    "run": {"operationCount": 200, "threads": 2, "statusIntervalSeconds": 1},
    "clients": {"parallelism": 1},
    "validity": LENIENT_VALIDITY,
}


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="mongobench test CA")


@pytest.fixture
def ferretdbs(ca: trustme.CA, tmp_path: Path) -> Iterator[tuple[FerretDB, FerretDB]]:
    """(plain, TLS) data paths; the TLS one presents a certificate of the cluster's CA."""
    served = ca.issue_cert("127.0.0.1", "localhost")
    cert, key = tmp_path / "ferretdb.crt", tmp_path / "ferretdb.key"
    served.cert_chain_pems[0].write_to_path(str(cert))
    served.private_key_pem.write_to_path(str(key))
    with (
        running_ferretdb(tmp_path / "plain") as plain,
        running_ferretdb(tmp_path / "tls", tls=(cert, key)) as secure,
    ):
        yield plain, secure


@pytest.fixture
def models(kube_api: k8s.ApiClient) -> Iterator[tuple[MongoModel, MongoModel]]:
    """(plain, TLS) wire models: members of clusters without and with TLS."""
    keyfile = keyfile_from_pods(kube_api)
    with (
        MongoModel(keyfile=keyfile, catch_up_seconds=0.1) as plain,
        MongoModel(
            keyfile=keyfile, catch_up_seconds=0.1, tls=certificate_from_pods(kube_api)
        ) as tls,
    ):
        yield plain, tls


@pytest.fixture
def executor(
    plane: Plane, namespace: str, ferretdbs: tuple[FerretDB, FerretDB]
) -> Iterator[PodExecutor]:
    plain, secure = ferretdbs
    to_plain = rewrite_hosts(f"{plain.host}:{plain.port}")
    to_secure = rewrite_hosts(f"{secure.host}:{secure.port}")

    def rewrite(uri: str) -> str:  # the URI keeps tls=true: the client dials FerretDB with TLS
        return to_secure(uri) if "tls=true" in uri else to_plain(uri)

    with pod_executor(plane, namespace, uri_rewrite=rewrite) as ex:
        yield ex


def members(namespace: str, rs: str, n: int) -> list[str]:
    return [f"{rs}-{i}.{rs}-hl.{namespace}.svc.cluster.local:27017" for i in range(n)]


def start(
    plane: Plane, namespace: str, models: tuple[MongoModel, MongoModel], log: Path, prometheus: str
) -> OperatorProcess:
    hosts = {**models[0].host_map, **models[1].host_map}
    return start_operator(
        plane.kubeconfig,
        [namespace],
        log,
        MONGOBENCH_HOST_MAP=",".join(f"{k}={v}" for k, v in hosts.items()),
        MONGOBENCH_PROMETHEUS_URL=prometheus,
        MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1",
    )


def phase_is(api: k8s.ApiClient, namespace: str, plural: str, name: str, *phases: str) -> Any:
    def check() -> dict[str, Any] | None:
        obj = get(api, namespace, plural, name)
        return obj if (obj.get("status") or {}).get("phase") in phases else None

    return check


def wait_phase(
    api: k8s.ApiClient, namespace: str, plural: str, name: str, *phases: str, timeout: float
) -> dict[str, Any]:
    """The object once in one of `phases`; on a timeout, the test fails showing its status."""
    try:
        found = wait_until(
            phase_is(api, namespace, plural, name, *phases), timeout=timeout, interval=0.5
        )
    except TimeoutError:
        status = get(api, namespace, plural, name).get("status")
        pytest.fail(f"{plural}/{name} not {phases} in {timeout}s: {json.dumps(status)[:3000]}")
    return dict(found)


def private_key_lines(api: k8s.ApiClient, namespace: str, ca: trustme.CA) -> list[str]:
    """A line from the middle of every private key this test and the operator made."""
    keys = [ca.private_key_pem.bytes().decode()]
    for secret in k8s.CoreV1Api(api).list_namespaced_secret(namespace).items:
        if secret.type == "kubernetes.io/tls" and "tls.key" in (secret.data or {}):
            keys.append(base64.b64decode(secret.data["tls.key"]).decode())
    return [k.splitlines()[2] for k in keys]


@pytest.mark.timeout(900)  # a load and a run of JVM clients on a shared 2-core machine
def test_a_tls_cluster_is_ready_and_a_run_against_it_succeeds_with_tls_clients(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    ca: trustme.CA,
    models: tuple[MongoModel, MongoModel],
    ferretdbs: tuple[FerretDB, FerretDB],
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    tls_model = models[1]
    hosts = members(namespace, "tc-rs0", 3)
    for host in hosts:
        tls_model.member(host)
    apply(plane, namespace, ca_secret(CA_SECRET, ca))
    log = tmp_path / "operator.log"
    operator = start(plane, namespace, models, log, prometheus)
    try:
        spec = {
            "version": "7.0.14",
            "topology": {"replicaSet": {"members": 3}},
            "tls": {"enabled": True, "caSecretName": CA_SECRET},
        }
        apply(plane, namespace, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MongoCluster",
                                 "metadata": {"name": "tc"}, "spec": spec})  # fmt: skip
        cluster = wait_phase(
            kube_api, namespace, "mongoclusters", "tc", "Ready", "Failed", timeout=120
        )
        assert cluster["status"]["phase"] == "Ready", cluster["status"]

        # Every member was dialled over TLS (its peer accepts nothing else) and wired.
        assert set(tls_model.tls_connections) == set(hosts)
        apps = k8s.AppsV1Api(kube_api)
        pod = apps.read_namespaced_stateful_set("tc-rs0", namespace).spec.template.spec
        mongod = next(c for c in pod.containers if c.name == "mongod")
        args = mongod.args
        assert args[args.index("--tlsMode") + 1] == "requireTLS"
        assert (
            args[args.index("--tlsCertificateKeyFile") + 1] == "/etc/mongodb-tls/tls-combined.pem"
        )
        assert args[args.index("--tlsCAFile") + 1] == "/etc/mongodb-tls/ca.crt"
        volume = next(v for v in pod.volumes if v.name == "tls")
        assert volume.secret.secret_name == "tc-rs0-tls"
        exporter = next(c for c in pod.containers if c.name == "exporter")
        assert any("tls=true" in a for a in exporter.args)
        core = k8s.CoreV1Api(kube_api)
        for name in ("tc-rs0-tls", "tc-client-tls"):
            secret = core.read_namespaced_secret(name, namespace)
            assert secret.type == "kubernetes.io/tls"
            assert secret.metadata.owner_references[0].name == "tc"
            assert set(secret.data) == {"tls.crt", "tls.key", "ca.crt", "tls-combined.pem"}

        run = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchmarkRun",
            "metadata": {"name": "over-tls"},
            "spec": {"clusterRef": {"name": "tc"}, "repetitions": 1, **RUN},
        }
        apply(plane, namespace, run)
        done = wait_phase(
            kube_api, namespace, "benchmarkruns", "over-tls", "Succeeded", "Failed", timeout=600
        )
        steps = done["status"].get("steps") or []
        assert done["status"]["phase"] == "Succeeded", [s.get("message") for s in steps]
        # The clients verified FerretDB's certificate with the CA their Job mounted.
        taken = executor.runs
        assert taken and all(r.exit_code == 0 for r in taken)
        plain, secure = ferretdbs
        with pymongo.MongoClient(
            secure.host, secure.port, tls=True, tlsCAFile=_ca_file(ca, tmp_path)
        ) as c:
            assert c.ycsb.usertable.count_documents({}) == 200
        with pymongo.MongoClient(plain.host, plain.port) as c:
            assert c.ycsb.usertable.count_documents({}) == 0  # nothing went in the clear

        # No private key in the status, the Events or the operator's log.
        events = core.list_namespaced_event(namespace).items
        shown = json.dumps([cluster, done]) + "\n".join(e.message or "" for e in events)
        shown += log.read_text()
        assert "PRIVATE KEY" not in shown
        assert not [line for line in private_key_lines(kube_api, namespace, ca) if line in shown]
    finally:
        operator.kill()


def _ca_file(ca: trustme.CA, folder: Path) -> str:
    path = folder / "ca.crt"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.mark.timeout(1500)  # two runs of JVM clients on a shared 2-core machine
def test_tls_on_and_off_is_one_experiment_with_a_comparison(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    ca: trustme.CA,
    models: tuple[MongoModel, MongoModel],
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    plain_model, tls_model = models
    # The cells' clusters: group 0 has tls.enabled false (the baseline), group 1 true.
    plain_model.member(members(namespace, "tx-k0-rs0", 1)[0])
    tls_model.member(members(namespace, "tx-k1-rs0", 1)[0])
    apply(plane, namespace, ca_secret(CA_SECRET, ca))
    operator = start(plane, namespace, models, tmp_path / "operator.log", prometheus)
    try:
        manifest = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchmarkExperiment",
            "metadata": {"name": "tx"},
            "spec": {
                "cluster": {
                    "version": "7.0.14",
                    "topology": {"replicaSet": {"members": 1}},
                    "tls": {"caSecretName": CA_SECRET, "mode": "requireTLS"},
                },
                "run": RUN,
                "repetitions": 1,
                "dimensions": [
                    {
                        "name": "tls",
                        "target": "cluster",
                        "field": "tls.enabled",
                        "values": [False, True],
                    }
                ],
                "baseline": {"tls": False},
            },
        }
        apply(plane, namespace, manifest)
        done = wait_phase(
            kube_api, namespace, "benchmarkexperiments", "tx", "Succeeded", "Failed", timeout=1200
        )
        status = done["status"]
        assert status["phase"] == "Succeeded", status.get("cells")
        comparison = status["comparison"]
        assert comparison["baseline"] == "tls=false"
        rows = {(r["configuration"], r["workload"], r["metric"]) for r in comparison["rows"]}
        assert ("tls=true", "a", "throughput") in rows
        # The TLS cell's member was reached over TLS only; the baseline's never.
        assert tls_model.tls_connections and not plain_model.tls_connections
    finally:
        operator.kill()


def test_an_issuer_cluster_owns_certificates_the_cert_manager_schema_accepts(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    models: tuple[MongoModel, MongoModel],
    prometheus: str,
    tmp_path: Path,
) -> None:
    """cert-manager's own CRDs (from its Go module) judge the Certificates; its controller is not
    here, so no Secret is issued and the cluster says it waits for one."""
    folder = tmp_path / "cert-manager"
    folder.mkdir()
    for crd in cert_manager_crds():
        (folder / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    plane.apply(folder)
    operator = start(plane, namespace, models, tmp_path / "operator.log", prometheus)
    custom = k8s.CustomObjectsApi(kube_api)
    try:
        spec = {
            "version": "7.0.14",
            "topology": {"replicaSet": {"members": 1}},
            "tls": {"enabled": True, "issuerRef": {"name": "bench-ca", "kind": "ClusterIssuer"}},
        }
        apply(plane, namespace, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MongoCluster",
                                 "metadata": {"name": "ic"}, "spec": spec})  # fmt: skip

        def certificates() -> list[dict[str, Any]] | None:
            found = custom.list_namespaced_custom_object(
                "cert-manager.io", "v1", namespace, "certificates"
            )["items"]
            return found if len(found) == 2 else None

        certs = {c["metadata"]["name"]: c for c in wait_until(certificates, what="Certificates")}
        assert set(certs) == {"ic-rs0-tls", "ic-client-tls"}
        for cert in certs.values():
            assert cert["metadata"]["ownerReferences"][0]["name"] == "ic"
            assert cert["spec"]["issuerRef"]["kind"] == "ClusterIssuer"
            assert cert["spec"]["additionalOutputFormats"] == [{"type": "CombinedPEM"}]

        def waiting() -> dict[str, Any] | None:
            status = get(kube_api, namespace, "mongoclusters", "ic").get("status") or {}
            said = json.dumps(status.get("conditions") or [])
            return status if "ic-client-tls" in said else None

        status = wait_until(waiting, timeout=60, what="the cluster waits for its certificate")
        assert status["phase"] != "Failed"
    finally:
        operator.kill()
