"""Unit tier: a BenchmarkRun with spec.knee and spec.cost through the controller's I/O half
(orchestrate) against an in-memory Kubernetes API: each measured probe adds the next one until
the search is done, then the runs at the knee; status.knee and each step's cost as a user
reads them. The clients are a simulated server whose p99 crosses the limit at a known load."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.act import orchestrate
from mongobench.benchmarkrun.act.orchestrate import DataOps
from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.decide import knee
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench_results import configmaps, hdr
from mongobench_results import knee as search
from mongobench_results.document import OpResult, Window, build_document

pytestmark = pytest.mark.unit

NS = "ns"
CAPACITY = 1000.0  # ops/s the simulated server carries
BASE_MS = 1.0  # its p99 when idle; p99 = BASE / (1 - load / CAPACITY): 10 ms at 900 ops/s
KNEE_SPEC = {
    "latency": {"percentile": "p99", "limitMs": 10},
    "startOpsPerSecond": 100,
    "maxOpsPerSecond": 5000,
    "resolution": 0.05,
    "repetitions": 3,
}
PRICES = {"prices": {"m5.large": 0.5}, "currency": "EUR"}


class Data(DataOps):
    def prepare(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        return "prepared"

    def drop(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        return "dropped"


def run_object(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"namespace": NS, "name": "r", "uid": "u1"},
        "spec": {
            "clusterRef": {"name": "c"},
            "workloads": [{"name": "c"}],
            "load": {"skip": True},
            "knee": KNEE_SPEC,
            **spec,
        },
    }


def world(**spec: Any) -> FakeKube:
    cluster = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"namespace": NS, "name": "c"},
        "spec": {},
        "status": {"phase": cond.PHASE_READY},
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"node.kubernetes.io/instance-type": "m5.large"}},
    }
    return FakeKube(cluster, node, run_object(**spec))


def status(kube: FakeKube) -> dict[str, Any]:
    run = kube.get("BenchmarkRun", NS, "r")
    assert run is not None
    return dict(run.get("status") or {})


def measure(kube: FakeKube, entry: dict[str, Any]) -> None:
    """The Job of the step ran: its pod on node n1, its client's document with the simulated
    server's p99 and throughput at the step's offered load, the Job complete."""
    offered = float(entry["offeredOpsPerSecond"])
    achieved = min(offered, CAPACITY)
    p99_us = int(1000 * BASE_MS / (1 - min(offered, 0.995 * CAPACITY) / CAPACITY))
    histogram = hdr.new_histogram()
    for _ in range(100):
        histogram.record_value(p99_us)
    start = unit_clock()
    window_us = int(100 / achieved * 1_000_000)
    document = build_document(
        driver="ycsb",
        driver_version="test",
        phase="run",
        workload="c",
        properties={},
        labels={},
        client_index=0,
        clients=1,
        threads=64,
        start=start,
        end=start,
        window=Window(1_700_000_000_000_000, 1_700_000_000_000_000 + window_us),
        operations={"READ": OpResult(histogram, {"OK": 100})},
        transactions=100,
        cpu_user_s=0.1,
        cpu_system_s=0.1,
        error=None,
        expected_ops=None,
        throttled=True,
    )
    job = entry["job"]
    for configmap in configmaps.manifests(document, NS, f"{job}-c0"):
        kube.put(configmap)
    kube.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": NS, "name": f"{job}-0", "labels": {"job-name": job}},
            "spec": {"nodeName": "n1"},
        }
    )
    kube.objects[("Job", NS, job)]["status"] = {
        "conditions": [{"type": "Complete", "status": "True"}],
        # The step's window: 30 s after the Job was created.
        "completionTime": (unit_clock() + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def drive(kube: FakeKube, passes: int = 400) -> list[orchestrate.Outcome]:
    outcomes = []
    for _ in range(passes):
        outcome = orchestrate.advance(kube, NS, "r", OperatorConfig(), Data(), clock=unit_clock)
        if outcome is None:
            break
        outcomes.append(outcome)
        running = [s for s in status(kube).get("steps", []) if s["phase"] == cond.STEP_RUNNING]
        for entry in running:
            measure(kube, entry)
    return outcomes


def test_the_plan_starts_with_one_probe_per_workload_at_the_start_load() -> None:
    spec = BenchmarkRunSpec.parse(run_object()["spec"])
    plan = make_plan(spec)
    assert [s.label for s in plan] == ["prepare", "probe c #1 (100 ops/s)", "cleanup"]
    job = jobs.build_job(spec, plan[1], jobs.RunRef("r", NS, "u1", "s", "uri", "c", "img", 1))
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "target=100" in args and "--phase" in args


def test_the_offered_load_is_shared_between_the_clients() -> None:
    spec = BenchmarkRunSpec.parse(run_object(clients={"parallelism": 4})["spec"])
    step = make_plan(spec)[1]
    assert ("target", "25") in jobs.ycsb_properties(spec, step)


def test_the_run_searches_the_knee_then_repeats_at_it_and_reports_it() -> None:
    kube = world()
    outcomes = drive(kube)
    now = status(kube)
    assert now["phase"] == cond.RUN_SUCCEEDED
    probes = [s for s in now["steps"] if s["kind"] == "probe"]
    runs = [s for s in now["steps"] if s["kind"] == "run"]
    # Doubling 100 .. 1600 (fails), then bisection towards 900 ops/s.
    assert [p["offeredOpsPerSecond"] for p in probes[:5]] == [100, 200, 400, 800, 1600]
    assert (probes[0]["achievedOpsPerSecond"], probes[0]["p99Ms"]) == (100.0, 1.111)
    assert probes[4]["achievedOpsPerSecond"] == 1000.0 and probes[4]["p99Ms"] > 10
    found = now["knee"]["workloads"][0]
    true_knee = CAPACITY * (1 - BASE_MS / 10)
    assert abs(found["offeredOpsPerSecond"] - true_knee) / true_knee <= 0.05
    assert found["probes"] == len(probes) < found["gridProbes"]
    assert found["throughput"]["n"] == 3 and found["met"] is True
    assert found["latencyMs"]["mean"] <= 10
    assert [r["offeredOpsPerSecond"] for r in runs] == [found["offeredOpsPerSecond"]] * 3
    assert now["summary"][0]["workload"] == "c"  # the runs at the knee are the trials
    messages = [m for o in outcomes for _, reason, m in o.events if reason == "StepSucceeded"]
    assert "probe c #1 (100 ops/s): achieved 100 ops/s, p99 1.11 ms" in messages


def test_each_measured_step_costs_its_nodes_hours_and_the_run_sums_it_up() -> None:
    kube = world(cost=PRICES)
    drive(kube)
    now = status(kube)
    run = next(s for s in now["steps"] if s["kind"] == "run")
    assert run["cost"]["nodes"] == {"m5.large": 1} and run["cost"]["currency"] == "EUR"
    # 30 s of one node at 0.5 an hour for 100 operations.
    assert run["cost"]["nodeHours"] == pytest.approx(30 / 3600, rel=0.1)
    assert run["cost"]["perMillionOperations"] == pytest.approx(
        0.5 * 30 / 3600 / 100 * 1e6, rel=0.1
    )
    assert now["cost"]["workloads"][0]["perMillionOperations"] > 0
    assert "problems" not in now["cost"]


def test_a_missing_price_is_said_not_guessed() -> None:
    kube = world(cost={"prices": {"c5.xlarge": 0.2}})
    drive(kube)
    now = status(kube)
    assert now["phase"] == cond.RUN_SUCCEEDED  # the run does not fail for its cost
    assert now["cost"]["problems"] == ["no price for m5.large"]
    assert "perMillionOperations" not in now["cost"]["workloads"][0]


def test_prices_from_a_configmap() -> None:
    kube = world(cost={"configMapRef": {"name": "prices"}})
    kube.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": NS, "name": "prices"},
            "data": {"m5.large": "0.25", "currency": "GBP"},
        }
    )
    drive(kube)
    assert status(kube)["cost"]["currency"] == "GBP"
    assert status(kube)["cost"]["workloads"][0]["perMillionOperations"] > 0


def test_the_plan_replays_the_search_from_the_recorded_probes() -> None:
    spec = BenchmarkRunSpec.parse(run_object()["spec"])
    recorded = [
        {
            "index": 1,
            "kind": "probe",
            "label": "probe c #1 (100 ops/s)",
            "workload": "c",
            "phase": "Succeeded",
            "offeredOpsPerSecond": 100,
            "result": {"throughput": 100.0, "operations": {"READ": {"p99": 20_000}}},
        }
    ]
    plan = knee.with_knee(spec, make_plan(spec), {"steps": recorded})
    assert [s.label for s in plan] == ["prepare", "probe c #1 (100 ops/s)", "cleanup"]
    found = knee.status(spec, recorded)
    assert found is not None
    assert found["workloads"][0]["reason"] == "fails at the start 100"
    assert spec.knee is not None
    grid = search.grid_probes(knee.target_of(spec.knee))
    assert found["workloads"][0]["gridProbes"] == grid == 81  # 100 .. 5000 by 5%
