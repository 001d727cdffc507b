"""Unit tier: the BenchmarkRun's pure decision (benchmarkrun.decide.action), one test per
transition: what
the operator does next for each observed state of the run, its cluster and its step's Job."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mongobench.api import BenchmarkRunSpec
from mongobench.benchmarkrun.decide.action import (
    CPU_SCRAPE_WAIT_SECONDS,
    Observed,
    cleanup_targets,
    collection_problem,
    cpu_conditions,
    current_step,
    decide,
)
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.k8s import conditions as cond

pytestmark = pytest.mark.unit

READY = {"spec": {"auth": {"benchmarkDatabase": "ycsb"}}, "status": {"phase": "Ready"}}


def spec(**overrides: Any) -> BenchmarkRunSpec:
    base: dict[str, Any] = {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}]}
    return BenchmarkRunSpec.parse({**base, **overrides})


def observed(
    status: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = READY,
    job: dict[str, Any] | None = None,
    **overrides: Any,
) -> Observed:
    s = spec(**overrides)
    return Observed(s, make_plan(s), status or {}, cluster, job)


def done(*indexes: int, running: int | None = None) -> dict[str, Any]:
    """A started run's status: these steps Succeeded, `running` Running."""
    steps = [{"index": i, "phase": "Succeeded"} for i in indexes]
    if running is not None:
        steps.append({"index": running, "phase": "Running"})
    return {"startTime": "T0", "steps": steps}


def job(condition: str | None = None, **extra: str) -> dict[str, Any]:
    conditions = [{"type": condition, "status": "True", **extra}] if condition else []
    return {"metadata": {"creationTimestamp": "T1"}, "status": {"conditions": conditions}}


def test_plan_shape_the_tests_rely_on() -> None:
    kinds = [s.kind for s in observed().plan]
    assert kinds == ["prepare", "load", "run", "run", "run", "cleanup"]


def test_missing_cluster_before_start_waits() -> None:
    action = decide(observed(cluster=None))
    assert action.kind == "WaitForCluster"
    assert action.cluster_condition is not None
    assert action.cluster_condition[2] == cond.CLUSTER_NOT_FOUND


def test_cluster_not_ready_before_start_waits() -> None:
    action = decide(observed(cluster={"status": {"phase": "Provisioning"}}))
    assert action.kind == "WaitForCluster"
    assert action.cluster_condition == (
        cond.CLUSTER_READY,
        cond.FALSE,
        cond.CLUSTER_NOT_READY,
        "MongoCluster c is Provisioning; waiting",
    )


def test_database_the_user_cannot_write_is_refused_before_start() -> None:
    action = decide(observed(database="other"))
    assert action.kind == "Refuse"
    assert "may write only to ycsb" in action.message


def test_cluster_deleted_after_start_fails_the_run() -> None:
    action = decide(observed(done(0, running=1), cluster=None))
    assert action.kind == "ClusterGone"
    assert action.cluster_condition is not None
    assert action.cluster_condition[2] == cond.CLUSTER_DELETED


def test_cluster_degraded_after_start_goes_on_and_says_so() -> None:
    action = decide(observed(done(0, running=1), cluster={"status": {"phase": "Degraded"}}))
    assert action.kind == "CreateJob" or action.kind == "RecoverLostJob"
    assert action.cluster_condition is not None
    assert action.cluster_condition[1:3] == (cond.FALSE, cond.CLUSTER_NOT_READY)


def test_first_pass_starts_and_prepares() -> None:
    action = decide(observed())
    assert (action.kind, action.start) == ("Prepare", True)
    assert action.step is not None and action.step.kind == "prepare"
    assert action.cluster_condition is not None and action.cluster_condition[1] == cond.TRUE


def test_external_target_needs_no_cluster() -> None:
    s = BenchmarkRunSpec.parse(
        {"uriSecretRef": {"name": "s", "key": "uri"}, "workloads": [{"name": "a"}]}
    )
    action = decide(Observed(s, make_plan(s), {}, None, None))
    assert (action.kind, action.cluster_condition) == ("Prepare", None)


def test_started_run_does_not_start_again() -> None:
    assert decide(observed(done(0))).start is False


def test_load_without_job_creates_it() -> None:
    action = decide(observed(done(0)))
    assert action.kind == "CreateJob"
    assert action.step is not None and action.step.kind == "load"


@pytest.mark.parametrize("index", [2, 3, 4])
def test_each_job_step_without_job_creates_it(index: int) -> None:
    action = decide(observed(done(*range(index))))
    assert action.kind == "CreateJob"
    assert action.step is not None and action.step.index == index


def test_a_credential_rotation_holds_the_next_job_not_the_running_one_nor_a_lost_one() -> None:
    """While the cluster's credentials rotate (mongocluster/decide/rotation.py), no new client reads
    the URI: the next Job waits; a running Job is collected as usual, a lost one recovered."""
    rotating = READY | {"status": {"phase": "Ready", "rotation": {"phase": "Waiting"}}}
    asked = READY | {"metadata": {"annotations": {"mongobench.io/rotate": "users"}}}
    for cluster in (rotating, asked):
        action = decide(observed(done(0), cluster=cluster))
        assert action.kind == "WaitForRotation" and action.phase == "Loading", action
        assert decide(observed(done(0, running=1), cluster=cluster, job=job())).kind == "WaitForJob"
        lost = decide(observed(done(0, running=1), cluster=cluster))
        assert lost.kind == "RecoverLostJob"
    finished = READY | {"status": {"phase": "Ready", "rotation": {"phase": "Completed"}}}
    assert decide(observed(done(0), cluster=finished)).kind == "CreateJob"


def test_running_job_is_waited_for() -> None:
    action = decide(observed(done(0, running=1), job=job()))
    assert (action.kind, action.adopt) == ("WaitForJob", False)


def test_job_created_before_a_restart_is_adopted_not_duplicated() -> None:
    action = decide(observed(done(0), job=job()))
    assert (action.kind, action.adopt) == ("WaitForJob", True)


def test_job_vanished_while_running_is_recovered() -> None:
    assert decide(observed(done(0, running=1), job=None)).kind == "RecoverLostJob"


def test_completed_job_is_collected() -> None:
    action = decide(observed(done(0, 1, running=2), job=job("Complete")))
    assert action.kind == "Collect"
    assert action.step is not None and action.step.label == "run a #1"


def test_completed_job_adopted_and_collected_after_restart() -> None:
    action = decide(observed(done(0, 1), job=job("Complete")))
    assert (action.kind, action.adopt) == ("Collect", True)


def test_failed_job_fails_with_its_message() -> None:
    action = decide(observed(done(0, running=1), job=job("Failed", message="deadline")))
    assert (action.kind, action.message) == ("CollectFailed", "deadline")
    reason_only = job("Failed", reason="BackoffLimitExceeded")
    assert decide(observed(done(0, running=1), job=reason_only)).message == ("BackoffLimitExceeded")


def test_cleanup_step_then_finish() -> None:
    assert decide(observed(done(*range(5)))).kind == "CleanUp"
    assert decide(observed(done(*range(6)))).kind == "Finish"


def test_a_failed_step_is_the_current_one() -> None:
    status = done(0)
    status["steps"].append({"index": 1, "phase": "Failed"})
    step = current_step(make_plan(spec()), status)
    assert step is not None and step.index == 1


@pytest.mark.parametrize(
    ("reported", "missing", "merged", "failed", "problem"),
    [
        (0, [], {}, False, "no client reported a result"),
        (1, [1], {"status": "Succeeded"}, False, "clients [1] reported no result"),
        (2, [], {"status": "Failed", "error": "timeout"}, False, "timeout"),
        (2, [], {"status": "Failed"}, False, "a client failed"),
        (2, [], {"status": "Succeeded"}, True, "the Job failed"),
        (2, [], {"status": "Succeeded"}, False, None),
    ],
)
def test_collection_verdict_partial_results_fail_the_step(
    reported: int, missing: list[int], merged: dict[str, Any], failed: bool, problem: str | None
) -> None:
    assert collection_problem(reported, missing, merged, failed) == problem


@pytest.mark.parametrize(
    ("jobs", "data", "success", "expected"),
    [
        ("OnSuccess", "Never", True, (True, False)),
        ("OnSuccess", "Never", False, (False, False)),
        ("Always", "Always", False, (True, True)),
        ("Never", "OnSuccess", True, (False, True)),
        ("Never", "OnSuccess", False, (False, False)),
    ],
)
def test_cleanup_policies(jobs: Any, data: Any, success: bool, expected: tuple[bool, bool]) -> None:
    assert cleanup_targets(jobs, data, success) == expected


def test_cpu_without_prometheus_configured() -> None:
    (update,) = cpu_conditions(None, None, [], "run a #1")
    assert update[:3] == (cond.CPU_COLLECTED, cond.FALSE, cond.CPU_NOT_CONFIGURED)


def test_prometheus_down_marks_cpu_missing() -> None:
    (update,) = cpu_conditions(None, (cond.PROMETHEUS_UNAVAILABLE, "refused"), [], "run a #1")
    assert update == (cond.CPU_COLLECTED, cond.FALSE, cond.PROMETHEUS_UNAVAILABLE, "refused")


def test_cpu_collected_then_a_gap_stays_visible() -> None:
    full = {"cpu": {"missing": []}, "resources": {"missing": []}}
    first = cpu_conditions(full, None, [], "run a #1")
    assert [(t, s) for t, s, _, _ in first] == [
        (cond.CPU_COLLECTED, cond.TRUE),
        (cond.RESOURCES_COMPLETE, cond.TRUE),
    ]
    gap = [
        {"type": cond.CPU_COLLECTED, "status": "False"},
        {"type": cond.RESOURCES_COMPLETE, "status": "True"},
    ]
    assert cpu_conditions(full, None, gap, "run a #2") == []


def test_missing_metric_marks_resources_incomplete() -> None:
    partial = {"cpu": {"missing": []}, "resources": {"missing": ["disk of node n1"]}}
    updates = cpu_conditions(partial, None, [], "run a #1")
    assert updates[-1] == (
        cond.RESOURCES_COMPLETE,
        cond.FALSE,
        cond.METRICS_MISSING,
        "run a #1: disk of node n1",
    )


SCENARIO = {"configMapRef": {"name": "study", "key": "aggregation.py"}}
MISSING = (cond.SCENARIO_CONFIGMAP_NOT_FOUND, "scenario of agg: ConfigMap ns/study does not exist")


def scenario_observed(
    status: dict[str, Any] | None = None,
    problem: tuple[str, str] | None = None,
    age: float = 0.0,
    job: dict[str, Any] | None = None,
) -> Observed:
    s = spec(driver="locust", workloads=[{"name": "agg", "scenario": SCENARIO}])
    return Observed(s, make_plan(s), status or {}, READY, job, problem, age)


def test_a_run_with_scenarios_starts_saying_they_were_found() -> None:
    action = decide(scenario_observed())
    assert (action.kind, action.start) == ("Prepare", True)
    assert action.scenario_condition == (
        cond.SCENARIO_READY,
        cond.TRUE,
        cond.SCENARIO_FOUND,
        "every scenario is in ConfigMap study",
    )
    # Runs without scenarios carry no such condition; later passes leave it as it is.
    assert decide(observed()).scenario_condition is None
    assert decide(scenario_observed(done(0), job=job())).scenario_condition is None


def test_a_missing_scenario_before_the_start_waits_a_minute_then_fails() -> None:
    waiting = decide(scenario_observed(problem=MISSING, age=5))
    assert waiting.kind == "WaitForScenario" and not waiting.start
    assert waiting.scenario_condition == (
        cond.SCENARIO_READY,
        cond.FALSE,
        cond.SCENARIO_CONFIGMAP_NOT_FOUND,
        f"{MISSING[1]}; waiting",
    )
    failed = decide(scenario_observed(problem=MISSING, age=61))
    assert (failed.kind, failed.message) == ("ScenarioMissing", MISSING[1])
    assert failed.scenario_condition == (cond.SCENARIO_READY, cond.FALSE, *MISSING)
    assert failed.fails == "run"  # nothing started: no step to blame


def test_a_scenario_gone_before_its_step_fails_the_run_at_that_step() -> None:
    action = decide(scenario_observed(done(0, 1), problem=MISSING, age=3600))
    assert action.kind == "ScenarioMissing"
    assert action.step is not None and action.step.label == "run agg #1"
    assert action.fails == "step" and action.phase is None


# --- what each action fails, and the phase it moves the run to ---------------------------------


def test_failures_name_what_they_fail() -> None:
    gone = decide(observed(done(0), cluster=None))
    assert (gone.kind, gone.fails, gone.phase) == ("ClusterGone", "run", None)
    refused = decide(observed(database="other"))
    assert (refused.kind, refused.fails) == ("Refuse", "run")
    failed_job = decide(observed(done(0, running=1), job=job("Failed", message="OOMKilled")))
    assert (failed_job.kind, failed_job.fails) == ("CollectFailed", None)  # its step fails


@pytest.mark.parametrize(
    ("status", "job_", "phase"),
    [
        ({}, None, cond.RUN_PREPARING),
        (done(0), None, cond.RUN_LOADING),
        (done(0, running=1), {"metadata": {}}, cond.RUN_LOADING),
        (done(0, 1), None, cond.RUN_RUNNING),
        (done(0, running=1), "Complete", cond.RUN_COLLECTING),
        (done(0, 1, 2, 3, 4), None, cond.RUN_COLLECTING),  # cleanup
        (done(0, 1, 2, 3, 4, 5), None, None),  # finished: the outcome decides
    ],
)
def test_each_action_moves_the_run_to_its_steps_phase(
    status: dict[str, Any], job_: Any, phase: str | None
) -> None:
    found = job(job_) if isinstance(job_, str) else job_
    assert decide(observed(status, job=found)).phase == phase
    assert decide(observed(cluster=None)).phase == cond.PHASE_PENDING


def test_the_current_step_is_the_first_not_succeeded_and_reads_its_job() -> None:
    from mongobench.benchmarkrun.decide.action import reads_job, scenarios_to_check

    seen = observed(done(0))
    assert seen.step is not None and seen.step.kind == "load"
    assert reads_job(seen)
    assert not reads_job(observed(done(0), cluster=None))  # nothing to reach
    assert not reads_job(observed())  # prepare runs no Job
    assert scenarios_to_check(seen, job_found=False) == []  # no scenarios in this run
    assert scenarios_to_check(scenario_observed(done(0)), job_found=False) == []  # load: YCSB's
    started = scenario_observed(done(0, 1))
    assert [who for who, _ in scenarios_to_check(started, job_found=False)] == ["run agg #1"]
    assert scenarios_to_check(started, job_found=True) == []  # its Job exists: checked before


def test_progress_counts_the_steps_done_and_names_the_current_one() -> None:
    from mongobench.benchmarkrun.decide.action import progress

    assert progress(6, []) == {
        "step": 0,
        "steps": 6,
        "percent": 0,
        "summary": "0/6",
        "current": "waiting to start",
    }
    steps = [
        {"index": 0, "phase": cond.STEP_SUCCEEDED, "label": "prepare"},
        {"index": 1, "phase": cond.STEP_RUNNING, "label": "load"},
    ]
    assert progress(6, steps)["summary"] == "2/6" and progress(6, steps)["current"] == "load"
    run = {
        "phase": cond.STEP_SUCCEEDED,
        "kind": "run",
        "label": "r",
        "result": {"throughput": 99.6},
    }
    assert progress(1, [run])["lastThroughput"] == "100 ops/s"
    assert progress(1, [run])["current"] == "done"


def test_a_finer_cpu_resolution_holds_the_next_job_until_prometheus_has_its_series() -> None:
    """spec.monitoring.cpuResolutionSeconds: a step's window opened before Prometheus scrapes the
    run's PodMonitor would miss its first seconds at that resolution. The next Job waits for the
    series, for at most CPU_SCRAPE_WAIT_SECONDS after the start; a lost Job is not held."""
    fine = {"monitoring": {"cpuResolutionSeconds": 1}}
    waiting = replace(observed(done(0), **fine), cpu_scrape_missing=True, since_start_seconds=5)
    action = decide(waiting)
    assert (action.kind, action.phase) == ("WaitForCpuScrape", "Loading"), action
    assert action.step is not None and action.step.kind == "load"
    assert decide(replace(waiting, cpu_scrape_missing=False)).kind == "CreateJob"
    late = replace(waiting, since_start_seconds=CPU_SCRAPE_WAIT_SECONDS)
    assert decide(late).kind == "CreateJob"  # measured at Prometheus' interval, and says so
    lost = replace(waiting, status=done(0, running=1))
    assert decide(lost).kind == "RecoverLostJob"
    # Without the option nothing waits, whatever was observed.
    assert decide(replace(observed(done(0)), cpu_scrape_missing=True)).kind == "CreateJob"
