"""Cluster tier: BenchmarkRuns end to end on a real kube-apiserver with KWOK nodes.

What is real: the apiserver, controller-manager (Jobs, GC), the operator process, the Jobs'
commands (the runner and YCSB with the project's binding, executed for real by the harness
kubelet localplane.executor, writing results through the API with the pod's ServiceAccount),
FerretDB as the data-path server, the session's kube-prometheus-stack monitoring scraping each
node's node-exporter for CPU (localplane.monitoring). What stands in:
the wire model for mongod's replica-set/sharding state (MongoCluster wiring, prepare commands);
the client pods' URIs are pointed at FerretDB.

A-F with repetitions and clients on a sharded cluster, and an operator crash mid-run, are the e2e
suite's (e2e/suite, on its local backend and on kind); the failure paths stay here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from localplane.policies import LENIENT_VALIDITY

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
    settings = {
        "MONGOBENCH_HOST_MAP": host_map,
        "MONGOBENCH_PROMETHEUS_URL": prometheus_url,
        "MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL": "1",
        **env,  # a test's own settings win
    }
    return start_operator(plane.kubeconfig, [namespace], log, **settings)


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
    assert all("resources" not in s for s in status["steps"] if s["kind"] == "run")


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


def test_adaptive_repetitions_skip_what_a_met_target_no_longer_needs(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    """repeatUntil with a loose target (the interval within +-100% of the mean: a CV under
    ~40% at n = 3): 3 repetitions, then the other 3 the maximum allows are skipped. The clients
    run at a rate the plane always reaches, so a loaded machine's noise (unthrottled
    throughputs once varied more than that in CI) rarely asks for a fourth."""
    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        cluster(plane, namespace, kube_api)
        until = {"metric": "throughput", "relativeHalfWidth": 1.0, "maxRepetitions": 6}
        manifest = run_manifest(
            "adaptive",
            workloads=[{"name": "c"}],
            run={"operationCount": 200, "threads": 2, "targetOpsPerSecond": 50},
            repetitions=3,
            repeatUntil=until,
            # This plane's clients share the database's 2 cores: its trials are client-bound
            # by the default policy (the truth, shown in test_trial_validity.py). This test is
            # about stopping, so every trial here counts.
            validity=LENIENT_VALIDITY,
        )
        apply(plane, namespace, manifest)
        run = wait_run(kube_api, namespace, "adaptive", ("Succeeded", "Failed"))
    finally:
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Succeeded", status.get("conditions")
    runs = [s for s in status["steps"] if s["kind"] == "run"]
    # At least the 3 repetitions asked for; a fourth or fifth only if those trials' interval
    # missed the target (CI saw a fourth once, on a machine loaded by other suites): whatever
    # the count, the target met stops the run and the rest of the maximum is skipped.
    done = sum(1 for s in runs if s["phase"] == "Succeeded")
    assert 3 <= done < 6, status
    assert [s["phase"] for s in runs] == ["Succeeded"] * done + ["Skipped"] * (6 - done), status
    assert runs[done]["message"] == f"repeatUntil met after {done} valid repetitions"
    assert status["repetitions"]["workloads"][0] | {"relativeHalfWidth": None} == {
        "name": "c",
        "valid": done,
        "done": True,
        "met": True,
        "relativeHalfWidth": None,
    }
    target = {c["type"]: c for c in status["conditions"]}["TargetMet"]
    assert (target["status"], target["reason"]) == ("True", "Reached")
    (measured,) = [e for e in status["summary"] if e["workload"] == "c"]  # loads come first
    assert measured["n"] == done and status["progress"]["percent"] == 100
    events = [
        e.reason
        for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
        if e.involved_object.name == "adaptive"
    ]
    assert "RepetitionsSkipped" in events
