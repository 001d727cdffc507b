"""Unit tier: adaptive repetitions of a BenchmarkRun (benchmarkrun.decide.repetitions, pure) and the
orchestration that follows them against an in-memory Kubernetes API: a workload whose interval
is narrow enough skips its remaining repetitions, invalid trials do not count, and the status
says how many were needed and whether the target was met."""

from __future__ import annotations

from typing import Any

import pytest
from fake_kube import FakeKube
from test_orchestrate import (
    RUN_KIND,
    advance,
    benchmarkrun,
    finish_job,
    mongocluster,
    report,
    status,
    step_phases,
)

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.decide import repetitions as reps
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench_results import compare

pytestmark = pytest.mark.unit

UNTIL = {"metric": "throughput", "relativeHalfWidth": 0.05, "maxRepetitions": 5}


def spec(**fields: Any) -> BenchmarkRunSpec:
    return BenchmarkRunSpec.parse(
        {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}, {"name": "b"}], **fields}
    )


def step(index: int, workload: str, rep: int, ops: float | None, valid: bool = True) -> dict:
    """A run step as status records it; `ops` None: still pending."""
    if ops is None:
        return {
            "index": index,
            "kind": "run",
            "workload": workload,
            "repetition": rep,
            "phase": cond.STEP_PENDING,
        }
    return {
        "index": index,
        "kind": "run",
        "workload": workload,
        "repetition": rep,
        "phase": cond.STEP_SUCCEEDED,
        "result": {"throughput": ops, "operations": {"READ": {"p99": 1000.0 + ops}}},
        "validity": {"valid": valid, "reasons": [], "attempt": 1},
    }


def test_the_metrics_repeat_until_may_name_are_compares() -> None:
    assert set(reps.UNTIL_METRICS) <= set(compare.METRIC_CHOICES)
    assert "throughput" in reps.UNTIL_METRICS and "p99" in reps.UNTIL_METRICS


def test_a_run_with_repeat_until_plans_the_maximum_and_its_policy_the_minimum() -> None:
    s = spec(repetitions=2, repeatUntil=UNTIL)
    runs = [p.label for p in make_plan(s) if p.kind == "run"]
    assert runs == [f"run {w} #{r}" for w in "ab" for r in range(1, 6)]
    policy = reps.policy_of(s)
    assert (policy.min, policy.max, policy.metric, policy.relative_half_width) == (
        2,
        5,
        "throughput",
        0.05,
    )
    assert not reps.policy_of(spec(repetitions=4)).adaptive
    assert [p.repetition for p in make_plan(spec(repetitions=4)) if p.workload == "a"] == [
        1,
        2,
        3,
        4,
    ]


def test_a_workload_whose_interval_is_narrow_skips_its_remaining_repetitions() -> None:
    s = spec(repetitions=2, repeatUntil=UNTIL)
    plan = make_plan(s)
    a = [p for p in plan if p.workload == "a" and p.kind == "run"]
    b = [p for p in plan if p.workload == "b" and p.kind == "run"]
    steps = [step(a[0].index, "a", 1, 1000.0), step(a[1].index, "a", 2, 1002.0)]
    steps += [step(p.index, "a", p.repetition or 0, None) for p in a[2:]]
    steps += [step(p.index, "b", p.repetition or 0, None) for p in b]
    skipped = reps.skipped(reps.policy_of(s), plan, steps)
    assert [x.label for x, _ in skipped] == ["run a #3", "run a #4", "run a #5"]
    assert skipped[0][1] == "repeatUntil met after 2 valid repetitions"

    # Twice as noisy: the 95% interval is too wide at n = 2, the run goes on.
    steps[1] = step(a[1].index, "a", 2, 1300.0)
    assert reps.skipped(reps.policy_of(s), plan, steps) == []
    outcomes = reps.run_outcomes(reps.policy_of(s), plan, steps)
    assert [(o.name, o.decision.done) for o in outcomes] == [("a", False), ("b", False)]


def test_invalid_trials_do_not_count_and_unjudged_ones_do() -> None:
    s = spec(repetitions=2, repeatUntil=UNTIL)
    plan = make_plan(s)
    a = [p for p in plan if p.workload == "a" and p.kind == "run"]
    steps = [
        step(a[0].index, "a", 1, 1000.0),
        step(a[1].index, "a", 2, 1002.0, valid=False),
        *[step(p.index, "a", p.repetition or 0, None) for p in a[2:]],
    ]
    assert reps.skipped(reps.policy_of(s), plan, steps) == []  # one valid trial: go on
    unjudged = {k: v for k, v in steps[1].items() if k != "validity"}
    steps[1] = unjudged
    assert len(reps.skipped(reps.policy_of(s), plan, steps)) == 3


def test_a_latency_target_needs_every_operations_interval() -> None:
    policy = reps.policy_of(spec(repetitions=2, repeatUntil={**UNTIL, "metric": "p99"}))
    values = {"READ p99": [1000.0, 1001.0], "UPDATE p99": [1000.0, 2000.0]}
    d = reps.decide(policy, values)
    assert not d.done and d.relative_half_width is not None and d.relative_half_width > 1
    d = reps.decide(policy, {"READ p99": [1000.0, 1001.0], "UPDATE p99": [1000.0, 1002.0]})
    assert d.done and d.met and d.n == 2


def test_the_reloads_between_repetitions_go_with_the_repetitions_they_served() -> None:
    s = spec(repetitions=2, repeatUntil=UNTIL, dataReset={"between": "Repetitions"})
    plan = make_plan(s)
    a = [p for p in plan if p.workload == "a" and p.kind == "run"]
    steps = [step(a[0].index, "a", 1, 1000.0), step(a[1].index, "a", 2, 1000.0)]
    steps += [{"index": a[1].index - 1, "kind": "load", "phase": cond.STEP_SUCCEEDED}]
    labels = [x.label for x, _ in reps.skipped(reps.policy_of(s), plan, steps)]
    assert labels == ["reload", "run a #3", "reload", "run a #4", "reload", "run a #5"]
    # The reload before workload b's first repetition stays: b needs its data.
    first_b = next(p for p in plan if p.workload == "b")
    assert plan[first_b.index - 1].kind == "load"
    assert plan[first_b.index - 1].index not in {
        x.index for x, _ in reps.skipped(reps.policy_of(s), plan, steps)
    }


def test_the_target_condition_says_measuring_reached_or_max_reached() -> None:
    policy = reps.policy_of(spec(repetitions=2, repeatUntil=UNTIL))
    going = reps.Outcome("a", reps.decide(policy, {"throughput": [1000.0]}))
    met = reps.Outcome("b", reps.decide(policy, {"throughput": [1000.0, 1001.0]}))
    missed = reps.Outcome("c", reps.finished(reps.decide(policy, {"throughput": [1, 2.0]})))
    assert reps.target_condition([going, met], "workload")[1:3] == (
        cond.UNKNOWN,
        cond.TARGET_MEASURING,
    )
    assert reps.target_condition([met], "workload")[1:] == (
        cond.TRUE,
        cond.TARGET_REACHED,
        "every workload's interval is narrow enough (valid trials: b 2)",
    )
    assert reps.target_condition([met, missed], "cell")[1:3] == (
        cond.FALSE,
        cond.TARGET_NOT_REACHED,
    )
    assert reps.status(policy, [met], "workloads")["workloads"] == [
        {"name": "b", "valid": 2, "done": True, "met": True, "relativeHalfWidth": 0.0063}
    ]


def test_an_adaptive_run_stops_its_workload_once_the_target_is_met() -> None:
    """Orchestrated: every repetition measures the same throughput, so two are enough; the
    other three are skipped, the run succeeds, TargetMet says so."""
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=2, repeatUntil=UNTIL))
    for _ in range(30):
        outcome = advance(kube)
        if outcome is None or outcome.phase == cond.RUN_SUCCEEDED:
            break
        for s in status(kube)["steps"]:
            if s["phase"] == cond.STEP_RUNNING:
                report(kube, s["index"], "load" if s["kind"] == "load" else "run")
                finish_job(kube, s["index"])
    now = status(kube)
    assert now["phase"] == cond.RUN_SUCCEEDED
    assert step_phases(kube) == [cond.STEP_SUCCEEDED] * 4 + [cond.STEP_SKIPPED] * 3 + [
        cond.STEP_SUCCEEDED
    ]
    assert now["repetitions"]["workloads"] == [
        {"name": "a", "valid": 2, "done": True, "met": True, "relativeHalfWidth": 0.0}
    ]
    target = get_condition(now["conditions"], cond.TARGET_MET)
    assert target is not None and target["status"] == cond.TRUE
    assert cond.EVENT_REPETITIONS_SKIPPED in kube.reasons()
    assert now["progress"]["percent"] == 100
    run = kube.get(RUN_KIND, "ns", "r")
    assert run is not None
    assert [e["workload"] for e in run["status"]["summary"]] == ["load", "a"]  # loads first


def test_a_failed_adaptive_run_says_the_target_was_not_met() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=2, repeatUntil=UNTIL))
    advance(kube)  # prepared
    advance(kube)  # the load Job is created
    finish_job(kube, 1, "Failed", "BackoffLimitExceeded")
    advance(kube)
    now = status(kube)
    assert now["phase"] == cond.RUN_FAILED
    target = get_condition(now["conditions"], cond.TARGET_MET)
    assert target is not None and (target["status"], target["reason"]) == (
        cond.FALSE,
        cond.TARGET_NOT_REACHED,
    )
    assert now["repetitions"]["workloads"] == [
        {"name": "a", "valid": 0, "done": True, "met": False}
    ]
