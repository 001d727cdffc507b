"""Cluster tier: BenchmarkRuns end to end on a real kube-apiserver with KWOK nodes.

What is real: the apiserver, controller-manager (Jobs, GC), the operator process, the Jobs'
commands (the runner and YCSB with the project's binding, executed for real by the harness
kubelet localplane.executor, writing results through the API with the pod's ServiceAccount),
FerretDB as the data-path server, Prometheus scraping node-exporter for CPU. What stands in:
the wire model for mongod's replica-set/sharding state (MongoCluster wiring, prepare commands);
the client pods' URIs are pointed at FerretDB.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.net import free_port
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"


@pytest.fixture
def ferretdb() -> Iterator[FerretDB]:
    # One per test: the operator's prepare step talks to the model, not to this data-path
    # server, so nothing else would clear the previous test's records.
    with running_ferretdb() as server:
        yield server


@pytest.fixture
def model(kube_api: k8s.ApiClient) -> Iterator[MongoModel]:
    with MongoModel(keyfile=keyfile_from_pods(kube_api), catch_up_seconds=0.1) as m:
        yield m


@pytest.fixture
def executor(plane: Plane, namespace: str, ferretdb: FerretDB) -> Iterator[PodExecutor]:
    with pod_executor(
        plane, namespace, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
    ) as ex:
        yield ex


def node_aliases(api: k8s.ApiClient) -> str:
    """Every fake node is this machine for node-exporter (the one real host)."""
    host = os.uname().nodename
    return ",".join(f"{n.metadata.name}={host}" for n in k8s.CoreV1Api(api).list_node().items)


def start(
    plane: Plane,
    namespace: str,
    model: MongoModel,
    log: Path,
    prometheus_url: str,
    api: k8s.ApiClient,
    **env: str,
) -> OperatorProcess:
    if not model.host_map:
        model.member(f"bc-rs0-0.bc-rs0-hl.{namespace}.svc.cluster.local:27017")
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    return start_operator(
        plane.kubeconfig,
        [namespace],
        log,
        MONGOBENCH_HOST_MAP=host_map,
        MONGOBENCH_PROMETHEUS_URL=prometheus_url,
        MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1",
        MONGOBENCH_PROMETHEUS_NODE_ALIASES=node_aliases(api),
        **env,
    )


def apply(plane: Plane, namespace: str, obj: dict[str, Any]) -> None:
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def cluster(plane: Plane, namespace: str, api: k8s.ApiClient) -> None:
    apply(
        plane,
        namespace,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "MongoCluster",
            "metadata": {"name": "bc"},
            "spec": {"version": "7.0.14", "topology": {"replicaSet": {"members": 1}}},
        },
    )
    wait_until(
        lambda: (
            get(api, namespace, "mongoclusters", "bc").get("status", {}).get("phase") == "Ready"
        ),
        timeout=60,
        what="cluster Ready",
    )


def run_manifest(name: str, **spec: Any) -> dict[str, Any]:
    base = {
        "clusterRef": {"name": "bc"},
        "workloads": [{"name": w} for w in "abcdef"],
        "load": {"recordCount": 200, "threads": 2},
        "run": {"operationCount": 200, "threads": 2, "statusIntervalSeconds": 1},
        "repetitions": 2,
        "clients": {"parallelism": 2},
        "labels": {"study": "local"},
    }
    base.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": base,
    }


def get(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any]:
    return dict(
        k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name
        )
    )


def wait_run(
    api: k8s.ApiClient, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 240
) -> dict[str, Any]:
    return dict(
        wait_until(
            lambda: (
                (o := get(api, namespace, "benchmarkruns", name)).get("status", {}).get("phase")
                in phases
                and o
            ),
            timeout=timeout,
            interval=0.5,
            what=f"run {name} in {phases}",
        )
    )


def test_a_to_f_twice_with_two_clients_ends_with_every_number(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    ferretdb: FerretDB,
    tmp_path: Path,
) -> None:
    # Results larger than one object: parts of 2 KiB make every client document span several
    # ConfigMaps (the default is 900 KiB), so reassembly is exercised on every step.
    operator = start(
        plane,
        namespace,
        model,
        tmp_path / "operator.log",
        prometheus,
        kube_api,
        MONGOBENCH_RESULT_PART_BYTES="2048",
    )
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("af"))
        run = wait_run(kube_api, namespace, "af", ("Succeeded", "Failed"))
        # The handler exports a finished run's gauges right after writing its final status.
        metrics = (
            wait_until(
                lambda: (
                    (text := operator.metrics())
                    and "mongobench_run_throughput_ops_per_second{" in text
                    and text
                ),
                timeout=15,
                what="the finished run exported on /metrics",
            )
            if run["status"]["phase"] == "Succeeded"
            else operator.metrics()
        )
    finally:
        operator.stop()
    status = run["status"]
    failed = [s for s in status["steps"] if s["phase"] != "Succeeded"]
    assert status["phase"] == "Succeeded", (
        failed,
        [r.output_tail for r in executor.runs if r.exit_code],
    )
    labels = [s["label"] for s in status["steps"]]
    assert labels[:2] == ["prepare", "load"] and labels[-1] == "cleanup"
    assert labels[-5:-1] == ["run d #1", "run d #2", "run e #1", "run e #2"]  # inserting ones last
    runs = [s for s in status["steps"] if s["kind"] == "run"]
    assert len(runs) == 12
    for step in runs:
        result = step["result"]
        assert step["clientsReported"] == 2 and result["clients"] == 2
        assert result["throughput"] > 0
        for op in result["operations"].values():
            assert op["count"] > 0 and op["errors"] == 0
            assert 0 < op["p50"] <= op["p95"] <= op["p99"] <= op["p999"] <= op["max"]
        cpu = step["cpu"]
        assert cpu["nodes"] and cpu["cluster"] is not None
    summary = {s["workload"]: s for s in status["summary"]}
    assert sorted(summary) == list("abcdef")
    assert all(s["n"] == 2 and s["throughput"]["sd"] is not None for s in summary.values())
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions.get("CPUCollected") == "True", status["conditions"]
    snapshot = status["clusterSnapshot"]
    assert snapshot["version"] == "7.0.14" and snapshot["nodes"]
    assert status["progress"]["percent"] == 100
    # The database was prepared through the administration module (the model saw the drop).
    assert "ycsb.usertable" in model.dropped
    # Every insert of D and E (2 clients, 2 repetitions each) added a record of its own: no two
    # clients or steps inserted the same key (cleanup.data defaults to Never: the data stays).
    inserted = sum(
        s["result"]["operations"]["INSERT"]["count"] for s in runs if s["workload"] in "de"
    )
    assert inserted > 0
    data = pymongo.MongoClient(ferretdb.uri)["ycsb"]["usertable"]
    assert data.count_documents({}) == 200 + inserted
    # Jobs are cleaned up on success; the results stay, in ConfigMaps and in status.
    assert not k8s.BatchV1Api(kube_api).list_namespaced_job(namespace).items
    cms = (
        k8s.CoreV1Api(kube_api)
        .list_namespaced_config_map(namespace, label_selector="mongobench.io/result-of")
        .items
    )
    documents = {cm.metadata.labels["mongobench.io/result-of"] for cm in cms}
    assert len(documents) == 2 * 13  # 2 clients x (load + 12 runs)
    parts = {
        cm.metadata.labels["mongobench.io/result-of"]: int(
            cm.metadata.labels["mongobench.io/parts"]
        )
        for cm in cms
    }
    assert min(parts.values()) > 1  # every document spans several objects ...
    assert len(cms) == sum(parts.values())  # ... all of them there
    # Finished results are exported for Grafana.
    assert "mongobench_run_throughput_ops_per_second{" in metrics and 'workload="a"' in metrics


def test_job_failure_fails_the_run_and_keeps_earlier_results(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    executor.fail_pods(lambda pod: pod["metadata"]["labels"].get("mongobench.io/step") == "3")
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        apply(
            plane,
            namespace,
            run_manifest("fails", workloads=[{"name": "a"}, {"name": "b"}], repetitions=1),
        )
        run = wait_run(kube_api, namespace, "fails", ("Succeeded", "Failed"))
    finally:
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Failed"
    steps = {s["label"]: s for s in status["steps"]}
    assert (
        steps["run a #1"]["phase"] == "Succeeded" and steps["run a #1"]["result"]["throughput"] > 0
    )
    assert steps["run b #1"]["phase"] == "Failed" and "failed" in steps["run b #1"]["message"]
    condition = {c["type"]: c for c in status["conditions"]}["Succeeded"]
    assert condition["status"] == "False" and "run b #1" in condition["message"]
    # cleanup.jobs OnSuccess: a failed run keeps its Jobs for inspection.
    assert k8s.BatchV1Api(kube_api).list_namespaced_job(namespace).items
    events = [e.reason for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items]
    assert "StepFailed" in events and "StepStarted" in events


def test_operator_killed_mid_step_resumes_without_duplicate_jobs(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    batch = k8s.BatchV1Api(kube_api)
    first = start(plane, namespace, model, tmp_path / "first.log", prometheus, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        apply(
            plane,
            namespace,
            run_manifest("rs", workloads=[{"name": "c"}], repetitions=2, cleanup={"jobs": "Never"}),
        )
        wait_until(
            lambda: any(
                "run-c" in j.metadata.name for j in batch.list_namespaced_job(namespace).items
            ),
            timeout=60,
            interval=0.05,
            what="a run Job",
        )
    finally:
        first.kill()
    uids = {j.metadata.name: j.metadata.uid for j in batch.list_namespaced_job(namespace).items}
    second = start(plane, namespace, model, tmp_path / "second.log", prometheus, kube_api)
    try:
        run = wait_run(kube_api, namespace, "rs", ("Succeeded", "Failed"))
    finally:
        second.stop()
    assert run["status"]["phase"] == "Succeeded"
    jobs = batch.list_namespaced_job(namespace).items
    names = [j.metadata.name for j in jobs]
    assert len(names) == len(set(names)) == 3  # load, run c #1, run c #2: each exactly once
    assert all(uids[j.metadata.name] == j.metadata.uid for j in jobs if j.metadata.name in uids)
    assert all(s["result"]["throughput"] > 0 for s in run["status"]["steps"] if s["kind"] == "run")


def test_prometheus_down_still_succeeds_with_cpu_missing(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    tmp_path: Path,
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    operator = start(plane, namespace, model, tmp_path / "operator.log", nowhere, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("noprom", workloads=[{"name": "c"}], repetitions=1))
        run = wait_run(kube_api, namespace, "noprom", ("Succeeded", "Failed"))
    finally:
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Succeeded"
    cpu = {c["type"]: c for c in status["conditions"]}["CPUCollected"]
    assert cpu["status"] == "False" and cpu["reason"] == "PrometheusUnavailable"
    assert all(s.get("cpu") is None for s in status["steps"] if s["kind"] == "run")


def test_run_waits_for_its_cluster_then_fails_cleanly_when_it_is_deleted(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    custom = k8s.CustomObjectsApi(kube_api)
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        apply(
            plane,
            namespace,
            run_manifest(
                "waits", workloads=[{"name": "c"}], repetitions=5, cleanup={"jobs": "Always"}
            ),
        )
        waiting = wait_run(kube_api, namespace, "waits", ("Pending",), timeout=30)
        ready = {c["type"]: c for c in waiting["status"]["conditions"]}["ClusterReady"]
        assert ready["status"] == "False" and ready["reason"] == "NotFound"
        # What `kubectl get bmr` shows while it waits: prepare, load, 3 runs, cleanup to come.
        progress = waiting["status"]["progress"]
        assert (progress["summary"], progress["current"]) == ("0/8", "waiting to start")

        cluster(plane, namespace, kube_api)  # the run starts once the cluster is Ready
        wait_until(
            lambda: any(
                s.get("phase") == "Succeeded" and s["kind"] == "run"
                for s in get(kube_api, namespace, "benchmarkruns", "waits")["status"].get(
                    "steps", []
                )
            ),
            timeout=120,
            what="a first measured step",
        )
        # The cluster goes away for good, as if forced: deleted, then its finalizer removed
        # (in this order: the operator would put a finalizer back on a live object, and may
        # not add one to an object being deleted).
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "mongoclusters", "bc")
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "mongoclusters", "bc", {"metadata": {"finalizers": None}}
        )
        run = wait_run(kube_api, namespace, "waits", ("Succeeded", "Failed"), timeout=60)
        # cleanup.jobs Always is honoured on this failure too (deletion is asynchronous).
        wait_until(
            lambda: not k8s.BatchV1Api(kube_api).list_namespaced_job(namespace).items,
            timeout=30,
            what="the run's Jobs deleted",
        )
    finally:
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Failed"
    condition = {c["type"]: c for c in status["conditions"]}["ClusterReady"]
    assert condition["reason"] == "ClusterDeleted"
    kept = [s for s in status["steps"] if s["kind"] == "run" and s.get("result")]
    assert kept and all(s["result"]["throughput"] > 0 for s in kept)
    assert not [s["label"] for s in status["steps"] if s["phase"] == "Running"]


def test_sharded_cluster_is_prepared_with_a_hashed_shard_key(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    for rs in ("sh-cfg", "sh-shard0", "sh-shard1"):
        model.member(f"{rs}-0.{rs}-hl.{namespace}.svc.cluster.local:27017")
    model.mongos(f"sh-mongos.{namespace}.svc.cluster.local:27017")
    # The data path is FerretDB; the model answers $collStats as if the load put 200 records.
    model.sharded.documents["ycsb.usertable"] = 200
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        topology = {
            "type": "Sharded",
            "sharded": {"shards": 2, "membersPerShard": 1, "configServers": 1, "mongos": 1},
        }
        apply(
            plane,
            namespace,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "MongoCluster",
                "metadata": {"name": "sh"},
                "spec": {"version": "7.0.14", "topology": topology},
            },
        )
        wait_until(
            lambda: (
                get(kube_api, namespace, "mongoclusters", "sh").get("status", {}).get("phase")
                == "Ready"
            ),
            timeout=90,
            what="sharded cluster Ready",
        )
        manifest = run_manifest(
            "shr",
            clusterRef={"name": "sh"},
            workloads=[{"name": "c"}],
            repetitions=1,
            sharding={"key": "_id", "hashed": True, "preSplitChunks": 4},
            cleanup={"data": "OnSuccess"},
        )
        apply(plane, namespace, manifest)
        run = wait_run(kube_api, namespace, "shr", ("Succeeded", "Failed"))
        cluster_status = get(kube_api, namespace, "mongoclusters", "sh")["status"]
    finally:
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Succeeded"
    # The per-shard balance after the load, with the run and on the cluster.
    load = next(s for s in status["steps"] if s["kind"] == "load")
    shares = {s["shard"]: (s["documents"], s["percent"]) for s in load["distribution"]["shards"]}
    assert shares == {"sh-shard0": (100, 50.0), "sh-shard1": (100, 50.0)}
    assert load["distribution"]["collection"] == "ycsb.usertable"
    assert cluster_status["distribution"] == load["distribution"]
    prepare = status["steps"][0]
    assert "sharded on hashed _id" in prepare["message"]
    assert model.sharded_history == [("ycsb.usertable", {"_id": "hashed"})]
    # cleanup.data OnSuccess: the collection was dropped at the end (through mongos).
    assert model.dropped.count("ycsb.usertable") == 2  # prepare + cleanup
    assert status["clusterSnapshot"]["topology"]["type"] == "Sharded"


def test_deleting_a_running_benchmark_removes_its_jobs_and_processes(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    batch = k8s.BatchV1Api(kube_api)
    custom = k8s.CustomObjectsApi(kube_api)
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        long_run = run_manifest(
            "del",
            workloads=[{"name": "c"}],
            repetitions=1,
            run={"durationSeconds": 60, "threads": 1},
        )
        apply(plane, namespace, long_run)
        wait_until(executor.running, timeout=60, interval=0.1, what="a client process")
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "benchmarkruns", "del")
        wait_until(
            lambda: (
                not custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "benchmarkruns"
                )["items"]
            ),
            timeout=30,
            what="run deleted",
        )
        wait_until(
            lambda: not batch.list_namespaced_job(namespace).items,
            timeout=30,
            what="Jobs collected",
        )
        wait_until(lambda: not executor.running(), timeout=30, what="client processes stopped")
    finally:
        operator.stop()


def test_database_the_cluster_user_cannot_write_fails_before_any_job(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("otherdb", database="other", repetitions=1))
        run = wait_run(kube_api, namespace, "otherdb", ("Succeeded", "Failed"), timeout=30)
    finally:
        operator.stop()
    condition = {c["type"]: c for c in run["status"]["conditions"]}["ClusterReady"]
    assert run["status"]["phase"] == "Failed"
    assert condition["reason"] == "DatabaseNotWritable"
    assert "may write only to ycsb" in condition["message"]
    assert not k8s.BatchV1Api(kube_api).list_namespaced_job(namespace).items
    assert not model.dropped  # not even prepared
