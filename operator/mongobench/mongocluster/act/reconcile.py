"""The MongoCluster reconcile loop's two halves, called by the thin handlers with the operator's
KubeApi and MongoDB pool:

provision(): make the Kubernetes objects exist as the spec says (spec changes, resume).
sync():      observe workloads and MongoDB, take the next wiring step, hold or release a
             scale-down, publish status when something visible changed and post the Events.
             Called on child events (a StatefulSet's pods became ready) and by a timer until
             the cluster is Ready. What to do with the observations is decided in sync_plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mongobench.api.kinds import MONGOCLUSTER as KIND
from mongobench.clock import Clock, rfc3339
from mongobench.config import OperatorConfig
from mongobench.controller import Result
from mongobench.k8s.api import KubeApi
from mongobench.k8s.conditions import (
    EVENT_CERTIFICATES_ROTATED,
    EVENT_MONGODB_ERROR,
    FALSE,
    NORMAL,
    READY,
    WARNING,
    Event,
    get_condition,
)
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.connect import Connector
from mongobench.mongo.errors import PermanentMongoError, TransientMongoError
from mongobench.mongo.model import (
    Credentials,
    internal_credentials_each,
    member_certificate_credentials,
)
from mongobench.mongo.pool import AdminPool, fingerprint
from mongobench.mongo.tls_files import TLSFiles, write_tls_files
from mongobench.mongo.versions import fcv_after_roll
from mongobench.mongocluster.act import roll_tls, rotate
from mongobench.mongocluster.act.provision import (
    Desired,
    apply_workloads,
    delete_shard_objects,
    desired,
    ensure_secrets,
    list_cluster_secrets,
    platform_status,
    read_secrets,
)
from mongobench.mongocluster.act.rolling import (
    before_series_change,
    feature_compatibility,
    observe_mongos_upgrade,
    roll,
)
from mongobench.mongocluster.act.storage import ResizeOutcome, grow_claims
from mongobench.mongocluster.act.tls_secrets import (
    Renewals,
    ensure_tls,
    renew_certificates,
    renewal_due_in,
)
from mongobench.mongocluster.act.wire import Passwords, wire
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.build.mongos import MongosUpgrade
from mongobench.mongocluster.build.placement import PLACED, Feasibility, feasibility, has_hard_rules
from mongobench.mongocluster.build.platform import PlatformFacts
from mongobench.mongocluster.build.secrets import EXPORTER_USERNAME
from mongobench.mongocluster.build.tls import CA_KEY, COMBINED_KEY, client_secret
from mongobench.mongocluster.decide import requeue, rotation, tls_ca
from mongobench.mongocluster.decide.predecessor import (
    PredecessorPending,
    left_behind,
    waiting_message,
)
from mongobench.mongocluster.decide.shards import retiring_shards
from mongobench.mongocluster.decide.status import Observed, Wiring, WorkloadState
from mongobench.mongocluster.decide.sync_plan import (
    Outcome,
    StatusInputs,
    SyncObservation,
    SyncStep,
    drained,
    held_replicas,
    placement_warning,
    ready_sets,
    reapply,
    shard_events,
    sync_events,
    sync_status,
    sync_steps,
)
from mongobench.mongocluster.decide.tls_ca import CAWatch
from mongobench.runtime.locks import ResourceLocks

log = logging.getLogger("mongobench.mongocluster")


@dataclass(frozen=True)
class SyncResult:
    phase: str
    changed: bool
    failure: str | None = None
    # Seconds until certificate work falls due that no event announces (a renewed certificate
    # reaching the pods' files, an issued one near its end): the caller queues a sync then.
    recheck_in: float | None = None

    @property
    def recheck(self) -> Result:
        """When the certificates' work wants a sync again (requeue.certificates)."""
        return requeue.certificates(self.recheck_in)


def provision(
    kube: KubeApi, body: Mapping[str, Any], now: datetime, config: OperatorConfig
) -> Desired:
    """Secrets (once), then Services, StatefulSets, mongos, PDBs, PodMonitor (applied);
    certificates issued from a CA Secret are dated `now`; `config`: the operator's (the
    PodMonitor's default labels, the NetworkPolicy's peers).
    PredecessorPending, with nothing written, while a deleted MongoCluster of the same name's
    workloads or Secrets are still there (predecessor.py)."""
    status = body.get("status") or {}
    d = desired(kube, body, status)
    uid = body["metadata"]["uid"]
    secrets = list_cluster_secrets(kube, d.layout)
    workloads = observe_workloads(kube, d.layout, uid)
    stale = [*workloads.left_behind, *left_behind((("Secret", s) for s in secrets), uid)]
    if stale:
        raise PredecessorPending(stale)
    ensure_secrets(kube, d, body, secrets)
    ensure_tls(kube, d, body, now)
    replicas = held_replicas(d.layout, workloads.statefulsets, status)
    skipped = apply_workloads(kube, d, body, config, replicas)
    if skipped:
        log.info("skipped %s: the Prometheus Operator CRDs are not installed", ", ".join(skipped))
    return d


@dataclass(frozen=True)
class Workloads:
    """The cluster's StatefulSets (by name) and mongos Deployment as observed; none of them
    when `left_behind` names workloads a deleted cluster of the same name still controls."""

    statefulsets: dict[str, WorkloadState]
    mongos: WorkloadState | None
    left_behind: tuple[str, ...] = ()


def observe_workloads(kube: KubeApi, layout: ClusterLayout, uid: str) -> Workloads:
    """The workloads of the MongoCluster with `uid` (one LIST, one GET when sharded)."""
    selector = f"{lbl.CLUSTER}={layout.name}"
    listed = kube.list("StatefulSet", layout.namespace, selector)
    dep = kube.get("Deployment", layout.namespace, layout.mongos) if layout.sharded else None
    objects = [("StatefulSet", sts) for sts in listed] + ([("Deployment", dep)] if dep else [])
    stale = tuple(left_behind(objects, uid))
    if stale:
        return Workloads({}, None, stale)
    statefulsets = {sts["metadata"]["name"]: WorkloadState.of_statefulset(sts) for sts in listed}
    mongos = None
    if dep is not None:
        mongos = WorkloadState(
            int(dep["spec"].get("replicas", 0)),
            int((dep.get("status") or {}).get("readyReplicas", 0)),
        )
    return Workloads(statefulsets, mongos)


def observe_placement(kube: KubeApi, d: Desired, ready: frozenset[str]) -> Feasibility | None:
    """PlacementFeasible for clusters with hard placement rules (None without): placed once
    every pod is ready, else judged against the Nodes (one LIST, only while pods wait)."""
    if not has_hard_rules(d.spec, d.layout):
        return None
    wanted = {rs.name for rs in d.layout.replica_sets} | ({"mongos"} if d.layout.sharded else set())
    if wanted <= ready:
        return PLACED
    return feasibility(d.spec, d.layout, kube.list("Node", None))


def operator_tls_files(kube: KubeApi, d: Desired) -> TLSFiles | None:
    """The CA and the operator's client certificate as files for pymongo (None without TLS).
    LookupError while the Secret is not written yet (cert-manager issues asynchronously)."""
    if not d.spec.tls.enabled:
        return None
    values = read_secrets(kube, d.layout, [client_secret(d.layout)])[client_secret(d.layout)]
    if not values.get(CA_KEY) or not values.get(COMBINED_KEY):
        raise LookupError(f"Secret {client_secret(d.layout)} holds no issued certificate yet")
    return write_tls_files(values[CA_KEY], values[COMBINED_KEY])


@contextmanager
def administration(
    kube: KubeApi, d: Desired, admins: AdminPool
) -> Iterator[tuple[MongoAdmin, Passwords]]:
    """The cluster's MongoDB administration handle, lent by `admins` for the block (the same
    one while its credentials, the operator's password and the keyfile, stay the same), and the
    users' passwords read now."""
    passwords, keyfile = _read_passwords(kube, d)
    tls = operator_tls_files(kube, d)
    credentials = fingerprint(
        (
            passwords.operator_username,
            passwords.operator,
            keyfile,
            tls.digest if tls else "",
            d.spec.tls.member_auth,
            str(d.spec.tls.operator_dials_tls),  # a roll onto TLS switches it (tls_roll)
        )
    )
    build = _admin_builder(d, admins, passwords, keyfile, tls)
    with admins.lease(d.layout.namespace, d.layout.name, credentials, build) as admin:
        yield admin, passwords


def _read_passwords(kube: KubeApi, d: Desired) -> tuple[Passwords, str]:
    """The users' passwords and the keyfile, from the cluster's Secrets as they are now."""
    layout = d.layout
    exporting = d.spec.monitoring.exporter
    secrets = read_secrets(
        kube,
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
    return passwords, secrets[layout.keyfile_secret]["keyfile"]


def _admin_builder(
    d: Desired, admins: AdminPool, passwords: Passwords, keyfile: str, tls: TLSFiles | None
) -> Callable[[], MongoAdmin]:
    """How the pool makes a new handle when the credentials changed."""

    def build() -> MongoAdmin:
        # Each key of the keyfile in turn: during a keyfile rotation it lists the new key
        # first, then the old one that members not yet restarted still run with.
        keys = internal_credentials_each(keyfile)
        dials_tls = tls is not None and d.spec.tls.operator_dials_tls
        connector = Connector(
            Credentials(passwords.operator_username, passwords.operator),
            bootstrap_credentials=(
                member_certificate_credentials() if d.spec.tls.x509_members else keys[0]
            ),
            bootstrap_fallbacks=() if d.spec.tls.x509_members else keys[1:],
            resolver=admins.resolver,
            budget=admins.budget,
            tls=dials_tls,
            tls_ca_file=tls.ca_file if tls and d.spec.tls.operator_dials_tls else None,
            tls_certificate_key_file=(
                tls.certificate_key_file if tls and d.spec.tls.operator_dials_tls else None
            ),
        )
        return MongoAdmin(connector)

    return build


def before_roll(
    admin: MongoAdmin,
    d: Desired,
    statefulsets: Mapping[str, WorkloadState],
    ready_sets: frozenset[str],
    fcv: str | None,
) -> tuple[str, str | None, str | None] | None:
    """While a replica set has members to restart, a roll may be due: the FCV it needs comes
    first (MongoDB's upgrade procedure, rolling.before_series_change). (why the roll waits this
    pass, the FCV, the FCV set) when it must; None when it may go on."""
    unsettled = any(
        rs.name in ready_sets and not (statefulsets.get(rs.name) or WorkloadState(0, 0)).settled
        for rs in d.layout.replica_sets
    )
    if not unsettled:
        return None
    try:
        step, fcv = before_series_change(
            admin, d.layout, d.spec.version, d.spec.feature_compatibility_version
        )
    except TransientMongoError as exc:
        return f"reading featureCompatibilityVersion before the roll: {exc}", fcv, None
    if step.action == "refuse":
        return step.reason, fcv, None
    if step.action == "raise":
        return step.reason, fcv, fcv
    return None


def administer(
    kube: KubeApi,
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
    held = before_roll(admin, d, statefulsets, ready_sets, fcv)
    if held is not None:
        return wiring, *held
    # One replica set at a time, in MongoDB's upgrade order: the config servers, then each
    # shard (layout order); mongos last (mongos_step).
    rolling = next(
        (
            step
            for rs in d.layout.replica_sets
            if rs.name in ready_sets and (step := roll(kube, admin, rs, statefulsets.get(rs.name)))
        ),
        None,
    )
    wanted = fcv_after_roll(wanted_fcv=d.spec.feature_compatibility_version, observed_fcv=fcv)
    if rolling is not None or mongos_waiting is not None or wanted is None:
        return wiring, rolling, fcv, None
    try:
        fcv, changed = feature_compatibility(admin, d.layout, wanted, d.spec.version)
    except TransientMongoError as exc:  # an election: Updated stays False
        return wiring, f"setting featureCompatibilityVersion {wanted}: {exc}", fcv, None
    return wiring, None, fcv, fcv if changed else None


@dataclass(frozen=True)
class MongoPass:
    """What the MongoDB half of a sync saw and did."""

    wiring: Wiring | None = None
    rolling: str | None = None
    fcv: str | None = None
    fcv_set: str | None = None
    failure: str | None = None
    renewals: Renewals = field(default_factory=Renewals)


def administer_safely(
    kube: KubeApi,
    admins: AdminPool,
    d: Desired,
    *,
    statefulsets: Mapping[str, WorkloadState],
    ready: frozenset[str],
    retiring: tuple[ReplicaSetLayout, ...],
    fcv: str | None,
    mongos_waiting: str | None,
    now: datetime,
    propagation_seconds: float,
) -> MongoPass:
    """administer() on the cluster's handle: a permanent refusal becomes `failure`, a Secret
    not created yet a wiring that waits."""
    try:
        with administration(kube, d, admins) as (admin, passwords):
            wiring, rolling, fcv, fcv_set = administer(
                kube,
                admin,
                passwords,
                d,
                statefulsets=statefulsets,
                ready_sets=ready,
                retiring=retiring,
                fcv=fcv,
                mongos_waiting=mongos_waiting,
            )
            renewals = (
                # Once wired: renewed certificates carried to the members (tls_renewal).
                renew_certificates(
                    kube,
                    admin,
                    d,
                    now.timestamp(),
                    propagation_seconds,
                )
                if wiring.complete
                else Renewals()
            )
    except PermanentMongoError as exc:
        return MongoPass(fcv=fcv, failure=str(exc))
    except LookupError as exc:  # a Secret not created yet
        return MongoPass(Wiring(False, str(exc)), fcv=fcv)
    return MongoPass(wiring, rolling, fcv, fcv_set, renewals=renewals)


def rotate_safely(
    kube: KubeApi, body: Mapping[str, Any], d: Desired, admins: AdminPool, now: datetime
) -> list[Event]:
    """The rotation's next stage (mongocluster/act/rotate.py); a MongoDB error ends this pass's
    share of it (retried next pass: every stage repeats safely), reported as a Warning."""
    try:
        return rotate.advance(kube, body, d, lambda: administration(kube, d, admins), now)
    except TransientMongoError as exc:
        log.info("credential rotation waits: %s", exc)
        return []
    except PermanentMongoError as exc:
        return [(WARNING, EVENT_MONGODB_ERROR, f"credential rotation: {exc}")]


def tls_pass(
    kube: KubeApi,
    body: Mapping[str, Any],
    d: Desired,
    mongo: MongoPass,
    statefulsets: Mapping[str, WorkloadState],
    *,
    clock: Clock,
    config: OperatorConfig,
) -> float | None:
    """The TLS share of a sync once MongoDB was administered: the next step of a roll between
    TLS modes (tls_roll), the Events of certificates carried to the members; returns the
    seconds until certificate work falls due that no event announces (None: none)."""
    if mongo.wiring is not None and mongo.wiring.complete and mongo.failure is None:
        for event in roll_tls.advance(kube, body, d, statefulsets, clock, config=config):
            kube.event(body, *event)
    for note in mongo.renewals.notes:
        log.info("MongoCluster %s/%s: %s", d.layout.namespace, d.layout.name, note)
        kube.event(body, NORMAL, EVENT_CERTIFICATES_ROTATED, note)
    due = [mongo.renewals.due_in, renewal_due_in(kube, d, clock())]
    if mongo.renewals.notes and tls_ca.under_way(body.get("status")):
        # A CA change's next step waits until the members took up what was just carried, and
        # a rotateCertificates changes nothing an event announces: look again at once.
        due.append(0.0)
    return min((t for t in due if t is not None), default=None)


def sync(
    kube: KubeApi,
    namespace: str,
    name: str,
    locks: ResourceLocks,
    admins: AdminPool,
    *,
    clock: Clock,
    config: OperatorConfig,
    detected: PlatformFacts | None = None,
) -> SyncResult | None:
    """Observe, wire one step, publish, post the Events. None when the MongoCluster no longer
    exists. `config`: the operator's. `clock`: read once for the pass (certificates,
    renewals, rotations, status times), again for a stamp that must follow a write.
    `detected`: the platform provision() just read (the first status records it)."""
    with locks.lock(KIND, namespace, name):
        body = kube.get(KIND, namespace, name)
        if body is None:
            return None
        return _sync(kube, body, admins, clock, detected, config=config)


def _new_status(
    body: Mapping[str, Any], d: Desired, observed: Observed, fcv: str | None, now: datetime
) -> tuple[dict[str, Any], bool]:
    meta = body["metadata"]
    return sync_status(
        d.layout,
        observed,
        StatusInputs(
            body.get("status") or {},
            int(meta.get("generation") or 0),
            meta["creationTimestamp"],
            rfc3339(now),
            rfc3339(now, precise=True),
            platform_status(d),
            fcv,
        ),
    )


def _patch_status(kube: KubeApi, body: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    meta, was = body["metadata"], (body.get("status") or {}).get("phase")
    kube.patch_status(KIND, meta["namespace"], meta["name"], new)
    if new.get("phase") != was:
        # What a phase waits on, in the log as it changes (a cluster stuck in one phase says
        # which and why without a status dump).
        ready = get_condition(new.get("conditions"), READY) or {}
        log.info("MongoCluster %s/%s: %s -> %s (%s)", meta["namespace"], meta["name"], was,
                 new.get("phase"), ready.get("message", ""))  # fmt: skip


def _publish(
    kube: KubeApi, body: Mapping[str, Any], d: Desired, observed: Observed, now: datetime
) -> SyncResult:
    """Status from `observed` alone, nothing administered (waiting on a predecessor)."""
    new, changed = _new_status(body, d, observed, (body.get("status") or {}).get(
        "featureCompatibilityVersion"), now)  # fmt: skip
    if changed:
        _patch_status(kube, body, new)
    return SyncResult(new["phase"], changed)


def _sync(
    kube: KubeApi,
    body: Mapping[str, Any],
    admins: AdminPool,
    clock: Clock,
    detected: PlatformFacts | None,
    *,
    config: OperatorConfig,
) -> SyncResult:
    now = clock()
    status = body.get("status") or {}
    meta = body["metadata"]
    d = desired(kube, body, status, detected)
    workloads = observe_workloads(kube, d.layout, meta["uid"])
    p = _SyncPass(
        kube, body, admins, clock, now, config, d, workloads.statefulsets, workloads.mongos
    )
    p.left_behind = workloads.left_behind
    steps = sync_steps(
        SyncObservation(
            deleting=p.deleting,
            left_behind=bool(workloads.left_behind),
            ready=bool(p.ready),
            rotation_under_way=rotation.under_way(body),
            sharded=d.layout.sharded,
            ca_issued_tls=d.target.tls.ca_secret_name is not None and d.target.tls.enabled,
        )
    )
    for step in steps:
        _PERFORM[step](p)
    if p.result is None:  # every plan ends in a step that reports
        raise RuntimeError(f"MongoCluster sync plan {steps} wrote no status")
    return p.result


@dataclass
class _SyncPass:
    """One sync's observations and what its steps found, each step filling in its part (a
    step not taken leaves its default)."""

    kube: KubeApi
    body: Mapping[str, Any]
    admins: AdminPool
    clock: Clock
    now: datetime
    config: OperatorConfig
    d: Desired
    statefulsets: dict[str, WorkloadState]
    mongos: WorkloadState | None
    resize: ResizeOutcome | None = None
    mongos_step: MongosUpgrade | None = None
    ca_watch: CAWatch | None = None
    mongo: MongoPass = field(default_factory=MongoPass)
    recheck: float | None = None
    placement: Feasibility | None = None
    left_behind: tuple[str, ...] = ()  # a predecessor's objects: all a waiting pass reports
    removed: list[str] = field(default_factory=list)
    result: SyncResult | None = None

    def __post_init__(self) -> None:
        self.status: Mapping[str, Any] = self.body.get("status") or {}
        self.deleting = bool(self.body["metadata"].get("deletionTimestamp"))
        self.ready = ready_sets(self.d.layout, self.statefulsets, self.mongos)
        self.retiring = retiring_shards(
            self.d.layout, {n: s.replicas for n, s in self.statefulsets.items()}
        )
        # Until MongoDB is administered this pass, the FCV recorded stands.
        self.mongo = MongoPass(fcv=self.status.get("featureCompatibilityVersion"))

    @property
    def mongos_waiting(self) -> str | None:
        return self.mongos_step.waiting if self.mongos_step else None


def _grow_claims(p: _SyncPass) -> None:
    p.resize = grow_claims(p.kube, p.d, p.statefulsets)


def _mongos_upgrade(p: _SyncPass) -> None:
    p.mongos_step = observe_mongos_upgrade(p.kube, p.d.layout, p.d.spec.image_ref)


def _issue_certificates(p: _SyncPass) -> None:
    # Reissued near their end or for a new CA, woken by the CA Secret's events (once labelled)
    # and by recheck_in (provision issues them the first time).
    p.ca_watch = ensure_tls(p.kube, p.d, p.body, p.now).ca_watch


def _rotate_credentials(p: _SyncPass) -> None:
    for event in rotate_safely(p.kube, p.body, p.d, p.admins, p.now):
        p.kube.event(p.body, *event)


def _administer(p: _SyncPass) -> None:
    p.mongo = administer_safely(
        p.kube,
        p.admins,
        p.d,
        statefulsets=p.statefulsets,
        ready=p.ready,
        retiring=p.retiring,
        fcv=p.mongo.fcv,
        mongos_waiting=p.mongos_waiting,
        now=p.now,
        propagation_seconds=p.config.tls_propagation_seconds,
    )


def _tls_renewal(p: _SyncPass) -> None:
    p.recheck = tls_pass(
        p.kube, p.body, p.d, p.mongo, p.statefulsets, clock=p.clock, config=p.config
    )


def _placement(p: _SyncPass) -> None:
    p.placement = observe_placement(p.kube, p.d, p.ready)


def _remove_drained_shards(p: _SyncPass) -> None:
    gone = drained(p.retiring, p.mongo.wiring)
    p.removed = [rs.name for rs in gone if delete_shard_objects(p.kube, p.d.layout, rs)]
    for rs in gone:
        p.statefulsets.pop(rs.name, None)
    p.retiring = tuple(rs for rs in p.retiring if rs.name in p.statefulsets)


def _converge(p: _SyncPass) -> None:
    """Status from what the pass saw, the workloads applied again where due, the Events."""
    kube, body, d, mongo, resize = p.kube, p.body, p.d, p.mongo, p.resize
    observed = Observed(
        p.statefulsets,
        p.mongos,
        mongo.wiring,
        deleting=p.deleting,
        failure=mongo.failure,
        rolling="; ".join(step for step in (mongo.rolling, p.mongos_waiting) if step) or None,
        storage=(resize.status, resize.reason, resize.message) if resize else None,
        retiring=tuple(rs.name for rs in p.retiring),
        placement=p.placement,
        ca_watch=p.ca_watch,
    )
    new, changed = _new_status(body, d, observed, mongo.fcv, p.now)
    mongos_changes = p.mongos_step is not None and p.mongos_step.changes
    replicas = reapply(d.layout, p.statefulsets, p.status, new, mongos_changes)
    if replicas is not None:
        apply_workloads(kube, d, body, p.config, replicas)
    if changed:
        _patch_status(kube, body, new)
    outcome = Outcome(
        new["phase"],
        changed,
        mongo.failure,
        resize.message if resize and resize.status == FALSE else None,
        mongo.fcv_set,
        tuple(shard_events(mongo.wiring, p.removed, d.spec.deletion_policy)),
        placement_warning(p.status, p.placement),
    )
    for event in sync_events(outcome):
        kube.event(body, *event)
    p.result = SyncResult(outcome.phase, changed, mongo.failure, p.recheck)


def _publish_waiting(p: _SyncPass) -> None:
    waiting = Observed({}, predecessor=waiting_message(list(p.left_behind)))
    p.result = _publish(p.kube, p.body, p.d, waiting, p.now)


_PERFORM: dict[SyncStep, Callable[[_SyncPass], None]] = {
    SyncStep.PUBLISH_WAITING: _publish_waiting,
    SyncStep.GROW_CLAIMS: _grow_claims,
    SyncStep.MONGOS_UPGRADE: _mongos_upgrade,
    SyncStep.ISSUE_CERTIFICATES: _issue_certificates,
    SyncStep.ROTATE_CREDENTIALS: _rotate_credentials,
    SyncStep.ADMINISTER: _administer,
    SyncStep.TLS_RENEWAL: _tls_renewal,
    SyncStep.PLACEMENT: _placement,
    SyncStep.REMOVE_DRAINED_SHARDS: _remove_drained_shards,
    SyncStep.CONVERGE: _converge,
}
