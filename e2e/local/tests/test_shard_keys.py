"""Cluster tier: a sharded BenchmarkRun with a compound ranged shard key, pre-split at explicit
points, a zone and a secondary index, on the local plane.

What is real: the apiserver (the CRD's schema and CEL rules), the operator process, the Jobs'
commands (YCSB with the project's binding, executed by the harness kubelet against FerretDB),
the `mongobench` CLI. What stands in: the wire model (localplane.mongomodel) for the sharded
cluster's MongoDB state: its rules for chunks, splits, moveChunk, zones and indexes are the
model's (see its docstring), and the documents per shard are those it is told were loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_benchmarkexperiment import register_sharded
from test_cli import cli

from localplane.executor import PodExecutor
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
NS_KEY = "ycsb.usertable"


def test_compound_ranged_key_presplit_zone_and_index_reach_mongodb_status_and_describe(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    register_sharded(model, namespace, "sk", 3)
    model.sharded.documents[NS_KEY] = 300  # what the model reports as loaded
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.apply(
            plane,
            namespace,
            {
                "apiVersion": f"{bmr.GROUP}/{bmr.VERSION}",
                "kind": "MongoCluster",
                "metadata": {"name": "sk"},
                "spec": {
                    "version": "7.0.14",
                    "topology": {
                        "type": "Sharded",
                        "sharded": {
                            "shards": 3,
                            "membersPerShard": 1,
                            "configServers": 1,
                            "mongos": 1,
                        },
                    },
                },
            },
        )
        wait_until(
            lambda: (
                bmr.get(kube_api, namespace, "mongoclusters", "sk").get("status", {}).get("phase")
                == "Ready"
            ),
            timeout=120,
            what="sharded cluster Ready",
        )
        manifest = bmr.run_manifest(
            "keys",
            clusterRef={"name": "sk"},
            workloads=[{"name": "a"}],
            repetitions=1,
            clients={"parallelism": 1},
            sharding={
                "fields": [{"field": "field0"}, {"field": "_id"}],
                "splitPoints": [{"field0": "?"}, {"field0": "_"}],
                "zones": [{"name": "upper", "shards": ["sk-shard2"], "min": {"field0": "_"}}],
            },
            indexes=[
                {
                    "name": "field1-field2",
                    "keys": [{"field": "field1"}, {"field": "field2", "type": "Descending"}],
                }
            ],
        )
        bmr.apply(plane, namespace, manifest)
        run = bmr.wait_run(kube_api, namespace, "keys", ("Succeeded", "Failed"), timeout=300)
    finally:
        operator.stop()
    status = run["status"]
    steps = {s["label"]: s for s in status["steps"]}
    assert status["phase"] == "Succeeded", [(s["label"], s.get("message")) for s in steps.values()]
    prepare = status["steps"][0]["message"]
    assert prepare == (
        f"{NS_KEY} recreated, sharded on compound {{field0: 1, _id: 1}}, 2 chunk(s) moved, "
        "indexes field1-field2"
    )
    # What MongoDB (the model) was asked: the key in order, 3 chunks [MinKey, "?"), ["?", "_"),
    # ["_", MaxKey) round-robin with the zone's chunk on its shard, the zone, the index
    assert model.sharded_history[0] == (NS_KEY, {"field0": 1, "_id": 1})
    held = [
        (c["min"]["field0"] if isinstance(c["min"]["field0"], str) else "min", c["shard"])
        for c in model.sharded.chunks[NS_KEY]
    ]
    assert held == [("min", "sk-shard0"), ("?", "sk-shard1"), ("_", "sk-shard2")]
    assert model.sharded.zones == {"sk-shard2": {"upper"}}
    assert [ix["name"] for ix in model.sharded.indexes[NS_KEY]] == ["field1-field2"]
    # the distribution after each load, per shard, in the run's status and the cluster's
    loads = [s for s in status["steps"] if s["kind"] == "load"]
    assert len(loads) == 1
    for load in loads:
        shards = [(x["shard"], x["documents"], x["chunks"]) for x in load["distribution"]["shards"]]
        assert shards == [("sk-shard0", 100, 1), ("sk-shard1", 100, 1), ("sk-shard2", 100, 1)]
        assert all(x["dataBytes"] > 0 for x in load["distribution"]["shards"])
    cluster = bmr.get(kube_api, namespace, "mongoclusters", "sk")
    assert cluster["status"]["distribution"]["documents"] == 300
    shown = cli(plane, "describe", "keys", "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    assert "Shard distribution after each load" in shown.stdout
    assert f"{loads[0]['label']} sk-shard0 100 33.3 0.1 MiB 1" in rows, shown.stdout


def test_layouts_mongodb_refuses_or_ignores_fail_the_run_with_the_reason_and_send_nothing(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    """Issue 39, cluster tier against the model as 8.0 routers: a zone layout no release takes
    is refused when the run starts; preSplitChunks for a hashed key, which 8.0 ignores, at
    prepare before the drop. Neither run sends the cluster a command that changes it."""
    register_sharded(model, namespace, "z8", 2)
    model.server_version, model.fcv = "8.0.4", "8.0"
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.apply(
            plane,
            namespace,
            {
                "apiVersion": f"{bmr.GROUP}/{bmr.VERSION}",
                "kind": "MongoCluster",
                "metadata": {"name": "z8"},
                "spec": {
                    "version": "8.0.4",
                    "topology": {
                        "type": "Sharded",
                        "sharded": {"shards": 2, "membersPerShard": 1, "configServers": 1},
                    },
                },
            },
        )
        wait_until(
            lambda: (
                bmr.get(kube_api, namespace, "mongoclusters", "z8").get("status", {}).get("phase")
                == "Ready"
            ),
            timeout=120,
            what="sharded cluster Ready",
        )
        eu = {"region": "eu"}
        runs = {
            "same-prefix": {
                "fields": [{"field": "region"}, {"field": "_id", "type": "Hashed"}],
                "zones": [{"name": "eu", "shards": ["z8-shard0"], "min": eu, "max": eu}],
            },
            "presplit-on-8": {"key": "_id", "hashed": True, "preSplitChunks": 8},
        }
        for name, sharding in runs.items():
            manifest = bmr.run_manifest(
                name, clusterRef={"name": "z8"}, workloads=[{"name": "a"}], sharding=sharding
            )
            bmr.apply(plane, namespace, manifest)
        done = {
            name: bmr.wait_run(kube_api, namespace, name, ("Succeeded", "Failed"), timeout=120)
            for name in runs
        }
    finally:
        operator.stop()
    told = {name: json.dumps(run["status"]) for name, run in done.items()}
    assert all(run["status"]["phase"] == "Failed" for run in done.values()), told
    assert "max must differ from min in a field before the hashed field _id" in told["same-prefix"]
    assert "ignores numInitialChunks for a hashed key" in told["presplit-on-8"]
    assert (model.sharded_history, model.dropped, model.sharded.zones) == ([], [], {})
    assert model.refusals == []
