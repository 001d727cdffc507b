"""Unit tier: the BenchmarkExperiment controller's I/O half (experiment.reconcile) against an
in-memory Kubernetes API (fake_kube): the clusters and runs it creates and deletes, the status
it writes and the Events it posts as its cells move on, fail or are refused."""

from __future__ import annotations

from typing import Any

import pytest
from fake_kube import FakeKube

from mongobench.api import SpecError
from mongobench.experiment import objects, reconcile
from mongobench.experiment.matrix import Slot
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition

pytestmark = pytest.mark.unit

NS = "ns"
KIND = "BenchmarkExperiment"


def experiment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": KIND,
        "metadata": {"namespace": NS, "name": "x"},
        "spec": {
            "cluster": {"version": "7.0.14", "topology": {"type": "ReplicaSet"}},
            "run": {"workloads": [{"name": "a"}]},
            "dimensions": [
                {"name": "threads", "target": "run", "field": "run.threads", "values": [1, 4]}
            ],
            "repetitions": 1,
            **spec,
        },
    }


def advance(kube: FakeKube) -> reconcile.Outcome | None:
    return reconcile.advance(kube, NS, "x")


def status(kube: FakeKube) -> dict[str, Any]:
    found = kube.get(KIND, NS, "x")
    assert found is not None
    return dict(found["status"])


def set_phase(kube: FakeKube, kind: str, name: str, phase: str) -> None:
    kube.objects[(kind, NS, name)]["status"] = {"phase": phase}


CLUSTER = objects.cluster_name("x", 0)
RUNS = [objects.run_name("x", Slot(0, 1)), objects.run_name("x", Slot(1, 1))]


def test_an_experiment_creates_its_cluster_then_one_run_at_a_time_then_cleans_up() -> None:
    kube = FakeKube(experiment())
    outcome = advance(kube)
    assert outcome is not None and outcome.phase == cond.RUN_RUNNING
    assert kube.verbs("create") == [CLUSTER]  # validated by dry runs, then created
    assert kube.reasons() == [cond.EVENT_CELL_CLUSTER_CREATED]
    assert status(kube)["phase"] == cond.PHASE_PENDING  # nothing existed when it looked
    assert status(kube)["validatedGeneration"] == 1

    advance(kube)  # the cluster is not Ready yet: nothing to start
    assert kube.verbs("create") == [CLUSTER]
    set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_READY)
    advance(kube)
    assert kube.verbs("create") == [CLUSTER, RUNS[0]]
    assert status(kube)["phase"] == cond.RUN_RUNNING
    assert status(kube)["progress"]["current"].startswith("threads=1")

    set_phase(kube, "BenchmarkRun", RUNS[0], cond.RUN_SUCCEEDED)
    advance(kube)
    assert kube.verbs("create")[-1] == RUNS[1]  # one run at a time on the cluster
    cells = status(kube)["cells"]
    # As listed before this pass created the second run: it shows from the next one.
    assert [c["phase"] for c in cells] == [cond.RUN_SUCCEEDED, cond.PHASE_PENDING]
    assert cells[0]["cluster"] == CLUSTER

    set_phase(kube, "BenchmarkRun", RUNS[1], cond.RUN_SUCCEEDED)
    advance(kube)  # every cell done: the cluster goes (clusterPolicy Delete)
    assert kube.verbs("delete") == [CLUSTER]
    assert kube.reasons()[-1] == cond.EVENT_CELL_CLUSTER_DELETED
    outcome = advance(kube)  # gone: the experiment ends
    assert outcome is not None and outcome.phase == cond.RUN_SUCCEEDED
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED and final["completionTime"]
    assert "comparison" in final
    succeeded = get_condition(final["conditions"], cond.SUCCEEDED)
    assert succeeded is not None and succeeded["status"] == cond.TRUE
    assert kube.events[-1][2:4] == (cond.NORMAL, cond.EVENT_EXPERIMENT_FINISHED)
    assert advance(kube) is None  # over


def test_a_cluster_that_fails_fails_its_cells_and_is_kept_when_asked() -> None:
    kube = FakeKube(experiment(clusterPolicy="KeepOnFailure"))
    advance(kube)
    set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_FAILED)
    outcome = advance(kube)
    assert outcome is not None
    assert cond.EVENT_CELL_FAILED in kube.reasons()
    assert kube.events[kube.reasons().index(cond.EVENT_CELL_FAILED)][2] == cond.WARNING
    assert {(f["cell"], f["repetition"]) for f in status(kube)["failedSlots"]} == {(0, 1), (1, 1)}
    advance(kube)
    assert cond.EVENT_CELL_CLUSTER_KEPT in kube.reasons()
    assert status(kube)["keptGroups"] == [0]
    assert status(kube)["phase"] == cond.RUN_FAILED
    assert kube.verbs("delete") == []
    assert kube.events[-1][2:4] == (cond.WARNING, cond.EVENT_EXPERIMENT_FINISHED)
    assert "error" in status(kube)["comparison"]  # the baseline has no succeeded run


def test_a_run_an_earlier_reconcile_created_is_not_created_twice() -> None:
    kube = FakeKube(experiment())
    advance(kube)
    set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_READY)
    kube.put({"kind": "BenchmarkRun", "metadata": {"namespace": NS, "name": RUNS[0]}})
    advance(kube)  # its list missed it (no labels here): the create answers 409, taken as done
    assert kube.reasons()[-1] == cond.EVENT_CELL_RUN_CREATED
    assert kube.verbs("create") == [CLUSTER]


def test_a_cell_the_apiserver_would_refuse_refuses_the_experiment() -> None:
    kube = FakeKube(experiment())
    kube.refuse("create", "BenchmarkRun", 422, 'spec.run.threads: Invalid value: "four"')
    with pytest.raises(SpecError, match=r"would be refused: spec\.run\.threads"):
        advance(kube)
    assert kube.writes == []


def test_a_deleted_or_absent_experiment_is_left_alone() -> None:
    kube = FakeKube(experiment())
    assert reconcile.advance(kube, NS, "other") is None
    kube.objects[(KIND, NS, "x")]["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    assert advance(kube) is None
    assert kube.writes == []


def finished_with_loads(kube: FakeKube, name: str, load_seconds: float) -> None:
    """A run that succeeded with two measured loads of 200 records and one run of workload a,
    as the operator records them in the run's status."""

    def result(seconds: float, op: str) -> dict[str, Any]:
        return {
            "status": "Succeeded",
            "throughput": 200 / seconds,
            "operationsTotal": 200,
            "runtimeSeconds": seconds,
            "window": {"seconds": seconds},
            "operations": {op: {"count": 200, "errors": 0, "avg": 900.0, "p99": 2000.0}},
        }

    steps = [
        {"index": 0, "kind": "prepare", "label": "prepare", "phase": cond.STEP_SUCCEEDED},
        *(
            {
                "index": i,
                "kind": "load",
                "label": f"load #{i}",
                "repetition": i,
                "phase": cond.STEP_SUCCEEDED,
                "result": result(load_seconds + i / 100, "INSERT"),
            }
            for i in (1, 2)
        ),
        {
            "index": 3,
            "kind": "run",
            "label": "run a #1",
            "workload": "a",
            "repetition": 1,
            "phase": cond.STEP_SUCCEEDED,
            "result": result(1.0, "READ"),
        },
    ]
    kube.objects[("BenchmarkRun", NS, name)]["status"] = {
        "phase": cond.RUN_SUCCEEDED,
        "steps": steps,
    }


def test_the_cells_summaries_and_the_comparison_carry_the_loads() -> None:
    kube = FakeKube(experiment(clusterPolicy="Keep"))
    advance(kube)
    set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_READY)
    advance(kube)
    finished_with_loads(kube, RUNS[0], 2.0)
    advance(kube)
    finished_with_loads(kube, RUNS[1], 1.0)
    advance(kube)
    advance(kube)
    final = status(kube)
    loads = [c["summary"]["load"] for c in final["cells"]]
    assert [(s["n"], s["seconds"]) for s in loads] == [(2, 2.015), (2, 1.015)]
    rows = [r for r in final["comparison"]["rows"] if r["workload"] == "load"]
    assert {r["metric"] for r in rows} >= {"time to load", "throughput"}
