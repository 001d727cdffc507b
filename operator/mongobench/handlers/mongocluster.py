"""MongoCluster handlers: thin; the logic lives in mongobench.mongocluster (provision, sync,
delete).

Each one runs under handlers.common.refusals: a spec the operator cannot use ends in phase
Failed, the Ready condition and one Event, and its ticks stop until the spec changes.
Deletion never reads the spec beyond deletionPolicy (mongocluster.act.deletion).

The reconciler (and MongoDB's administration with it) loads with the first cluster the operator
handles (handlers/__init__.py says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import kopf

from mongobench.api.kinds import MONGOCLUSTER as KIND
from mongobench.clock import wall
from mongobench.controller import EVENTS_ONLY, cluster_as_runs_see_it
from mongobench.handlers.common import MONGOCLUSTER, refusals
from mongobench.k8s import conditions as cond
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.decide import requeue
from mongobench.observability.metrics import SKIPPED, Skipped, instrumented
from mongobench.state import state_of

if TYPE_CHECKING:
    from mongobench.mongocluster.build.platform import PlatformFacts


@kopf.on.resume(*MONGOCLUSTER)
@kopf.on.create(*MONGOCLUSTER)
@kopf.on.update(*MONGOCLUSTER, field="spec")
@instrumented("MongoCluster", "provision")
def provision(
    body: kopf.Body, meta: kopf.Meta, status: kopf.Status, memo: kopf.Memo, **_: Any
) -> None:
    from mongobench.mongocluster.act import reconcile
    from mongobench.mongocluster.decide.predecessor import PredecessorPending

    state = state_of(memo)
    with refusals(state.kube, KIND, meta["namespace"], meta["name"], cond.READY, locks=state.locks):
        try:
            d = reconcile.provision(state.kube, body, wall(), state.config)
        except PredecessorPending as waiting:
            _sync(memo, meta["namespace"], meta["name"])  # status says what it waits for
            delay = requeue.PREDECESSOR_RETRY_SECONDS
            raise kopf.TemporaryError(str(waiting), delay=delay) from None
        if not status.get("phase"):
            state.kube.event(body, cond.NORMAL, cond.EVENT_PROVISIONING, "objects created")
        _sync(memo, meta["namespace"], meta["name"], detected=d.facts)


@kopf.on.event(*MONGOCLUSTER)
async def cluster_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """The cluster's events decide how often its sync ticks (mongocluster.decide.requeue;
    runtime.ticker:
    kopf's timers kept every cluster's body)."""
    namespace, name = meta["namespace"], meta["name"]
    state = state_of(memo)
    raw = dict(body)
    deleted = type == "DELETED"
    key = (KIND, namespace, name)
    result = requeue.ticks(raw, deleted=deleted)
    state.ticker.requeue(key, result, lambda: timed_sync(memo, namespace, name))
    # Its runs read it from here (runtime.bodies), fed before they are woken so they read this.
    if deleted:
        state.clusters.gone(key)
    else:
        state.clusters.seen(key, raw)
    # Runs waiting on this cluster (Ready, not Ready, gone) wake when that changes.
    seen = cluster_as_runs_see_it(raw, deleted)
    state.dependents.changed(key, seen, gone=deleted)
    _follow_certificates(memo, raw, deleted)


def _follow_certificates(memo: kopf.Memo, body: Mapping[str, Any], deleted: bool) -> None:
    """The cluster follows its certificate Secrets and the CA Secret it names (runtime.dependents):
    a changed certificate wakes its sync, which carries it to the members (rotateCertificates)
    or reissues from a new CA. Registered once per Secret; dropped with the cluster."""
    from mongobench.mongocluster.act.tls_secrets import followed_secrets

    state = state_of(memo)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    for secret in followed_secrets(body):
        key, followed = (KIND, namespace, name, secret), ("Secret", namespace, secret)
        if deleted:
            state.dependents.unfollow(key)
        elif state.dependents.following(key) != followed:

            def wake(namespace: str = namespace, name: str = name) -> None:
                # Queued under the cluster's own key: coalesced with its other work.
                state.wakeups.wake(
                    (KIND, namespace, name), lambda: timed_sync(memo, namespace, name)
                )

            state.dependents.follow(key, followed, None, wake)


# Only the Secrets labelled labels.WATCH: the server filters the list and the watch (main.py
# sets the selector, SECRETS_SELECTED); the handler's own filter says the same in kopf's terms.
SECRETS_SELECTED = (("", "v1", "secrets"), lbl.WATCH_SELECTOR)


@kopf.on.event(*SECRETS_SELECTED[0], labels=lbl.WATCHED)
async def secret_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """A watched Secret holding a certificate changed: the clusters following it wake (only its
    digest is kept, runtime.dependents; a watched Secret without a certificate is ignored)."""
    from mongobench.mongocluster.act.tls_secrets import certificate_state

    current = certificate_state(body.get("data") or {})
    if current is None:
        return
    followed = ("Secret", meta["namespace"], meta["name"])
    state_of(memo).dependents.changed(followed, current, gone=type == "DELETED")


@instrumented("MongoCluster", "sync")
def timed_sync(memo: kopf.Memo, namespace: str, name: str) -> None:
    state = state_of(memo)
    with refusals(state.kube, KIND, namespace, name, cond.READY, locks=state.locks):
        _sync(memo, namespace, name)


@kopf.on.event(
    "apps", "v1", "statefulsets", labels={lbl.MANAGED_BY: "mongobench", lbl.CLUSTER: kopf.PRESENT}
)
@kopf.on.event(
    "apps", "v1", "deployments", labels={lbl.MANAGED_BY: "mongobench", lbl.CLUSTER: kopf.PRESENT}
)
async def child_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """A member's pod became ready or went away: observe the whole cluster. Decided here, in
    kopf's event loop, so no event waits for a handler thread with its body (runtime.wakeups)."""
    state = state_of(memo)
    kind = body.get("kind") or "StatefulSet"
    namespace, name = meta["namespace"], meta["name"]
    # kopf's listing of a workload this operator has not seen: the first since it started (the
    # resume handler covers it). A listing after peering resumed the operator shows workloads
    # it has seen: one whose rollout changed while another replica was active wakes the sync.
    first_listing = type is None and not state.rollouts.seen(kind, namespace, name)
    if type == "DELETED":
        state.rollouts.forget(kind, namespace, name)
    elif not state.rollouts.changed(kind, body) or first_listing:
        # Nothing a sync reads changed, or the first listing. Counted as skipped, not a sync.
        _dropped()
        return
    cluster = meta["labels"][lbl.CLUSTER]
    state.wakeups.wake(
        (kind, namespace, name), lambda: _child_sync(memo, kind, namespace, name, cluster)
    )


@instrumented("MongoCluster", "child-event")
def _dropped() -> Skipped:
    return SKIPPED


@instrumented("MongoCluster", "child-event")
def _child_sync(memo: kopf.Memo, kind: str, namespace: str, child: str, cluster: str) -> None:
    state = state_of(memo)
    try:
        with refusals(state.kube, KIND, namespace, cluster, cond.READY, locks=state.locks):
            _sync(memo, namespace, cluster)
    except Exception:
        # Retried by the queue after a backoff (runtime.wakeups); and the next event with the same
        # rollout syncs again.
        state.rollouts.forget(kind, namespace, child)
        raise


@kopf.on.delete(*MONGOCLUSTER)
@instrumented("MongoCluster", "delete")
def delete(body: kopf.Body, meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    from mongobench.mongocluster.act import deletion

    deletion.finalize(state_of(memo).kube, body)
    state_of(memo).forget(KIND, meta["namespace"], meta["name"])


def _sync(
    memo: kopf.Memo, namespace: str, name: str, detected: PlatformFacts | None = None
) -> None:
    from mongobench.mongocluster.act import reconcile

    state = state_of(memo)
    result = reconcile.sync(
        state.kube,
        namespace,
        name,
        state.locks,
        state.admins,
        clock=wall,
        config=state.config,
        detected=detected,
    )
    if result is not None and result.phase == cond.PHASE_READY:
        state.admins.release_bootstrap(namespace, name)
    # Certificate work no event announces: one sync queued when it falls due.
    state.ticker.requeue(
        (KIND, namespace, name, "certificates"),
        EVENTS_ONLY if result is None else result.recheck,
        lambda: timed_sync(memo, namespace, name),
        wake_key=(KIND, namespace, name),
    )
