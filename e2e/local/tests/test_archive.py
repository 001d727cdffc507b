"""Cluster tier: BenchmarkRun results leaving the cluster for an S3-compatible archive.

What is real: the apiserver, controller-manager, the operator process, the benchmark clients
(runner + YCSB against FerretDB, executed by the harness kubelet), and the object store: moto's
S3 server over HTTP on loopback, reached through the MinIO client. A loopback proxy in front of
it (localplane.s3server.StallingProxy) holds the manifest's upload where a test needs an upload
cut short, and records which access key signed each request.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The BenchmarkRun suite's fixtures and helpers: one way to drive a real run.
import test_benchmarkrun as bmr
from kubernetes import client as k8s

from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.s3server import ACCESS_KEY, SECRET_KEY, S3Server, StallingProxy
from mongobench_archive import ArchiveError, open_root

pytestmark = pytest.mark.cluster

# Fixtures are found by name in the module.
ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
apply, cluster, get, run_manifest, start, wait_run = (
    bmr.apply,
    bmr.cluster,
    bmr.get,
    bmr.run_manifest,
    bmr.start,
    bmr.wait_run,
)

BUCKET = "mongobench"  # the s3server fixture's bucket
SMALL = {"workloads": [{"name": "c"}], "repetitions": 1}


@pytest.fixture
def proxy(s3server: S3Server) -> Iterator[StallingProxy]:
    p = StallingProxy(s3server.port)
    try:
        yield p
    finally:
        p.close()


def operator_env(endpoint: str, url: str = f"s3://{BUCKET}/lab", **extra: str) -> dict[str, str]:
    """The operator-wide default archive and the operator's own credentials."""
    return {
        "MONGOBENCH_ARCHIVE_URL": url,
        "MONGOBENCH_ARCHIVE_ENDPOINT": endpoint,
        "MONGOBENCH_ARCHIVE_REGION": "us-east-1",
        "MONGOBENCH_ARCHIVE_RETRY_BASE": "0.5",
        "MONGOBENCH_ARCHIVE_RETRY_MAX": "2",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        **extra,
    }


def archived(s3: S3Server, url: str = f"s3://{BUCKET}/lab") -> Any:
    return open_root(
        url,
        endpoint_url=s3.endpoint,
        region="us-east-1",
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
    )


def condition(run: dict[str, Any], type_: str) -> dict[str, Any]:
    return {c["type"]: c for c in run["status"].get("conditions") or []}.get(type_, {})


def wait_archived(api: k8s.ApiClient, namespace: str, name: str, timeout: float = 60) -> Any:
    return wait_until(
        lambda: (
            (o := get(api, namespace, "benchmarkruns", name))
            and condition(o, "Archived").get("status") == "True"
            and o
        ),
        timeout=timeout,
        interval=0.3,
        what=f"run {name} Archived=True",
    )


def events(api: k8s.ApiClient, namespace: str) -> list[str]:
    return [e.reason for e in k8s.CoreV1Api(api).list_namespaced_event(namespace).items]


def test_spec_archive_with_a_secret_uploads_everything_and_outlives_run_and_namespace(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: Any,
    prometheus: str,
    s3server: S3Server,
    proxy: StallingProxy,
    tmp_path: Path,
) -> None:
    """The run names its own store (bucket, prefix, endpoint) and credentials (a Secret); the
    operator has a default archive with other credentials, which it must not use here."""
    s3server.make_bucket("team")
    core = k8s.CoreV1Api(kube_api)
    core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": "team-s3"},
            "stringData": {"AWS_ACCESS_KEY_ID": "team-key", "AWS_SECRET_ACCESS_KEY": "team-secret"},
        },
    )
    env = operator_env(s3server.endpoint, AWS_ACCESS_KEY_ID="operator-key")
    operator = start(plane, namespace, model, tmp_path / "op.log", prometheus, kube_api, **env)
    try:
        cluster(plane, namespace, kube_api)
        spec_archive = {
            "bucket": "team",
            "prefix": "studies/2026",
            "endpoint": proxy.endpoint,
            "credentialsSecret": "team-s3",
        }
        apply(
            plane,
            namespace,
            run_manifest("arch", **SMALL, clients={"parallelism": 2}, archive=spec_archive),
        )
        run = wait_run(kube_api, namespace, "arch", ("Succeeded", "Failed"))
        assert run["status"]["phase"] == "Succeeded"
        run = wait_archived(kube_api, namespace, "arch")
        uri = base64.b64decode(core.read_namespaced_secret("bc-connection", namespace).data["uri"])
    finally:
        operator.stop()
    status = run["status"]
    uid = run["metadata"]["uid"]
    url = f"s3://team/studies/2026/{namespace}/arch/{uid}"
    assert status["archive"]["url"] == url and status["archive"]["complete"] is True
    measured = [s for s in status["steps"] if s["kind"] in ("load", "run")]
    assert status["archive"]["uploadedSteps"] == [s["index"] for s in measured]
    assert condition(run, "Archived")["reason"] == "Complete"
    assert "Archived" in events(kube_api, namespace)
    # Signed with the Secret's key only: the operator's own never went to the run's store.
    assert proxy.access_keys == {"team-key"}

    def check(r: Any) -> None:
        assert (r.namespace, r.name, r.uid, r.phase, r.complete) == (
            namespace,
            "arch",
            uid,
            "Succeeded",
            True,
        )
        assert r.run["status"]["phase"] == "Succeeded"
        assert r.run["spec"]["archive"] == {**spec_archive, "enabled": True}
        assert r.cluster["snapshot"] == status["clusterSnapshot"]
        assert r.cluster["mongoCluster"]["spec"]["version"] == "7.0.14"
        for s in measured:
            docs = r.step_documents(s["index"])
            assert len(docs) == 2 and all(d["operations"] for d in docs)  # full documents
            merged = r.merged(s["index"])
            assert merged["operationsTotal"] == s["result"]["operationsTotal"]
            assert round(merged["throughput"], 3) == s["result"]["throughput"]
            resources = r.resources(s["index"])
            assert resources["step"]["label"] == s["label"]
            assert resources["cpu"] == s["cpu"] and s["cpu"]["nodes"]
            # ... and the raw series behind those figures, from the same Prometheus.
            series = resources["cpuSeries"]
            assert set(series["nodes"]) == {n["name"] for n in s["cpu"]["nodes"]}
            assert all(len(modes["idle"]) >= 1 for modes in series["nodes"].values())

    [r] = archived(s3server, "s3://team").runs()
    assert r.location == url
    check(r)
    # Nothing secret went into the archive: not the S3 keys, not the database password.
    password = urllib.parse.urlsplit(uri.decode()).password
    assert password
    client = s3server.client()
    for key in s3server.keys("team"):
        data = client.get_object("team", key).read()
        for secret in (b"team-secret", SECRET_KEY.encode(), password.encode()):
            assert secret not in data, (key, secret)

    # The archive outlives the run and its namespace.
    custom = k8s.CustomObjectsApi(kube_api)
    operator = start(plane, namespace, model, tmp_path / "op2.log", prometheus, kube_api, **env)
    try:
        custom.delete_namespaced_custom_object(
            "mongobench.io", "v1alpha1", namespace, "benchmarkruns", "arch"
        )
        wait_until(
            lambda: (
                not custom.list_namespaced_custom_object(
                    "mongobench.io", "v1alpha1", namespace, "benchmarkruns"
                )["items"]
            ),
            timeout=30,
            what="run deleted",
        )
        core.delete_namespace(namespace)
        wait_until(
            lambda: namespace not in {n.metadata.name for n in core.list_namespace().items},
            timeout=120,
            interval=1,
            what="namespace deleted",
        )
    finally:
        operator.stop()
    [after] = archived(s3server, f"s3://team/studies/2026/{namespace}").runs()
    check(after)


def test_store_down_the_run_succeeds_with_archived_false_and_uploads_when_it_returns(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: Any,
    prometheus: str,
    s3server: S3Server,
    tmp_path: Path,
) -> None:
    s3server.stop()  # the operator-wide default store is down from the start
    env = operator_env(s3server.endpoint)
    operator = start(plane, namespace, model, tmp_path / "op.log", prometheus, kube_api, **env)
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("down", **SMALL))
        run = wait_run(kube_api, namespace, "down", ("Succeeded", "Failed"))
        assert run["status"]["phase"] == "Succeeded"
        run = wait_until(
            lambda: (
                (o := get(kube_api, namespace, "benchmarkruns", "down"))
                and "final manifest" in condition(o, "Archived").get("message", "")
                and o
            ),
            timeout=30,
            what="Archived=False naming the final manifest",
        )
        cond = condition(run, "Archived")
        assert (cond["status"], cond["reason"]) == ("False", "UploadFailed")
        assert "cannot reach" in cond["message"] and s3server.endpoint in cond["message"]
        measured = [s["index"] for s in run["status"]["steps"] if s["kind"] in ("load", "run")]
        assert f"steps {measured[0]}-{measured[-1]} and the final manifest" in cond["message"]
        assert run["status"]["archive"]["attempts"] >= 1
        assert "ArchiveFailed" in events(kube_api, namespace)
        s3server.start(buckets=[BUCKET])  # the store is back
        run = wait_archived(kube_api, namespace, "down", timeout=30)
    finally:
        operator.stop()
    assert run["status"]["archive"]["uploadedSteps"] == measured
    assert "nextAttempt" not in run["status"]["archive"]
    [r] = archived(s3server).runs()
    assert r.complete and r.step_indices() == measured
    assert all(len(r.step_documents(i)) == 2 for i in measured)  # parallelism 2


def test_operator_killed_mid_upload_leaves_no_manifest_and_completes_after_restart(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: Any,
    prometheus: str,
    s3server: S3Server,
    proxy: StallingProxy,
    tmp_path: Path,
) -> None:
    proxy.stall(r"^PUT .*/manifest\.json")
    env = operator_env(proxy.endpoint)
    first = start(plane, namespace, model, tmp_path / "first.log", prometheus, kube_api, **env)
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("cut", **SMALL))
        wait_until(proxy.stalled.is_set, timeout=120, what="the first manifest upload under way")
    finally:
        first.kill()  # mid-upload: the step's objects are written, its manifest is not
    run = get(kube_api, namespace, "benchmarkruns", "cut")
    folder = f"lab/{namespace}/cut/{run['metadata']['uid']}/"
    keys = s3server.keys(BUCKET, folder)
    assert f"{folder}run.json" in keys and any("/client-0.json" in k for k in keys)
    assert f"{folder}manifest.json" not in keys
    with pytest.raises(ArchiveError, match=r"no manifest\.json"):
        archived(s3server).runs()  # readers never see the half-written run
    assert not (run["status"].get("archive") or {}).get("uploadedSteps")

    proxy.release()
    second = start(plane, namespace, model, tmp_path / "second.log", prometheus, kube_api, **env)
    try:
        run = wait_run(kube_api, namespace, "cut", ("Succeeded", "Failed"))
        assert run["status"]["phase"] == "Succeeded"
        run = wait_archived(kube_api, namespace, "cut")
    finally:
        second.stop()
    measured = [s["index"] for s in run["status"]["steps"] if s["kind"] in ("load", "run")]
    [r] = archived(s3server).runs()
    assert r.complete and r.step_indices() == measured
    for i in measured:  # every listed object verifies against its checksum
        assert len(r.step_documents(i)) == 2 and r.merged(i) and r.resources(i)
