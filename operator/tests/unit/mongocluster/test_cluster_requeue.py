"""Unit tier: when a MongoCluster's sync looks again, decided from its body alone
(mongocluster.decide.requeue, pure): body -> Result, and the certificates' recheck -> Result.
test_wakeups.py proves the handler carries this to the real ticker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongobench.controller import EVENTS_ONLY, REFUSED_ANNOTATION, Result
from mongobench.k8s import conditions as cond
from mongobench.mongocluster.decide import requeue, rotation
from mongobench.mongocluster.decide.requeue import WAITING, WIRING

pytestmark = pytest.mark.unit


def cluster(
    phase: str | None,
    *,
    updated: bool = True,
    annotations: dict[str, str] | None = None,
    **status: Any,
) -> dict[str, Any]:
    conditions = [{"type": cond.UPDATED, "status": cond.TRUE if updated else cond.FALSE}]
    body: dict[str, Any] = {
        "metadata": {"namespace": "ns", "name": "c", "generation": 1},
        "status": {"conditions": conditions, **({"phase": phase} if phase else {}), **status},
    }
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


def refused(phase: str) -> dict[str, Any]:
    """A refusal the status could not take (handlers.common.report_refusal)."""
    noted = {"generation": 1, "reason": cond.INVALID_SPEC, "message": "bad"}
    return cluster(phase, annotations={REFUSED_ANNOTATION: json.dumps(noted)})


ROTATION_ASKED = {rotation.ANNOTATION: "users"}
TLS_ROLL = {"tls": {"phase": cond.TLS_ROLLING}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (cluster(None), EVENTS_ONLY),  # not reconciled yet: the create handler runs
        (cluster(cond.PHASE_PENDING), WAITING),  # pods awaited: their events wake the sync
        (cluster(cond.PHASE_PROVISIONING), WAITING),
        (cluster(cond.PHASE_DEGRADED), WAITING),
        (cluster(cond.PHASE_INITIALIZING), WIRING),  # MongoDB steps wait on elections
        (cluster(cond.PHASE_SCALING), WIRING),  # a member to remove before the pod goes
        (cluster(cond.PHASE_FAILED), WIRING),  # MongoDB refused a step: retried
        (cluster(cond.PHASE_READY, updated=False), WIRING),  # a rolling restart goes on
        (cluster(cond.PHASE_READY), EVENTS_ONLY),  # nothing to do: no idle writes
        (cluster(cond.PHASE_READY, annotations=ROTATION_ASKED), WIRING),  # waits on clients
        (cluster(cond.PHASE_READY, rotation={"phase": cond.ROTATION_ROTATING}), WIRING),
        (cluster(cond.PHASE_READY, **TLS_ROLL), WIRING),  # waits for plain clients to end
        (cluster(cond.PHASE_INITIALIZING, annotations=ROTATION_ASKED), WIRING),
        (cluster(cond.PHASE_PROVISIONING, annotations=ROTATION_ASKED), WAITING),  # pods first
        (cluster(cond.PHASE_DELETING), EVENTS_ONLY),
        (refused(cond.PHASE_INITIALIZING), EVENTS_ONLY),  # until the spec changes
        (refused(cond.PHASE_PROVISIONING), EVENTS_ONLY),
    ],
)
def test_a_clusters_body_says_how_often_its_sync_looks_again(
    body: dict[str, Any], expected: Result
) -> None:
    assert requeue.ticks(body, deleted=False) == expected


@pytest.mark.parametrize("phase", [cond.PHASE_INITIALIZING, cond.PHASE_PENDING])
def test_a_cluster_gone_or_going_never_ticks(phase: str) -> None:
    assert requeue.ticks(cluster(phase), deleted=True) == EVENTS_ONLY
    going = cluster(phase)
    going["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    assert requeue.ticks(going, deleted=False) == EVENTS_ONLY


@pytest.mark.parametrize(
    ("recheck_in", "expected"),
    [
        (None, EVENTS_ONLY),  # no certificate work falls due: events only
        (0.0, Result(1.0)),  # a CA change's next step: look again at once (a second later)
        (2.3, Result(4.0)),  # rounded up, then a second so it is due when the sync runs
        (3600.0, Result(3601.0)),
    ],
)
def test_certificate_work_no_event_announces_is_looked_at_when_it_falls_due(
    recheck_in: float | None, expected: Result
) -> None:
    assert requeue.certificates(recheck_in) == expected


def test_a_syncs_result_carries_its_certificates_recheck_to_the_handler() -> None:
    from mongobench.mongocluster.act.reconcile import SyncResult

    assert SyncResult(cond.PHASE_READY, False, recheck_in=2.3).recheck == Result(4.0)
    assert SyncResult(cond.PHASE_READY, False).recheck == EVENTS_ONLY
