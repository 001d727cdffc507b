"""BenchmarkRun handlers: thin; the state machine lives in mongobench.benchmarkrun.orchestrate.

Each one runs under handlers.common.refusals: a spec (or name) the operator cannot use, or a
Job the apiserver refuses, ends the run as Failed with the Succeeded condition and one Event;
a Failed run stops ticking. Deletion works whatever the spec says.

The state machine (orchestrate), the archive and the Prometheus queries load with the first run
the operator handles (handlers/__init__.py says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from mongobench.api import BenchmarkRunSpec, SpecError
from mongobench.api.benchmarkrun import cluster_of
from mongobench.api.kinds import BENCHMARKRUN as KIND
from mongobench.api.kinds import MONGOCLUSTER as MONGOCLUSTER_KIND
from mongobench.api.names import check_benchmarkrun_name
from mongobench.api.schema import field_of
from mongobench.benchmarkrun import jobs
from mongobench.benchmarkrun.decide import TERMINAL, job_outcome
from mongobench.clock import wall
from mongobench.config import OperatorConfig
from mongobench.handlers.common import BENCHMARKRUN, cluster_as_run_saw_it, refusals, settled
from mongobench.k8s import conditions as cond
from mongobench.k8s.client import ApiError
from mongobench.mongo.errors import MongoAdminError
from mongobench.observability import metrics
from mongobench.observability.metrics import SKIPPED, Skipped, instrumented
from mongobench.state import state_of

ARCHIVE_UPLOAD = "BenchmarkRun/archive"  # one upload of a run at a time (not its state machine)
TARGET_LOCK = "BenchmarkRun/target"  # one start decision at a time per target (benchmarkrun/queue)


def _advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    from mongobench.benchmarkrun import orchestrate
    from mongobench.benchmarkrun.cpu_status import cpu_for_step, fine_cpu_scraped

    config = OperatorConfig.current()
    state = state_of(memo)
    with refusals(state.kube, KIND, namespace, name, cond.SUCCEEDED, locks=state.locks):
        outcome = orchestrate.advance(
            state.run_kube,
            namespace,
            name,
            config,
            state.cluster_data,
            cpu=cpu_for_step(state.kube, config),
            scraped=fine_cpu_scraped(config),
            lock=state.locks.lock(KIND, namespace, name),
            target_lock=lambda target: state.locks.lock(TARGET_LOCK, namespace, target),
            clock=wall,
        )
        if outcome is None:
            return
        metrics.set_run_phase(namespace, name, outcome.phase)
        # The run as this advance read it: steps it started or finished show one tick later.
        metrics.set_running_steps(
            namespace, name, (outcome.run.get("status") or {}).get("steps") or ()
        )
        if outcome.phase in TERMINAL:  # the run as this advance left it: no GET
            metrics.export_run({**outcome.run, "status": dict(outcome.status)})
            # It ended: what its cleanup's Job deletions woke meanwhile would only read it again.
            state.ticker.stop((KIND, namespace, name))
            state.wakeups.forget((KIND, namespace, name))


@kopf.on.resume(*BENCHMARKRUN)
@kopf.on.create(*BENCHMARKRUN)
@instrumented("BenchmarkRun", "start")
def start(
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    body: kopf.Body,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    state = state_of(memo)
    with refusals(
        state.kube, KIND, meta["namespace"], meta["name"], cond.SUCCEEDED, locks=state.locks
    ):
        check_benchmarkrun_name(meta["name"])
        parsed = BenchmarkRunSpec.parse(dict(spec))
        if status.get("phase") in TERMINAL:
            metrics.export_run(dict(body))  # results of finished runs stay exported after restarts
            return
        # A layout MongoDB refuses on every release: refused now, not at the prepare step.
        from mongobench.benchmarkrun.data import sharding_layout_problem

        if (problem := sharding_layout_problem(parsed)) is not None:
            raise SpecError(problem)
        _advance(memo, meta["namespace"], meta["name"])


# A run ticks only as fast as nothing else wakes it. Its Jobs' events wake it when a Job ends or
# goes away (job_changed), and its MongoCluster's events when the cluster becomes Ready, not
# Ready or absent (k8s.dependents, followed from here), also when kopf lists them again after a
# watch expired: while a step's Job runs, or before the start while the cluster is awaited, a
# tick every 2 minutes only covers an event that never arrives (FALLBACK). Otherwise it ticks
# every second (NEXT): the next step to start, a scenario ConfigMap applied late, MongoDB not
# reachable yet. Ticks stop with the run, which includes a run refused for its spec (phase
# Failed). Uploads to the run's archive tick while steps finish, and after the run ended until
# the final manifest is written; a failed upload waits out its backoff
# (status.archive.nextAttempt). The run's events decide (k8s.ticker: kopf's timers kept every
# run's body); its ticks, its Jobs' and its cluster's events share one wake-up key.
# A queued run (phase Queued) follows the run it waits behind the same way: that run's start,
# move in line, end or deletion wakes it (HOLDS: it started and advances; "Waits:<place>": it
# is queued itself, at that place; LEFT: it ended), so its own place is never left stale.
NEXT = (1.0, 1.0)  # (interval, first tick) in seconds
FALLBACK = (120.0, 120.0)
ARCHIVE_SECONDS = 2.0
HOLDS, LEFT = "Holds", "Left"


def advancing(body: Mapping[str, Any]) -> bool:
    status = body.get("status") or {}
    return status.get("phase") not in (*TERMINAL, None) and not settled(body, cond.SUCCEEDED)


def ticks(body: Mapping[str, Any]) -> tuple[float, float] | None:
    """How often the run ticks now, if at all: NEXT, FALLBACK or None."""
    if not advancing(body):
        return None
    status = body.get("status") or {}
    waits = _job_runs(status) or _awaits_cluster(status) or _behind(status) is not None
    return FALLBACK if waits else NEXT


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


def waits(place: int) -> str:
    """The state a queued run reports to the runs behind it."""
    return f"Waits:{place}"


def _cluster_of(body: Mapping[str, Any]) -> str | None:
    return cluster_of(body.get("spec"))


@kopf.on.event(*BENCHMARKRUN)
async def run_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    state = state_of(memo)
    namespace, name = meta["namespace"], meta["name"]
    live = type != "DELETED" and not meta.get("deletionTimestamp")
    raw = dict(body)
    every = ticks(raw) if live else None
    interval, first = every or NEXT
    key = (KIND, namespace, name)
    state.ticker.schedule(
        key, every is not None, interval, lambda: _ticked(memo, namespace, name), first=first
    )
    status = raw.get("status") or {}
    cluster, behind, place = _cluster_of(raw), _behind(status), _place(status)
    # The runs queued behind this one follow it (k8s.dependents): its start, its move in line,
    # its end or its deletion wakes them.
    held = LEFT if every is None else HOLDS if behind is None else waits(place)
    state.dependents.changed(key, held, gone=not live)
    if every is not None and behind is not None:
        # Queued: as it saw the run ahead (started when it is 1st in line, else queued one place
        # ahead of it); the run ahead ending frees the target and its cluster is read again then.
        seen = HOLDS if place <= 1 else waits(place - 1)
        state.dependents.follow(
            key, (KIND, namespace, behind), seen, lambda: _cluster_advance(memo, namespace, name)
        )
    elif every is not None and cluster is not None:
        state.dependents.follow(
            key,
            (MONGOCLUSTER_KIND, namespace, cluster),
            cluster_as_run_saw_it(status),
            lambda: _cluster_advance(memo, namespace, name),
        )
    else:
        state.dependents.unfollow(key)
    from mongobench.benchmarkrun import archive

    uploading = live and archive.pending(raw.get("spec") or {}, status, OperatorConfig.current())
    record = {"archive": dict(status.get("archive") or {})}  # its backoff, not the body
    state.ticker.schedule(
        (ARCHIVE_UPLOAD, namespace, name),
        uploading,
        ARCHIVE_SECONDS,
        lambda: _archive_ticked(memo, namespace, name, record),
    )


@instrumented("BenchmarkRun", "tick")
def _ticked(memo: kopf.Memo, namespace: str, name: str) -> None:
    _advance(memo, namespace, name)


@instrumented("BenchmarkRun", "cluster-event")
def _cluster_advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    _advance(memo, namespace, name)


@instrumented("BenchmarkRun", "archive")
def _archive_ticked(memo: kopf.Memo, namespace: str, name: str, record: Mapping[str, Any]) -> None:
    """`record`: the run's status.archive when this was scheduled (its backoff)."""
    from mongobench.benchmarkrun import archive

    if not archive.due(record, wall()):
        return
    state = state_of(memo)
    archive.sync(
        state.run_kube,
        namespace,
        name,
        OperatorConfig.current(),
        upload_lock=state.locks.lock(ARCHIVE_UPLOAD, namespace, name),
        run_lock=state.locks.lock(KIND, namespace, name),
        clock=wall,
        admins=state.admins,
    )


@kopf.on.event("batch", "v1", "jobs", labels={jobs.RUN_LABEL: kopf.PRESENT})
async def job_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """A step's Job ended or went away: advance its run, if the run still advances (it ticks).
    Queued by the run's name (k8s.wakeups): the Job's body is not kept, and the run's Jobs'
    events while it waits wake it once. Its other events (pods started, ready, counted) change
    nothing the run decides on. A listing (type None: the start, or kopf listing again after its
    watch expired) shows an ended Job whose events may have been missed."""
    state = state_of(memo)
    namespace, run = meta["namespace"], meta["labels"][jobs.RUN_LABEL]
    key = (KIND, namespace, run)
    ended = type == "DELETED" or job_outcome(body)[0] != "WaitForJob"
    if not ended or state.ticker.interval(key) is None:
        _job_dropped()
        return
    state.wakeups.wake(key, lambda: _job_advance(memo, namespace, run))


@instrumented("BenchmarkRun", "job-event")
def _job_dropped() -> Skipped:
    return SKIPPED


@instrumented("BenchmarkRun", "job-event")
def _job_advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    _advance(memo, namespace, name)


@kopf.on.delete(*BENCHMARKRUN)
@instrumented("BenchmarkRun", "delete")
def delete(
    body: kopf.Body, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo, **_: Any
) -> None:
    # Jobs and result ConfigMaps are owned by the run and go with it; data only if asked.
    metrics.forget_run(dict(body))
    state = state_of(memo)
    state.forget(KIND, body["metadata"]["namespace"], body["metadata"]["name"])
    state.forget(ARCHIVE_UPLOAD, body["metadata"]["namespace"], body["metadata"]["name"])
    succeeded = status.get("phase") == cond.RUN_SUCCEEDED
    try:
        parsed = BenchmarkRunSpec.parse(dict(spec))
    except SpecError as exc:
        # Which data, where: without a spec the operator cannot tell, so it keeps it (and says
        # so: the user asked for a drop).
        try:
            asked: str | None = field_of(BenchmarkRunSpec, spec, "cleanup").data
        except SpecError:  # unreadable too: the user may have asked for a drop
            asked = None
        if asked not in ("Never", "OnSuccess") and not succeeded:
            state.kube.event(
                body,
                cond.WARNING,
                cond.EVENT_DATA_KEPT,
                f"the spec cannot be read ({exc}): the benchmark data is left as it is",
            )
        return
    if "startTime" not in status:
        # It never started (queued, or waiting for its cluster): the data on its target, if
        # any, is another run's, and no cleanup policy of this one reaches it.
        return
    if parsed.profiler is not None:
        # Deleted while a step was profiled: level 0 again, best effort like the drop below.
        from mongobench.benchmarkrun import orchestrate

        try:
            orchestrate.reset_profiler(
                state.run_kube, state.cluster_data, parsed, body["metadata"]["namespace"], status
            )
        except (MongoAdminError, ApiError, SpecError) as exc:
            state.kube.event(body, cond.WARNING, cond.EVENT_PROFILER_NOT_RESET, str(exc))
    if parsed.cleanup.data == "Always" and not succeeded:
        # Best effort: an unreachable MongoDB (or a cluster whose own spec is refused) must not
        # hold the run's deletion forever.
        from mongobench.benchmarkrun import orchestrate

        try:
            message = orchestrate.drop_data(
                state.run_kube, state.cluster_data, parsed, body["metadata"]["namespace"]
            )
        except (MongoAdminError, ApiError, SpecError) as exc:
            state.kube.event(body, cond.WARNING, cond.EVENT_DATA_NOT_DROPPED, str(exc))
        else:
            state.kube.event(body, cond.NORMAL, cond.EVENT_DATA_DROPPED, message)
