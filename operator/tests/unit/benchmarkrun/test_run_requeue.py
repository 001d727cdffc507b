"""Unit tier: when a BenchmarkRun looks again and whose events wake it, decided from its body
alone (benchmarkrun.decide.requeue, pure): body -> ticks, what the runs behind it see, whom it
follows,
its archive's ticks. test_run_wakeups.py proves the handler carries this to the real ticker and
dependents."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongobench.benchmarkrun.act import archive
from mongobench.benchmarkrun.decide import requeue
from mongobench.benchmarkrun.decide.requeue import ARCHIVE, FALLBACK, HOLDS, LEFT, NEXT
from mongobench.config import OperatorConfig
from mongobench.controller import EVENTS_ONLY, REFUSED_ANNOTATION, Result
from mongobench.k8s import conditions as cond

pytestmark = pytest.mark.unit

CONFIG = OperatorConfig.from_env({})


def condition(type_: str, status: str, reason: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": ""}


NOT_READY = condition(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_READY)
ABSENT = condition(cond.CLUSTER_READY, cond.FALSE, cond.CLUSTER_NOT_FOUND)
READY = condition(cond.CLUSTER_READY, cond.TRUE, cond.CLUSTER_IS_READY)
REFUSED = condition(cond.SUCCEEDED, cond.FALSE, cond.INVALID_SPEC)


def run(
    phase: str | None,
    *conditions: dict[str, Any],
    steps: tuple[str, ...] = (),
    cluster: str | None = "c",
    **status: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"namespace": "ns", "name": "r", "generation": 1},
        "spec": {"clusterRef": {"name": cluster}} if cluster else {"uriSecret": {"name": "u"}},
        "status": {
            "conditions": [dict(c, observedGeneration=1) for c in conditions],
            "steps": [{"index": i, "phase": p} for i, p in enumerate(steps)],
            **({"phase": phase} if phase else {}),
            **status,
        },
    }
    return body


def queued(place: int, behind: str) -> dict[str, Any]:
    return run(cond.RUN_QUEUED, READY, queue={"place": place, "behind": behind, "message": ""})


def refused_by_annotation() -> dict[str, Any]:
    """A refusal the status could not take (handlers.common.report_refusal)."""
    body = run(cond.RUN_PREPARING, READY, steps=(cond.STEP_PENDING,))
    noted = {"generation": 1, "reason": cond.INVALID_SPEC, "message": "bad"}
    body["metadata"]["annotations"] = {REFUSED_ANNOTATION: json.dumps(noted)}
    return body


S, R, P = cond.STEP_SUCCEEDED, cond.STEP_RUNNING, cond.STEP_PENDING


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (run(None), EVENTS_ONLY),  # not advanced yet: the create handler does
        (run(cond.PHASE_PENDING, NOT_READY), FALLBACK),  # the cluster's events wake it
        (run(cond.PHASE_PENDING, ABSENT), FALLBACK),
        (run(cond.PHASE_PENDING, READY), NEXT),  # e.g. a scenario ConfigMap applied late
        (run(cond.PHASE_PENDING), NEXT),  # its first look at the cluster is still to come
        (run(cond.RUN_PREPARING, READY, steps=(P,)), NEXT),
        (run(cond.RUN_LOADING, READY, steps=(S, R)), FALLBACK),  # its Job's end wakes it
        (run(cond.RUN_RUNNING, READY, steps=(S, S, P)), NEXT),  # the next Job to create
        (run(cond.RUN_RUNNING, READY, steps=(S, R, P)), FALLBACK),  # only the current counts
        (queued(1, "a"), FALLBACK),  # the run ahead's events wake it
        (run(cond.RUN_QUEUED, READY), NEXT),  # queued, nobody named ahead: nothing wakes it
        (run(cond.RUN_SUCCEEDED, READY), EVENTS_ONLY),
        (run(cond.RUN_FAILED, NOT_READY), EVENTS_ONLY),
        (run(cond.PHASE_FAILED, REFUSED), EVENTS_ONLY),  # refused spec: until it changes
        (refused_by_annotation(), EVENTS_ONLY),
    ],
)
def test_a_runs_body_says_how_often_it_looks_again(body: dict[str, Any], expected: Result) -> None:
    assert requeue.ticks(body) == expected


def never(*_: Any) -> bool:
    return False


@pytest.mark.parametrize(
    ("body", "deleted", "holds", "follows"),
    [
        (run(cond.PHASE_PENDING, NOT_READY), False, HOLDS, ("MongoCluster", "c", "NotReady")),
        (run(cond.RUN_LOADING, READY, steps=(R,)), False, HOLDS, ("MongoCluster", "c", "Ready")),
        (run(cond.PHASE_PENDING, ABSENT), False, HOLDS, ("MongoCluster", "c", "NotFound")),
        (run(cond.RUN_PREPARING, steps=(P,), cluster=None), False, HOLDS, None),  # a URI
        (queued(1, "a"), False, "Waits:1", ("BenchmarkRun", "a", HOLDS)),  # a starts: wakes
        (queued(3, "b"), False, "Waits:3", ("BenchmarkRun", "b", "Waits:2")),  # b moves up
        (run(cond.RUN_SUCCEEDED, READY), False, LEFT, None),  # the runs behind it wake
        (run(None), False, LEFT, None),
        (run(cond.RUN_LOADING, READY, steps=(R,)), True, LEFT, None),  # deleted
    ],
)
def test_a_runs_body_says_whom_it_follows_and_what_the_runs_behind_it_see(
    body: dict[str, Any],
    deleted: bool,
    holds: str,
    follows: tuple[str, str, str | None] | None,
) -> None:
    wakes = requeue.wakes(body, deleted=deleted, config=CONFIG, pending=never)
    assert (wakes.holds, wakes.follows, wakes.gone) == (holds, follows, deleted)


def test_a_run_being_deleted_stops_ticking_and_following_and_is_gone_for_the_runs_behind() -> None:
    body = queued(1, "a")
    body["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    wakes = requeue.wakes(body, deleted=False, config=CONFIG, pending=lambda *_: True)
    assert wakes == requeue.Wakes(EVENTS_ONLY, LEFT, None, EVENTS_ONLY, gone=True)


@pytest.mark.parametrize(
    ("body", "archive_url", "expected"),
    [
        (run(cond.RUN_SUCCEEDED, READY), "", EVENTS_ONLY),  # no archive asked for
        (run(cond.RUN_SUCCEEDED, READY), "file:///archive", ARCHIVE),  # final manifest due
        (  # all written: nothing left to upload
            run(cond.RUN_SUCCEEDED, READY, archive={"complete": True}),
            "file:///archive",
            EVENTS_ONLY,
        ),
        (run(cond.RUN_LOADING, READY, steps=(R,)), "file:///archive", EVENTS_ONLY),
    ],
)
def test_an_archive_upload_ticks_while_something_is_left_to_upload(
    body: dict[str, Any], archive_url: str, expected: Result
) -> None:
    config = OperatorConfig.from_env({"MONGOBENCH_ARCHIVE_URL": archive_url})
    got = requeue.wakes(body, deleted=False, config=config, pending=archive.pending)
    assert got.archive == expected
    assert requeue.wakes(body, deleted=True, config=config, pending=archive.pending).archive == (
        EVENTS_ONLY
    )


def job(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "r-load"}, "status": {"conditions": list(conditions), **status}}


@pytest.mark.parametrize(
    ("body", "deleted", "wakes"),
    [
        (job(), False, False),  # created: the run recorded the step Running
        (job(active=1, ready=1), False, False),  # its pods started
        (job(condition("SuccessCriteriaMet", cond.TRUE, ""), active=1), False, False),
        (job(condition("Complete", cond.TRUE, ""), succeeded=1), False, True),
        (job(condition("Failed", cond.TRUE, "BackoffLimitExceeded")), False, True),
        (job(active=1), True, True),  # lost while running
    ],
)
def test_only_a_job_that_ended_or_went_away_wakes_its_run(
    body: dict[str, Any], deleted: bool, wakes: bool
) -> None:
    assert requeue.job_wakes(body, deleted=deleted) is wakes


@pytest.mark.parametrize(
    ("left", "expected"),
    [
        (run(cond.RUN_LOADING, READY, steps=(S, R)), FALLBACK),
        (run(cond.RUN_RUNNING, READY, steps=(S, S, P)), NEXT),
        (run(cond.RUN_SUCCEEDED, READY, steps=(S, S)), EVENTS_ONLY),  # the handler stops it
    ],
)
def test_an_advance_returns_when_the_run_looks_again_as_it_left_it(
    left: dict[str, Any], expected: Result
) -> None:
    from mongobench.benchmarkrun.act.orchestrate import Outcome

    read = run(cond.RUN_LOADING, READY, steps=(S, R))  # what the pass read
    outcome = Outcome(run=read, phase=left["status"]["phase"], status=left["status"])
    assert outcome.result == expected
