"""What a run keeps of the profiler and of the collection's disk use (pure).

Before each measured step (spec.profiler) the profiler goes to level 1 on every data-bearing
mongod, after it the step's slowest operations are read and it goes back to level 0 with the
slowms it had (orchestrate does the I/O through data.py and mongo/). The load and measured steps
of a MongoCluster get the collection's disk use ($collStats) whatever the spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongobench.benchmarkrun.decide.plan import Step
from mongobench.mongo.model import SlowOperation

MEASURED = ("probe", "run")  # the steps the profiler records
DISK_STEPS = ("load", "probe", "run")  # the steps after which disk use is measured
# Slow operations a run's status keeps over all its steps (each ~300 bytes): `top` per step,
# fewer when many steps would pass this (a run object stays well under etcd's 1.5 MiB).
RUN_BUDGET = 600

# status.profiler.state
ON, OFF, UNAVAILABLE = "On", "Off", "Unavailable"


def profiles(spec_profiler: object | None, step: Step, status: Mapping[str, Any]) -> bool:
    """Whether the profiler is switched on before this step: asked for, a measured step, and
    no server refused it earlier in the run."""
    refused = (status.get("profiler") or {}).get("state") == UNAVAILABLE
    return spec_profiler is not None and step.kind in MEASURED and not refused


def kept_per_step(top: int, plan: Sequence[Step]) -> int:
    """How many of a step's slowest operations status keeps: `top`, or the run's budget shared
    by its measured steps when that is less (at least 1)."""
    measured = sum(1 for s in plan if s.kind in MEASURED)
    return max(1, min(top, RUN_BUDGET // max(1, measured)))


def slow_operations_status(
    operations: Sequence[SlowOperation], slow_ms: int, kept: int
) -> dict[str, Any]:
    """status.steps[].slowOperations: the slowest first, at most `kept`."""
    return {"slowMs": slow_ms, "operations": [o.as_status() for o in operations[:kept]]}


def switched_on(
    status: Mapping[str, Any], slow_ms: int, found: Mapping[str, int], since: str
) -> dict[str, Any]:
    """status.profiler once level 1 is set at `since`: the slowms each set had before is the
    first one seen (a level 0 that failed leaves the run's own value there)."""
    before = dict((status.get("profiler") or {}).get("restoreSlowMs") or found)
    return {"state": ON, "slowMs": slow_ms, "restoreSlowMs": before, "since": since}


def window_start(profiler: Mapping[str, Any], step_start: str | None) -> str | None:
    """Where a step's entries begin: when level 1 was set for it (to the millisecond; the
    step's startTime is whole seconds and may reach back into the step before), else its
    start."""
    return str(profiler.get("since") or "") or step_start


def unavailable(slow_ms: int, message: str) -> dict[str, Any]:
    return {"state": UNAVAILABLE, "slowMs": slow_ms, "message": message[:300]}


def needs_reset(status: Mapping[str, Any]) -> bool:
    """Whether a mongod may still profile at level 1 for this run."""
    return (status.get("profiler") or {}).get("state") == ON
