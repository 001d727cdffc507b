"""I/O: the certificates of a TLS MongoCluster exist and are current.

From cert-manager (``tls.issuerRef``): the Certificate objects are server-side applied, owned
by the cluster; cert-manager writes and renews their Secrets. From a CA Secret
(``tls.caSecretName``): the operator issues each certificate itself into a Secret the cluster
owns, and issues it again when ``certificates.reissue_reason`` says so (another CA, other
names, near its end). Private keys are never logged: only the Secret's name and the reason.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from mongobench.api.schema import SpecError
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import owner_reference
from mongobench.mongocluster.certificates import CAError, issue, reissue_reason
from mongobench.mongocluster.provision import Desired, cluster_secrets, read_secret
from mongobench.mongocluster.secrets import secret
from mongobench.mongocluster.tls import build_certificates, certificate_requests

log = logging.getLogger("mongobench.mongocluster")

CERTIFICATE_API = ("cert-manager.io/v1", "certificates")


def ensure_tls(
    kube: KubeApi, d: Desired, owner: Mapping[str, Any], now: datetime.datetime
) -> list[str]:
    """Make the cluster's certificates exist; returns the Secrets (re)issued by the operator."""
    tls = d.spec.tls
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
        for obj in build_certificates(d.spec, d.layout):
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
