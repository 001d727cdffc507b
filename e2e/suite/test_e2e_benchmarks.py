"""E2E scenarios, BenchmarkRun: written once, run on the local backend (`make test`) and on kind
(`make e2e-kind`).

What each backend proves: on `local`, the operator and the client pods' real commands (runner and
YCSB with the project's binding, executed by the harness kubelet) against FerretDB, the wire
model answering the sharding commands with FerretDB's real counts, CPU from a real Prometheus
scraping this machine's node-exporter; on `kind`, the same bodies with the client images on the
clients node, YCSB against real mongos and shards, CPU and the dashboard's series from
kube-prometheus-stack's Prometheus.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from backends.base import Backend, Env
from backends.manifests import (
    NEW_VERSION,
    OLD_VERSION,
    benchmarkrun,
    mongocluster,
    sharded,
)
from localplane.tools import REPO

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

COMPARISON = REPO / "dashboards" / "json" / "benchmark-comparison.json"
VARIABLE_QUERY = re.compile(r"^label_values\((?P<match>.*),\s*(?P<label>\w+)\)$")
RECORDS = 200


@pytest.fixture(scope="module")
def finished_run(backend: Backend) -> Iterator[tuple[Env, dict[str, Any]]]:
    """One A-F x 2 repetitions x 2 clients run on a sharded cluster (MongoDB 8.0; the restart
    scenario prepares a sharded collection on 7.0), for the tests below; its Env (and so the
    operator exporting the run) stays until they are done."""
    cluster = mongocluster("bench", sharded(2), NEW_VERSION)
    run = benchmarkrun(
        "af",
        "bench",
        load={"recordCount": RECORDS, "threads": 2},
        # No preSplitChunks: 8.0 ignores numInitialChunks for a hashed key (the operator
        # refuses it there) and places one chunk per shard itself.
        sharding={"key": "_id", "hashed": True},
    )
    with backend.env("benchmark", clusters=[cluster], clients=True) as env:
        env.apply(cluster)
        env.wait_phase("bench", "Ready", timeout=90)
        env.apply(run)
        yield env, env.wait_run("af", timeout=300)


def test_a_to_f_twice_with_two_clients_keeps_results_distribution_and_cpu(
    finished_run: tuple[Env, dict[str, Any]],
) -> None:
    env, run = finished_run
    status = run["status"]
    failed = [(s["label"], s.get("message")) for s in status["steps"] if s["phase"] != "Succeeded"]
    assert status["phase"] == "Succeeded", (failed, env.client_failures())
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
        # CPU per node from Prometheus: database and client nodes apart, as placed.
        cpu = step["cpu"]
        roles = {n["role"] for n in cpu["nodes"]}
        assert roles == {"cluster", "client"}, cpu["nodes"]
        assert cpu["cluster"] is not None and cpu["clients"] is not None
        # Disk, network and memory of the same nodes over the same window (node-exporter).
        resources = step["resources"]
        assert resources["window"] == cpu["window"]
        assert {n["name"] for n in resources["nodes"]} == {n["name"] for n in cpu["nodes"]}
        for node in resources["nodes"]:
            assert node["memory"]["totalBytes"] > 0 and node["memory"]["usedBytes"] > 0
            assert node["disk"]["writeBytesPerSecond"] >= 0 and "readIops" in node["disk"]
            assert node["network"]["receiveBytesPerSecond"] >= 0
        assert resources["cluster"]["memory"]["usedPercent"] > 0
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["CPUCollected"]["status"] == "True", status["conditions"]
    complete = conditions["ResourcesComplete"]
    if env.container_metrics:  # the kubelets' cAdvisor: each mongod container's own figures
        assert all(s["resources"]["mongod"] for s in runs), runs[0]["resources"]
        assert "no cAdvisor series" not in complete.get("message", "")
    else:  # missing is a condition, never zeros or a failed run
        assert (complete["status"], complete["reason"]) == ("False", "MetricsMissing"), complete
        assert "no cAdvisor series" in complete["message"] and "node " not in complete["message"]
        assert all(s["resources"].get("mongod") is None for s in runs)
    summary = {s["workload"]: s for s in status["summary"]}
    load = summary.pop("load")  # the load is a result too: one load, its time to load
    assert load["n"] == 1 and load["seconds"]["mean"] > 0
    assert sorted(summary) == list("abcdef")
    assert all(s["n"] == 2 and s["throughput"]["sd"] is not None for s in summary.values())
    snapshot = status["clusterSnapshot"]
    assert snapshot["topology"]["type"] == "Sharded" and snapshot["nodes"]
    assert status["progress"]["percent"] == 100

    # Prepared through mongos: hashed _id; after the load, every shard holds its share.
    assert "sharded on hashed _id" in status["steps"][0]["message"]
    load = next(s for s in status["steps"] if s["kind"] == "load")
    distribution = load["distribution"]
    assert distribution["collection"] == "ycsb.usertable"
    shares = {s["shard"]: s for s in distribution["shards"]}
    assert sorted(shares) == ["bench-shard0", "bench-shard1"]
    assert sum(s["documents"] for s in shares.values()) == RECORDS
    assert all(s["documents"] > 0 for s in shares.values())
    assert sum(s["percent"] for s in shares.values()) == pytest.approx(100, abs=0.2)
    assert env.get("mongoclusters", "bench")["status"]["distribution"] == distribution

    # Every insert of D and E added a record of its own (cleanup.data Never: the data stays).
    inserted = sum(
        s["result"]["operations"]["INSERT"]["count"] for s in runs if s["workload"] in "de"
    )
    assert inserted > 0
    assert env.mongo.count("bench", "ycsb.usertable") == RECORDS + inserted
    # Jobs are cleaned up on success; the results stay, in ConfigMaps and in status.
    assert not k8s.BatchV1Api(env.api).list_namespaced_job(env.namespace).items
    cms = k8s.CoreV1Api(env.api).list_namespaced_config_map(
        env.namespace, label_selector="mongobench.io/result-of"
    )
    parts = {
        cm.metadata.labels["mongobench.io/result-of"]: int(
            cm.metadata.labels["mongobench.io/parts"]
        )
        for cm in cms.items
    }
    assert len(parts) == 2 * 13  # 2 clients x (load + 12 runs) documents ...
    assert min(parts.values()) > 1  # ... each split in parts (RESULT_PART_BYTES) ...
    assert len(cms.items) == sum(parts.values())  # ... all of them there
    assert not env.mongodb_errors() and not env.refused_commands()


def _panels() -> list[tuple[str, dict[str, Any]]]:
    board = json.loads(COMPARISON.read_text())
    return [
        (inner["title"], t)
        for p in board["panels"]
        for inner in [p, *p.get("panels", [])]
        for t in inner.get("targets", [])
    ]


def test_comparison_dashboard_queries_return_the_run_from_prometheus(
    finished_run: tuple[Env, dict[str, Any]],
) -> None:
    """Every panel and variable query of the comparison dashboard, with the dashboard's
    variables set to this run, answers from the Prometheus the operator's metrics reach (the
    chart's ServiceMonitor on kind); the means it shows are the run's summary."""
    env, run = finished_run
    values = {"namespace": env.namespace, "run": "af", "workload": ".*", "__rate_interval": "1m"}

    def substitute(expr: str) -> str:
        return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", lambda m: values[m[1] or m[2]], expr)

    board = json.loads(COMPARISON.read_text())
    throughput = substitute(_panels()[0][1]["expr"])
    # Scraped once the operator exported the finished run (scrape interval: 1 s local, 5 s kind).
    # Six workloads and the load.
    env.wait(lambda: len(env.query(throughput)) == 7, 30, "the run's workloads and load scraped")
    for title, target in _panels():
        promql = substitute(target["expr"])
        result = env.query(promql)
        assert result, f"{title}: empty answer for {promql}"
        assert any(math.isfinite(float(r["value"][1])) for r in result), (title, result)
        assert all(r["metric"].get("run", "af") == "af" for r in result), (title, result)
    for variable in board["templating"]["list"]:
        if variable["type"] != "query":
            continue
        m = VARIABLE_QUERY.match(variable["query"])
        assert m, variable["query"]
        body = env.prometheus(f"label/{m['label']}/values", {"match[]": substitute(m["match"])})
        assert body["status"] == "success" and body["data"], (variable["name"], body)
    shown = {r["metric"]["workload"]: float(r["value"][1]) for r in env.query(throughput)}
    expected = {s["workload"]: s["throughput"]["mean"] for s in run["status"]["summary"]}
    assert shown == pytest.approx(expected)


def test_operator_crash_mid_run_resumes_without_duplicate_jobs(backend: Backend) -> None:
    cluster = mongocluster("one", sharded(1), OLD_VERSION)
    run = benchmarkrun(
        "rs",
        "one",
        workloads=[{"name": "c"}],
        repetitions=2,
        sharding={"key": "_id", "hashed": True, "preSplitChunks": 2},
        cleanup={"jobs": "Never", "data": "OnSuccess"},
    )
    with backend.env("restart", clusters=[cluster], clients=True) as env:
        batch = k8s.BatchV1Api(env.api)

        def jobs() -> list[Any]:
            return list(batch.list_namespaced_job(env.namespace).items)

        env.apply(cluster)
        env.wait_phase("one", "Ready", timeout=90)
        env.apply(run)
        env.wait(
            lambda: any("run-c" in j.metadata.name for j in jobs()), 60, "a run Job", interval=0.05
        )
        uids = {j.metadata.name: j.metadata.uid for j in jobs()}
        env.crash_operator()
        finished = env.wait_run("rs", timeout=240)
        assert finished["status"]["phase"] == "Succeeded", (
            finished["status"],
            env.client_failures(),
        )
        names = [j.metadata.name for j in jobs()]
        assert len(names) == len(set(names)) == 3  # load, run c #1, run c #2: each exactly once
        assert all(
            uids[j.metadata.name] == j.metadata.uid for j in jobs() if j.metadata.name in uids
        )
        steps = finished["status"]["steps"]
        assert all(s["result"]["throughput"] > 0 for s in steps if s["kind"] == "run")
        # cleanup.data OnSuccess: the collection dropped through mongos at the end.
        dropped = env.wait(
            lambda: [e.message for e in env.events("rs") if e.reason == "DataDropped"],
            20,
            "a DataDropped event",
        )
        assert dropped == ["ycsb.usertable dropped"]
        assert not env.mongodb_errors() and not env.refused_commands()


def test_a_hashed_key_with_a_zone_is_presplit_onto_the_zones_shard(
    backend: Backend, version: str
) -> None:
    """Issue 39: a hashed key with one zone over the whole key (the only presplitHashedZones
    layout MongoDB takes for a hashed first field): shardCollection pre-splits the zone onto its
    shard, and the load lands there. kind: every release on real mongos and shards."""
    cluster = mongocluster("zoned", sharded(2), version)
    run = benchmarkrun(
        "hz",
        "zoned",
        workloads=[{"name": "c"}],
        repetitions=1,
        sharding={
            "key": "_id",
            "hashed": True,
            "zones": [{"name": "all", "shards": ["zoned-shard1"]}],
        },
    )
    with backend.env("hashed-zones", clusters=[cluster], clients=True) as env:
        env.apply(cluster)
        env.wait_phase("zoned", "Ready", timeout=90)
        env.apply(run)
        finished = env.wait_run("hz", timeout=240)
        status = finished["status"]
        assert status["phase"] == "Succeeded", (status, env.client_failures())
        assert "sharded on hashed _id" in status["steps"][0]["message"]
        assert set(env.mongo.chunks("zoned", "ycsb.usertable")) == {"zoned-shard1"}
        load = next(s for s in status["steps"] if s["kind"] == "load")
        held = {
            s["shard"]: s["documents"] for s in load["distribution"]["shards"] if s["documents"]
        }
        assert held == {"zoned-shard1": RECORDS}
        assert not env.mongodb_errors() and not env.refused_commands()
