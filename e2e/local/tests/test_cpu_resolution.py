"""Cluster tier: a BenchmarkRun's finer CPU resolution (spec.monitoring.cpuResolutionSeconds).

The session's stack (localplane.monitoring) scrapes every 5 s here (its Prometheus resource's
interval, set for this test; the operator is told so), as an installation would at its own
interval. A run at 1 s resolution gets its own PodMonitor from the operator, labelled as the
chart labels monitors (`release: kube-prometheus-stack`); the real Prometheus Operator selects
it and makes it a scrape job of kube-prometheus-stack's node-exporter pods at the PodMonitor's
interval, and Prometheus 3 scrapes it (localplane.monitoring). The run's step then has CPU
points every second (counted in Prometheus over the step's window and in the step's status)
and says it got 1 s; a run without the option keeps 5 s; the PodMonitor, and with it the scrape
job, is gone when the run ends.

What is real: the apiserver with the Prometheus Operator's CRDs, the Prometheus Operator, its
config reloader and Prometheus, node-exporter, the operator process and its PromQL, YCSB run by
the harness kubelet against FerretDB. What stands in: the wire model for the replica set's
state; KWOK pods for node-exporter's, each served by a real node-exporter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pymongo
import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.monitoring import RELEASE_LABELS, Monitoring
from localplane.operator import wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
DEFAULT_SECONDS = 5
# Long enough to tell the resolutions apart (15 points, one a second, against 3 or 4 at 5 s); each
# of the two runs took 30 s before, for the same verdict.
RUN_SECONDS = 15


@pytest.fixture
def coarse_prometheus(monitoring: Monitoring) -> Iterator[Monitoring]:
    with monitoring.scrape_interval(f"{DEFAULT_SECONDS}s"):
        yield monitoring


def run_step(
    kube_api: k8s.ApiClient, namespace: str, name: str, kind: str = "run"
) -> dict[str, Any]:
    run = bmr.get(kube_api, namespace, "benchmarkruns", name)
    assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
    return dict(next(s for s in run["status"]["steps"] if s["kind"] == kind))


def shifted(stamp: str, seconds: float) -> str:
    return (datetime.fromisoformat(stamp) + timedelta(seconds=seconds)).isoformat()


def samples(prom: Monitoring, job: str, window: dict[str, Any], metric: str = "") -> int:
    """Scrapes of `job` that landed in the step's window (one CPU's idle counter; with `metric`
    "up", every scrape tried, failed ones too)."""
    start = datetime.fromisoformat(window["start"]).timestamp()
    end = datetime.fromisoformat(window["end"]).timestamp()
    selector = (
        f'up{{job="{job}"}}'
        if metric == "up"
        else (f'node_cpu_seconds_total{{job="{job}", mode="idle", cpu="0"}}')
    )
    found = prom.query(f"count_over_time({selector}[{round(end - start)}s] @ {end:.0f})")
    return int(float(found[0]["value"][1])) if found else 0


def test_a_run_at_1s_cpu_resolution_gets_1s_points_and_the_default_keeps_5s(
    plane: Plane,
    prometheus_operator_crds: list[str],
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    ferretdb: FerretDB,
    coarse_prometheus: Monitoring,
    tmp_path: Path,
) -> None:
    prom = coarse_prometheus
    errors = len(prom.errors)  # the session stack's, before this test
    operator = bmr.start(
        plane,
        namespace,
        model,
        tmp_path / "operator.log",
        prom.url,
        kube_api,
        MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL=str(DEFAULT_SECONDS),
        # The chart's default monitorLabels: what the stack's Prometheus selects.
        MONGOBENCH_MONITOR_LABELS=json.dumps(RELEASE_LABELS),
    )
    fine_pool = f"podMonitor/{namespace}/fine-cpu/0"
    runs = {"coarse": {}, "fine": {"monitoring": {"cpuResolutionSeconds": 1}}}
    try:
        bmr.cluster(plane, namespace, kube_api)
        for name, extra in runs.items():
            # The runs share FerretDB, where the operator's prepare (sent to the wire
            # model) does not empty the collection: the second load would hit its keys.
            with pymongo.MongoClient(ferretdb.uri) as client:
                client["ycsb"].drop_collection("usertable")
            bmr.apply(
                plane,
                namespace,
                bmr.run_manifest(
                    name,
                    workloads=[{"name": "c"}],  # reads: FerretDB keeps up on a busy host
                    repetitions=1,
                    load={"recordCount": 100, "threads": 1},
                    run={
                        "durationSeconds": RUN_SECONDS,
                        "targetOpsPerSecond": 20,
                        "threads": 1,
                        "statusIntervalSeconds": 1,
                    },
                    clients={"parallelism": 1},
                    **extra,
                ),
            )
            bmr.wait_run(kube_api, namespace, name, ("Succeeded", "Failed"), timeout=300)
        # The run's end removed its PodMonitor, and with it the fine scrape job.
        wait_until(
            lambda: fine_pool not in prom.scrape_pools(),
            timeout=30,
            what="the fine scrape job removed",
        )
        assert prom.errors[errors:] == []
    finally:
        operator.stop()

    custom = k8s.CustomObjectsApi(kube_api)
    monitors = custom.list_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "podmonitors"
    )["items"]
    # The cluster's own PodMonitor (its exporters) stays; the runs' are gone.
    assert [m["metadata"]["name"] for m in monitors] == ["bc"], monitors

    coarse = run_step(kube_api, namespace, "coarse")["cpu"]
    fine = run_step(kube_api, namespace, "fine")["cpu"]
    assert (coarse["resolutionSeconds"], coarse["window"]["stepSeconds"]) == (DEFAULT_SECONDS,) * 2
    assert (fine["resolutionSeconds"], fine["window"]["stepSeconds"]) == (1, 1)
    assert "missing" not in fine or not any("resolution" in m for m in fine["missing"])

    def seconds(window: dict[str, Any]) -> float:
        start, end = (datetime.fromisoformat(window[k]).timestamp() for k in ("start", "end"))
        return end - start

    # Raw scrapes in each step's window: every second for the fine run's own job, every 5 s
    # for the installation's node-exporter job.
    fine_seconds = seconds(fine["window"])
    assert fine_seconds >= RUN_SECONDS - 2, fine["window"]
    fine_job = f"mongobench-cpu/{namespace}/fine"
    # Tried every second; a loaded host fails some 1 s scrapes (their timeout is the interval),
    # and still gives more than twice the points of 5 s.
    assert samples(prom, fine_job, fine["window"], "up") >= 0.8 * fine_seconds
    assert samples(prom, fine_job, fine["window"]) >= 0.5 * fine_seconds
    # The first Job waited for the fine series (decide.WaitForCpuScrape): Prometheus had them
    # before the load's window opened, so no step's window misses its first seconds. (The
    # step's start is stamped to the second, rounded down.)
    load_start = run_step(kube_api, namespace, "fine", "load")["startTime"]
    before_load = {"start": shifted(load_start, -60), "end": shifted(load_start, 1)}
    assert samples(prom, fine_job, before_load) >= 1, load_start
    assert samples(prom, "node-exporter", fine["window"]) <= fine_seconds / DEFAULT_SECONDS + 1
    assert samples(prom, fine_job, coarse["window"]) == 0  # no fine scrape outside its run

    # The status's figures rest on as many points: rate over 4 s, a point a second.
    fine_points = min(n["points"] for n in fine["nodes"])
    coarse_points = max(n["points"] for n in coarse["nodes"])
    assert fine_points >= 0.8 * (fine_seconds - 4), fine["nodes"]
    assert coarse_points <= seconds(coarse["window"]) / DEFAULT_SECONDS + 1, coarse["nodes"]
    assert all(0 <= n["avg"] <= 100 for n in fine["nodes"])
