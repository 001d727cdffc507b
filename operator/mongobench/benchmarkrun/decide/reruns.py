"""Pure: the plan with the re-runs of invalid trials (spec.validity.rerunInvalid).

A measured step judged invalid (status.steps[].validity.valid false) is run again right after
it, as a new step with `attempt` counted up, until a valid attempt or `rerunInvalid` re-runs;
the invalid attempt stays in status. Right after, so the re-run sees the data set the trial saw
(a reload between repetitions, where dataReset asks for one, comes with it). The steps after a
re-run move down the plan: they are all still Pending when it is inserted (the trial that asks
for it has just finished), so nothing recorded moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.decide.plan import Step


def with_reruns(
    spec: BenchmarkRunSpec, plan: Sequence[Step], status: Mapping[str, Any]
) -> list[Step]:
    """`plan` with a re-run after every invalid attempt that may have one, re-indexed."""
    allowed = spec.validity.rerun_invalid
    if allowed <= 0:
        return list(plan)
    recorded = {int(s["index"]): s for s in status.get("steps") or () if "index" in s}
    reload_between = not spec.load.skip and spec.data_reset.between == "Repetitions"
    out: list[Step] = []
    for step in plan:
        out.append(_at(step, len(out)))
        if step.kind != "run":
            continue
        attempt = step.attempt
        while attempt <= allowed:
            entry = recorded.get(len(out) - 1) or {}
            if not _invalid_attempt(entry, step, attempt):
                break
            attempt += 1
            if reload_between:
                out.append(Step(len(out), "load", reset=True))
            out.append(replace(step, index=len(out), attempt=attempt))
    return out


def _at(step: Step, index: int) -> Step:
    return step if step.index == index else replace(step, index=index)


def _invalid_attempt(entry: Mapping[str, Any], step: Step, attempt: int) -> bool:
    """Whether the status entry is this trial's attempt, finished and judged invalid."""
    verdict = entry.get("validity") or {}
    return (
        entry.get("kind") == "run"
        and entry.get("workload") == step.workload
        and entry.get("repetition") == step.repetition
        and int(entry.get("attempt") or 1) == attempt
        and bool(verdict)
        and not verdict.get("valid", True)
    )
