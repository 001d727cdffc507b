"""The MongoCluster reconcile loop's two halves, called by the thin handlers:

provision(): make the Kubernetes objects exist as the spec says (spec changes, resume).
sync():      observe workloads and MongoDB, take the next wiring step, hold or release a
             scale-down, and publish status when something visible changed. Called on child
             events (a StatefulSet's pods became ready) and by a timer until the cluster is Ready.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mongobench.cluster import labels as lbl
from mongobench.cluster.layout import ClusterLayout, ReplicaSetLayout
from mongobench.cluster.platform import PlatformFacts
from mongobench.cluster.provision import (
    Desired,
    apply_workloads,
    delete_shard_objects,
    desired,
    ensure_secrets,
    platform_status,
    read_secrets,
)
from mongobench.cluster.rolling import feature_compatibility, observe_mongos_upgrade, roll
from mongobench.cluster.secrets import EXPORTER_USERNAME
from mongobench.cluster.shards import retiring_shards
from mongobench.cluster.status import Observed, Wiring, WorkloadState, compute_status, differs
from mongobench.cluster.storage import grow_claims
from mongobench.cluster.wire import Passwords, wire
from mongobench.k8s import client as kube
from mongobench.k8s.conditions import (
    EVENT_SHARD_DRAINING,
    EVENT_SHARD_REMOVED,
    FALSE,
    now_rfc3339,
)
from mongobench.k8s.locks import ResourceLocks
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.connect import Connector
from mongobench.mongo.errors import PermanentMongoError, TransientMongoError
from mongobench.mongo.model import Credentials, internal_credentials
from mongobench.mongo.pool import AdminPool, fingerprint

log = logging.getLogger("mongobench.cluster")

GROUP_PATH = "/apis/mongobench.io/v1alpha1"


@dataclass(frozen=True)
class SyncResult:
    phase: str
    changed: bool
    failure: str | None = None
    storage_warning: str | None = None
    fcv_set: str | None = None  # featureCompatibilityVersion this pass set
    body: Mapping[str, Any] | None = None  # the MongoCluster as read, for Events
    events: tuple[tuple[str, str], ...] = ()  # (reason, message) of Normal Events to emit


def provision(body: Mapping[str, Any]) -> Desired:
    """Secrets (once), then Services, StatefulSets, mongos, PDBs, PodMonitor (applied)."""
    status = body.get("status") or {}
    d = desired(body, status)
    ensure_secrets(d, body)
    replicas = held_replicas(d.layout, observe_workloads(d.layout)[0], status)
    skipped = apply_workloads(d, body, replicas)
    if skipped:
        log.info("skipped %s: the Prometheus Operator CRDs are not installed", ", ".join(skipped))
    return d


def observe_workloads(
    layout: ClusterLayout,
) -> tuple[dict[str, WorkloadState], WorkloadState | None]:
    selector = f"{lbl.CLUSTER}={layout.name}"
    statefulsets = {
        sts["metadata"]["name"]: WorkloadState.of_statefulset(sts)
        for sts in kube.list_objects("StatefulSet", layout.namespace, selector)
    }
    mongos = None
    if layout.sharded:
        dep = kube.get("Deployment", layout.namespace, layout.mongos)
        if dep is not None:
            mongos = WorkloadState(
                int(dep["spec"].get("replicas", 0)),
                int((dep.get("status") or {}).get("readyReplicas", 0)),
            )
    return statefulsets, mongos


def held_replicas(
    layout: ClusterLayout, statefulsets: Mapping[str, WorkloadState], status: Mapping[str, Any]
) -> dict[str, int]:
    """StatefulSets whose scale-down must wait: MongoDB still lists the members to remove.

    One place decides it, for provision() and sync() alike: a member's pod goes away only after
    the replica set no longer has it in its configuration.
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


@contextmanager
def administration(d: Desired, admins: AdminPool) -> Iterator[tuple[MongoAdmin, Passwords]]:
    """The cluster's MongoDB administration handle, lent by `admins` for the block (the same
    one while its credentials, the operator's password and the keyfile, stay the same), and the
    users' passwords read now."""
    layout = d.layout
    exporting = d.spec.monitoring.exporter
    secrets = read_secrets(
        layout,
        [
            layout.admin_secret,
            layout.benchmark_secret,
            layout.operator_secret,
            layout.keyfile_secret,
            *([layout.exporter_secret] if exporting else []),
        ],
    )
    admin_secret = secrets[layout.admin_secret]
    bench = secrets[layout.benchmark_secret]
    exporter = secrets[layout.exporter_secret] if exporting else {}
    operator = secrets[layout.operator_secret]
    passwords = Passwords(
        operator_username=operator["username"],
        operator=operator["password"],
        admin_username=admin_secret["username"],
        admin=admin_secret["password"],
        benchmark=bench["password"],
        exporter_username=exporter.get("username", EXPORTER_USERNAME),
        exporter=exporter.get("password", ""),
    )
    keyfile = secrets[layout.keyfile_secret]["keyfile"]
    tls = d.spec.tls.enabled

    def build() -> MongoAdmin:
        connector = Connector(
            Credentials(passwords.operator_username, passwords.operator),
            bootstrap_credentials=internal_credentials(keyfile),
            resolver=admins.resolver,
            tls=tls,
        )
        return MongoAdmin(connector)

    credentials = fingerprint((passwords.operator_username, passwords.operator, keyfile, str(tls)))
    with admins.lease(layout.namespace, layout.name, credentials, build) as admin:
        yield admin, passwords


def administer(
    admin: MongoAdmin,
    passwords: Passwords,
    d: Desired,
    *,
    statefulsets: Mapping[str, WorkloadState],
    ready_sets: frozenset[str],
    retiring: tuple[ReplicaSetLayout, ...],
    fcv: str | None,
    mongos_waiting: str | None,
) -> tuple[Wiring, str | None, str | None, str | None]:
    """The MongoDB half of a sync: wire one step; once wired, roll one replica set and set the
    featureCompatibilityVersion. Returns (wiring, rolling step, fcv, fcv set by this pass)."""
    wiring = wire(admin, d.spec, d.layout, passwords, ready_sets, retiring=retiring)
    if not wiring.complete:
        return wiring, None, fcv, None
    # One replica set at a time, in MongoDB's upgrade order: the config servers, then each
    # shard (layout order); mongos last (mongos_step).
    rolling = next(
        (
            step
            for rs in d.layout.replica_sets
            if rs.name in ready_sets and (step := roll(admin, rs, statefulsets.get(rs.name)))
        ),
        None,
    )
    wanted = d.spec.feature_compatibility_version
    if rolling is not None or mongos_waiting is not None or not wanted or wanted == fcv:
        return wiring, rolling, fcv, None
    try:
        fcv, changed = feature_compatibility(admin, d.layout, wanted)
    except TransientMongoError as exc:  # an election: Updated stays False
        return wiring, f"setting featureCompatibilityVersion {wanted}: {exc}", fcv, None
    return wiring, None, fcv, fcv if changed else None


def sync(
    namespace: str,
    name: str,
    locks: ResourceLocks,
    admins: AdminPool,
    detected: PlatformFacts | None = None,
) -> SyncResult | None:
    """Observe, wire one step, publish. None when the MongoCluster no longer exists.
    `detected`: the platform provision() just read (the first status records it)."""
    with locks.lock("MongoCluster", namespace, name):
        body = kube.get("MongoCluster", namespace, name)
        if body is None:
            return None
        status = body.get("status") or {}
        meta = body["metadata"]
        d = desired(body, status, detected)
        statefulsets, mongos = observe_workloads(d.layout)
        failure: str | None = None
        wiring: Wiring | None = None
        rolling: str | None = None
        fcv: str | None = status.get("featureCompatibilityVersion")
        fcv_set: str | None = None
        ready_sets = frozenset(
            rs.name
            for rs in d.layout.replica_sets
            if statefulsets.get(rs.name, WorkloadState(0, 0)).ready >= rs.members
        ) | (
            frozenset({"mongos"})
            if mongos and mongos.ready >= d.layout.mongos_replicas
            else frozenset()
        )
        deleting = bool(meta.get("deletionTimestamp"))
        resize = None if deleting else grow_claims(d, statefulsets)
        retiring = retiring_shards(d.layout, {n: s.replicas for n, s in statefulsets.items()})
        events: list[tuple[str, str]] = []
        mongos_step = (
            observe_mongos_upgrade(d.layout, d.spec.image_ref)
            if d.layout.sharded and not deleting
            else None
        )
        mongos_waiting = mongos_step.waiting if mongos_step else None
        if ready_sets and not deleting:
            try:
                with administration(d, admins) as (admin, passwords):
                    wiring, rolling, fcv, fcv_set = administer(
                        admin,
                        passwords,
                        d,
                        statefulsets=statefulsets,
                        ready_sets=ready_sets,
                        retiring=retiring,
                        fcv=fcv,
                        mongos_waiting=mongos_waiting,
                    )
            except PermanentMongoError as exc:
                failure = str(exc)
            except LookupError as exc:  # a Secret not created yet
                wiring = Wiring(False, str(exc))
        if wiring is not None and wiring.removal is not None and wiring.removal.state == "started":
            events.append(
                (
                    EVENT_SHARD_DRAINING,
                    f"removeShard {wiring.removal.shard}: draining started (its chunks and "
                    "databases move to the remaining shards)",
                )
            )
        if wiring is not None and wiring.shards_listed:
            # MongoDB no longer lists them (drained, or never added): their objects can go.
            for rs in [rs for rs in retiring if rs.name not in wiring.shards]:
                if delete_shard_objects(d.layout, rs):
                    events.append(
                        (
                            EVENT_SHARD_REMOVED,
                            f"shard {rs.name} drained and removed; its StatefulSet, Service and "
                            "PodDisruptionBudget were deleted, its volume claims follow "
                            f"deletionPolicy {d.spec.deletion_policy}",
                        )
                    )
                statefulsets.pop(rs.name, None)
            retiring = tuple(rs for rs in retiring if rs.name in statefulsets)
        rolling = "; ".join(step for step in (rolling, mongos_waiting) if step) or None
        new = compute_status(
            d.layout,
            Observed(
                statefulsets,
                mongos,
                wiring,
                deleting=deleting,
                failure=failure,
                rolling=rolling,
                storage=(resize.status, resize.reason, resize.message) if resize else None,
                retiring=tuple(rs.name for rs in retiring),
            ),
            status,
            generation=int(meta.get("generation") or 0),
            created=meta["creationTimestamp"],
            now=now_rfc3339(),
            clock=now_rfc3339(precise=True),
        )
        new["platform"] = platform_status(d)
        if fcv is not None:
            new["featureCompatibilityVersion"] = fcv
        # Release a held scale-down once MongoDB has removed the members.
        held_before = held_replicas(d.layout, statefulsets, status)
        held_now = held_replicas(d.layout, statefulsets, new)
        if (
            held_before != held_now
            or any(
                statefulsets.get(rs.name, WorkloadState(rs.members, 0)).replicas > rs.members
                and rs.name not in held_now
                for rs in d.layout.replica_sets
            )
            or (mongos_step is not None and mongos_step.changes)
        ):
            apply_workloads(d, body, held_now)
        changed = differs(status, new)
        if changed:
            kube.patch_status("MongoCluster", namespace, name, new)
        warning = resize.message if resize and resize.status == FALSE else None
        return SyncResult(
            new["phase"], changed, failure, warning, fcv_set, body, events=tuple(events)
        )
