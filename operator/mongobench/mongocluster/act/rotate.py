"""Credential rotation, the I/O half: Secrets, client pods, MongoDB, status and Events.

The stages and why they guarantee no failed client operation are in rotation.py (pure). One
stage per sync pass at most, except that staging and rotating follow each other in the same
pass; every stage is safe to repeat after a crash: a staged `nextPassword` stays in its Secret
until MongoDB has it and the Secret's `password` was replaced by it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from mongobench.api.kinds import MONGOCLUSTER as KIND
from mongobench.clock import rfc3339, seconds_since
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.conditions import Event
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.model import Mongos, keyfile_keys
from mongobench.mongocluster.act.provision import Desired, ensure_secrets
from mongobench.mongocluster.act.rolling import rolled
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.generate import new_keyfile, new_password
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.decide.rotation import (
    ANNOTATION,
    EXPORTER_ANNOTATION,
    KEYFILE,
    KEYFILE_ANNOTATION,
    MONGOS,
    NEXT_KEYFILE,
    USERS,
    KeyfileStep,
    Request,
    RotatedUser,
    Stage,
    keyfile_digest,
    keyfile_step,
    next_stage,
    restarts_exporters,
    rotated_users,
    rotates_keyfile,
    set_targets,
)

log = logging.getLogger("mongobench.mongocluster")

NEXT = "nextPassword"
Administration = Callable[[], AbstractContextManager[tuple[MongoAdmin, Any]]]


def running_clients(kube: KubeApi, namespace: str, cluster: str) -> int:
    """Benchmark client pods of the cluster that have not ended (one LIST by the label the
    cluster's NetworkPolicy admits them by)."""
    pods = kube.list("Pod", namespace, f"{lbl.CLIENT_OF}={cluster}")
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") not in cond.POD_ENDED_PHASES)


def advance(
    kube: KubeApi,
    body: Mapping[str, Any],
    d: Desired,
    administration: Administration,
    now: datetime,
) -> list[Event]:
    """Carry out the next stage, as of `now`; the Events it decided (none when nothing
    happened)."""
    meta, status = body["metadata"], body.get("status") or {}
    namespace, name = meta["namespace"], meta["name"]
    rotation = dict(status.get("rotation") or {})
    cannot = rotates_keyfile(d.spec)
    request = Request.of(meta.get("annotations"), {KEYFILE: cannot} if cannot else None)
    running = (
        running_clients(kube, namespace, name)
        if rotation.get("phase") == cond.ROTATION_WAITING
        else 0
    )
    stage = next_stage(
        request,
        rotation,
        status.get("phase"),
        seconds_since(rotation.get("requestedAt"), now),
        running,
    )
    events: list[Event] = []
    if stage.kind == "idle":
        return events
    if stage.kind == "refuse":
        assert request is not None
        _record(kube, namespace, name, {"phase": cond.ROTATION_REFUSED, "message": stage.message})
        _unannotate(kube, namespace, name)
        return [(cond.WARNING, cond.EVENT_ROTATION_REFUSED, stage.message)]
    if stage.kind == "request":
        assert request is not None
        return _requested(kube, namespace, name, request=request, stage=stage, now=now)
    if stage.kind == "wait":
        if rotation.get("message") != stage.message:
            _record(kube, namespace, name, {"message": stage.message})
        return events
    # A rotation recorded without `requested` is an earlier operator version's: users only.
    parts = rotation.get("requested") or (request.parts if request else (USERS,))
    if stage.kind == "stage":
        _stage(kube, namespace, rotated_users(d.spec, d.layout) if USERS in parts else [])
        if KEYFILE in parts:
            _stage_keyfile(kube, d.layout)
        _record(kube, namespace, name, {"phase": cond.ROTATION_ROTATING, "message": stage.message})
        events.append((cond.NORMAL, cond.EVENT_ROTATION_STARTED, stage.message))
    return [*events, *_rotating(kube, body, d, administration, parts, now=now)]


def _requested(
    kube: KubeApi, namespace: str, name: str, *, request: Request, stage: Stage, now: datetime
) -> list[Event]:
    """A new request recorded: it waits for the cluster's running benchmarks first."""
    events: list[Event] = []
    if request.refused:
        events.append((cond.WARNING, cond.EVENT_ROTATION_REFUSED, "; ".join(request.refused)))
    _record(
        kube,
        namespace,
        name,
        {
            "phase": cond.ROTATION_WAITING,
            "requested": list(request.parts),
            "requestedAt": rfc3339(now, precise=True),
            "message": stage.message,
            "completedAt": None,
            "rotated": None,
        },
    )
    runs = "BenchmarkRuns on this cluster start no new step until it is done"
    events.append(
        (cond.NORMAL, cond.EVENT_ROTATION_REQUESTED, f"{', '.join(request.parts)}: {runs}")
    )
    return events


def _rotating(
    kube: KubeApi,
    body: Mapping[str, Any],
    d: Desired,
    administration: Administration,
    parts: Sequence[str],
    *,
    now: datetime,
) -> list[Event]:
    """The Rotating stage: the users' passwords, the exporter sidecars' restart, the keyfile's
    steps (one per pass), then Completed."""
    namespace, name = d.layout.namespace, d.layout.name
    rotation = (body.get("status") or {}).get("rotation") or {}
    users = rotated_users(d.spec, d.layout) if USERS in parts else []
    # Users first: updateUser runs as the internal user, simplest before the keyfile's
    # restarts begin (and needs no restart itself).
    fresh = _rotate(kube, d, body, users, administration) if users else []
    done = [*(rotation.get("rotated") or []), *fresh]
    rotated = list(dict.fromkeys(done))
    events: list[Event] = []
    exporter = _exporter_digest(kube, d.layout) if restarts_exporters(d.spec, parts) else None
    # Every pass sets it (a no-op once done), so a crash after the Secret changed still
    # restarts the sidecars; before the keyfile's first restart, so one restart carries both.
    if exporter is not None and _restart_with(kube, d.layout, exporter, EXPORTER_ANNOTATION):
        said = "the exporter's password changed: members restart for their sidecars to read it"
        events.append((cond.NORMAL, cond.EVENT_EXPORTER_RESTARTING, said))
    if KEYFILE in parts and KEYFILE not in rotated:
        step = _keyfile(kube, d.layout)
        if step.action != "done":
            if rotation.get("message") != step.message:
                _record(kube, namespace, name, {"message": step.message, "rotated": rotated})
            if step.action == "wait":
                return events
            return [*events, (cond.NORMAL, cond.EVENT_KEYFILE_ROLLING, step.message)]
        rotated.append(KEYFILE)
    if exporter is not None and not _rolled(kube, d.layout, exporter, EXPORTER_ANNOTATION):
        said = "members restarting for the exporter sidecars' new password"
        if rotation.get("message") != said:
            _record(kube, namespace, name, {"message": said, "rotated": rotated})
        return events
    message = _completed_message(parts, [r for r in rotated if r != KEYFILE])
    _record(
        kube,
        namespace,
        name,
        {
            "phase": cond.ROTATION_COMPLETED,
            "rotated": rotated,
            "completedAt": rfc3339(now, precise=True),
            "message": message,
        },
    )
    _unannotate(kube, namespace, name)
    return [*events, (cond.NORMAL, cond.EVENT_CREDENTIALS_ROTATED, message)]


def _completed_message(parts: Sequence[str], users: Sequence[str]) -> str:
    said = []
    if USERS in parts:
        said.append(f"new passwords for {', '.join(users)} in MongoDB and their Secrets")
    if KEYFILE in parts:
        said.append("a new keyfile on every member")
    return "; ".join(said) + "; the old ones are refused"


def _record(kube: KubeApi, namespace: str, name: str, rotation: Mapping[str, Any]) -> None:
    kube.patch_status(KIND, namespace, name, {"rotation": dict(rotation)})


def _unannotate(kube: KubeApi, namespace: str, name: str) -> None:
    kube.patch(KIND, namespace, name, {"metadata": {"annotations": {ANNOTATION: None}}})


def _encoded(value: str) -> str:
    return base64.b64encode(value.encode()).decode("ascii")


def _decoded(secret: Mapping[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


def _stage(kube: KubeApi, namespace: str, users: list[RotatedUser]) -> None:
    """A new password as `nextPassword` in each Secret that has none yet (a repeated stage
    keeps the one written first: MongoDB may already hold it)."""
    for user in users:
        secret = kube.get("Secret", namespace, user.secret)
        if secret is None:
            raise LookupError(f"Secret {namespace}/{user.secret} does not exist")
        if NEXT not in (secret.get("data") or {}):
            kube.patch("Secret", namespace, user.secret, {"data": {NEXT: _encoded(new_password())}})


def _stage_keyfile(kube: KubeApi, layout: ClusterLayout) -> None:
    """A new key as `nextKeyfile`, unless one is staged already (a repeated stage keeps it:
    members may run with it)."""
    secret = kube.get("Secret", layout.namespace, layout.keyfile_secret)
    if secret is None:
        raise LookupError(f"Secret {layout.namespace}/{layout.keyfile_secret} does not exist")
    if NEXT_KEYFILE not in (secret.get("data") or {}):
        patch = {"data": {NEXT_KEYFILE: _encoded(new_keyfile())}}
        kube.patch("Secret", layout.namespace, layout.keyfile_secret, patch)


def _keyfile(kube: KubeApi, layout: ClusterLayout) -> KeyfileStep:
    """Carry out the keyfile's next step (rotation.keyfile_step): the Secret rewritten and the
    members restarted, or nextKeyfile dropped at the end."""
    namespace, name = layout.namespace, layout.keyfile_secret
    values = _decoded(kube.get("Secret", namespace, name) or {})
    current, staged = values["keyfile"], values.get(NEXT_KEYFILE)
    if staged is not None and staged in keyfile_keys(current):
        # A no-op unless a crash came between the Secret's change and the templates'.
        _restart_with(kube, layout, keyfile_digest(current))
    step = keyfile_step(current, staged, _rolled(kube, layout, keyfile_digest(current)))
    if step.keyfile is not None:
        kube.patch("Secret", namespace, name, {"data": {"keyfile": _encoded(step.keyfile)}})
        _restart_with(kube, layout, keyfile_digest(step.keyfile))
    elif step.action == "done" and staged is not None:
        kube.patch("Secret", namespace, name, {"data": {NEXT_KEYFILE: None}})
    return step


def _workloads(layout: ClusterLayout) -> list[tuple[str, str]]:
    """(kind, name) of what runs pods mounting the keyfile."""
    out = [("StatefulSet", rs.name) for rs in layout.replica_sets]
    return [*out, ("Deployment", layout.mongos)] if layout.sharded else out


def _template_digest(workload: Mapping[str, Any], annotation: str) -> str | None:
    template = (workload.get("spec") or {}).get("template") or {}
    return ((template.get("metadata") or {}).get("annotations") or {}).get(annotation)


def _restart_with(
    kube: KubeApi, layout: ClusterLayout, digest: str, annotation: str = KEYFILE_ANNOTATION
) -> bool:
    """The pod templates carry `digest` as `annotation`: a changed one is a new revision, and
    the rolling restart (mongocluster.act.rolling; the Deployment by itself) replaces every pod.
    Whether a template changed."""
    changed = False
    for kind, name in _workloads(layout):
        workload = kube.get(kind, layout.namespace, name)
        if workload is not None and _template_digest(workload, annotation) != digest:
            template = {"metadata": {"annotations": {annotation: digest}}}
            kube.patch(kind, layout.namespace, name, {"spec": {"template": template}})
            changed = True
    return changed


def _rolled(
    kube: KubeApi, layout: ClusterLayout, digest: str, annotation: str = KEYFILE_ANNOTATION
) -> bool:
    """Whether every pod of the cluster was started from a template carrying `digest` as
    `annotation` and is ready."""
    return rolled(
        kube, layout, lambda workload, _: _template_digest(workload, annotation) == digest
    )


def _exporter_digest(kube: KubeApi, layout: ClusterLayout) -> str | None:
    """A digest of the exporter's password, for the pod templates (never the password); None
    while a new one is still staged (MongoDB may not have it yet: no restart before it has)."""
    values = _decoded(kube.get("Secret", layout.namespace, layout.exporter_secret) or {})
    if "password" not in values or NEXT in values:
        return None
    return keyfile_digest(values["password"])


def _staged(
    kube: KubeApi, namespace: str, users: list[RotatedUser]
) -> Iterator[tuple[RotatedUser, str, str]]:
    """(user, username, new password) of each Secret still holding a staged password."""
    for user in users:
        secret = kube.get("Secret", namespace, user.secret)
        values = _decoded(secret or {})
        if NEXT in values:
            yield user, values[user.username_key], values[NEXT]


def _rotate(
    kube: KubeApi,
    d: Desired,
    owner: Mapping[str, Any],
    users: list[RotatedUser],
    administration: Administration,
) -> list[str]:
    """updateUser on every set holding each staged user, then the Secret's password replaced;
    the connection Secret follows the benchmark user's. The usernames rotated."""
    namespace = d.layout.namespace
    by_set = {rs.name: rs for rs in d.layout.replica_sets}
    rotated: list[str] = []
    with administration() as (admin, _):
        for user, username, password in list(_staged(kube, namespace, users)):
            for where in set_targets(d.layout, user):
                target = Mongos((d.layout.mongos_host,)) if where == MONGOS else by_set[where]
                admin.set_password(
                    target if isinstance(target, Mongos) else target.to_spec(), username, password
                )
            patch = {"data": {"password": _encoded(password), NEXT: None}}
            kube.patch("Secret", namespace, user.secret, patch)
            rotated.append(username)
    # The URI clients mount is derived from the benchmark Secret: rewritten from it now.
    ensure_secrets(kube, d, owner)
    log.info("credentials rotated for %s/%s: %s", namespace, d.layout.name, ", ".join(rotated))
    return rotated
