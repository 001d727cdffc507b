"""Pure: the plan of a knee search (spec.knee) as its probes are measured, and status.knee.

make_plan gives each workload one probe at startOpsPerSecond instead of its runs. Every pass,
`with_knee` replays the search (mongobench_results.knee.search) over the probes recorded in
status, in order, and appends what it asks for next: another probe (a new load, or the same
load again at the limit's boundary), or, once the search is done, `repetitions` run steps at
the knee. Nothing recorded moves: the steps added come right after the workload's last
measured probe, where only Pending steps were (the steps after it move down, as the re-runs'
do). The runs at the knee are ordinary measured trials: summary, validity, re-runs and
compare treat them as any run's; the probes are not trials of one configuration (each is at
another load) and stay out of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Knee
from mongobench.benchmarkrun.decide.plan import Step
from mongobench.k8s import conditions as cond
from mongobench_results import knee, records


def target_of(spec: Knee) -> knee.Target:
    return knee.Target(
        percentile=spec.latency.percentile,
        limit_ms=spec.latency.limit_ms,
        start=spec.start_ops_per_second,
        maximum=spec.max_ops_per_second,
        resolution=spec.resolution,
        repetitions=spec.repetitions,
        min_achieved=spec.min_achieved_fraction,
    )


def with_knee(
    spec: BenchmarkRunSpec, plan: Sequence[Step], status: Mapping[str, Any]
) -> list[Step]:
    """`plan` with each workload's search as far as its probes say, re-indexed."""
    if spec.knee is None:
        return list(plan)
    target = target_of(spec.knee)
    recorded = {int(s["index"]): s for s in status.get("steps") or () if "index" in s}
    out: list[Step] = []
    for step in plan:
        if step.kind != "probe":
            out.append(step if step.index == len(out) else replace(step, index=len(out)))
            continue
        probes: list[knee.Probe] = []
        probe = replace(step, index=len(out))
        while True:
            out.append(probe)
            measured = _measured(recorded.get(probe.index), probe, target.percentile)
            if measured is None:  # not measured yet: the search waits for it
                break
            probes.append(measured)
            found = knee.search(target, probes)
            if not found.done:
                assert found.next_load is not None
                probe = replace(
                    probe,
                    index=len(out),
                    repetition=(probe.repetition or 0) + 1,
                    target=found.next_load,
                )
                continue
            for rep in range(1, spec.knee.repetitions + 1 if found.knee is not None else 1):
                out.append(Step(len(out), "run", step.workload, rep, target=found.knee))
            break
    return out


def _measured(entry: Mapping[str, Any] | None, step: Step, percentile: str) -> knee.Probe | None:
    """The probe this step measured: its status entry is this step's (same label) and
    succeeded with a result."""
    if not entry or entry.get("label") != step.label or entry.get("phase") != cond.STEP_SUCCEEDED:
        return None
    return knee.probe_of(entry, percentile)


@dataclass(frozen=True)
class WorkloadKnee:
    workload: str
    search: knee.Search
    at_knee: tuple[knee.Probe, ...]  # the valid runs at the knee measured so far


def searches(spec: BenchmarkRunSpec, steps: Sequence[Mapping[str, Any]]) -> list[WorkloadKnee]:
    """Per workload with a probe recorded: the search replayed and the trials at the knee."""
    if spec.knee is None:
        return []
    target = target_of(spec.knee)
    out = []
    for workload in dict.fromkeys(s.get("workload") for s in steps if s.get("kind") == "probe"):
        mine = [s for s in steps if s.get("workload") == workload]
        probes = [
            p
            for s in mine
            if s.get("kind") == "probe" and (p := knee.probe_of(s, target.percentile)) is not None
        ]
        at_knee = tuple(
            p
            for s in mine
            if s.get("kind") == "run"
            and (s.get("validity") or {}).get("valid", True)
            and (p := knee.probe_of(s, target.percentile)) is not None
        )
        out.append(WorkloadKnee(str(workload), knee.search(target, probes), at_knee))
    return out


def status(spec: BenchmarkRunSpec, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """status.knee: per workload the knee, its interval, the limit, probes used vs the grid's
    count; None for a run without spec.knee or before its first probe."""
    if spec.knee is None:
        return None
    target = target_of(spec.knee)
    found = searches(spec, steps)
    if not found:
        return None
    return {
        "workloads": [knee.status(target, w.search, w.at_knee, w.workload) for w in found],
    }


def measured_fields(result: Mapping[str, Any], spec: Knee) -> dict[str, Any]:
    """What a probe (or a run at the knee) measured, beside its offeredOpsPerSecond in its
    status entry: the achieved load and the knee's percentile in milliseconds."""
    achieved = records.throughput(result)
    latency = knee.percentile_of(result, spec.latency.percentile)
    out: dict[str, Any] = {}
    if achieved is not None:
        out["achievedOpsPerSecond"] = round(achieved, 1)
    if latency is not None:
        out[f"{spec.latency.percentile}Ms"] = round(latency / 1000.0, 3)
    return out


def probe_message(step: Step, entry: Mapping[str, Any], percentile: str) -> str:
    """The Event of a measured probe: offered and achieved load, the percentile."""
    probe = knee.probe_of(entry, percentile)
    if probe is None:
        return f"{step.label}: no result"
    return (
        f"{step.label}: achieved {probe.achieved:.0f} ops/s, {percentile} "
        f"{probe.latency_us / 1000:.2f} ms"
    )
