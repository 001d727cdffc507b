"""Pure: a BenchmarkRun's next action from what was observed (the run, its cluster, the current
step's Job), like mongocluster.decide.status.compute_status for a MongoCluster. orchestrate.py
gathers the
observations (what to read: `reads_job`, `scenarios_to_check`) and carries the action out;
nothing here reads or writes the world. The action says the run phase it moves to, and what a
failure fails: the step (recorded on it, then the run) or the run alone (`fails`).

Decision rules (first match wins):
  WaitForCluster   not started; the MongoCluster is absent or not Ready
  Refuse           not started; the cluster's benchmark user may not write the run's database
  ClusterGone      started; the MongoCluster was deleted: fail the run, keep results so far
  WaitForScenario  not started; a scenario's ConfigMap or key is missing, for at most
                   SCENARIO_WAIT_SECONDS after the run's creation (apply order may differ)
  ScenarioMissing  it is still missing, or went missing before a step that needs it: fail
  Queue            not started; another run ahead of it holds or waits for its target (queue.py)
  Finish           every step succeeded
  Prepare          the current step is prepare (drop and create the collection)
  CleanUp          the current step is cleanup (the cleanup policies), then finish
  WaitForRotation  the next Job waits while the cluster's credentials rotate
  WaitForCpuScrape the next Job waits until Prometheus has the run's finer CPU series (its
                   PodMonitor loaded and scraped), for at most CPU_SCRAPE_WAIT_SECONDS after
                   the run's start: a window opened before would miss its first seconds
  CreateJob        the step's Job does not exist and was never recorded as Running
  RecoverLostJob   the Job vanished while Running: keep what its clients reported, then fail
  WaitForJob       the Job runs (recorded as Running first if created just before a restart)
  Collect          the Job completed: merge the clients' results into the step
  CollectFailed    the Job failed: keep what was reported, fail the step and the run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from mongobench.api.benchmarkrun import BenchmarkRunSpec, CleanupPolicy, Scenario
from mongobench.api.mongocluster import Auth, MongoClusterSpec
from mongobench.api.schema import field_of
from mongobench.benchmarkrun.build.jobs import step_scenario
from mongobench.benchmarkrun.decide.plan import Step
from mongobench.benchmarkrun.decide.queue import Place
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import ConditionStatus, get_condition
from mongobench.mongocluster.decide.rotation import holds_new_jobs

ActionKind = Literal[
    "WaitForCluster",
    "Refuse",
    "ClusterGone",
    "WaitForScenario",
    "ScenarioMissing",
    "Queue",
    "Finish",
    "Prepare",
    "CleanUp",
    "CreateJob",
    "RecoverLostJob",
    "WaitForJob",
    "WaitForRotation",
    "WaitForCpuScrape",
    "Collect",
    "CollectFailed",
]
# What a failing action fails: the current step (recorded on it; the run fails with it), or the
# run alone (it could not start, or its cluster went away between steps).
Fails = Literal["step", "run"]
# (type, status, reason, message) of a condition to set
ConditionUpdate = tuple[str, ConditionStatus, str, str]
# The run's phase while a step of each kind is under way.
PHASE_OF_STEP = {
    "prepare": cond.RUN_PREPARING,
    "load": cond.RUN_LOADING,
    "warmup": cond.RUN_RUNNING,
    "probe": cond.RUN_RUNNING,
    "run": cond.RUN_RUNNING,
    "cleanup": cond.RUN_COLLECTING,
}
TERMINAL = (cond.RUN_SUCCEEDED, cond.RUN_FAILED)
# How long a run not started yet waits for a missing scenario ConfigMap (or key) before failing:
# a ConfigMap applied after its BenchmarkRun is no mistake; one never applied is.
SCENARIO_WAIT_SECONDS = 60.0
# How long a started run's next Job waits for its finer CPU series (cpu_monitor): a Prometheus
# Operator takes seconds to a minute to load a new PodMonitor, then Prometheus reloads. Past it
# the steps go on, measured at Prometheus' own interval and saying so (cpu_status).
CPU_SCRAPE_WAIT_SECONDS = 120.0


@dataclass(frozen=True)
class Observed:
    """One pass's view of the world; `job` is the current step's Job (None: absent or the step
    runs none), `cluster` the referenced MongoCluster (None: absent or none referenced)."""

    spec: BenchmarkRunSpec
    plan: Sequence[Step]
    status: Mapping[str, Any]
    cluster: Mapping[str, Any] | None = None
    job: Mapping[str, Any] | None = None
    # (reason, message) when a scenario the run needs now is missing (see orchestrate.observe:
    # every scenario before the start, the step's own before its Job); None: found or none.
    scenario_problem: tuple[str, str] | None = None
    age_seconds: float = 0.0  # since the run's creation
    # Where it waits for its target (queue.place_in_queue); None: started, or nothing ahead.
    queue: Place | None = None
    # The run asks a finer CPU resolution and Prometheus has none of its series yet (read only
    # before a step's Job, within CPU_SCRAPE_WAIT_SECONDS of the start).
    cpu_scrape_missing: bool = False
    since_start_seconds: float = 0.0

    @property
    def started(self) -> bool:
        return "startTime" in self.status

    @cached_property
    def step(self) -> Step | None:
        """The current step: the first not Succeeded; None when all are."""
        return current_step(self.plan, self.status)

    @property
    def reachable(self) -> bool:
        """Whether the target can be reached: an external URI, or the MongoCluster exists."""
        return self.cluster is not None or self.spec.cluster_ref is None

    def entry(self, index: int) -> Mapping[str, Any]:
        """The step's status entry as recorded (Pending when not recorded yet)."""
        for s in self.status.get("steps") or ():
            if s.get("index") == index:
                found: Mapping[str, Any] = s
                return found
        return {"index": index, "phase": cond.STEP_PENDING}


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    step: Step | None = None
    message: str = ""
    # ClusterReady as observed now (None: leave it).
    cluster_condition: ConditionUpdate | None = None
    # First pass with a usable target: record startTime and the cluster snapshot.
    start: bool = False
    # The step's Job exists but the step is still Pending (created just before a restart).
    adopt: bool = False
    # ScenarioReady as observed now (None: leave it).
    scenario_condition: ConditionUpdate | None = None
    # What a failing action (Refuse, ClusterGone, ScenarioMissing) fails.
    fails: Fails | None = None
    # Queue: where it waits.
    queue: Place | None = None

    @property
    def phase(self) -> str | None:
        """The run's phase while this action is carried out (None: a terminal action, whose
        phase the outcome decides)."""
        if self.kind in ("WaitForCluster", "WaitForScenario"):
            return cond.PHASE_PENDING
        if self.kind == "Queue":
            return cond.RUN_QUEUED
        if self.kind == "Collect":
            return cond.RUN_COLLECTING
        if self.step is None or self.fails is not None or self.kind == "Finish":
            return None
        return PHASE_OF_STEP[self.step.kind]


def reads_job(observed: Observed) -> bool:
    """Whether the current step's Job is read: the step runs one and the target exists."""
    step = observed.step
    return step is not None and step.runs_job and observed.reachable


def scenarios_to_check(observed: Observed, job_found: bool) -> list[tuple[str, Scenario]]:
    """The scenarios whose ConfigMaps are read this pass, with who uses them: every one before
    the start (once the target is there to start on), then a step's own before its Job is
    created; none in between."""
    if not observed.started:
        phase = ((observed.cluster or {}).get("status") or {}).get("phase")
        if observed.spec.cluster_ref is None or phase == cond.PHASE_READY:
            return list(observed.spec.scenarios())
        return []
    step = observed.step
    if step is None or not reads_job(observed) or job_found:
        return []
    scenario = step_scenario(observed.spec, step)
    if scenario is None or observed.entry(step.index).get("phase") == cond.STEP_RUNNING:
        return []  # Running: its Job was created (and then lost), the scenario was found
    return [(step.label, scenario)]


# Step phases that let the run go past the step (Skipped: adaptive repetitions no longer need it).
STEP_DONE = (cond.STEP_SUCCEEDED, cond.STEP_SKIPPED)


def current_step(plan: Sequence[Step], status: Mapping[str, Any]) -> Step | None:
    """The first step not Succeeded (or Skipped); None when all are."""
    done = {s["index"] for s in status.get("steps") or () if s.get("phase") in STEP_DONE}
    return next((step for step in plan if step.index not in done), None)


def _cluster_check(observed: Observed) -> Action | ConditionUpdate | None:
    """An action when the referenced cluster stops the run here; else ClusterReady as observed
    (None: no cluster referenced)."""
    ref, cluster = observed.spec.cluster_ref, observed.cluster
    if ref is None:
        return None
    if cluster is None:
        message = f"MongoCluster {ref.name} does not exist"
        if observed.started:
            gone = (cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_DELETED, message)
            return Action("ClusterGone", message=message, cluster_condition=gone, fails="run")
        absent = (cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_FOUND, message)
        return Action("WaitForCluster", cluster_condition=absent)
    if not observed.started:
        before = _before_start(observed.spec, ref.name, cluster)
        if before is not None:
            return before
    phase = (cluster.get("status") or {}).get("phase")
    if phase == cond.PHASE_READY:
        message = f"MongoCluster {ref.name} is Ready"
        return (cond.CLUSTER_READY, cond.TRUE, cond.CLUSTER_IS_READY, message)
    # Started: the steps go on (a Job fails if MongoDB is really gone); say so.
    message = f"MongoCluster {ref.name} is {phase}"
    return (cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_READY, message)


def _before_start(spec: BenchmarkRunSpec, name: str, cluster: Mapping[str, Any]) -> Action | None:
    """What stops a run from starting on the cluster: its user may not write the run's database
    (refused), or it is not Ready (waits). None: it may start."""
    auth: Auth = field_of(MongoClusterSpec, cluster.get("spec"), "auth")
    writable = auth.benchmark_database
    if writable != spec.database:
        message = (
            f"database {spec.database}: the benchmark user of MongoCluster {name} "
            f"may write only to {writable} (its spec.auth.benchmarkDatabase)"
        )
        refused = (cond.CLUSTER_READY, cond.FALSE, cond.DATABASE_NOT_WRITABLE, message)
        return Action("Refuse", message=message, cluster_condition=refused, fails="run")
    phase = (cluster.get("status") or {}).get("phase")
    if phase == cond.PHASE_READY:
        return None
    waiting = f"MongoCluster {name} is {phase}; waiting"
    return Action(
        "WaitForCluster",
        cluster_condition=(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_READY, waiting),
    )


def decide(observed: Observed) -> Action:
    checked = _cluster_check(observed)
    if isinstance(checked, Action):
        return checked
    cluster_condition = checked
    started, step = observed.started, observed.step
    scenario = scenario_check(observed)
    if scenario is not None and scenario[1] == cond.FALSE:
        if not started and observed.age_seconds < SCENARIO_WAIT_SECONDS:
            waiting = (scenario[0], scenario[1], scenario[2], f"{scenario[3]}; waiting")
            return Action(
                "WaitForScenario", None, "", cluster_condition, scenario_condition=waiting
            )
        # A started run misses a step's scenario: that step fails; before the start, the run.
        fails: Fails = "step" if step is not None and step.runs_job and started else "run"
        return Action(
            "ScenarioMissing",
            step,
            scenario[3],
            cluster_condition,
            scenario_condition=scenario,
            fails=fails,
        )
    if not started and observed.queue is not None:
        return Action(
            "Queue",
            message=observed.queue.message,
            cluster_condition=cluster_condition,
            scenario_condition=scenario,
            queue=observed.queue,
        )
    return replace(
        _step_action(observed, step, cluster_condition, not started), scenario_condition=scenario
    )


def scenario_check(observed: Observed) -> ConditionUpdate | None:
    """ScenarioReady from what observe found; None for a run without scenarios, or when
    nothing was checked this pass (a started run between steps)."""
    if not observed.spec.scenarios():
        return None
    if observed.scenario_problem is not None:
        reason, message = observed.scenario_problem
        return (cond.SCENARIO_READY, cond.FALSE, reason, message)
    if observed.started:
        return None
    names = sorted({s.config_map_ref.name for _, s in observed.spec.scenarios()})
    return (
        cond.SCENARIO_READY,
        cond.TRUE,
        cond.SCENARIO_FOUND,
        f"every scenario is in ConfigMap {', '.join(names)}",
    )


# Steps the operator carries out itself, without a Job.
OWN_STEPS: Mapping[str, ActionKind] = {"prepare": "Prepare", "cleanup": "CleanUp"}


def _step_action(
    observed: Observed, step: Step | None, cluster_condition: ConditionUpdate | None, start: bool
) -> Action:
    if step is None:
        return Action("Finish", None, "all steps succeeded", cluster_condition, start)
    if step.kind in OWN_STEPS:
        return Action(OWN_STEPS[step.kind], step, "", cluster_condition, start)
    entry = observed.entry(step.index)
    job = observed.job
    if job is None:
        lost = entry.get("phase") == cond.STEP_RUNNING
        if not lost and holds_new_jobs(observed.cluster):
            # Its clients would read the URI while passwords change
            # (mongocluster/decide/rotation.py).
            why = "waiting for the cluster's credential rotation before the next step"
            return Action("WaitForRotation", step, why, cluster_condition, start)
        if not lost and waits_for_cpu_scrape(observed):
            why = (
                f"waiting for Prometheus to scrape the run's finer CPU series "
                f"(at most {CPU_SCRAPE_WAIT_SECONDS:g} s from the start)"
            )
            return Action("WaitForCpuScrape", step, why, cluster_condition, start)
        kind: ActionKind = "RecoverLostJob" if lost else "CreateJob"
        return Action(kind, step, "", cluster_condition, start)
    adopt = entry.get("phase") == cond.STEP_PENDING
    kind, why = job_outcome(job)
    return Action(kind, step, why, cluster_condition, start, adopt)


def waits_for_cpu_scrape(observed: Observed) -> bool:
    """The next Job waits for the run's finer CPU series while Prometheus lacks them, within
    the wait. (Every plan starts with prepare: the run's PodMonitor, made on the pass that
    starts it, exists before any Job's pass.)"""
    return (
        observed.spec.monitoring.cpu_resolution_seconds is not None
        and observed.cpu_scrape_missing
        and observed.since_start_seconds < CPU_SCRAPE_WAIT_SECONDS
    )


def job_outcome(job: Mapping[str, Any]) -> tuple[ActionKind, str]:
    """Collect a Job that completed, CollectFailed one that failed (with why), else WaitForJob."""
    conditions = {c["type"]: c for c in (job.get("status") or {}).get("conditions") or []}
    if conditions.get("Complete", {}).get("status") == cond.TRUE:
        return "Collect", ""
    failed = conditions.get("Failed", {})
    if failed.get("status") == cond.TRUE:
        return "CollectFailed", f"{failed.get('message') or failed.get('reason')}"
    return "WaitForJob", ""


def progress(total: int, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """status.progress from the plan's length and the steps as recorded: step i of n (the
    first not Succeeded), the percent done, the last run step's throughput."""
    done = sum(1 for s in steps if s.get("phase") in STEP_DONE)
    current = next((s for s in steps if s.get("phase") not in STEP_DONE), None)
    last = next((s for s in reversed(steps) if s.get("result") and s.get("kind") == "run"), None)
    label = current["label"] if current else ("done" if steps else "waiting to start")
    number = min(done + 1, total) if steps else 0
    out: dict[str, Any] = {
        "step": number,
        "steps": total,
        "percent": int(100 * done / total),
        "summary": f"{number}/{total}",
        "current": label,
    }
    if last:
        out["lastThroughput"] = f"{last['result']['throughput']:.0f} ops/s"
    return out


def collection_problem(
    reported: int, missing: Sequence[int], merged: Mapping[str, Any], job_failed: bool
) -> str | None:
    """Why a step's collected results do not make it succeed; None when they do. The results
    are kept on the step either way."""
    if not reported:
        return "no client reported a result"
    if missing:
        return f"clients {list(missing)} reported no result"
    if merged.get("status") != "Succeeded":
        return str(merged.get("error") or "a client failed")
    if job_failed:
        return "the Job failed"
    return None


def cleanup_targets(jobs: CleanupPolicy, data: CleanupPolicy, success: bool) -> tuple[bool, bool]:
    """(delete the run's Jobs, drop the benchmark data) under the cleanup policies."""

    def applies(policy: CleanupPolicy) -> bool:
        return policy == "Always" or (policy == "OnSuccess" and success)

    return applies(jobs), applies(data)


def cpu_conditions(
    profile: Mapping[str, Any] | None,
    failure: tuple[str, str] | None,
    conditions: Sequence[Mapping[str, Any]] | None,
    label: str,
) -> list[ConditionUpdate]:
    """CPUCollected and ResourcesComplete after one step's resource query: `profile` is what
    it returned ({"cpu", "resources"}), `failure` (reason, message) why it returned nothing,
    both None when no Prometheus is configured. A gap, once seen, stays visible."""
    if failure is not None:
        return [(cond.CPU_COLLECTED, cond.FALSE, *failure)]
    if profile is None:
        return [
            (
                cond.CPU_COLLECTED,
                cond.FALSE,
                cond.CPU_NOT_CONFIGURED,
                "no Prometheus URL is configured",
            )
        ]
    out: list[ConditionUpdate] = []
    previous = get_condition(conditions, cond.CPU_COLLECTED)
    if previous is None or previous.get("status") == cond.TRUE:
        out.append(
            (cond.CPU_COLLECTED, cond.TRUE, cond.CPU_COLLECTED_ALL, "CPU collected for every step")
        )
    missing = [
        m
        for part in profile.values()
        if isinstance(part, Mapping)
        for m in part.get("missing") or ()
    ]
    if missing:
        message = f"{label}: {'; '.join(missing)}"
        out.append((cond.RESOURCES_COMPLETE, cond.FALSE, cond.METRICS_MISSING, message))
    elif get_condition(conditions, cond.RESOURCES_COMPLETE) is None:
        out.append(
            (
                cond.RESOURCES_COMPLETE,
                cond.TRUE,
                cond.METRICS_COMPLETE,
                "every metric, every step",
            )
        )
    return out
