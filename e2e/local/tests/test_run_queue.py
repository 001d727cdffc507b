"""Cluster tier: one BenchmarkRun at a time on a target (issue 37), through an operator restart.

What is real: the kube-apiserver (the CRD's Queued phase, status.queue and its printer column,
creation timestamps that order the queue), the operator process, stopped and started again while
a run waits, the benchmark Jobs' pods executed by the harness kubelet (runner and YCSB against
FerretDB, which holds the data). What stands in: the wire model for mongod's replica-set state,
which receives the prepare step's drop of the collection; here every drop it receives is passed
on to FerretDB before it answers, so a run's prepare reaches the data as on a real cluster.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pymongo
import pytest
import test_benchmarkrun as bmr
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor


def manifest(name: str, **spec: Any) -> dict[str, Any]:
    return bmr.run_manifest(
        name,
        workloads=[{"name": "c"}],
        clients={"parallelism": 1},
        validity=LENIENT_VALIDITY,
        **spec,
    )


class DropsReachFerretDB(list[str]):
    """The model's record of drops (namespaces, in order), each also carried out on FerretDB."""

    def __init__(self, client: pymongo.MongoClient[Any]) -> None:
        super().__init__()
        self.client = client

    def append(self, namespace: str) -> None:
        database, collection = namespace.split(".", 1)
        self.client[database][collection].drop()
        super().append(namespace)


def steps(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["label"]: s for s in run["status"].get("steps", [])}


def test_a_second_run_on_one_cluster_waits_queued_through_a_restart_then_runs_after_the_first(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    def run(name: str) -> dict[str, Any]:
        return bmr.get(kube_api, namespace, "benchmarkruns", name)

    client: pymongo.MongoClient[Any] = pymongo.MongoClient(ferretdb.uri)
    model.dropped = DropsReachFerretDB(client)
    records = client["ycsb"]["usertable"]

    # Two measured steps long enough to stop the operator during the first of them.
    first = manifest(
        "first", repetitions=2, run={"durationSeconds": 6, "threads": 1, "statusIntervalSeconds": 1}
    )
    second = manifest("second", repetitions=1)
    # Deleted while it waits: its cleanup.data Always must not reach the data ahead of it.
    third = manifest("third", repetitions=1, cleanup={"data": "Always"})
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.cluster(plane, namespace, kube_api)
        # Both at once: one apply, one creation second; the name breaks the tie.
        runs = {"apiVersion": "v1", "kind": "List", "items": [first, second, third]}
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(runs))
        queued = bmr.wait_run(kube_api, namespace, "second", ("Queued",), timeout=60)
        condition = {c["type"]: c for c in queued["status"]["conditions"]}["Queued"]
        assert (condition["status"], condition["reason"]) == ("True", "TargetBusy")
        # 1st once first has started; 2nd where the operator took this run before first (a
        # busy machine): first, not started, is then 1st in line itself, as before a cluster
        # is Ready (the queue's unit tests).
        assert re.match(
            r"(1st|2nd) in line behind run first on MongoCluster bc", condition["message"]
        )
        assert queued["status"]["queue"]["behind"] == "first"
        shown = plane.kubectl("get", "benchmarkruns", "-n", namespace).stdout
        line = next(row for row in shown.splitlines() if row.startswith("second "))
        assert "Queued" in line and re.search(r"(1st|2nd) in line behind run first", line)
        last = bmr.wait_run(kube_api, namespace, "third", ("Queued",), timeout=30)
        assert re.match(r"(2nd|3rd) in line behind run second", last["status"]["queue"]["message"])
        plane.kubectl("delete", "benchmarkrun", "third", "-n", namespace, "--wait=true")

        wait_until(
            lambda: steps(run("first")).get("run c #1", {}).get("phase") == "Running",
            timeout=90,
            what="the first run's first measured step",
        )
        # The first run's start moved the second up: its place is read again, not left stale.
        wait_until(
            lambda: run("second")["status"]["queue"]["message"].startswith("1st in line"),
            timeout=30,
            what="the second run 1st in line once the first started",
        )
        # Only the first run prepared (dropped and created) the collection; its data is there
        # (the deleted third dropped nothing).
        assert model.dropped == ["ycsb.usertable"]
        assert records.count_documents({}) == 200
        operator.stop()
        assert run("second")["status"]["phase"] == "Queued"
        operator = bmr.start(
            plane, namespace, model, tmp_path / "operator2.log", prometheus, kube_api
        )
        # The restarted operator collects the first run's step (so it has handled both runs)
        # and the second still waits: the queue came from the API, not from memory.
        wait_until(
            lambda: steps(run("first")).get("run c #1", {}).get("phase") == "Succeeded",
            timeout=60,
            what="the first measured step collected after the restart",
        )
        still = run("second")["status"]
        assert still["phase"] == "Queued" and "startTime" not in still
        assert model.dropped == ["ycsb.usertable"]
        assert records.count_documents({}) == 200

        done = bmr.wait_run(kube_api, namespace, "first", ("Succeeded", "Failed"), timeout=60)
        after = bmr.wait_run(kube_api, namespace, "second", ("Succeeded", "Failed"), timeout=90)
    finally:
        operator.stop()
        client.close()
    assert done["status"]["phase"] == "Succeeded", done["status"].get("conditions")
    assert after["status"]["phase"] == "Succeeded", after["status"].get("conditions")
    # The second started after the first ended, and only then dropped the collection.
    assert after["status"]["startTime"] >= done["status"]["completionTime"]
    assert model.dropped == ["ycsb.usertable", "ycsb.usertable"]
    left = {c["type"]: c for c in after["status"]["conditions"]}["Queued"]
    assert (left["status"], left["reason"]) == ("False", "TargetFree")
    assert "queue" not in after["status"]
    # The first run's figures are as it left them, each measured step with its throughput.
    measured = [s for s in steps(done).values() if s["kind"] == "run"]
    assert len(measured) == 2 and all(s["result"]["throughput"] > 0 for s in measured)
    assert run("first")["status"]["steps"] == done["status"]["steps"]
    events = k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
    assert any(
        e.reason == "Queued" and e.involved_object.name == "second" and "run first" in e.message
        for e in events
    )
