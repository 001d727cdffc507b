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
from typing import Any

from mongobench.api.schema import SpecError
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import owner_reference
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.versions import capabilities
from mongobench.mongocluster.certificates import CAError, issue, reissue_reason
from mongobench.mongocluster.provision import Desired, cluster_secrets, read_secret
from mongobench.mongocluster.secrets import secret
from mongobench.mongocluster.tls import (
    CA_KEY,
    CERT_KEY,
    build_certificates,
    certificate_requests,
    member_secret,
    mongos_secret,
)
from mongobench.mongocluster.tls_renewal import (
    RESTART_ANNOTATION,
    SEEN_ANNOTATION,
    SERVED_ANNOTATION,
    Certificate,
    plan_renewal,
    seen_at,
)

log = logging.getLogger("mongobench.mongocluster")

CERTIFICATE_API = ("cert-manager.io/v1", "certificates")


def ensure_tls(
    kube: KubeApi, d: Desired, owner: Mapping[str, Any], now: datetime.datetime
) -> list[str]:
    """Make the cluster's certificates exist; returns the Secrets (re)issued by the operator.
    By the spec as written: a cluster rolling onto TLS has them before its first step."""
    tls = d.target.tls
    if not tls.enabled:
        return []
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
        return []
    assert tls.ca_secret_name is not None  # admission: exactly one source
    try:
        ca = read_secret(kube, d.layout.namespace, tls.ca_secret_name)
    except LookupError as exc:
        raise SpecError(f"spec.tls.caSecretName: {exc}") from None
    issued: list[str] = []
    existing = cluster_secrets(kube, d.layout)
    for request in certificate_requests(d.layout):
        reason = reissue_reason(existing.get(request.secret), ca, request, now)
        if reason is None:
            continue
        try:
            values = issue(ca, tls.ca_secret_name, request, now)
        except CAError as exc:
            raise SpecError(f"spec.tls.caSecretName: {exc}") from None
        manifest = secret(request.secret, d.layout, values)
        manifest["type"] = "kubernetes.io/tls"
        manifest["metadata"]["ownerReferences"] = [ref]
        kube.apply(manifest)
        log.info("issued certificate Secret %s: %s", request.secret, reason)
        issued.append(request.secret)
    return issued


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def renew_certificates(kube: KubeApi, admin: MongoAdmin, d: Desired, now: float) -> list[str]:
    """Carry renewed certificates to the running members (tls_renewal decides how); returns
    what was done, for the log and the Events. A member that cannot be reached raises (the next
    sync tries again: nothing is recorded as served until every member rotated)."""
    if not d.spec.tls.enabled:
        return []
    secrets = cluster_secrets(kube, d.layout)
    rotate_online = capabilities(d.spec.version).rotate_certificates
    components: list[tuple[str, str, str, tuple[str, ...]]] = [
        ("StatefulSet", rs.name, member_secret(rs), rs.hosts) for rs in d.layout.replica_sets
    ]
    if d.layout.sharded:
        components.append(("Deployment", d.layout.mongos, mongos_secret(d.layout), ()))
    done: list[str] = []
    for kind, name, secret_name, hosts in components:
        values = secrets.get(secret_name) or {}
        workload = kube.get(kind, d.layout.namespace, name)
        if workload is None or not values.get(CERT_KEY) or not values.get(CA_KEY):
            continue  # not created yet, or cert-manager has not issued it yet
        current = Certificate(_digest(values[CERT_KEY]), _digest(values[CA_KEY]))
        note = _renew_one(
            kube, admin, workload, current, hosts, now=now, rotate_online=rotate_online
        )
        if note is not None:
            done.append(note)
    return done


def _renew_one(
    kube: KubeApi,
    admin: MongoAdmin,
    workload: Mapping[str, Any],
    current: Certificate,
    hosts: tuple[str, ...],
    *,
    now: float,
    rotate_online: bool,
) -> str | None:
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
    )
    if step is None:
        return None
    if step.action == "wait":
        if seen is None:
            first_seen = {SEEN_ANNOTATION: f"{current.digest}@{now:.0f}"}
            kube.patch(kind, namespace, name, {"metadata": {"annotations": first_seen}})
        return None
    patch: dict[str, Any] = {"metadata": {"annotations": {SERVED_ANNOTATION: current.encode()}}}
    if step.action == "record":
        kube.patch(kind, namespace, name, patch)
        return None
    if step.action == "rotate":
        for host in hosts:
            admin.rotate_certificates(host)
    elif step.action == "restart":
        template = {"metadata": {"annotations": {RESTART_ANNOTATION: current.digest}}}
        patch["spec"] = {"template": template}
    kube.patch(kind, namespace, name, patch)
    return f"{kind} {name}: certificate {step.action} ({step.reason})"
