"""Pure: adaptive repetitions (`repetitions: N` with `repeatUntil: {metric, relativeHalfWidth,
maxRepetitions}`), for a BenchmarkRun's workloads and a BenchmarkExperiment's cells alike.

The stopping rule is the results library's (`mongobench_results.adaptive.decide`); this module
says what it is fed and what follows from it:

- a workload's (an experiment cell's workload's) values are its measured trials that are
  valid (a trial without a verdict counts as valid, as everywhere) of the named metric, through
  compare's own metric definitions (`p99` is every operation's p99: the workload is done when
  the interval of each is narrow enough);
- a BenchmarkRun plans `maxRepetitions` run steps per workload and skips (step phase Skipped)
  those of a workload that is done, with the reload steps that only served them;
- `status.repetitions` says per workload (per cell) how many valid trials were needed, the
  observed relative half-width and whether the target was met; the TargetMet condition sums
  it up (k8s/conditions.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.api.benchmarkrun import Repeated
from mongobench.benchmarkrun.decide.plan import Step
from mongobench.k8s import conditions as cond
from mongobench_results import adaptive, compare, records

# The metrics repeatUntil may name: compare's keys (CPU is in points of a share: no relative
# interval to aim at).
UNTIL_METRICS = tuple(m for m in compare.METRIC_CHOICES if m not in ("cpu", "cost"))


@dataclass(frozen=True)
class Outcome:
    """A workload's (or cell's) adaptive state: the decision and whether it can go on."""

    name: str
    decision: adaptive.Decision

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        out: dict[str, Any] = {"name": self.name, "valid": d.n, "done": d.done}
        if d.met is not None:
            out["met"] = d.met
        if d.relative_half_width is not None:
            out["relativeHalfWidth"] = round(d.relative_half_width, 4)
        return out


def policy_of(spec: Repeated) -> adaptive.Policy:
    """The policy of a parsed BenchmarkRun or BenchmarkExperiment spec: fixed `repetitions`,
    or adaptive from `repetitions` (the minimum) to repeatUntil.maxRepetitions."""
    until = spec.repeat_until
    if until is None:
        return adaptive.Policy.fixed(spec.repetitions)
    return adaptive.Policy(
        min=spec.repetitions,
        max=spec.max_repetitions,
        metric=until.metric,
        relative_half_width=until.relative_half_width,
    )


def valid_values(steps: Iterable[records.StepView], metric: str) -> dict[str, list[float]]:
    """The valid measured trials' values of `metric`, per metric id of compare (`throughput`,
    or `READ p99` and `UPDATE p99` for `p99`)."""
    trials = [
        s
        for s in steps
        if s.kind == "run" and s.phase == cond.STEP_SUCCEEDED and s.result and s.validity.valid
    ]
    ops = sorted({op for s in trials for op in (s.result or {}).get("operations", {})})
    out: dict[str, list[float]] = {}
    for m in compare.metrics_for(ops, [metric]):
        out[m.id] = [v for s in trials if (v := m.extract(s)) is not None]
    return out


def decide(policy: adaptive.Policy, values: Mapping[str, Sequence[float]]) -> adaptive.Decision:
    """One decision over a workload's metric ids: done when each is, met when each met, the
    widest observed interval. No values yet: not done."""
    decisions = [adaptive.decide(policy, v) for v in values.values()] or [
        adaptive.decide(policy, [])
    ]
    done = all(d.done for d in decisions)
    widths = [d.relative_half_width for d in decisions]
    return adaptive.Decision(
        done=done,
        met=all(bool(d.met) for d in decisions) if done and policy.adaptive else None,
        n=min(d.n for d in decisions),
        relative_half_width=None if None in widths else max(w for w in widths if w is not None),
    )


def finished(decision: adaptive.Decision) -> adaptive.Decision:
    """Every planned trial ran: done, whatever the rule says (invalid trials do not count, so
    fewer than max valid ones may be all there is)."""
    if decision.done:
        return decision
    return adaptive.Decision(True, False, decision.n, decision.relative_half_width)


# --- a BenchmarkRun ---------------------------------------------------------------------------


def run_outcomes(
    policy: adaptive.Policy, plan: Sequence[Step], steps: Sequence[Mapping[str, Any]]
) -> list[Outcome]:
    """Per workload (in plan order): its decision from the run's steps as recorded."""
    views = records.steps({"status": {"steps": list(steps)}})
    phase = {int(s.get("index", -1)): s.get("phase") for s in steps}
    out = []
    for workload in dict.fromkeys(s.workload for s in plan if s.kind == "run"):
        assert workload is not None
        mine = [v for v in views if v.workload == workload]
        decision = decide(policy, valid_values(mine, str(policy.metric or "throughput")))
        left = [
            s
            for s in plan
            if s.kind == "run"
            and s.workload == workload
            and phase.get(s.index) in (None, "Pending")
        ]
        out.append(Outcome(workload, decision if left else finished(decision)))
    return out


def skipped(
    policy: adaptive.Policy, plan: Sequence[Step], steps: Sequence[Mapping[str, Any]]
) -> list[tuple[Step, str]]:
    """The planned steps a run no longer needs, with why: the pending run steps of a workload
    whose target is met, and the reloads before them (dataReset between Repetitions)."""
    if not policy.adaptive:
        return []
    phase = {int(s.get("index", -1)): s.get("phase") for s in steps}
    out: list[tuple[Step, str]] = []
    for outcome in run_outcomes(policy, plan, steps):
        d = outcome.decision
        if not d.done:
            continue
        why = (
            f"repeatUntil met after {d.n} valid repetitions"
            if d.met
            else f"{d.n} valid repetitions, the most repeatUntil allows"
        )
        for i, step in enumerate(plan):
            if phase.get(step.index, cond.STEP_PENDING) != cond.STEP_PENDING:
                continue
            follows = plan[i + 1] if i + 1 < len(plan) else None
            if (step.kind == "run" and step.workload == outcome.name) or (
                step.kind == "load"
                and step.reset
                and follows is not None
                and follows.kind == "run"
                and follows.workload == outcome.name
                and (follows.repetition or 0) > 1
            ):
                out.append((step, why))
    return out


# --- status, both kinds -----------------------------------------------------------------------


def status(policy: adaptive.Policy, outcomes: Sequence[Outcome], key: str) -> dict[str, Any]:
    """`status.repetitions`: the target and, per workload (`key` "workloads") or cell
    ("cells"), how many valid trials it took and whether the target was met."""
    return {
        "min": policy.min,
        "max": policy.max,
        "metric": policy.metric,
        "relativeHalfWidth": policy.relative_half_width,
        key: [o.to_dict() for o in outcomes],
    }


def target_condition(
    outcomes: Sequence[Outcome], what: str
) -> tuple[str, cond.ConditionStatus, str, str]:
    """TargetMet from the outcomes (`what`: "workload" or "cell")."""
    going = [o.name for o in outcomes if not o.decision.done]
    missed = [o.name for o in outcomes if o.decision.done and not o.decision.met]
    if going:
        return (
            cond.TARGET_MET,
            cond.UNKNOWN,
            cond.TARGET_MEASURING,
            f"{len(going)} of {len(outcomes)} {what}s still repeating: {', '.join(going)}",
        )
    if missed:
        return (
            cond.TARGET_MET,
            cond.FALSE,
            cond.TARGET_NOT_REACHED,
            f"no more trials and the interval still too wide (maxRepetitions reached or "
            f"failed): {', '.join(missed)}",
        )
    counts = ", ".join(f"{o.name} {o.decision.n}" for o in outcomes)
    return (
        cond.TARGET_MET,
        cond.TRUE,
        cond.TARGET_REACHED,
        f"every {what}'s interval is narrow enough (valid trials: {counts})",
    )
