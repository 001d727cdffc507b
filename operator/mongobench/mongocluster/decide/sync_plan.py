"""Pure: what one MongoCluster sync does with what it observed. reconcile.sync gathers the
observations (workloads, MongoDB's wiring), asks these functions, and carries the plan out:

- which replica sets are ready for MongoDB administration (`ready_sets`);
- which StatefulSets keep their member count while MongoDB still lists the members to remove
  (`held_replicas`), and whether the workloads are applied again this pass (`reapply`: a held
  scale-down released, a shard's StatefulSet over its size, mongos to upgrade);
- which retiring shards' objects can go (`drained`: MongoDB no longer lists them);
- the status to write (`sync_status`) and the Events to post (`sync_events`);
- which steps a sync takes, in order (`sync_steps`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mongobench.k8s import conditions as c
from mongobench.k8s.conditions import Event
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.decide.status import (
    Observed,
    Wiring,
    WorkloadState,
    compute_status,
    differs,
)


class SyncStep(StrEnum):
    """One step of a sync, as reconcile._sync performs it."""

    # Status from the observation alone, nothing administered: a predecessor's objects remain.
    PUBLISH_WAITING = "publish-waiting"
    GROW_CLAIMS = "grow-claims"  # member claims smaller than the spec asked for its size
    MONGOS_UPGRADE = "mongos-upgrade"  # whether mongos waits on, or moves to, a new image
    ISSUE_CERTIFICATES = "issue-certificates"  # certificates from the CA Secret, when due
    ROTATE_CREDENTIALS = "rotate-credentials"  # a rotation under way takes its next stage
    ADMINISTER = "administer"  # MongoDB: the next wiring step, FCV, a roll
    TLS_RENEWAL = "tls-renewal"  # renewed certificates reaching the members
    PLACEMENT = "placement"  # whether the nodes can hold every member
    REMOVE_DRAINED_SHARDS = "remove-drained-shards"  # objects of shards MongoDB no longer lists
    CONVERGE = "converge"  # status, workloads applied again where due, Events


@dataclass(frozen=True)
class SyncObservation:
    """What decides a sync's steps, as observed at its start."""

    deleting: bool  # the cluster has a deletionTimestamp
    left_behind: bool  # a deleted predecessor's objects are still there
    ready: bool  # some replica set (or mongos) has all its pods ready
    rotation_under_way: bool  # a credential rotation has started and not ended
    sharded: bool
    ca_issued_tls: bool  # TLS on, with certificates the operator issues from a CA Secret


def sync_steps(seen: SyncObservation) -> tuple[SyncStep, ...]:
    """The steps of one sync, in the order they are taken. A deleting cluster only reports
    and removes drained shards; one waiting on its predecessor only reports. The rotation
    goes before the wiring: the wiring logs in with the Secrets' passwords, which a rotation
    changes."""
    if seen.left_behind and not seen.deleting:
        return (SyncStep.PUBLISH_WAITING,)
    live = not seen.deleting
    administer = seen.ready and live
    table = (
        (SyncStep.GROW_CLAIMS, live),
        (SyncStep.MONGOS_UPGRADE, live and seen.sharded),
        (SyncStep.ISSUE_CERTIFICATES, live and seen.ca_issued_tls),
        (SyncStep.ROTATE_CREDENTIALS, administer and seen.rotation_under_way),
        (SyncStep.ADMINISTER, administer),
        (SyncStep.TLS_RENEWAL, live),
        (SyncStep.PLACEMENT, live),
        (SyncStep.REMOVE_DRAINED_SHARDS, True),
        (SyncStep.CONVERGE, True),
    )
    return tuple(step for step, taken in table if taken)


def ready_sets(
    layout: ClusterLayout,
    statefulsets: Mapping[str, WorkloadState],
    mongos: WorkloadState | None,
) -> frozenset[str]:
    """Replica sets whose pods are all ready, and "mongos" when its routers are."""
    sets = frozenset(
        rs.name
        for rs in layout.replica_sets
        if statefulsets.get(rs.name, WorkloadState(0, 0)).ready >= rs.members
    )
    if mongos is not None and mongos.ready >= layout.mongos_replicas:
        return sets | {"mongos"}
    return sets


def held_replicas(
    layout: ClusterLayout, statefulsets: Mapping[str, WorkloadState], status: Mapping[str, Any]
) -> dict[str, int]:
    """StatefulSets whose scale-down must wait: MongoDB still lists the members to remove.

    One place decides it, for provision and sync alike: a member's pod goes away only after the
    replica set no longer has it in its configuration.
    """
    in_config = {
        rs["name"]: len(rs.get("memberStates") or [])
        for rs in status.get("replicaSets") or []
        if rs.get("initialized")
    }
    held: dict[str, int] = {}
    for rs in layout.replica_sets:
        current = statefulsets.get(rs.name)
        if current is None or current.replicas <= rs.members:
            continue
        if in_config.get(rs.name, 0) > rs.members:
            held[rs.name] = current.replicas
    return held


def drained(
    retiring: Sequence[ReplicaSetLayout], wiring: Wiring | None
) -> tuple[ReplicaSetLayout, ...]:
    """Retiring shards MongoDB no longer lists (drained, or never added): their objects can go.
    None of them while listShards did not answer this pass."""
    if wiring is None or not wiring.shards_listed:
        return ()
    return tuple(rs for rs in retiring if rs.name not in wiring.shards)


def reapply(
    layout: ClusterLayout,
    statefulsets: Mapping[str, WorkloadState],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    mongos_changes: bool,
) -> dict[str, int] | None:
    """The member counts to apply the workloads with again this pass, None when nothing calls
    for it: a scale-down held before and released now (MongoDB removed the members), a
    StatefulSet over the spec's size and not held, or mongos to move to a new image."""
    held_before = held_replicas(layout, statefulsets, before)
    held_now = held_replicas(layout, statefulsets, after)
    oversized = any(
        statefulsets.get(rs.name, WorkloadState(rs.members, 0)).replicas > rs.members
        and rs.name not in held_now
        for rs in layout.replica_sets
    )
    if held_before != held_now or oversized or mongos_changes:
        return held_now
    return None


@dataclass(frozen=True)
class StatusInputs:
    """What the status of one sync is computed from, apart from the observation itself."""

    previous: Mapping[str, Any]
    generation: int
    created: str
    now: str
    clock: str
    platform: Mapping[str, Any]
    fcv: str | None


def sync_status(
    layout: ClusterLayout, observed: Observed, inputs: StatusInputs
) -> tuple[dict[str, Any], bool]:
    """The new status and whether it differs from the previous in anything a user can see."""
    new = compute_status(
        layout,
        observed,
        inputs.previous,
        generation=inputs.generation,
        created=inputs.created,
        now=inputs.now,
        clock=inputs.clock,
    )
    new["platform"] = dict(inputs.platform)
    if inputs.fcv is not None:
        new["featureCompatibilityVersion"] = inputs.fcv
    return new, differs(inputs.previous, new)


def shard_events(
    wiring: Wiring | None, removed: Sequence[str], deletion_policy: str
) -> list[Event]:
    """A drain that started this pass, and each drained shard whose objects were deleted."""
    events: list[Event] = []
    if wiring is not None and wiring.removal is not None and wiring.removal.state == "started":
        events.append(
            (
                c.NORMAL,
                c.EVENT_SHARD_DRAINING,
                f"removeShard {wiring.removal.shard}: draining started (its chunks and "
                "databases move to the remaining shards)",
            )
        )
    events += [
        (
            c.NORMAL,
            c.EVENT_SHARD_REMOVED,
            f"shard {name} drained and removed; its StatefulSet, Service and "
            "PodDisruptionBudget were deleted, its volume claims follow "
            f"deletionPolicy {deletion_policy}",
        )
        for name in removed
    ]
    return events


@dataclass(frozen=True)
class Outcome:
    """What one sync observed and changed, as far as Events tell it."""

    phase: str
    changed: bool  # the status was written
    failure: str | None = None  # MongoDB refused a step for good
    storage_warning: str | None = None  # claims cannot grow
    fcv_set: str | None = None  # featureCompatibilityVersion this pass set
    shard_events: tuple[Event, ...] = ()
    placement_warning: str | None = None  # PlacementFeasible turned False this pass


def placement_warning(
    previous: Mapping[str, Any], placement: tuple[str, str, str] | None
) -> str | None:
    """The message of a PlacementFeasible that turns False now (not again on every pass)."""
    if placement is None or placement[0] != c.FALSE:
        return None
    before = next(
        (k for k in previous.get("conditions") or () if k.get("type") == c.PLACEMENT_FEASIBLE),
        None,
    )
    if before is not None and before.get("status") == c.FALSE:
        return None
    return placement[2]


def sync_events(outcome: Outcome) -> list[Event]:
    """The Events of one sync: a failure or a storage refusal when the status changed with it
    (not again on every pass), shard removal steps, the FCV set, Ready reached."""
    events: list[Event] = []
    if outcome.failure and outcome.changed:
        events.append((c.WARNING, c.EVENT_MONGODB_ERROR, outcome.failure))
    if outcome.changed and outcome.storage_warning:
        events.append((c.WARNING, c.EVENT_NOT_EXPANDABLE, outcome.storage_warning))
    if outcome.placement_warning:
        events.append((c.WARNING, c.EVENT_NOT_ENOUGH_NODES, outcome.placement_warning))
    events += outcome.shard_events
    if outcome.fcv_set:
        events.append(
            (
                c.NORMAL,
                c.EVENT_FCV_SET,
                f"featureCompatibilityVersion set to {outcome.fcv_set}",
            )
        )
    if outcome.changed and outcome.phase == c.PHASE_READY:
        events.append((c.NORMAL, c.EVENT_READY, "all members ready and wired"))
    return events
