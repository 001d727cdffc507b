"""Pure: TLS of a MongoCluster: which certificates it needs, their Secrets, the cert-manager
Certificate objects, and the mongod/mongos/exporter flags and volumes that use them.

One Secret shape for both sources of certificates, so the pods never know which one signed:
``tls.crt``, ``tls.key``, ``ca.crt`` and ``tls-combined.pem`` (key and certificate in one
file, what ``--tlsCertificateKeyFile`` reads). cert-manager writes exactly that with the
``CombinedPEM`` additional output format; from a CA Secret the operator writes it itself
(``certificates.issue``). A Secret volume is updated in place when the Secret changes, so a
renewed certificate reaches a running mongod without a restart (``rotateCertificates``).

Member certificates: one per replica set (and one for the mongos routers), naming every pod
through the headless Service's wildcard, plus ``localhost``/``127.0.0.1`` for the exporter
sidecar that dials its own mongod over loopback. Their subject (O=mongobench, OU=<cluster>)
is the cluster's member identity under ``memberAuth: x509``; the operator's client certificate
shares it (so it can bootstrap as ``__system`` with MONGODB-X509, as it does with the keyfile
otherwise). Benchmark clients present no certificate: they authenticate with SCRAM and verify
the server with the CA (``--tlsAllowConnectionsWithoutCertificates``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout

TLS_DIR = "/etc/mongodb-tls"
COMBINED_KEY = "tls-combined.pem"  # cert-manager's CombinedPEM output key
CA_KEY = "ca.crt"
CERT_KEY = "tls.crt"
PRIVATE_KEY = "tls.key"
CERT_KEY_FILE = f"{TLS_DIR}/{COMBINED_KEY}"
CA_FILE = f"{TLS_DIR}/{CA_KEY}"
VOLUME = "tls"
# Read by uid 999 through fsGroup (0440 on disk), like the keyfile (podspec.py).
MODE = 0o400
ORGANIZATION = "mongobench"
CLIENTS_ORGANIZATION = "mongobench-clients"
# 90 days, renewed 30 days ahead: cert-manager's and the operator's issuance alike.
DURATION_HOURS = 2160
RENEW_BEFORE_HOURS = 720
CERT_MANAGER_API = "cert-manager.io/v1"
MEMBER_USAGES = ("digital signature", "key encipherment", "server auth", "client auth")
CLIENT_USAGES = ("digital signature", "key encipherment", "client auth")


@dataclass(frozen=True)
class CertificateRequest:
    """One certificate the cluster needs, whoever signs it."""

    secret: str  # the Secret it lives in (also the Certificate's name)
    common_name: str
    organization: str
    organizational_unit: str
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    server: bool  # member certificate (server and client auth) or client only


def member_secret(rs: ReplicaSetLayout) -> str:
    return f"{rs.name}-tls"


def mongos_secret(layout: ClusterLayout) -> str:
    return f"{layout.mongos}-tls"


def client_secret(layout: ClusterLayout) -> str:
    """The operator's client certificate (and the CA it trusts members with)."""
    return client_secret_name(layout.name)


def client_secret_name(cluster: str) -> str:
    """By the cluster's name alone: benchmark Jobs mount its ca.crt (benchmarkrun.build.jobs)."""
    return f"{cluster}-client-tls"


def _service_names(service: str, namespace: str, *, wildcard: bool) -> tuple[str, ...]:
    """Every spelling a client may dial: fully qualified, namespace-relative, bare."""
    forms = (f"{service}.{namespace}.svc.cluster.local", f"{service}.{namespace}.svc", service)
    if not wildcard:
        return forms
    return tuple(f"*.{form}" for form in forms) + forms[:1]


LOOPBACK_NAMES = ("localhost",)
LOOPBACK_IPS = ("127.0.0.1", "::1")


def certificate_requests(layout: ClusterLayout) -> tuple[CertificateRequest, ...]:
    """Member certificates (one per replica set, one for mongos), then the client's."""
    out = [
        CertificateRequest(
            member_secret(rs),
            rs.name,
            ORGANIZATION,
            layout.name,
            (*_service_names(rs.headless_service, rs.namespace, wildcard=True), *LOOPBACK_NAMES),
            LOOPBACK_IPS,
            server=True,
        )
        for rs in layout.replica_sets
    ]
    if layout.sharded:
        names = _service_names(layout.mongos, layout.namespace, wildcard=False)
        out.append(
            CertificateRequest(
                mongos_secret(layout),
                layout.mongos,
                ORGANIZATION,
                layout.name,
                (*names, *LOOPBACK_NAMES),
                LOOPBACK_IPS,
                server=True,
            )
        )
    out.append(
        CertificateRequest(
            client_secret(layout),
            "mongobench-operator",
            ORGANIZATION,  # the member identity: __system under memberAuth x509
            layout.name,
            (),
            (),
            server=False,
        )
    )
    return tuple(out)


def certificate(
    spec: MongoClusterSpec, layout: ClusterLayout, request: CertificateRequest
) -> dict[str, Any]:
    """A cert-manager Certificate for one request (owned by the MongoCluster once applied)."""
    issuer = spec.tls.issuer_ref
    if issuer is None:
        raise ValueError("cert-manager Certificates need spec.tls.issuerRef")
    labels = dict(lbl.cluster_labels(layout.name))
    body: dict[str, Any] = {
        "secretName": request.secret,
        # Watched: a renewal cert-manager writes wakes the cluster (labels.WATCH).
        "secretTemplate": {"labels": labels | lbl.WATCHED},
        "commonName": request.common_name,
        "subject": {
            "organizations": [request.organization],
            "organizationalUnits": [request.organizational_unit],
        },
        "duration": f"{DURATION_HOURS}h",
        "renewBefore": f"{RENEW_BEFORE_HOURS}h",
        "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        "usages": list(MEMBER_USAGES if request.server else CLIENT_USAGES),
        "issuerRef": {"name": issuer.name, "kind": issuer.kind, "group": "cert-manager.io"},
        "additionalOutputFormats": [{"type": "CombinedPEM"}],
    }
    if request.dns_names:
        body["dnsNames"] = list(request.dns_names)
    if request.ip_addresses:
        body["ipAddresses"] = list(request.ip_addresses)
    return {
        "apiVersion": CERT_MANAGER_API,
        "kind": "Certificate",
        "metadata": {"name": request.secret, "namespace": layout.namespace, "labels": labels},
        "spec": body,
    }


def build_certificates(spec: MongoClusterSpec, layout: ClusterLayout) -> list[dict[str, Any]]:
    """The Certificate objects of a cluster whose TLS comes from cert-manager; none otherwise."""
    if not spec.tls.enabled or spec.tls.issuer_ref is None:
        return []
    return [certificate(spec, layout, r) for r in certificate_requests(layout)]


def tls_args(spec: MongoClusterSpec) -> list[str]:
    """The TLS flags of every mongod and mongos (none when TLS is off)."""
    if not spec.tls.enabled:
        return []
    args = [
        "--tlsMode",
        spec.tls.mode,
        "--tlsCertificateKeyFile",
        CERT_KEY_FILE,
        "--tlsCAFile",
        CA_FILE,
        # Benchmark clients verify the server and log in with SCRAM; they hold no certificate.
        "--tlsAllowConnectionsWithoutCertificates",
    ]
    if spec.tls.x509_members:
        args += ["--clusterAuthMode", "x509"]
    return args


def tls_volume(secret_name: str) -> dict[str, Any]:
    return {
        "name": VOLUME,
        "secret": {
            "secretName": secret_name,
            "defaultMode": MODE,
            "items": [
                {"key": COMBINED_KEY, "path": COMBINED_KEY},
                {"key": CA_KEY, "path": CA_KEY},
            ],
        },
    }


def tls_mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": TLS_DIR, "readOnly": True}


def exporter_uri_options(spec: MongoClusterSpec) -> str:
    """The exporter's URI query over TLS: it dials its own mongod as ``localhost`` (a name the
    member certificate carries) and presents the member certificate."""
    if not spec.tls.enabled:
        return ""
    return f"?tls=true&tlsCAFile={CA_FILE}&tlsCertificateKeyFile={CERT_KEY_FILE}"
