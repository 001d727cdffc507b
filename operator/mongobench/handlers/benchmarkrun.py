"""BenchmarkRun handlers: thin; the state machine lives in mongobench.benchmarkrun.act.orchestrate.

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
from mongobench.api.kinds import BENCHMARKRUN as KIND
from mongobench.api.names import check_benchmarkrun_name
from mongobench.api.schema import field_of
from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.decide import requeue
from mongobench.benchmarkrun.decide.action import TERMINAL
from mongobench.clock import wall
from mongobench.handlers.common import BENCHMARKRUN, refusals
from mongobench.k8s import conditions as cond
from mongobench.k8s.client import ApiError
from mongobench.mongo.errors import MongoAdminError
from mongobench.observability import metrics
from mongobench.observability.metrics import SKIPPED, Skipped, instrumented
from mongobench.state import state_of

ARCHIVE_UPLOAD = "BenchmarkRun/archive"  # one upload of a run at a time (not its state machine)
TARGET_LOCK = "BenchmarkRun/target"  # one start decision at a time per target (benchmarkrun/queue)


def _advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    from mongobench.benchmarkrun.act import orchestrate
    from mongobench.benchmarkrun.telemetry.cpu_status import cpu_for_step, fine_cpu_scraped

    state = state_of(memo)
    config = state.config
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
        if not outcome.result.requeues:
            # It ended: what its cleanup's Job deletions woke meanwhile would only read it again.
            # (Its own event decides any other change of its ticks: run_changed.)
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
        from mongobench.benchmarkrun.act.data import sharding_layout_problem

        if (problem := sharding_layout_problem(parsed)) is not None:
            raise SpecError(problem)
        _advance(memo, meta["namespace"], meta["name"])


@kopf.on.event(*BENCHMARKRUN)
async def run_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """The run's events decide (benchmarkrun.decide.requeue) how often it ticks, whom it follows and
    what the runs queued behind it see (runtime.ticker, runtime.dependents: kopf's timers kept every
    run's body); its ticks, its Jobs' and its cluster's events share one wake-up key."""
    state = state_of(memo)
    namespace, name = meta["namespace"], meta["name"]
    raw = dict(body)
    from mongobench.benchmarkrun.act import archive

    config = state.config
    wakes = requeue.wakes(raw, deleted=type == "DELETED", config=config, pending=archive.pending)
    key = (KIND, namespace, name)
    state.ticker.requeue(key, wakes.result, lambda: _ticked(memo, namespace, name))
    state.dependents.changed(key, wakes.holds, gone=wakes.gone)
    if wakes.follows is None:
        state.dependents.unfollow(key)
    else:
        kind, followed, seen = wakes.follows
        state.dependents.follow(
            key, (kind, namespace, followed), seen, lambda: _cluster_advance(memo, namespace, name)
        )
    record = {"archive": dict((raw.get("status") or {}).get("archive") or {})}  # its backoff
    state.ticker.requeue(
        (ARCHIVE_UPLOAD, namespace, name),
        wakes.archive,
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
    from mongobench.benchmarkrun.act import archive

    if not archive.due(record, wall()):
        return
    state = state_of(memo)
    archive.sync(
        state.run_kube,
        namespace,
        name,
        state.config,
        upload_lock=state.locks.lock(ARCHIVE_UPLOAD, namespace, name),
        run_lock=state.locks.lock(KIND, namespace, name),
        clock=wall,
        admins=state.admins,
    )


@kopf.on.event("batch", "v1", "jobs", labels={jobs.RUN_LABEL: kopf.PRESENT})
async def job_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """A step's Job ended or went away (benchmarkrun.decide.requeue.job_wakes): advance its run, if
    the
    run still advances (it ticks). Queued by the run's name (runtime.wakeups): the Job's body is not
    kept, and the run's Jobs' events while it waits wake it once."""
    state = state_of(memo)
    namespace, run = meta["namespace"], meta["labels"][jobs.RUN_LABEL]
    key = (KIND, namespace, run)
    # Dropped too when the run no longer advances (it does not tick: ended or deleted).
    if not requeue.job_wakes(body, deleted=type == "DELETED") or state.ticker.interval(key) is None:
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
        from mongobench.benchmarkrun.act import orchestrate

        try:
            orchestrate.reset_profiler(
                state.run_kube, state.cluster_data, parsed, body["metadata"]["namespace"], status
            )
        except (MongoAdminError, ApiError, SpecError) as exc:
            state.kube.event(body, cond.WARNING, cond.EVENT_PROFILER_NOT_RESET, str(exc))
    if parsed.cleanup.data == "Always" and not succeeded:
        # Best effort: an unreachable MongoDB (or a cluster whose own spec is refused) must not
        # hold the run's deletion forever.
        from mongobench.benchmarkrun.act import orchestrate

        try:
            message = orchestrate.drop_data(
                state.run_kube, state.cluster_data, parsed, body["metadata"]["namespace"]
            )
        except (MongoAdminError, ApiError, SpecError) as exc:
            state.kube.event(body, cond.WARNING, cond.EVENT_DATA_NOT_DROPPED, str(exc))
        else:
            state.kube.event(body, cond.NORMAL, cond.EVENT_DATA_DROPPED, message)
