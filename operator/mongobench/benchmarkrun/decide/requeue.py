"""Pure: when a BenchmarkRun looks again, and whose events wake it meanwhile, from its body as its
own event delivers it (handlers.benchmarkrun passes the decision to runtime.ticker and
runtime.dependents; the body is let go).

A run ticks only as fast as nothing else wakes it. Its Jobs' events wake it when a Job ends or
goes away (`job_wakes`), and its MongoCluster's events when the cluster becomes Ready, not Ready
or absent, also when kopf lists them again after a watch expired. A queued run (phase Queued)
follows the run it waits behind the same way: that run's start, move in line, end or deletion
wakes it (HOLDS: it started and advances; "Waits:<place>": it is queued itself, at that place;
LEFT: it ended), so its own place is never left stale.

Rules for its own ticks (first match wins):
  EVENTS_ONLY  gone or going, not advanced yet (the create handler does), ended, or its spec
               refused (phase Failed): nothing to look at until the spec changes
  FALLBACK     a step's Job runs, the cluster is awaited before the start (absent or not
               Ready), or it is queued: every 2 minutes only covers an event that never arrives
  NEXT         otherwise, every second: the next step to start, a scenario ConfigMap applied
               late, MongoDB not reachable yet
Its archive upload ticks (ARCHIVE) while finished steps wait to be uploaded, and after the run
ended until the final manifest is written (archive.pending); a failed upload waits out its
backoff (status.archive.nextAttempt, archive.due).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.api.benchmarkrun import cluster_of
from mongobench.api.kinds import BENCHMARKRUN, MONGOCLUSTER
from mongobench.benchmarkrun.decide.action import TERMINAL, job_outcome
from mongobench.config import OperatorConfig
from mongobench.controller import EVENTS_ONLY, Result, cluster_as_run_saw_it, live, settled
from mongobench.k8s import conditions as cond

NEXT = Result(1.0, first_after=1.0)
FALLBACK = Result(120.0, first_after=120.0)
ARCHIVE = Result(2.0)
# What a run reports to the runs queued behind it (runtime.dependents); queued itself: waits(place).
HOLDS, LEFT = "Holds", "Left"


@dataclass(frozen=True)
class Wakes:
    """One event's decision for a run: its ticks, what it reports to the runs queued behind it,
    whose events wake it (kind, name, state as it saw it; None: nobody's) and its archive's
    ticks."""

    result: Result
    holds: str
    follows: tuple[str, str, str | None] | None
    archive: Result
    gone: bool


# archive.pending, given by the caller: the archive (and what it loads) comes with the first
# run's event, not with the operator (handlers/__init__.py says why).
Pending = Callable[[Mapping[str, Any], Mapping[str, Any], OperatorConfig], bool]


def wakes(
    body: Mapping[str, Any], *, deleted: bool, config: OperatorConfig, pending: Pending
) -> Wakes:
    """The decision for a run's event (`deleted`: its DELETED event)."""
    here = live(body, deleted)
    result = ticks(body) if here else EVENTS_ONLY
    status = body.get("status") or {}
    behind, place = _behind(status), _place(status)
    spec = body.get("spec") or {}
    cluster = cluster_of(spec)
    follows: tuple[str, str, str | None] | None = None
    if result.requeues and behind is not None:
        # Queued: as it saw the run ahead (started when it is 1st in line, else queued one
        # place ahead of it); the run ahead ending frees the target.
        follows = (BENCHMARKRUN, behind, HOLDS if place <= 1 else waits(place - 1))
    elif result.requeues and cluster is not None:
        follows = (MONGOCLUSTER, cluster, cluster_as_run_saw_it(status))
    return Wakes(
        result=result,
        holds=LEFT if not result.requeues else HOLDS if behind is None else waits(place),
        follows=follows,
        archive=ARCHIVE if here and pending(spec, status, config) else EVENTS_ONLY,
        gone=not here,
    )


def ticks(body: Mapping[str, Any]) -> Result:
    """How often the live run ticks now: NEXT, FALLBACK or EVENTS_ONLY (the rules above)."""
    status = body.get("status") or {}
    if status.get("phase") in (*TERMINAL, None) or settled(body, cond.SUCCEEDED):
        return EVENTS_ONLY
    waiting = _job_runs(status) or _awaits_cluster(status) or _behind(status) is not None
    return FALLBACK if waiting else NEXT


def job_wakes(job: Mapping[str, Any], *, deleted: bool) -> bool:
    """A step's Job's event wakes its run when the Job ended or went away. Its other events
    (pods started, ready, counted) change nothing the run decides on; a listing shows an ended
    Job whose events may have been missed."""
    return deleted or job_outcome(job)[0] != "WaitForJob"


def waits(place: int) -> str:
    """The state a queued run reports to the runs behind it."""
    return f"Waits:{place}"


def _job_runs(status: Mapping[str, Any]) -> bool:
    """The current step (the first not Succeeded) is Running: its Job's end wakes the run."""
    current = next(
        (s for s in status.get("steps") or () if s.get("phase") != cond.STEP_SUCCEEDED), None
    )
    return current is not None and current.get("phase") == cond.STEP_RUNNING


def _awaits_cluster(status: Mapping[str, Any]) -> bool:
    """Not started for want of a cluster (absent or not Ready): its events wake the run."""
    return status.get("phase") == cond.PHASE_PENDING and cluster_as_run_saw_it(status) in (
        cond.CLUSTER_NOT_FOUND,
        cond.CLUSTER_NOT_READY,
    )


def _behind(status: Mapping[str, Any]) -> str | None:
    """The run a queued run waits behind (status.queue): its events wake this one."""
    if status.get("phase") != cond.RUN_QUEUED:
        return None
    behind = (status.get("queue") or {}).get("behind")
    return behind if isinstance(behind, str) else None


def _place(status: Mapping[str, Any]) -> int:
    place = (status.get("queue") or {}).get("place")
    return place if isinstance(place, int) else 1
