"""Pure: a BenchmarkRun's next action from what was observed (the run, its cluster, the current
step's Job), like cluster.status.compute_status for a MongoCluster. orchestrate.py gathers the
observations and carries the action out; nothing here reads or writes the world.

Decision rules (first match wins):
  WaitForCluster   not started; the MongoCluster is absent or not Ready
  Refuse           not started; the cluster's benchmark user may not write the run's database
  ClusterGone      started; the MongoCluster was deleted: fail the run, keep results so far
  WaitForScenario  not started; a scenario's ConfigMap or key is missing, for at most
                   SCENARIO_WAIT_SECONDS after the run's creation (apply order may differ)
  ScenarioMissing  it is still missing, or went missing before a step that needs it: fail
  Finish           every step succeeded
  Prepare          the current step is prepare (drop and create the collection)
  CleanUp          the current step is cleanup (the cleanup policies), then finish
  CreateJob        the step's Job does not exist and was never recorded as Running
  RecoverLostJob   the Job vanished while Running: keep what its clients reported, then fail
  WaitForJob       the Job runs (recorded as Running first if created just before a restart)
  Collect          the Job completed: merge the clients' results into the step
  CollectFailed    the Job failed: keep what was reported, fail the step and the run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from mongobench.api.benchmarkrun import BenchmarkRunSpec, CleanupPolicy
from mongobench.bench.plan import Step
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import ConditionStatus, get_condition

ActionKind = Literal[
    "WaitForCluster",
    "Refuse",
    "ClusterGone",
    "WaitForScenario",
    "ScenarioMissing",
    "Finish",
    "Prepare",
    "CleanUp",
    "CreateJob",
    "RecoverLostJob",
    "WaitForJob",
    "Collect",
    "CollectFailed",
]
# (type, status, reason, message) of a condition to set
ConditionUpdate = tuple[str, ConditionStatus, str, str]
# How long a run not started yet waits for a missing scenario ConfigMap (or key) before failing:
# a ConfigMap applied after its BenchmarkRun is no mistake; one never applied is.
SCENARIO_WAIT_SECONDS = 60.0


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

    @property
    def started(self) -> bool:
        return "startTime" in self.status

    def entry(self, index: int) -> Mapping[str, Any]:
        """The step's status entry as recorded (Pending when not recorded yet)."""
        for s in self.status.get("steps") or ():
            if s.get("index") == index:
                found: Mapping[str, Any] = s
                return found
        return {"index": index, "phase": "Pending"}


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


def current_step(plan: Sequence[Step], status: Mapping[str, Any]) -> Step | None:
    """The first step not Succeeded; None when all are."""
    done = {s["index"] for s in status.get("steps") or () if s.get("phase") == "Succeeded"}
    return next((step for step in plan if step.index not in done), None)


def decide(observed: Observed) -> Action:
    spec, started = observed.spec, observed.started
    cluster_condition: ConditionUpdate | None = None
    ref = spec.cluster_ref
    if ref is not None:
        cluster = observed.cluster
        if cluster is None:
            message = f"MongoCluster {ref.name} does not exist"
            if started:
                return Action(
                    "ClusterGone",
                    message=message,
                    cluster_condition=(
                        cond.CLUSTER_READY,
                        cond.FALSE,
                        cond.CLUSTER_DELETED,
                        message,
                    ),
                )
            return Action(
                "WaitForCluster",
                cluster_condition=(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_FOUND, message),
            )
        phase = (cluster.get("status") or {}).get("phase")
        writable = ((cluster.get("spec") or {}).get("auth") or {}).get("benchmarkDatabase", "ycsb")
        if writable != spec.database and not started:
            message = (
                f"database {spec.database}: the benchmark user of MongoCluster {ref.name} "
                f"may write only to {writable} (its spec.auth.benchmarkDatabase)"
            )
            return Action(
                "Refuse",
                message=message,
                cluster_condition=(
                    cond.CLUSTER_READY,
                    cond.FALSE,
                    cond.DATABASE_NOT_WRITABLE,
                    message,
                ),
            )
        if phase != cond.PHASE_READY and not started:
            return Action(
                "WaitForCluster",
                cluster_condition=(
                    cond.CLUSTER_READY,
                    cond.FALSE,
                    cond.CLUSTER_NOT_READY,
                    f"MongoCluster {ref.name} is {phase}; waiting",
                ),
            )
        if phase == cond.PHASE_READY:
            cluster_condition = (
                cond.CLUSTER_READY,
                cond.TRUE,
                cond.CLUSTER_IS_READY,
                f"MongoCluster {ref.name} is Ready",
            )
        else:  # started: the steps go on (a Job fails if MongoDB is really gone); say so
            cluster_condition = (
                cond.CLUSTER_READY,
                cond.FALSE,
                cond.CLUSTER_NOT_READY,
                f"MongoCluster {ref.name} is {phase}",
            )
    start = not started
    step = current_step(observed.plan, observed.status)
    scenario = scenario_check(observed)
    if scenario is not None and scenario[1] == cond.FALSE:
        if not started and observed.age_seconds < SCENARIO_WAIT_SECONDS:
            waiting = (scenario[0], scenario[1], scenario[2], f"{scenario[3]}; waiting")
            return Action(
                "WaitForScenario", None, "", cluster_condition, scenario_condition=waiting
            )
        return Action(
            "ScenarioMissing", step, scenario[3], cluster_condition, scenario_condition=scenario
        )
    return replace(
        _step_action(observed, step, cluster_condition, start), scenario_condition=scenario
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


def _step_action(
    observed: Observed, step: Step | None, cluster_condition: ConditionUpdate | None, start: bool
) -> Action:
    if step is None:
        return Action("Finish", None, "all steps succeeded", cluster_condition, start)
    if step.kind == "prepare":
        return Action("Prepare", step, "", cluster_condition, start)
    if step.kind == "cleanup":
        return Action("CleanUp", step, "", cluster_condition, start)
    entry = observed.entry(step.index)
    job = observed.job
    if job is None:
        kind: ActionKind = "RecoverLostJob" if entry.get("phase") == "Running" else "CreateJob"
        return Action(kind, step, "", cluster_condition, start)
    adopt = entry.get("phase") == "Pending"
    conditions = {c["type"]: c for c in (job.get("status") or {}).get("conditions") or []}
    if conditions.get("Complete", {}).get("status") == cond.TRUE:
        return Action("Collect", step, "", cluster_condition, start, adopt)
    failed = conditions.get("Failed", {})
    if failed.get("status") == cond.TRUE:
        why = f"{failed.get('message') or failed.get('reason')}"
        return Action("CollectFailed", step, why, cluster_condition, start, adopt)
    return Action("WaitForJob", step, "", cluster_condition, start, adopt)


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
    missing = [m for part in profile.values() if part for m in part.get("missing") or ()]
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
