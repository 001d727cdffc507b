"""I/O: the certificates of a TLS MongoCluster exist, are current, and reach the members.

From cert-manager (``tls.issuerRef``): the Certificate objects are server-side applied, owned
by the cluster; cert-manager writes and renews their Secrets. From a CA Secret
(``tls.caSecretName``): the operator issues each certificate itself into a Secret the cluster
owns, and issues it again when ``certificates.reissue_reason`` says so (another CA, other
names, near its end). A renewed certificate reaches running members as tls_renewal plans it
(rotateCertificates, or a rolling restart), recorded in annotations on each workload. Private
keys are never logged: only the Secret's name and the reason.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.api.schema import SpecError
from mongobench.clock import rfc3339
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import owner_reference
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.versions import capabilities
from mongobench.mongocluster.act.provision import (
    Desired,
    cluster_secrets,
    decoded_by_name,
    get_secret,
    list_cluster_secrets,
)
from mongobench.mongocluster.act.rolling import rolled
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.secrets import secret
from mongobench.mongocluster.build.tls import (
    CA_KEY,
    CERT_KEY,
    build_certificates,
    certificate_requests,
    member_secret,
    mongos_secret,
)
from mongobench.mongocluster.decide.tls_ca import (
    CAStep,
    CAWatch,
    ca_watch,
    join_bundle,
    plan_ca_change,
    same_ca,
    split_bundle,
    under_way,
)
from mongobench.mongocluster.decide.tls_renewal import (
    PROPAGATION_SECONDS,
    RESTART_ANNOTATION,
    SEEN_ANNOTATION,
    SERVED_ANNOTATION,
    Certificate,
    Renewal,
    plan_renewal,
    seen_at,
)

log = logging.getLogger("mongobench.mongocluster")

CERTIFICATE_API = ("cert-manager.io/v1", "certificates")


@dataclass(frozen=True)
class Issued:
    """What ensure_tls did: the Secrets the operator (re)wrote, and whether the CA Secret the
    spec names is watched (None: no CA Secret, cert-manager issues)."""

    secrets: list[str] = field(default_factory=list)
    ca_watch: CAWatch | None = None


def ensure_tls(
    kube: KubeApi, d: Desired, owner: Mapping[str, Any], now: datetime.datetime
) -> Issued:
    """Make the cluster's certificates exist. By the spec as written: a cluster rolling onto
    TLS has them before its first step."""
    tls = d.target.tls
    if not tls.enabled:
        return Issued()
    ref = owner_reference(owner)
    if tls.issuer_ref is not None:
        # Detected on every apply, not assumed: cert-manager may be installed after the operator.
        if not kube.served(*CERTIFICATE_API):
            raise SpecError(
                "spec.tls.issuerRef: cert-manager is not installed (cert-manager.io/v1 "
                "Certificates are not served); install it, or name a CA Secret in "
                "tls.caSecretName instead"
            )
        for obj in build_certificates(d.target, d.layout):
            obj["metadata"]["ownerReferences"] = [ref]
            kube.apply(obj)
        return Issued()
    assert tls.ca_secret_name is not None  # admission: exactly one source
    return _issue_from_ca(kube, d, owner, tls.ca_secret_name, now)


def _issue_from_ca(
    kube: KubeApi, d: Desired, owner: Mapping[str, Any], ca_secret: str, now: datetime.datetime
) -> Issued:
    """Each certificate issued from the CA Secret when absent, near its end or for other names,
    and a new CA carried through the trust bundle (tls_ca); the Secrets written."""
    # Loaded with the first cluster that issues from a CA Secret: `cryptography` is ~8 MiB
    # resident that an operator without such a cluster never needs.
    from mongobench.mongocluster.build.certificates import (  # noqa: PLC0415
        issue,
        reissue_reason,
        signed_by,
    )

    ref = owner_reference(owner)
    found, ca = _read_ca(kube, d, ca_secret)
    listed = list_cluster_secrets(kube, d.layout)
    existing = decoded_by_name(listed)
    unwatched = {s["metadata"]["name"] for s in listed if not lbl.watched(s)}
    requests = certificate_requests(d.layout)
    issued_now = {r.secret: existing.get(r.secret) for r in requests}
    step = _ca_step(kube, d, ca[CERT_KEY], issued_now, under_way(owner.get("status")))
    if step is not None:
        _record_ca_step(kube, owner, step, now)
    bundle = join_bundle(step.bundle) if step is not None else ca[CERT_KEY]
    issued: list[str] = []
    for request in requests:
        values = existing.get(request.secret)
        if step is None or step.phase == cond.CA_COMPLETED:
            reason = reissue_reason(values, ca, request, now)
        elif step.reissue and not signed_by(values, ca[CERT_KEY]):
            reason = "reissued from the new CA"
        elif values and not same_ca(values.get(CA_KEY, ""), bundle):
            # The trust bundle changes, the certificate stays (tls_ca: Bundling, Pruning).
            _write(kube, d, ref, request.secret, {**values, CA_KEY: bundle})
            log.info("certificate Secret %s: trust bundle of %d CA(s)", request.secret,
                     len(split_bundle(bundle)))  # fmt: skip
            issued.append(request.secret)
            continue
        else:
            reason = None if values else "not issued yet"
        if reason is None:
            if values and request.secret in unwatched:
                # Issued by an operator that watched every Secret: labelled, values kept.
                _write(kube, d, ref, request.secret, values)
                issued.append(request.secret)
            continue
        values = issue(ca, ca_secret, request, now, bundle)
        _write(kube, d, ref, request.secret, values)
        log.info("issued certificate Secret %s: %s", request.secret, reason)
        issued.append(request.secret)
    return Issued(issued, ca_watch(ca_secret, found))


def _read_ca(kube: KubeApi, d: Desired, ca_secret: str) -> tuple[Mapping[str, Any], dict[str, str]]:
    """The CA Secret as listed and its decoded values; SpecError when it is absent or cannot
    sign."""
    from mongobench.mongocluster.build.certificates import CAError, load_ca  # noqa: PLC0415

    try:
        found = get_secret(kube, d.layout.namespace, ca_secret)
    except LookupError as exc:
        raise SpecError(f"spec.tls.caSecretName: {exc}") from None
    ca = decoded_by_name([found])[ca_secret]
    try:
        load_ca(ca, ca_secret)
    except CAError as exc:
        raise SpecError(f"spec.tls.caSecretName: {exc}") from None
    return found, ca


def _write(
    kube: KubeApi, d: Desired, ref: Mapping[str, Any], name: str, values: Mapping[str, str]
) -> None:
    manifest = secret(name, d.layout, dict(values))
    manifest["metadata"]["labels"] |= lbl.WATCHED  # its changes wake the cluster
    manifest["type"] = "kubernetes.io/tls"
    manifest["metadata"]["ownerReferences"] = [ref]
    kube.apply(manifest)


def _ca_step(
    kube: KubeApi,
    d: Desired,
    new_ca: str,
    issued: Mapping[str, Mapping[str, str] | None],
    changing: bool,
) -> CAStep | None:
    """Where a change of CA stands (tls_ca); None before anything was issued. `changing`:
    status records a change under way."""
    from mongobench.mongocluster.build.certificates import signed_by  # noqa: PLC0415

    present = {k: v for k, v in issued.items() if v and v.get(CERT_KEY) and v.get(CA_KEY)}
    if not present:
        return None
    bundle = next(iter(present.values()))[CA_KEY]
    settled = all(same_ca(v[CA_KEY], new_ca) and signed_by(v, new_ca) for v in present.values())
    if settled and not changing:
        return CAStep(cond.CA_COMPLETED, (new_ca,), False, "")  # the usual case: no reads
    # Pruning wrote the new CA alone: Completed only once the members restarted onto it (a
    # Completed read from the Secrets alone came while the last member was being replaced).
    return plan_ca_change(
        new_ca=new_ca,
        bundle=split_bundle(bundle),
        leaves_from_new=all(signed_by(v, new_ca) for v in present.values()),
        taken_up=_taken_up(kube, d, present),
    )


def _taken_up(kube: KubeApi, d: Desired, secrets: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether every member serves its Secret as it is (tls_renewal recorded it served) and
    every pod runs the current template and is ready (a restart it took is over)."""
    for kind, name, secret_name, _ in _components(d):
        values = secrets.get(secret_name) or {}
        workload = kube.get(kind, d.layout.namespace, name)
        if workload is None or not values:
            return False
        served = ((workload.get("metadata") or {}).get("annotations") or {}).get(SERVED_ANNOTATION)
        current = Certificate(_digest(values[CERT_KEY]), _digest(values[CA_KEY]))
        if served != current.encode():
            return False
    return rolled(kube, d.layout, lambda _workload, _container: True)


def _record_ca_step(
    kube: KubeApi, owner: Mapping[str, Any], step: CAStep, now: datetime.datetime
) -> None:
    """status.tls.caRotation as the step says (nothing for a cluster that never changed CA),
    and an Event when a phase begins."""
    recorded = ((owner.get("status") or {}).get("tls") or {}).get("caRotation") or {}
    if step.phase == cond.CA_COMPLETED and recorded.get("phase") in (None, cond.CA_COMPLETED):
        return
    if recorded.get("phase") == step.phase and recorded.get("message") == step.message:
        return
    update: dict[str, Any] = {"phase": step.phase, "message": step.message}
    if recorded.get("phase") in (None, cond.CA_COMPLETED):
        update |= {"startedAt": rfc3339(now), "completedAt": None}
    if step.phase == cond.CA_COMPLETED:
        update["completedAt"] = rfc3339(now)
    meta = owner["metadata"]
    kube.patch_status(
        "MongoCluster", meta["namespace"], meta["name"], {"tls": {"caRotation": update}}
    )
    if not step.waiting:
        kube.event(owner, cond.NORMAL, cond.EVENT_CA_ROTATING, f"{step.phase}: {step.message}")


def renewal_due_in(kube: KubeApi, d: Desired, now: datetime.datetime) -> float | None:
    """Seconds until the first certificate the operator issued from the CA Secret is due for
    reissue (certificates.renewal_time); None for cert-manager (it renews its own) or none."""
    if not d.target.tls.enabled or d.target.tls.ca_secret_name is None:
        return None
    from mongobench.mongocluster.build.certificates import renewal_time  # noqa: PLC0415

    secrets = cluster_secrets(kube, d.layout)
    due = [renewal_time(secrets.get(r.secret)) for r in certificate_requests(d.layout)]
    known = [t for t in due if t is not None]
    return max(0.0, (min(known) - now).total_seconds()) if known else None


def followed_secrets(body: Mapping[str, Any]) -> list[str]:
    """The Secrets whose certificate changes concern a cluster: its certificate Secrets and the
    CA Secret it names, whenever the spec names a source of certificates (so that a cluster
    whose TLS was switched off still drops them when deleted); none for a spec without one or
    that does not parse (no parse at all without a tls section: most clusters)."""
    if not (body.get("spec") or {}).get("tls"):
        return []
    try:
        spec = MongoClusterSpec.parse(dict(body.get("spec") or {}))
    except SpecError:
        return []
    if spec.tls.ca_secret_name is None and spec.tls.issuer_ref is None:
        return []
    meta = body["metadata"]
    layout = cluster_layout(meta["name"], meta["namespace"], spec)
    names = [r.secret for r in certificate_requests(layout)]
    return [*names, spec.tls.ca_secret_name] if spec.tls.ca_secret_name else names


def certificate_state(data: Mapping[str, str]) -> str | None:
    """A Secret's certificate and CA as one digest (of the base64 values, as the API gives
    them); None for a Secret without a certificate."""
    if CERT_KEY not in data:
        return None
    return _digest(f"{data[CERT_KEY]}/{data.get(CA_KEY, '')}")


def _components(d: Desired) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(kind, name, certificate Secret, member hosts) of what runs members or routers."""
    out: list[tuple[str, str, str, tuple[str, ...]]] = [
        ("StatefulSet", rs.name, member_secret(rs), rs.hosts) for rs in d.layout.replica_sets
    ]
    if d.layout.sharded:
        out.append(("Deployment", d.layout.mongos, mongos_secret(d.layout), ()))
    return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Renewals:
    """What carrying renewed certificates did (for the log and the Events), and in how many
    seconds a change seen now may be carried (None: nothing waits)."""

    notes: list[str] = field(default_factory=list)
    due_in: float | None = None


def renew_certificates(
    kube: KubeApi, admin: MongoAdmin, d: Desired, now: float, propagation: float | None = None
) -> Renewals:
    """Carry renewed certificates to the running members (tls_renewal decides how). A member
    that cannot be reached raises (the next sync tries again: nothing is recorded as served
    until every member rotated). `propagation`: the kubelet's delay (tls_renewal)."""
    if not d.spec.tls.enabled:
        return Renewals()
    secrets = cluster_secrets(kube, d.layout)
    rotate_online = capabilities(d.spec.version).rotate_certificates
    done: list[str] = []
    waits: list[float] = []
    for kind, name, secret_name, hosts in _components(d):
        values = secrets.get(secret_name) or {}
        workload = kube.get(kind, d.layout.namespace, name)
        if workload is None or not values.get(CERT_KEY) or not values.get(CA_KEY):
            continue  # not created yet, or cert-manager has not issued it yet
        current = Certificate(_digest(values[CERT_KEY]), _digest(values[CA_KEY]))
        step = _renew_one(
            kube,
            admin,
            workload,
            current,
            hosts,
            now=now,
            rotate_online=rotate_online,
            propagation=PROPAGATION_SECONDS if propagation is None else propagation,
        )
        if step is not None and step.action == "wait" and step.due_in is not None:
            waits.append(step.due_in)
        elif step is not None and step.action in ("rotate", "restart"):
            done.append(f"{kind} {name}: certificate {step.action} ({step.reason})")
    return Renewals(done, min(waits, default=None))


def _renew_one(
    kube: KubeApi,
    admin: MongoAdmin,
    workload: Mapping[str, Any],
    current: Certificate,
    hosts: tuple[str, ...],
    *,
    now: float,
    rotate_online: bool,
    propagation: float,
) -> Renewal | None:
    meta = workload["metadata"]
    kind, name, namespace = workload["kind"], meta["name"], meta["namespace"]
    notes = meta.get("annotations") or {}
    seen = seen_at(notes.get(SEEN_ANNOTATION), current)
    step = plan_renewal(
        served=Certificate.decode(notes.get(SERVED_ANNOTATION)),
        current=current,
        seen=seen,
        now=now,
        rotate_online=rotate_online,
        mongos=kind == "Deployment",
        propagation=propagation,
    )
    if step is None:
        return None
    if step.action == "wait":
        if seen is None:
            first_seen = {SEEN_ANNOTATION: f"{current.digest}@{now:.0f}"}
            kube.patch(kind, namespace, name, {"metadata": {"annotations": first_seen}})
        return step
    patch: dict[str, Any] = {"metadata": {"annotations": {SERVED_ANNOTATION: current.encode()}}}
    if step.action == "record":
        kube.patch(kind, namespace, name, patch)
        return step
    if step.action == "rotate":
        for host in hosts:
            admin.rotate_certificates(host)
    elif step.action == "restart":
        template = {"metadata": {"annotations": {RESTART_ANNOTATION: current.digest}}}
        patch["spec"] = {"template": template}
    kube.patch(kind, namespace, name, patch)
    return step
