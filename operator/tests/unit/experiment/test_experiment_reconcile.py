"""Unit tier: the BenchmarkExperiment controller's I/O half (experiment.reconcile) against an
in-memory Kubernetes API (fake_kube): the clusters and runs it creates and deletes, the status
it writes and the Events it posts as its cells move on, fail or are refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock

from mongobench.api import SpecError
from mongobench.config import OperatorConfig
from mongobench.experiment.act import reconcile
from mongobench.experiment.build import objects
from mongobench.experiment.decide.matrix import Slot
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
    # The configuration a test made current (its default archive), passed as the handler does.
    return reconcile.advance(kube, NS, "x", unit_clock(), OperatorConfig.current())


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


def test_one_factor_at_a_time_without_a_baseline_or_with_exclude_is_refused_first() -> None:
    """The schema cannot see baseline, include or exclude (values of no declared type): the
    first reconcile refuses them (SpecError: Succeeded False, InvalidSpec), nothing created."""
    for spec, message in (
        ({}, "must give a value for every dimension"),
        ({"baseline": {"threads": 1}, "exclude": [{"threads": 4}]}, "no include or exclude"),
    ):
        kube = FakeKube(experiment(design="OneFactorAtATime", **spec))
        with pytest.raises(SpecError, match=message):
            advance(kube)
        assert kube.writes == []


def test_a_deleted_or_absent_experiment_is_left_alone() -> None:
    kube = FakeKube(experiment())
    assert reconcile.advance(kube, NS, "other", unit_clock(), OperatorConfig()) is None
    kube.objects[(KIND, NS, "x")]["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    assert advance(kube) is None
    assert kube.writes == []


# --- adaptive repetitions (repeatUntil) in rounds ------------------------------------------------

UNTIL = {"metric": "throughput", "relativeHalfWidth": 0.05, "maxRepetitions": 4}


def finish_run(kube: FakeKube, name: str, throughput: float, valid: bool = True) -> None:
    """The run succeeded with one measured step of workload a."""
    kube.objects[("BenchmarkRun", NS, name)]["status"] = {
        "phase": cond.RUN_SUCCEEDED,
        "steps": [
            {
                "index": 2,
                "kind": "run",
                "workload": "a",
                "repetition": 1,
                "phase": cond.STEP_SUCCEEDED,
                "result": {"throughput": throughput, "operations": {}},
                "validity": {"valid": valid, "reasons": [], "attempt": 1},
            }
        ],
    }


def run_rounds(kube: FakeKube, throughputs: dict[str, list[float]], valid: bool = True) -> None:
    """Advance, finishing each run created with the next value of its cell."""
    left = {k: list(v) for k, v in throughputs.items()}
    for _ in range(40):
        outcome = advance(kube)
        if outcome is None or outcome.phase != cond.RUN_RUNNING:
            return
        for (kind, _, name), obj in list(kube.objects.items()):
            if kind == "MongoCluster" and not obj.get("status"):
                set_phase(kube, kind, name, cond.PHASE_READY)
            if kind == "BenchmarkRun" and not obj.get("status"):
                cell = obj["metadata"]["labels"][objects.CELL_LABEL]
                finish_run(kube, name, left[cell].pop(0), valid)


def test_randomized_rounds_with_a_met_target_stop_after_the_minimum() -> None:
    kube = FakeKube(experiment(repetitions=2, repeatUntil=UNTIL, order="RandomizedRounds", seed=5))
    run_rounds(kube, {"0": [1000.0, 1001.0], "1": [2000.0, 2002.0]})
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED
    assert final["seed"] == 5 and final["rounds"] == 2
    assert final["repetitions"]["rounds"] == 2
    assert [(c["name"], c["valid"], c["met"]) for c in final["repetitions"]["cells"]] == [
        ("threads=1", 2, True),
        ("threads=4", 2, True),
    ]
    target = get_condition(final["conditions"], cond.TARGET_MET)
    assert target is not None and (target["status"], target["reason"]) == (
        cond.TRUE,
        cond.TARGET_REACHED,
    )
    assert cond.EVENT_ROUND_ADDED not in kube.reasons()
    assert len(final["order"]) == 4


def test_a_wide_interval_adds_rounds_up_to_the_maximum_and_says_the_target_was_missed() -> None:
    kube = FakeKube(experiment(repetitions=2, repeatUntil=UNTIL, order="RandomizedRounds", seed=5))
    noisy = [1000.0, 1400.0, 800.0, 1300.0]
    run_rounds(kube, {"0": [1000.0, 1001.0, 1000.5, 1000.0], "1": noisy})
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED and final["rounds"] == 4
    assert kube.reasons().count(cond.EVENT_ROUND_ADDED) == 2
    # Cell 0 was done after 2 rounds but runs every round: a round runs every cell.
    assert [(c["valid"], c["met"]) for c in final["repetitions"]["cells"]] == [
        (4, True),
        (4, False),
    ]
    target = get_condition(final["conditions"], cond.TARGET_MET)
    assert target is not None and (target["status"], target["reason"]) == (
        cond.FALSE,
        cond.TARGET_NOT_REACHED,
    )
    assert "threads=4" in target["message"]
    # One cluster for both cells (run dimensions): kept between rounds, deleted once at the end.
    assert kube.verbs("create", "MongoCluster") == [CLUSTER]
    assert kube.verbs("delete") == [CLUSTER]


def test_invalid_trials_do_not_count_toward_the_target() -> None:
    kube = FakeKube(experiment(repetitions=2, repeatUntil=UNTIL))
    run_rounds(kube, {"0": [1000.0] * 4, "1": [1000.0] * 4}, valid=False)
    final = status(kube)
    assert final["rounds"] == 4  # no valid trial ever: every round the maximum allows
    assert [(c["valid"], c["met"]) for c in final["repetitions"]["cells"]] == [
        (0, False),
        (0, False),
    ]


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


def finished_experiment() -> dict[str, Any]:
    """The status of the two-cell experiment after both runs loaded (2 s, then 1 s) and ran."""
    kube = FakeKube(experiment(clusterPolicy="Keep"))
    advance(kube)
    set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_READY)
    advance(kube)
    finished_with_loads(kube, RUNS[0], 2.0)
    advance(kube)
    finished_with_loads(kube, RUNS[1], 1.0)
    advance(kube)
    advance(kube)
    return status(kube)


def test_the_cells_summaries_and_the_comparison_carry_the_loads() -> None:
    final = finished_experiment()
    loads = [c["summary"]["load"] for c in final["cells"]]
    assert [(s["n"], s["seconds"]) for s in loads] == [(2, 2.015), (2, 1.015)]
    rows = [r for r in final["comparison"]["rows"] if r["workload"] == "load"]
    assert {r["metric"] for r in rows} >= {"time to load", "throughput"}


def test_the_comparison_in_status_opens_with_a_headline_per_cell() -> None:
    """Unit tier: status.comparison.headlines, the sentence `mongobench compare` prints first,
    naming what the cell changes (the dimension's field)."""
    comparison = finished_experiment()["comparison"]
    # Two runs of one repetition each: no verdict, and the sentence says so.
    assert comparison["headlines"] == [
        "threads=4 vs threads=1 (run.threads 4 vs 1): throughput too few valid trials on load, a"
    ]


def test_an_ended_experiments_summary_with_its_deploy_timings_goes_to_the_runs_archive(
    tmp_path: Path,
) -> None:
    """The deploy timings (status.cells[].deployments) outlive the live object: at the end the
    experiment is written beside its runs (<prefix>/experiments/<name>), manifest last."""
    from mongobench_archive import open_root

    body = experiment(clusterPolicy="Keep", archive={"prefix": "studies/x"})
    body["metadata"]["uid"] = "uid-x"
    kube = FakeKube(body)
    previous = OperatorConfig.current()
    replace(previous, archive_url=str(tmp_path)).make_current()
    try:
        advance(kube)
        kube.objects[("MongoCluster", NS, CLUSTER)]["status"] = {
            "phase": cond.PHASE_READY,
            "timings": {"provisionedSeconds": 4.0, "configuredSeconds": 9.0, "readySeconds": 12.5},
        }
        advance(kube)
        set_phase(kube, "BenchmarkRun", RUNS[0], cond.RUN_SUCCEEDED)
        advance(kube)
        assert "archive" not in status(kube)  # nothing written before the end
        set_phase(kube, "BenchmarkRun", RUNS[1], cond.RUN_SUCCEEDED)
        advance(kube)
    finally:
        previous.make_current()
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED
    root = tmp_path / "studies" / "x" / "experiments" / "x"
    assert final["archive"] == {"location": str(root / NS / "x" / "uid-x")}
    (doc,) = open_root(str(root)).experiments()
    assert doc["status"]["phase"] == cond.RUN_SUCCEEDED
    (deployed,) = doc["status"]["cells"][0]["deployments"]
    assert deployed["readySeconds"] == 12.5 and deployed["provisionedSeconds"] == 4.0


def test_an_experiment_whose_archive_fails_still_ends_and_says_why(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    kube = FakeKube(experiment(clusterPolicy="Keep"))
    kube.objects[(KIND, NS, "x")]["metadata"]["uid"] = "uid-x"
    previous = OperatorConfig.current()
    replace(previous, archive_url=str(blocked)).make_current()
    try:
        advance(kube)
        set_phase(kube, "MongoCluster", CLUSTER, cond.PHASE_READY)
        advance(kube)
        for run in RUNS:
            set_phase(kube, "BenchmarkRun", run, cond.RUN_SUCCEEDED)
            advance(kube)
        advance(kube)
    finally:
        previous.make_current()
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED and final["archive"]["error"]


# --- order Duet ----------------------------------------------------------------------------------


TIMED = {"workloads": [{"name": "a"}], "run": {"durationSeconds": 30}}


def finish_duet_side(kube: FakeKube, name: str, scale: float, start: str) -> None:
    """One side's run succeeded: its measured step's per-second series (both sides' series
    move together, B's `scale` times A's) and the barrier instant its clients started at."""
    swing = [1000.0 * (1 + 0.3 * ((i * 7) % 5 - 2) / 2) for i in range(30)]
    finish_run(kube, name, 1000.0 * scale)
    step = kube.objects[("BenchmarkRun", NS, name)]["status"]["steps"][0]
    step["result"] |= {
        "startAt": start,
        "series": {"intervalSeconds": 1.0, "throughput": [v * scale for v in swing]},
    }
    step["roles"] = {"mongod": {"sum": {"cpuCores": 1.0}}}


def test_a_duet_runs_both_sides_at_once_and_ends_with_the_paired_comparison() -> None:
    kube = FakeKube(experiment(order="Duet", repetitions=2, run=TIMED))
    advance(kube)
    # Both clusters at once (maxClusters 1 is raised to the pair's 2), each paired by name.
    clusters = [objects.cluster_name("x", g) for g in (0, 1)]
    assert kube.verbs("create") == clusters
    for c in clusters:
        assert kube.objects[("MongoCluster", NS, c)]["spec"]["placement"]["duet"] == "x"
    set_phase(kube, "MongoCluster", clusters[0], cond.PHASE_READY)
    advance(kube)
    assert kube.verbs("create") == clusters  # A's cluster alone Ready: A does not start alone
    set_phase(kube, "MongoCluster", clusters[1], cond.PHASE_READY)
    advance(kube)
    assert kube.verbs("create")[2:] == RUNS  # the round's pair, in one reconcile
    sides = [kube.objects[("BenchmarkRun", NS, r)]["spec"]["duet"] for r in RUNS]
    assert [(s["name"], s["side"]) for s in sides] == [("x-r1", 0), ("x-r1", 1)]
    for r in (1, 2):
        names = [objects.run_name("x", Slot(c, r)) for c in (0, 1)]
        finish_duet_side(kube, names[0], 1.0, "2026-12-07T10:00:00.000000Z")
        finish_duet_side(kube, names[1], 1.05, "2026-12-07T10:00:00.200000Z")
        advance(kube)
    advance(kube)
    advance(kube)
    final = status(kube)
    assert final["phase"] == cond.RUN_SUCCEEDED
    paired = final["comparison"]["duet"]
    assert (paired["baseline"], paired["other"]) == ("threads=1", "threads=4")
    row = paired["rows"][0]
    assert (row["metric"], row["rounds"], row["intervals"]) == ("throughput", 2, 2 * (30 - 2))
    assert row["changePercent"] == pytest.approx(5.0)
    assert row["verdict"] == "faster"
    valid = get_condition(final["conditions"], cond.DUET_VALID)
    assert valid is not None and (valid["status"], valid["reason"]) == (cond.TRUE, "AllPaired")
    assert "CPU share 50%" in valid["message"]


def test_an_aa_duet_calibrates_two_clusters_of_one_template_side_by_side() -> None:
    body = experiment(order="Duet", calibration=True, run=TIMED)
    del body["spec"]["dimensions"]
    kube = FakeKube(body)
    advance(kube)
    for g in (0, 1):
        set_phase(kube, "MongoCluster", objects.cluster_name("x", g), cond.PHASE_READY)
    advance(kube)
    assert kube.verbs("create")[2:] == RUNS
    finish_duet_side(kube, RUNS[0], 1.0, "2026-12-07T10:00:00.000000Z")
    finish_duet_side(kube, RUNS[1], 1.0, "2026-12-07T10:00:00.000000Z")
    for _ in range(3):
        advance(kube)
    paired = status(kube)["comparison"]["duet"]
    assert (paired["baseline"], paired["other"]) == ("calibration=a", "calibration=b")
    assert [r["verdict"] for r in paired["rows"]] == ["no difference"]
