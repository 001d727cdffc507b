"""Unit tier: what wakes a MongoCluster's sync. A child's event wakes it only when the child's
rollout changed (not for the operator's own applies or the controller's bookkeeping), and one
dropped counts as skipped, not as a sync; the sync ticks every 2 s only while MongoDB steps
wait, and every 30 s in the phases that only a child's event ends."""

from __future__ import annotations

import asyncio
import copy
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import kopf
import pytest
from fake_kube import FakeKube

from mongobench.config import OperatorConfig
from mongobench.handlers import mongocluster
from mongobench.k8s import conditions as cond
from mongobench.k8s.client import ApiError
from mongobench.k8s.rollout import SeenRollouts
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.decide import requeue
from mongobench.observability.metrics import REGISTRY
from mongobench.runtime.bodies import LatestBodies
from mongobench.runtime.dependents import Dependents
from mongobench.runtime.locks import ResourceLocks
from mongobench.runtime.ticker import Ticker
from mongobench.runtime.wakeups import Backoff, Wakeups

pytestmark = pytest.mark.unit


def sts(**status: Any) -> dict[str, Any]:
    return {
        "kind": "StatefulSet",
        "metadata": {"namespace": "ns", "name": "c-rs0", "generation": 1, "resourceVersion": "1"},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 2, **status},
    }


def test_only_a_changed_rollout_wakes_the_sync() -> None:
    seen = SeenRollouts()
    first = sts()
    assert seen.changed("StatefulSet", first)  # first sight (e.g. after a restart)
    bookkeeping = copy.deepcopy(first)
    bookkeeping["metadata"]["resourceVersion"] = "2"
    bookkeeping["metadata"]["labels"] = {"x": "y"}
    bookkeeping["status"]["collisionCount"] = 0
    assert not seen.changed("StatefulSet", bookkeeping)
    assert seen.changed("StatefulSet", sts(readyReplicas=3))  # a pod became ready
    new_template = sts(readyReplicas=3)
    new_template["metadata"]["generation"] = 2  # not yet observed by the controller
    assert seen.changed("StatefulSet", new_template)
    assert seen.changed("StatefulSet", sts(readyReplicas=3, updateRevision="r2"))
    assert not seen.changed("StatefulSet", sts(readyReplicas=3, updateRevision="r2"))


def test_a_forgotten_child_is_news_again() -> None:
    seen = SeenRollouts()
    assert seen.changed("StatefulSet", sts())
    assert seen.changed("Deployment", sts())  # kinds are apart
    seen.forget("StatefulSet", "ns", "c-rs0")
    assert seen.changed("StatefulSet", sts())
    assert len(seen) == 2


def child_events() -> dict[str, float]:
    """mongobench_reconciles_total of the child-event handler by outcome, as /metrics shows it."""
    return {
        outcome: REGISTRY.get_sample_value(
            "mongobench_reconciles_total",
            {"kind": "MongoCluster", "handler": "child-event", "outcome": outcome},
        )
        or 0.0
        for outcome in ("ok", "skipped", "retry", "error")
    }


def test_a_dropped_child_event_counts_as_skipped_and_a_synced_one_as_ok(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = ThreadPoolExecutor(2)
    # Retries wait a minute here: the test's own events decide what runs.
    wakeups = Wakeups(pool, backoff=Backoff(60, 60))
    state = SimpleNamespace(
        rollouts=SeenRollouts(),
        locks=ResourceLocks(),
        wakeups=wakeups,
        kube=FakeKube(),
        config=OperatorConfig(),
    )
    synced: list[tuple[str, str]] = []
    monkeypatch.setattr(mongocluster, "state_of", lambda memo: state)
    monkeypatch.setattr(mongocluster, "_sync", lambda memo, ns, name: synced.append((ns, name)))

    def event(type_: str | None, body: dict[str, Any]) -> dict[str, float]:
        """Deliver one event as kopf would (in its event loop), let the wake-up it queued run;
        what it added to each outcome's count."""
        body["metadata"]["labels"] = {lbl.MANAGED_BY: "mongobench", lbl.CLUSTER: "c"}
        before = child_events()
        kwargs: dict[str, Any] = {"body": body, "meta": body["metadata"], "memo": kopf.Memo()}
        result = asyncio.run(mongocluster.child_changed(type=type_, **kwargs))
        assert result is None  # kopf would write anything else into the child's status
        assert wakeups.idle(timeout=10)
        after = child_events()
        return {o: after[o] - before[o] for o in after if after[o] != before[o]}

    assert event(None, sts()) == {"skipped": 1}  # kopf's initial listing
    assert event(None, sts()) == {"skipped": 1}  # listed again (peering resumed), unchanged
    bookkeeping = sts()
    bookkeeping["status"]["collisionCount"] = 0
    assert event("MODIFIED", bookkeeping) == {"skipped": 1}  # no rollout changed
    assert synced == []
    assert event("MODIFIED", sts(readyReplicas=3)) == {"ok": 1}  # a pod became ready
    assert event("DELETED", sts(readyReplicas=3)) == {"ok": 1}
    assert synced == [("ns", "c"), ("ns", "c")]
    # Listed again after peering resumed the operator: what changed while another replica was
    # active wakes the sync; a workload first seen in a listing is the resume handler's.
    assert event(None, sts(readyReplicas=2)) == {"skipped": 1}  # unseen: deleted above
    assert event(None, sts(readyReplicas=3)) == {"ok": 1}
    synced.clear()

    # A sync that fails is retried after a backoff, and forgets the rollout: the same rollout
    # wakes it again at once.
    monkeypatch.setattr(mongocluster, "_sync", lambda *_: 1 / 0)
    assert event("MODIFIED", sts(readyReplicas=1)) == {"error": 1}
    assert wakeups.retrying(("StatefulSet", "ns", "c-rs0")) is not None
    monkeypatch.setattr(mongocluster, "_sync", lambda memo, ns, name: synced.append((ns, name)))
    assert event("MODIFIED", sts(readyReplicas=1)) == {"ok": 1}
    assert synced == [("ns", "c")]
    assert wakeups.retrying(("StatefulSet", "ns", "c-rs0")) is None
    wakeups.close()
    pool.shutdown()


@pytest.mark.parametrize(
    ("phase", "updated", "deleting", "type_", "interval"),
    [
        (cond.PHASE_INITIALIZING, True, False, None, 2.0),  # kopf's listing: resumed
        (cond.PHASE_INITIALIZING, True, False, "MODIFIED", 2.0),
        (cond.PHASE_PROVISIONING, True, False, "MODIFIED", 30.0),
        (cond.PHASE_READY, True, False, "MODIFIED", None),
        (cond.PHASE_INITIALIZING, True, True, "MODIFIED", None),  # deletion requested
        (cond.PHASE_INITIALIZING, True, False, "DELETED", None),
    ],
)
def test_the_clusters_own_events_decide_how_often_its_sync_ticks(
    monkeypatch: pytest.MonkeyPatch,
    phase: str,
    updated: bool,
    deleting: bool,
    type_: str | None,
    interval: float | None,
) -> None:
    """What kopf's timers' filters did, decided from each event's body: the ticker keeps the
    cluster's key and work, not its body."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool)
    ticker = Ticker(wakeups)
    state = SimpleNamespace(ticker=ticker, dependents=Dependents(wakeups), clusters=LatestBodies())
    monkeypatch.setattr(mongocluster, "state_of", lambda memo: state)
    key = ("MongoCluster", "ns", "c")
    if type_ is not None:  # it was wiring before (kopf's listing finds nothing scheduled)
        ticker.schedule(key, True, 2.0, lambda: None, first=60)
    body, _ = cluster(phase, updated)
    body["metadata"].update(namespace="ns", name="c")
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    kwargs: dict[str, Any] = {"body": body, "meta": body["metadata"], "memo": kopf.Memo()}
    assert asyncio.run(mongocluster.cluster_changed(type=type_, **kwargs)) is None
    assert ticker.interval(key) == interval
    ticker.close()
    pool.shutdown()


def cluster(phase: str | None, updated: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    status: dict[str, Any] = {
        "conditions": [{"type": cond.UPDATED, "status": cond.TRUE if updated else cond.FALSE}]
    }
    if phase:
        status["phase"] = phase
    return {"metadata": {"generation": 1}, "status": status}, status


@pytest.mark.parametrize(
    ("phase", "updated", "fast", "slow"),
    [
        (None, True, False, False),  # not reconciled yet: the create handler runs
        (cond.PHASE_PENDING, True, False, True),
        (cond.PHASE_PROVISIONING, True, False, True),  # pods awaited: their events wake it
        (cond.PHASE_DEGRADED, True, False, True),
        (cond.PHASE_INITIALIZING, True, True, False),  # MongoDB steps wait on elections
        (cond.PHASE_SCALING, True, True, False),  # a member to remove before the pod goes
        (cond.PHASE_FAILED, True, True, False),  # MongoDB refused a step: retried
        (cond.PHASE_READY, False, True, False),  # a rolling restart goes on
        (cond.PHASE_READY, True, False, False),  # nothing to do: no ticks, no idle writes
        (cond.PHASE_DELETING, True, False, False),
    ],
)
def test_ticks_run_only_where_nothing_else_would_wake_the_sync(
    phase: str | None, updated: bool, fast: bool, slow: bool
) -> None:
    body, _ = cluster(phase, updated)
    assert requeue.wiring(body) is fast
    assert requeue.waiting_for_pods(body) is slow


def test_claims_are_read_only_when_a_template_asks_less_than_the_spec() -> None:
    from cluster_fixtures import REPLICA_SET
    from fake_kube import FakeKube

    from mongobench.mongocluster.act import storage
    from mongobench.mongocluster.act.provision import desired
    from mongobench.mongocluster.decide.status import WorkloadState

    kube = FakeKube()
    kube.refuse("list", "PersistentVolumeClaim", 500, "claims read")
    spec = copy.deepcopy(REPLICA_SET)
    spec["storage"] = {"size": "20Gi"}
    body = {"metadata": {"name": "c", "namespace": "ns"}, "spec": spec}
    d = desired(kube, body, {"platform": {"provider": "kind", "storageClass": ""}})

    def observed(template: str | None) -> dict[str, WorkloadState]:
        return {"c-rs0": WorkloadState(3, 3, claim_storage=template)}

    for template in ("20Gi", "50Gi", None):
        assert storage.grow_claims(kube, d, observed(template)).reason == cond.SIZE_MATCHES
    with pytest.raises(ApiError, match="claims read"):  # the spec grew: the claims are read
        storage.grow_claims(kube, d, observed("10Gi"))
