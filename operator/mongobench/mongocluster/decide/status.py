"""Pure: a MongoCluster's status from what was observed, never from what was merely asked for.

Phase rules (first match wins):
  Deleting      the object is being deleted
  Failed        the spec cannot be used, or MongoDB refused a step permanently
  Pending       none of the cluster's StatefulSets exists yet
  Scaling       a StatefulSet/Deployment or a replica set's membership differs from the spec
                (members or mongos added/removed, a shard added, a shard draining before its
                removal) after the cluster was Ready
  Provisioning  pods not all ready, before the cluster was first Ready
  Degraded      pods not all ready after the cluster was Ready
  Initializing  pods ready, replica sets / shards / users not all wired yet
  Ready         everything ready and wired
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mongobench.clock import parse_rfc3339, seconds_since
from mongobench.k8s import conditions as c
from mongobench.k8s.conditions import ConditionStatus, set_condition
from mongobench.mongo.model import DrainingProgress, ServerFacts
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.decide.shards import draining_message, draining_status


@dataclass(frozen=True)
class WorkloadState:
    """A StatefulSet or Deployment as observed: what its spec asks and how many pods are ready."""

    replicas: int
    ready: int
    updated: int | None = None
    # The controller has seen the current spec and every pod runs its latest revision: no
    # member needs a rolling restart (rolling.roll then asks nothing more of the API).
    settled: bool = False
    # The storage each new member's claim asks (the claim template's, immutable once created);
    # None without a claim template.
    claim_storage: str | None = None

    @classmethod
    def of_statefulset(cls, sts: Mapping[str, Any]) -> WorkloadState:
        replicas = int(sts["spec"].get("replicas", 0))
        status = sts.get("status") or {}
        updated = int(status.get("updatedReplicas", 0))
        seen = int(status.get("observedGeneration", 0)) >= int(sts["metadata"].get("generation", 0))
        templates = sts["spec"].get("volumeClaimTemplates") or [{}]
        requests = ((templates[0].get("spec") or {}).get("resources") or {}).get("requests") or {}
        return cls(
            replicas,
            int(status.get("readyReplicas", 0)),
            updated,
            settled=seen and updated >= replicas and int(status.get("replicas", 0)) == replicas,
            claim_storage=requests.get("storage"),
        )


@dataclass(frozen=True)
class Wiring:
    """What the MongoDB administration pass observed (see wire.py)."""

    complete: bool
    message: str = ""
    # replSet name -> status dict (as ReplicaSetStatus.as_status()).
    replica_sets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    shards: frozenset[str] = frozenset()
    # replSet name -> members present in the replica set configuration.
    config_members: Mapping[str, int] = field(default_factory=dict)
    distribution: Mapping[str, Any] | None = None
    # Whether listShards answered this pass (`shards` is then what it listed).
    shards_listed: bool = False
    # removeShard's answer for the shard draining now, and the shards queued behind it.
    removal: DrainingProgress | None = None
    removal_waiting: tuple[str, ...] = ()
    # replSet name (its primary) or "mongos" -> serverStatus facts.
    server: Mapping[str, ServerFacts] = field(default_factory=dict)


@dataclass(frozen=True)
class Observed:
    statefulsets: Mapping[str, WorkloadState]
    mongos: WorkloadState | None = None
    wiring: Wiring | None = None
    deleting: bool = False
    failure: str | None = None  # a permanent error, shown as is
    rolling: str | None = None  # a rolling restart in progress: what it does now
    # StorageResized condition (status, reason, message), from storage.grow_claims.
    storage: tuple[ConditionStatus, str, str] | None = None
    # Shard StatefulSets the spec dropped, kept until MongoDB has drained them (shards.py).
    retiring: tuple[str, ...] = ()
    # PlacementFeasible condition (status, reason, message), from placement.feasibility; None:
    # no hard placement rule, the condition is left out.
    placement: tuple[ConditionStatus, str, str] | None = None
    # What a deleted MongoCluster of the same name left that garbage collection has yet to
    # delete (predecessor.py): said in Ready while nothing of this cluster's runs.
    predecessor: str | None = None
    # CASecretWatched condition (status, reason, message), from tls_secrets.ca_watch; None:
    # no CA Secret named, the condition is left out.
    ca_watch: tuple[ConditionStatus, str, str] | None = None


@dataclass(frozen=True)
class Readiness:
    """How many members are ready against the spec, and whether every pod is."""

    wanted: int
    ready: int
    mongos_ready: int
    pods_ready: bool

    @classmethod
    def of(cls, layout: ClusterLayout, observed: Observed) -> Readiness:
        sets = layout.replica_sets
        ready = sum(
            min(observed.statefulsets[rs.name].ready, rs.members)
            for rs in sets
            if rs.name in observed.statefulsets
        )
        wanted = sum(rs.members for rs in sets)
        mongos_ready = observed.mongos.ready if observed.mongos else 0
        pods_ready = ready == wanted and all(
            observed.statefulsets.get(rs.name, WorkloadState(0, 0)).ready == rs.members
            for rs in sets
        )
        pods_ready = pods_ready and (not layout.sharded or mongos_ready >= layout.mongos_replicas)
        return cls(wanted, ready, mongos_ready, pods_ready)


def compute_status(
    layout: ClusterLayout,
    observed: Observed,
    previous: Mapping[str, Any],
    *,
    generation: int,
    created: str,
    now: str,
    clock: str | None = None,
) -> dict[str, Any]:
    """The full status object (the caller patches it only when it differs from the current).

    `clock` is the instant the deploy timings are measured at, with sub-second precision (default
    `now`): on a fast plane pods are Ready within the second of creation, and whole seconds would
    record a deployment that took 0.4 s as taking none.
    """
    readiness = Readiness.of(layout, observed)
    wiring = observed.wiring
    wired = wiring is not None and wiring.complete
    was_ready = "readySeconds" in (previous.get("timings") or {})
    draining = _draining(layout, observed, previous)
    removing = [d for d in draining or [] if d["state"] != "Completed"]
    reshaping = _shape_differs(layout, observed, was_ready) or bool(removing)
    phase = compute_phase(observed, readiness.pods_ready, wired, was_ready, reshaping=reshaping)
    status: dict[str, Any] = {
        "phase": phase,
        "observedGeneration": generation,
        "members": readiness.wanted,
        "readyMembers": readiness.ready,
        "conditions": compute_conditions(
            layout,
            observed,
            readiness,
            phase,
            previous=previous.get("conditions"),
            removing=_removing_message(wiring, removing) if removing else None,
            generation=generation,
            now=now,
        ),
        "replicaSets": _replica_sets(layout, observed, previous),
        "connectionSecret": layout.connection_secret,
        "timings": compute_timings(
            previous.get("timings") or {},
            readiness.pods_ready,
            wired,
            phase,
            created=created,
            clock=clock or now,
        ),
    }
    if layout.sharded:
        status["mongos"] = _mongos_status(layout, readiness, wiring, previous)
        # None removes it (merge patch) once no shard is leaving.
        status["draining"] = draining
    if wiring is not None and wiring.distribution is not None:
        status["distribution"] = dict(wiring.distribution)
    return status


def _removing_message(wiring: Wiring | None, removing: Sequence[Mapping[str, Any]]) -> str:
    """What the shard removal under way does: MongoDB's word on the drain, else which shards."""
    return (
        draining_message(wiring.removal, wiring.removal_waiting)
        if wiring is not None and wiring.shards_listed
        else ""
    ) or f"removing shards {', '.join(d['shard'] for d in removing)}"


def _mongos_status(
    layout: ClusterLayout, readiness: Readiness, wiring: Wiring | None, previous: Mapping[str, Any]
) -> dict[str, Any]:
    """status.mongos: routers wanted and ready, and the server facts (the last known ones while
    this pass read none)."""
    mongos: dict[str, Any] = {"desired": layout.mongos_replicas, "ready": readiness.mongos_ready}
    facts = wiring.server.get("mongos") if wiring else None
    server = server_status(facts) if facts else (previous.get("mongos") or {}).get("server")
    if server:
        mongos["server"] = server
    return mongos


def compute_phase(
    observed: Observed, pods_ready: bool, wired: bool, was_ready: bool, *, reshaping: bool
) -> str:
    """The phase by the rules of this module's docstring (first match wins). `reshaping`: the
    workloads or memberships differ from the spec's shape, or shards are being removed."""
    if observed.deleting:
        return c.PHASE_DELETING
    if observed.failure:
        return c.PHASE_FAILED
    if not observed.statefulsets:
        return c.PHASE_PENDING
    if was_ready and reshaping:
        return c.PHASE_SCALING
    if not pods_ready:
        return c.PHASE_DEGRADED if was_ready else c.PHASE_PROVISIONING
    return c.PHASE_READY if wired else c.PHASE_INITIALIZING


def compute_timings(
    previous: Mapping[str, Any],
    pods_ready: bool,
    wired: bool,
    phase: str,
    *,
    created: str,
    clock: str,
) -> dict[str, Any]:
    """Deploy timings, each recorded once: pods ready, wired, first Ready (seconds after
    `created`, measured at `clock`)."""
    timings = dict(previous)
    elapsed = round(seconds_since(created, parse_rfc3339(clock)) or 0.0, 1)
    if pods_ready and "provisionedSeconds" not in timings:
        timings["provisionedSeconds"] = elapsed
    if pods_ready and wired and "configuredSeconds" not in timings:
        timings["configuredSeconds"] = elapsed
    if phase == c.PHASE_READY and "readySeconds" not in timings:
        timings["readySeconds"] = elapsed
    return timings


# A condition as set: type, status, reason, message.
ConditionUpdate = tuple[str, ConditionStatus, str, str]


def compute_conditions(
    layout: ClusterLayout,
    observed: Observed,
    readiness: Readiness,
    phase: str,
    *,
    previous: Any,
    removing: str | None,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """Provisioned, Configured, Ready, Updated and (when observed) StorageResized and
    PlacementFeasible. `removing`: what the shard removal under way does, None when none is."""
    ready_message = (
        observed.failure
        or observed.predecessor
        or (removing if removing and phase != c.PHASE_READY else _ready_message(phase))
    )
    updates: list[ConditionUpdate] = [
        _provisioned(layout, readiness),
        _configured(layout, observed),
        (c.READY, c.TRUE if phase == c.PHASE_READY else c.FALSE, phase, ready_message),
        _updated(observed, removing),
    ]
    if observed.storage is not None:
        updates.append((c.STORAGE_RESIZED, *observed.storage))
    optional = (
        (c.PLACEMENT_FEASIBLE, observed.placement),
        (c.CA_SECRET_WATCHED, observed.ca_watch),
    )
    for type_, update in optional:
        if update is not None:
            updates.append((type_, *update))
        else:  # what it was about was dropped from the spec: so is what was said about it
            previous = [k for k in previous or () if k.get("type") != type_]
    conditions = previous
    for type_, value, reason, message in updates:
        conditions = set_condition(
            conditions, type_, value, reason, message, generation=generation, now=now
        )
    return list(conditions or [])


def _provisioned(layout: ClusterLayout, readiness: Readiness) -> ConditionUpdate:
    pods_ready = readiness.pods_ready
    return (
        c.PROVISIONED,
        c.TRUE if pods_ready else c.FALSE,
        c.PODS_READY if pods_ready else c.PODS_NOT_READY,
        f"{readiness.ready}/{readiness.wanted} mongod members ready"
        + (f", {readiness.mongos_ready}/{layout.mongos_replicas} mongos" if layout.sharded else ""),
    )


def _configured(layout: ClusterLayout, observed: Observed) -> ConditionUpdate:
    if observed.failure:
        return (c.CONFIGURED, c.FALSE, c.CONFIGURATION_FAILED, observed.failure)
    wiring = observed.wiring
    wired = wiring is not None and wiring.complete
    return (
        c.CONFIGURED,
        c.TRUE if wired else c.FALSE,
        c.WIRED if wired else c.WIRING,
        (
            "mongod and users configured"
            if layout.standalone
            else "replica sets, shards and users configured"
        )
        if wired
        else (wiring.message if wiring else "waiting for pods"),
    )


def _updated(observed: Observed, removing: str | None) -> ConditionUpdate:
    if observed.rolling:
        return (c.UPDATED, c.FALSE, c.ROLLING_RESTART, observed.rolling)
    if removing:  # the spec's shard count is not reached until the drain completes
        return (c.UPDATED, c.FALSE, c.REMOVING_SHARDS, removing)
    return (c.UPDATED, c.TRUE, c.CURRENT, "every member runs the current template")


def _replica_sets(
    layout: ClusterLayout, observed: Observed, previous: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """status.replicaSets: the spec's sets, then shards being removed (their members still hold
    data until drained)."""
    wiring = observed.wiring
    previous_server = {
        rs.get("name"): rs["server"]
        for rs in previous.get("replicaSets") or []
        if isinstance(rs, Mapping) and rs.get("server")
    }
    shapes = [(rs.name, rs.role.value, rs.members) for rs in layout.replica_sets] + [
        (name, "shard", observed.statefulsets.get(name, WorkloadState(0, 0)).replicas)
        for name in observed.retiring
    ]
    replica_sets = []
    for name, role, members in shapes:
        state = observed.statefulsets.get(name, WorkloadState(0, 0))
        wired_set = (wiring.replica_sets.get(name) if wiring else None) or {}
        entry: dict[str, Any] = {
            "name": name,
            "role": role,
            "members": members,
            "ready": state.ready,
            "initialized": bool(wired_set.get("initialized", False)),
            "memberStates": [
                {"host": m["host"], "state": m["state"], "health": 1 if m["health"] else 0}
                for m in wired_set.get("members", [])
            ],
        }
        if layout.sharded and role == "shard":
            entry["addedAsShard"] = bool(wiring and name in wiring.shards)
        facts = wiring.server.get(name) if wiring else None
        # A pass that could not ask keeps what was seen: no status write for a missed answer.
        server = server_status(facts) if facts else previous_server.get(name)
        if server:
            entry["server"] = server
        replica_sets.append(entry)
    return replica_sets


def server_status(facts: ServerFacts) -> dict[str, Any]:
    """The stable serverStatus facts a benchmark is read against: what runs and how it is
    configured. Volatile numbers (uptime, connections, opcounters, cache used) stay out: they
    would turn every observation into a status write."""
    out: dict[str, Any] = {
        "version": facts.version,
        "process": facts.process,
        "storageEngine": facts.storage_engine,
        "cacheConfiguredBytes": facts.cache_max_bytes,
    }
    return {k: v for k, v in out.items() if v is not None}


def _draining(
    layout: ClusterLayout, observed: Observed, previous: Mapping[str, Any]
) -> list[dict[str, Any]] | None:
    """status.draining: shards being removed, or None when none is."""
    if not layout.sharded:
        return None
    wiring = observed.wiring
    if wiring is None or not wiring.shards_listed:
        # Not observed this pass (MongoDB busy, pods restarting): keep what was last seen.
        kept = previous.get("draining")
        return list(kept) if kept else None
    entries = [
        d
        for d in draining_status(wiring.removal, wiring.removal_waiting)
        # A completed shard stays listed only until its objects are deleted.
        if d["state"] != "Completed" or d["shard"] in observed.retiring
    ]
    return entries or None


def _shape_differs(layout: ClusterLayout, observed: Observed, was_ready: bool) -> bool:
    """Whether the workloads or the replica-set memberships differ from the spec's shape."""
    if observed.retiring:  # a removed shard's StatefulSet still exists
        return True
    for rs in layout.replica_sets:
        state = observed.statefulsets.get(rs.name)
        if state is None or state.replicas != rs.members:
            return True
    if layout.sharded and (
        observed.mongos is None or observed.mongos.replicas != layout.mongos_replicas
    ):
        return True
    wiring = observed.wiring
    if wiring is None:
        return False
    if any(
        wiring.config_members.get(rs.name, rs.members) != rs.members for rs in layout.replica_sets
    ):
        return True
    # A shard added to a Ready cluster is scaling until listShards shows it; a pass that did
    # not get as far as listShards (mongos pods restarting in a roll) says nothing of shards.
    return (
        was_ready
        and layout.sharded
        and wiring.shards_listed
        and any(rs.name not in wiring.shards for rs in layout.shards)
    )


def _ready_message(phase: str) -> str:
    return {
        c.PHASE_READY: "all members ready and wired",
        c.PHASE_PENDING: "creating objects",
        c.PHASE_PROVISIONING: "waiting for pods",
        c.PHASE_INITIALIZING: "wiring replica sets, shards and users",
        c.PHASE_SCALING: "changing the cluster's shape",
        c.PHASE_DEGRADED: "some members are not ready",
        c.PHASE_DELETING: "deleting",
    }.get(phase, phase)


def differs(current: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether patching `new` would change anything a user can see."""
    return any(current.get(k) != v for k, v in new.items())
