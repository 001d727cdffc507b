"""Unit tier: what wakes a BenchmarkRun. Its Job's events wake it only when the Job ended or went
away and the run still advances (the others count as skipped); its MongoCluster's events wake it
when the cluster became Ready, not Ready or absent, as the run did not see it yet; and it ticks
every second only where nothing else would wake it, every 2 minutes while a Job runs or the
cluster is awaited.

The queue, the ticker and the dependents are the product's own; the run's advance is recorded
instead of reading an API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import kopf
import pytest

from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.decide.requeue import FALLBACK, NEXT
from mongobench.config import OperatorConfig
from mongobench.controller import Result
from mongobench.handlers import benchmarkrun, mongocluster
from mongobench.k8s import conditions as cond
from mongobench.observability.metrics import REGISTRY
from mongobench.runtime.bodies import LatestBodies
from mongobench.runtime.dependents import Dependents
from mongobench.runtime.locks import ResourceLocks
from mongobench.runtime.ticker import Ticker
from mongobench.runtime.wakeups import Backoff, Wakeups

pytestmark = pytest.mark.unit

RUN_KEY = ("BenchmarkRun", "ns", "r")
ADVANCE = benchmarkrun._advance  # the fixture records its calls instead


@pytest.fixture
def state(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The operator's triggers, with every advance of a run recorded in `state.advanced`."""
    pool = ThreadPoolExecutor(2)
    wakeups = Wakeups(pool, backoff=Backoff(60, 60))  # the test's own events decide what runs
    ticker = Ticker(wakeups)
    state = SimpleNamespace(
        wakeups=wakeups,
        ticker=ticker,
        dependents=Dependents(wakeups),
        clusters=LatestBodies(),
        advanced=[],
        config=OperatorConfig(),
    )
    monkeypatch.setattr(benchmarkrun, "state_of", lambda memo: state)
    monkeypatch.setattr(mongocluster, "state_of", lambda memo: state)
    monkeypatch.setattr(
        benchmarkrun, "_advance", lambda memo, ns, name: state.advanced.append((ns, name))
    )
    yield state
    ticker.close()
    wakeups.close()
    pool.shutdown()


def condition(type_: str, status: str, reason: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": ""}


def run(phase: str | None, *conditions: dict[str, Any], steps: Any = ()) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions), "steps": list(steps)}
    if phase:
        status["phase"] = phase
    return {
        "metadata": {"namespace": "ns", "name": "r", "generation": 1},
        "spec": {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}]},
        "status": status,
    }


def step(index: int, phase: str) -> dict[str, Any]:
    return {"index": index, "phase": phase}


CLUSTER_NOT_READY = condition(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_READY)
CLUSTER_ABSENT = condition(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_FOUND)
CLUSTER_READY = condition(cond.CLUSTER_READY, cond.TRUE, cond.CLUSTER_IS_READY)
SUCCEEDED, RUNNING, PENDING = cond.STEP_SUCCEEDED, cond.STEP_RUNNING, cond.STEP_PENDING


def run_event(body: dict[str, Any], type_: str | None = "MODIFIED") -> None:
    kwargs: dict[str, Any] = {"body": body, "meta": body["metadata"], "memo": kopf.Memo()}
    assert asyncio.run(benchmarkrun.run_changed(type=type_, **kwargs)) is None


def cluster_event(phase: str | None, type_: str | None = "MODIFIED") -> None:
    body = {
        "metadata": {"namespace": "ns", "name": "c", "generation": 1},
        "status": {"phase": phase} if phase else {},
    }
    kwargs: dict[str, Any] = {"body": body, "meta": body["metadata"], "memo": kopf.Memo()}
    assert asyncio.run(mongocluster.cluster_changed(type=type_, **kwargs)) is None


@pytest.mark.parametrize(
    ("body", "every"),
    [
        (run(None), None),  # not advanced yet: the create handler does
        (run(cond.PHASE_PENDING, CLUSTER_NOT_READY), FALLBACK),  # the cluster's events wake it
        (run(cond.PHASE_PENDING, CLUSTER_ABSENT), FALLBACK),
        (  # a scenario ConfigMap applied late: nothing else wakes the run
            run(
                cond.PHASE_PENDING,
                CLUSTER_READY,
                condition(cond.SCENARIO_READY, cond.FALSE, cond.SCENARIO_CONFIGMAP_NOT_FOUND),
            ),
            NEXT,
        ),
        (run(cond.RUN_PREPARING, CLUSTER_READY, steps=[step(0, PENDING)]), NEXT),
        (  # MongoDB not reachable yet: retried every second
            run(
                cond.RUN_PREPARING,
                CLUSTER_READY,
                condition(cond.PROGRESSING, cond.FALSE, cond.MONGODB_UNAVAILABLE),
                steps=[step(0, PENDING)],
            ),
            NEXT,
        ),
        (  # a Job runs: its end wakes the run
            run(cond.RUN_LOADING, CLUSTER_READY, steps=[step(0, SUCCEEDED), step(1, RUNNING)]),
            FALLBACK,
        ),
        (  # the next step's Job to create
            run(
                cond.RUN_COLLECTING,
                CLUSTER_READY,
                steps=[step(0, SUCCEEDED), step(1, SUCCEEDED), step(2, PENDING)],
            ),
            NEXT,
        ),
        (run(cond.RUN_SUCCEEDED, CLUSTER_READY), None),
        (run(cond.RUN_FAILED, CLUSTER_NOT_READY), None),
    ],
)
def test_the_runs_own_events_decide_how_often_it_ticks_and_whether_it_follows_its_cluster(
    state: SimpleNamespace, body: dict[str, Any], every: Result | None
) -> None:
    run_event(body)
    assert state.ticker.interval(RUN_KEY) == (every.requeue_after if every else None)
    following = state.dependents.following(RUN_KEY)
    assert following == (("MongoCluster", "ns", "c") if every else None)
    if every is not None:  # deleted or being deleted: it stops ticking and following
        body["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
        run_event(body)
        assert state.ticker.interval(RUN_KEY) is None
        assert state.dependents.following(RUN_KEY) is None


def test_a_waiting_run_wakes_when_its_cluster_becomes_ready_and_when_it_is_deleted(
    state: SimpleNamespace,
) -> None:
    cluster_event(cond.PHASE_PROVISIONING)
    run_event(run(cond.PHASE_PENDING, CLUSTER_NOT_READY))  # it saw what the cluster is
    assert state.wakeups.idle(timeout=5) and state.advanced == []
    cluster_event(cond.PHASE_INITIALIZING)  # still not Ready
    assert state.wakeups.idle(timeout=5) and state.advanced == []
    cluster_event(cond.PHASE_READY)
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")]
    cluster_event(cond.PHASE_READY)  # a status write of a Ready cluster: nothing new
    # The run started meanwhile (its event), then the cluster goes away during a step.
    run_event(run(cond.RUN_LOADING, CLUSTER_READY, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")]
    cluster_event(cond.PHASE_READY, type_="DELETED")
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")] * 2


def test_a_cluster_that_became_ready_before_the_runs_event_still_wakes_it(
    state: SimpleNamespace,
) -> None:
    cluster_event(cond.PHASE_READY)
    run_event(run(cond.PHASE_PENDING, CLUSTER_NOT_READY))  # written before the cluster's event
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")]


def test_a_woken_run_reads_its_cluster_as_the_event_that_woke_it_and_none_once_deleted(
    state: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster's body is in the index before its runs are woken (they read it there, not
    with a GET); a deleted cluster is never answered for again."""
    key = ("MongoCluster", "ns", "c")
    read: list[str | None] = []

    def advance(memo: Any, namespace: str, name: str) -> None:
        body = state.clusters.get(key)
        read.append(None if body is None else body["status"].get("phase"))

    monkeypatch.setattr(benchmarkrun, "_advance", advance)
    cluster_event(cond.PHASE_PROVISIONING)
    run_event(run(cond.PHASE_PENDING, CLUSTER_NOT_READY))
    cluster_event(cond.PHASE_READY)
    assert state.wakeups.idle(timeout=5) and read == [cond.PHASE_READY]
    run_event(run(cond.RUN_LOADING, CLUSTER_READY, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    cluster_event(cond.PHASE_READY, type_="DELETED")
    assert state.wakeups.idle(timeout=5) and read == [cond.PHASE_READY, None]
    assert key not in state.clusters


def test_a_run_that_ended_drops_what_its_jobs_deletion_woke_meanwhile(
    state: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass that ends a run deletes its Jobs (cleanup); their DELETED events arrive while
    it runs and queue the run again: that pass would only read a finished run."""
    from mongobench.benchmarkrun.act import orchestrate
    from mongobench.benchmarkrun.telemetry import cpu_status

    monkeypatch.setattr(benchmarkrun, "_advance", ADVANCE)  # the real one, over a fake pass
    state.kube = state.run_kube = state.cluster_data = None
    state.locks = ResourceLocks()
    passes: list[str | None] = []
    deleted = job(condition("Complete", cond.TRUE, ""), succeeded=1)

    def advance(*_: Any, **__: Any) -> orchestrate.Outcome:
        passes.append(None)
        if len(passes) == 1:  # the finishing pass: its cleanup deletes the Job
            meta = deleted["metadata"]
            kwargs: dict[str, Any] = {"body": deleted, "meta": meta, "memo": kopf.Memo()}
            asyncio.run(benchmarkrun.job_changed(type="DELETED", **kwargs))
        ended = run(cond.RUN_SUCCEEDED, CLUSTER_READY)
        return orchestrate.Outcome(run=ended, phase=cond.RUN_SUCCEEDED, status=ended["status"])

    monkeypatch.setattr(orchestrate, "advance", advance)
    monkeypatch.setattr(cpu_status, "cpu_for_step", lambda *_: None)
    run_event(run(cond.RUN_LOADING, CLUSTER_READY, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    assert job_event("MODIFIED", job(condition("Complete", cond.TRUE, ""), succeeded=1))
    assert passes == [None]  # the deletion's wake-up was dropped with the run's end
    assert state.ticker.interval(RUN_KEY) is None


def job_events() -> dict[str, float]:
    """mongobench_reconciles_total of the run's job-event handler by outcome."""
    return {
        outcome: REGISTRY.get_sample_value(
            "mongobench_reconciles_total",
            {"kind": "BenchmarkRun", "handler": "job-event", "outcome": outcome},
        )
        or 0.0
        for outcome in ("ok", "skipped")
    }


def job(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "r-load", "labels": {jobs.RUN_LABEL: "r"}},
        "status": {"conditions": list(conditions), **status},
    }


@pytest.mark.parametrize(
    ("type_", "body", "wakes"),
    [
        ("ADDED", job(), False),  # the run created it and recorded the step Running
        ("MODIFIED", job(active=1, ready=1), False),  # its pods started: nothing to decide
        (  # its success criteria are met, not yet Complete
            "MODIFIED",
            job(condition("SuccessCriteriaMet", cond.TRUE, ""), active=1),
            False,
        ),
        ("MODIFIED", job(condition("Complete", cond.TRUE, ""), succeeded=1), True),
        ("MODIFIED", job(condition("Failed", cond.TRUE, "BackoffLimitExceeded")), True),
        ("DELETED", job(active=1), True),  # lost while running: the run keeps what it can
        (None, job(active=1), False),  # listed, running
        # Listed after kopf's watch expired (or at the start): its end may have been missed.
        (None, job(condition("Complete", cond.TRUE, ""), succeeded=1), True),
    ],
)
def test_only_a_job_that_ended_or_went_away_wakes_its_run(
    state: SimpleNamespace, type_: str | None, body: dict[str, Any], wakes: bool
) -> None:
    run_event(run(cond.RUN_LOADING, CLUSTER_READY, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    assert job_event(type_, body) == ({"ok": 1} if wakes else {"skipped": 1})
    assert state.advanced == ([("ns", "r")] if wakes else [])


def test_a_job_of_a_run_that_no_longer_advances_wakes_nothing(state: SimpleNamespace) -> None:
    """The run ended (it stopped ticking) and deletes its Jobs (cleanup.jobs), or was deleted."""
    run_event(run(cond.RUN_SUCCEEDED, CLUSTER_READY))
    assert job_event("DELETED", job(condition("Complete", cond.TRUE, ""))) == {"skipped": 1}
    assert job_event("MODIFIED", job(condition("Complete", cond.TRUE, ""))) == {"skipped": 1}
    assert state.advanced == []


def job_event(type_: str | None, body: dict[str, Any]) -> dict[str, float]:
    """Deliver the Job's event as kopf would; what it added to each outcome's count, once the
    work it queued ran."""
    before = job_events()
    kwargs: dict[str, Any] = {"body": body, "meta": body["metadata"], "memo": kopf.Memo()}
    assert asyncio.run(benchmarkrun.job_changed(type=type_, **kwargs)) is None
    assert benchmarkrun.state_of(None).wakeups.idle(timeout=5)
    after = job_events()
    return {o: after[o] - before[o] for o in after if after[o] != before[o]}


def test_a_queued_run_ticks_slowly_and_wakes_when_the_run_ahead_ends_or_is_deleted(
    state: SimpleNamespace,
) -> None:
    """The run ahead's own events wake the run queued behind it (runtime.dependents)."""

    def named(name: str, phase: str, **status: Any) -> dict[str, Any]:
        body = run(phase, CLUSTER_READY)
        body["metadata"]["name"] = name
        body["status"].update(status)
        return body

    ahead = named("a", cond.RUN_LOADING, steps=[step(0, SUCCEEDED), step(1, RUNNING)])
    run_event(ahead)
    queued = named("r", cond.RUN_QUEUED, queue={"place": 1, "behind": "a", "message": ""})
    run_event(queued)
    assert state.ticker.interval(RUN_KEY) == FALLBACK.requeue_after
    assert state.dependents.following(RUN_KEY) == ("BenchmarkRun", "ns", "a")
    run_event(named("a", cond.RUN_RUNNING, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    assert state.wakeups.idle(timeout=5) and state.advanced == []  # it still holds the target
    run_event(named("a", cond.RUN_SUCCEEDED))
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")]

    # Queued behind another that is deleted while it waits.
    run_event(named("b", cond.RUN_QUEUED))
    queued["status"]["queue"]["behind"] = "b"
    run_event(queued)
    gone = named("b", cond.RUN_QUEUED)
    gone["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    run_event(gone)
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")] * 2


def test_a_run_queued_second_wakes_when_the_run_ahead_starts_or_moves_up(
    state: SimpleNamespace,
) -> None:
    """Its place says 2nd while the run ahead waits; the run ahead starting (or moving up in
    line) wakes it, so its place is read again and not left stale."""

    def named(name: str, phase: str, **status: Any) -> dict[str, Any]:
        body = run(phase, CLUSTER_READY)
        body["metadata"]["name"] = name
        body["status"].update(status)
        return body

    run_event(named("b", cond.RUN_QUEUED, queue={"place": 2, "behind": "a", "message": ""}))
    queued = named("r", cond.RUN_QUEUED, queue={"place": 3, "behind": "b", "message": ""})
    run_event(queued)
    run_event(named("b", cond.RUN_QUEUED, queue={"place": 2, "behind": "a", "message": ""}))
    assert state.wakeups.idle(timeout=5) and state.advanced == []  # as it saw it
    run_event(named("b", cond.RUN_QUEUED, queue={"place": 1, "behind": "a", "message": ""}))
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")]  # moved up
    queued["status"]["queue"]["place"] = 2
    run_event(queued)
    run_event(named("b", cond.RUN_LOADING, steps=[step(0, RUNNING)]))
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")] * 2  # started
    queued["status"]["queue"]["place"] = 1
    run_event(queued)
    run_event(named("b", cond.RUN_RUNNING, steps=[step(0, SUCCEEDED), step(1, RUNNING)]))
    assert state.wakeups.idle(timeout=5) and state.advanced == [("ns", "r")] * 2
