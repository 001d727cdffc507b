"""Cluster tier: a sharded BenchmarkRun with spec.profiler ends with each measured step's slow
operations and the disk use per collection in its status and in `mongobench describe`.

Which tier proves what. Real here: the apiserver (the CRD's schema for spec.profiler), the
operator process and its orchestration (level 1 before the measured step only, the step's
window read after it, level 0 with the slowms found, disk use after the load and the run), YCSB
with the project's binding against FerretDB (the data path, through the plane's uri_rewrite),
and the `mongobench` CLI. Standing in: the operator's admin connection reaches the wire model
(HOST_MAP), not FerretDB, so `profile`, the system.profile find and `$collStats` are answered by
the model, whose replies follow the server's source (see its docstring and the protocol tests in
test_mongomodel.py); the operations it records are those the test says the clients ran
(`profiled_operations`), as FerretDB has no profiler (its refusal, CommandNotFound, is proven on
the protocol tier: operator/tests/protocol/test_mongo_ferretdb.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_benchmarkexperiment import register_sharded
from test_cli import cli
from test_role_cpu import CLUSTER, sharded_cluster

from localplane.executor import PodExecutor
from localplane.mongomodel import MongoModel
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
NS_KEY = "ycsb.usertable"
# What the test says YCSB's clients ran, as a 7.0 mongod's system.profile holds them: a user's
# key in the filter and a value in the update that must never reach status.
OPERATIONS = [
    {
        "op": "query",
        "ns": NS_KEY,
        "command": {"find": "usertable", "filter": {"_id": "user6284781860667377211"}},
        "millis": 420,
        "planSummary": "IXSCAN { _id: 1 }",
        "docsExamined": 1,
        "keysExamined": 1,
        "nreturned": 1,
        "queryHash": "8CBA9E3D",
    },
    {
        "op": "update",
        "ns": NS_KEY,
        "command": {"q": {"_id": "user77"}, "u": {"$set": {"field4": "a-secret-value"}}},
        "millis": 180,
        "planSummary": "IXSCAN { _id: 1 }",
        "docsExamined": 1,
        "keysExamined": 1,
    },
    {"op": "query", "ns": NS_KEY, "command": {"find": "usertable"}, "millis": 20},
]


def test_a_profiled_run_ends_with_slow_operations_and_disk_use_in_status_and_describe(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    register_sharded(model, namespace, CLUSTER, 2)
    model.sharded.documents[NS_KEY] = 200  # what the model reports as loaded
    model.profiled_operations = OPERATIONS
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        sharded_cluster(plane, namespace, kube_api)  # two shards, one member each
        manifest = bmr.run_manifest(
            "profiled",
            clusterRef={"name": CLUSTER},
            workloads=[{"name": "a"}],
            repetitions=1,
            clients={"parallelism": 1},
            profiler={"slowMs": 100, "top": 3},
        )
        bmr.apply(plane, namespace, manifest)
        run = bmr.wait_run(kube_api, namespace, "profiled", ("Succeeded", "Failed"), timeout=300)
    finally:
        operator.stop()
    status = run["status"]
    told = json.dumps(status)
    assert status["phase"] == "Succeeded", told
    load, measured = (next(s for s in status["steps"] if s["kind"] == k) for k in ("load", "run"))
    # The profiler: on each shard's primary only (never mongos, never the config server), level
    # 1 before the run step and 0 after it with the slowms it found; nothing during the load.
    calls = [(host.split(".")[0], db, level, ms) for host, db, level, ms in model.profile_calls]
    assert calls == [
        (f"{CLUSTER}-shard0-0", "ycsb", 1, 100),
        (f"{CLUSTER}-shard1-0", "ycsb", 1, 100),
        (f"{CLUSTER}-shard0-0", "ycsb", 0, 100),
        (f"{CLUSTER}-shard1-0", "ycsb", 0, 100),
    ]
    assert "slowOperations" not in load
    ops = measured["slowOperations"]["operations"]
    assert [(o["shard"], o["millis"], o["op"]) for o in ops] == [
        (f"{CLUSTER}-shard0", 420, "query"),
        (f"{CLUSTER}-shard1", 420, "query"),
        (f"{CLUSTER}-shard0", 180, "update"),
    ]  # the top 3 of both shards, slowest first; the 20 ms one is under slowMs
    assert ops[0]["shape"] == "find usertable {filter: {_id: ?}}"
    assert ops[0]["queryHash"] == "8CBA9E3D" and ops[0]["planSummary"] == "IXSCAN { _id: 1 }"
    assert "user6284781860667377211" not in told and "a-secret-value" not in told
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Profiled"]["status"] == "True", told
    assert status["profiler"]["state"] == "Off"
    # Disk use per collection after the load and the run step, per shard and in total.
    for step in (load, measured):
        (collection,) = step["diskUse"]["collections"]
        assert (collection["collection"], collection["documents"]) == (NS_KEY, 200)
        per_shard = [(s["shard"], s["documents"]) for s in collection["shards"]]
        assert per_shard == [(f"{CLUSTER}-shard0", 100), (f"{CLUSTER}-shard1", 100)]
        assert collection["dataBytes"] > collection["storageBytes"] > 0
    shown = cli(plane, "describe", "profiled", "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    assert "Slow operations" in shown.stdout and "Disk use per collection" in shown.stdout
    rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    slowest = f"{measured['label']} 420 query {CLUSTER}-shard0"
    assert any(r.startswith(slowest) for r in rows), shown.stdout
    assert f"{load['label']} {NS_KEY} total 200 215 KiB 72 KiB 8 KiB" in rows, shown.stdout
