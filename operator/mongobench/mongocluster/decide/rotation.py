"""Credential rotation, the pure half: what the annotation asks, and the next stage.

`kubectl annotate mongocluster X mongobench.io/rotate=users|keyfile|users,keyfile` rotates the
SCRAM passwords of the users whose Secrets the operator owns (its own, the admin user's unless
the spec names the admin Secret, the benchmark user's, the exporter sidecars' when monitoring
runs them) and the keyfile of an operator-owned keyfile Secret, in stages recorded in
status.rotation, one Event each:

  Waiting   from the request on, BenchmarkRuns targeting the cluster start no new Job
            (benchmarkrun.decide.action); the stage lasts until no client pod of the cluster runs
            and
            GRACE_SECONDS have passed (a run that read the cluster before the request may still
            create the Job it had decided on within that pass).
  Rotating  users: each Secret holds its new password as `nextPassword` (written before MongoDB
            hears of it, so a crash never loses it); updateUser with it on every replica set
            (as the internal user, by keyfile: no user's own password is needed), then the
            Secret's `password` replaced and `nextPassword` dropped, and the connection URI
            rewritten. The exporter sidecars read their password once, at start (env from the
            Secret): the pod templates then carry a digest of it (EXPORTER_ANNOTATION) and every
            member restarts in the rolling order (mongocluster.act.rolling; mongos by its
            Deployment); the rotation completes once every pod runs it. With `keyfile` too, the
            keyfile's first restart is that restart (both digests change before it).
            keyfile: MongoDB's documented transition (keyfile_step): the new key staged as
            `nextKeyfile`; the keyfile made the YAML list [new, old] and every member restarted
            (each then accepts either key, and authenticates to the others with one they
            accept); then the keyfile made [new] and every member restarted again; then
            `nextKeyfile` dropped. The restarts are the rolling restarts of a version change
            (mongocluster.act.rolling), started by the digest of the keyfile on the pod templates
            (KEYFILE_ANNOTATION), as a renewed TLS CA starts them.
  Completed the annotation is removed; the old passwords and the old key are refused from then on.

Why no client fails: clients read the URI once, at start (the Job's env). Changing a password
under a running client would refuse the connections its pool opens later, so the change is made
only between steps, while no client runs, and the next step's pods read the new URI. A keyfile
rotation waits for the same gap: its rolling restarts step the primary down. The price: the
rotation waits for the step in progress, and the run pauses between two steps meanwhile (for a
keyfile, two rolling restarts long). A second user per role would let a password change happen
mid-step, but doubles the users to keep and the clients would still need both passwords until
every pod restarted.

The exporter's restart is the price of a sidecar that cannot reread its password
(mongodb_exporter takes it from its environment or its URI only): a rolling restart, primaries
stepped down, while runs pause between steps as for the keyfile. Between updateUser and its
pod's restart a sidecar keeps the connections it has authenticated (MongoDB does not close them
on a password change); a new connection it opens meanwhile is refused, a scrape gap of at most
the rolling restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.k8s import conditions as cond
from mongobench.mongo.model import keyfile_keys, keyfile_text
from mongobench.mongocluster.build.layout import ClusterLayout

ANNOTATION = "mongobench.io/rotate"
USERS, KEYFILE = "users", "keyfile"
ROTATABLE = (USERS, KEYFILE)
# On the pod templates (StatefulSets, the mongos Deployment): a digest of the keyfile the pods
# should run with; changing it is what restarts them.
KEYFILE_ANNOTATION = "mongobench.io/keyfile"
NEXT_KEYFILE = "nextKeyfile"
# On the pod templates: a digest of the exporter's password the sidecars should run with.
EXPORTER_ANNOTATION = "mongobench.io/exporter-password"
# Longer than one pass of a BenchmarkRun (read the cluster, create the step's Job).
GRACE_SECONDS = 5.0
ACTIVE = (cond.ROTATION_WAITING, cond.ROTATION_ROTATING)

StageKind = Literal["idle", "refuse", "request", "wait", "stage", "rotate"]


@dataclass(frozen=True)
class Request:
    """What the annotation asks: the parts to rotate, and what cannot be (with why)."""

    parts: tuple[str, ...]
    refused: tuple[str, ...]

    @classmethod
    def of(
        cls, annotations: Mapping[str, str] | None, cannot: Mapping[str, str] | None = None
    ) -> Request | None:
        """None without the annotation. Its value is a list: `users`, `users,keyfile`.
        `cannot`: parts this cluster cannot rotate, with why (rotates_keyfile)."""
        value = (annotations or {}).get(ANNOTATION)
        if value is None:
            return None
        not_here = dict(cannot or {})
        asked = [p.strip() for p in value.replace(" ", ",").split(",") if p.strip()]
        parts = tuple(dict.fromkeys(p for p in asked if p in ROTATABLE and p not in not_here))
        known = ", ".join(ROTATABLE)
        refused = tuple(
            f"{p}: {not_here.get(p, f'unknown (one of {known})')}"
            for p in dict.fromkeys(asked)
            if p not in parts
        )
        return cls(parts, refused or (() if parts else ("nothing named to rotate",)))


@dataclass(frozen=True)
class Stage:
    kind: StageKind
    message: str = ""


def next_stage(
    request: Request | None,
    rotation: Mapping[str, Any],
    cluster_phase: str | None,
    seconds_since_request: float | None,
    running_clients: int,
) -> Stage:
    """The stage a sync carries out now. `rotation`: status.rotation as recorded;
    `seconds_since_request`: since its requestedAt (None before); `running_clients`: client
    pods of the cluster not ended."""
    phase = rotation.get("phase")
    if phase == cond.ROTATION_ROTATING:
        return Stage("rotate", "rotating the credentials")
    if phase != cond.ROTATION_WAITING:
        return _asked(request)
    if cluster_phase != cond.PHASE_READY:
        return Stage("wait", f"waiting for the cluster to be Ready (it is {cluster_phase})")
    if seconds_since_request is None or seconds_since_request < GRACE_SECONDS:
        return Stage("wait", "waiting for runs to see the request")
    if running_clients:
        return Stage("wait", f"waiting for {running_clients} benchmark client pod(s) to finish")
    return Stage("stage", "no benchmark client runs: new credentials staged in the Secrets")


def _asked(request: Request | None) -> Stage:
    """No rotation under way: start one if the annotation asks for something rotatable."""
    if request is None:
        return Stage("idle")
    if not request.parts:
        return Stage("refuse", "; ".join(request.refused))
    return Stage("request", "waiting until no benchmark client of this cluster runs a step")


@dataclass(frozen=True)
class RotatedUser:
    secret: str
    username_key: str = "username"


def rotated_users(spec: MongoClusterSpec, layout: ClusterLayout) -> list[RotatedUser]:
    """The users whose passwords a `users` rotation changes: those in Secrets the operator owns
    (a Secret the spec names is its owner's to rotate), the exporter's while sidecars run."""
    out = [RotatedUser(layout.operator_secret)]
    if spec.auth.admin_secret_name is None:
        out.append(RotatedUser(layout.admin_secret))
    out.append(RotatedUser(layout.benchmark_secret))
    if spec.monitoring.exporter:
        out.append(RotatedUser(layout.exporter_secret))
    return out


def restarts_exporters(spec: MongoClusterSpec, parts: Sequence[str]) -> bool:
    """Whether the rotation must restart the pods for their exporter sidecars' new password."""
    return USERS in parts and spec.monitoring.exporter


def under_way(body: Mapping[str, Any]) -> bool:
    """Whether a sync has rotation work: the annotation is there, or a rotation is under way."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    phase = ((body.get("status") or {}).get("rotation") or {}).get("phase")
    return ANNOTATION in annotations or phase in ACTIVE


def holds_new_jobs(cluster: Mapping[str, Any] | None) -> bool:
    """Whether a BenchmarkRun on this cluster must not start a Job now (a rotation is asked for
    or under way)."""
    if cluster is None:
        return False
    rotation = (cluster.get("status") or {}).get("rotation") or {}
    if rotation.get("phase") in ACTIVE:
        return True
    request = Request.of((cluster.get("metadata") or {}).get("annotations"))
    return request is not None and bool(request.parts)


MONGOS = "mongos"


def set_targets(layout: ClusterLayout, user: RotatedUser) -> Sequence[str]:
    """Where the user's password is changed: each replica set's name, or MONGOS. A replica
    set's users live on it; in a sharded cluster the benchmark user is the cluster's (created
    through mongos, kept by the config servers) and the operator's, admin's and exporter's
    exist on every set (they connect to shard members directly) and, through the config
    servers, in the cluster."""
    if not layout.sharded:
        return [rs.name for rs in layout.replica_sets]
    if user.secret == layout.benchmark_secret:
        return [MONGOS]
    return [rs.name for rs in layout.replica_sets]


KeyfileAction = Literal["both", "wait", "new", "done"]


@dataclass(frozen=True)
class KeyfileStep:
    action: KeyfileAction
    message: str
    keyfile: str | None = None  # the keyfile Secret's new text ("both", "new")


def keyfile_step(current: str, staged: str | None, rolled: bool) -> KeyfileStep:
    """The next step of a keyfile rotation, from the Secret alone (so a crash anywhere resumes
    it): `current` its keyfile, `staged` its nextKeyfile (None once dropped), `rolled` whether
    every member runs with `current` (restarted since the pod templates carry its digest, and
    ready)."""
    keys = keyfile_keys(current)
    if staged is None:
        return KeyfileStep("done", "the keyfile holds only its new key")
    if staged not in keys:
        return KeyfileStep(
            "both",
            "keyfile holds the new and the old key: members restart to accept either",
            keyfile_text((staged, *keys)),
        )
    if not rolled:
        both = len(keys) > 1
        held = "the new and the old key" if both else "the new key only"
        return KeyfileStep("wait", f"members restarting with {held}")
    if len(keys) > 1:
        return KeyfileStep(
            "new",
            "every member accepts the new key: keyfile holds only it, members restart again",
            keyfile_text((staged,)),
        )
    return KeyfileStep("done", "every member runs with the new key only: the old one is refused")


def keyfile_digest(keyfile: str) -> str:
    """What the pod templates carry (KEYFILE_ANNOTATION, EXPORTER_ANNOTATION): never the key
    or the password itself."""
    return hashlib.sha256(keyfile.encode()).hexdigest()[:16]


def rotates_keyfile(spec: MongoClusterSpec) -> str | None:
    """Why the keyfile cannot be rotated here (None when it can): a Secret the spec names is
    its owner's, and x.509 members use no keyfile."""
    if spec.auth.keyfile_secret_name is not None:
        return "the keyfile Secret is named by the spec: its owner rotates it"
    if spec.tls.x509_members:
        return "members authenticate to each other by x.509 certificates, not the keyfile"
    return None
