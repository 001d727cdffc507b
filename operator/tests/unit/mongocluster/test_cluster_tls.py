"""Unit tier: a TLS MongoCluster's certificates, flags, volumes, issued Secrets and the
operator's TLS connection, from the pure builders to the I/O half against an in-memory API.

Regenerate the golden files after an intended change, then review the diff:
    UPDATE_GOLDEN=1 .venv/bin/pytest operator/tests/unit/mongocluster/test_cluster_tls.py
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import datetime
import fnmatch
import os
import ssl
import typing
from pathlib import Path
from typing import Any

import pytest
import trustme
from cluster_fixtures import REPLICA_SET, SHARDED, STANDALONE, build
from cryptography import x509
from fake_kube import FakeKube, unit_clock
from rendered import to_yaml

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.api.schema import SpecError
from mongobench.config import OperatorConfig
from mongobench.mongo.model import X509
from mongobench.mongo.pool import AdminPool
from mongobench.mongo.versions import capabilities
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.act.tls_secrets import ensure_tls, renew_certificates
from mongobench.mongocluster.build.certificates import CAError, issue, load_ca, reissue_reason
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.secrets import connection_secret
from mongobench.mongocluster.build.tls import (
    CA_FILE,
    CERT_KEY_FILE,
    build_certificates,
    certificate_requests,
    client_secret,
    member_secret,
)
from mongobench.mongocluster.decide.tls_renewal import (
    PROPAGATION_SECONDS,
    RESTART_ANNOTATION,
    SERVED_ANNOTATION,
    Certificate,
    plan_renewal,
)

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden"
NS = "bench"
NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)

SHARDED_ISSUER: dict[str, Any] = {
    **SHARDED,
    "tls": {
        "enabled": True,
        "memberAuth": "x509",
        "issuerRef": {"name": "bench-ca", "kind": "ClusterIssuer"},
    },
}
REPLICA_SET_CA: dict[str, Any] = {
    **REPLICA_SET,
    "tls": {"enabled": True, "mode": "preferTLS", "caSecretName": "bench-ca"},
}
# keyFile: a standalone has no members to authenticate (admission refuses x509 for it).
STANDALONE_ISSUER: dict[str, Any] = {
    **STANDALONE,
    "tls": {"enabled": True, "issuerRef": {"name": "bench-ca", "kind": "ClusterIssuer"}},
}


def with_certificates(spec_dict: dict[str, Any]) -> list[dict[str, Any]]:
    spec = MongoClusterSpec.parse(spec_dict)
    return build_certificates(spec, cluster_layout("demo", NS, spec)) + build(spec_dict)


@pytest.mark.parametrize(
    ("filename", "spec"),
    [
        ("tls-sharded-issuer-x509.yaml", SHARDED_ISSUER),
        ("tls-replicaset-ca.yaml", REPLICA_SET_CA),
        ("tls-standalone-issuer.yaml", STANDALONE_ISSUER),
    ],
)
def test_matches_golden(filename: str, spec: dict[str, Any]) -> None:
    rendered = to_yaml(with_certificates(spec))
    path = GOLDEN / filename
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered)
    assert path.read_text() == rendered, f"{filename} changed; see module docstring to regenerate"


def containers(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(workload name, container, pod spec) of every container."""
    return [
        (o["metadata"]["name"], c, o["spec"]["template"]["spec"])
        for o in objects
        if o["kind"] in ("StatefulSet", "Deployment")
        for c in o["spec"]["template"]["spec"]["containers"]
    ]


def test_every_mongod_mongos_and_exporter_is_configured_for_tls() -> None:
    objects = build(SHARDED_ISSUER)
    seen = set()
    for workload, container, pod in containers(objects):
        volumes = {v["name"]: v for v in pod["volumes"]}
        secret = volumes["tls"]["secret"]["secretName"]
        assert secret == f"{workload}-tls"  # each component its own member certificate
        assert {"name": "tls", "mountPath": "/etc/mongodb-tls", "readOnly": True} in container[
            "volumeMounts"
        ]
        if container["name"] == "exporter":
            (uri,) = [a for a in container["args"] if a.startswith("--mongodb.uri=")]
            assert f"tls=true&tlsCAFile={CA_FILE}&tlsCertificateKeyFile={CERT_KEY_FILE}" in uri
        else:
            args = container["args"]
            assert args[args.index("--tlsMode") + 1] == "requireTLS"
            assert args[args.index("--tlsCertificateKeyFile") + 1] == CERT_KEY_FILE
            assert args[args.index("--tlsCAFile") + 1] == CA_FILE
            assert args[args.index("--clusterAuthMode") + 1] == "x509"
        seen.add(container["name"])
    assert seen == {"mongod", "mongos", "exporter"}


def test_without_tls_no_pod_mentions_it() -> None:
    text = to_yaml(build(SHARDED))
    assert "tls" not in text.lower()


def test_member_certificates_name_every_pod_and_loopback() -> None:
    spec = MongoClusterSpec.parse(SHARDED_ISSUER)
    layout = cluster_layout("demo", NS, spec)
    requests = {r.secret: r for r in certificate_requests(layout)}
    for rs in layout.replica_sets:
        names = requests[member_secret(rs)].dns_names
        for host in rs.hosts:
            name = host.rsplit(":", 1)[0]
            assert any(fnmatch.fnmatch(name, n) and n.count(".") == name.count(".") for n in names)
        assert "localhost" in names
    assert "demo-mongos.bench.svc.cluster.local" in requests["demo-mongos-tls"].dns_names
    client = requests[client_secret(layout)]
    assert not client.server and not client.dns_names


def test_certificates_only_for_an_enabled_issuer() -> None:
    off = {**SHARDED, "tls": {"enabled": False, "issuerRef": {"name": "bench-ca"}}}
    spec = MongoClusterSpec.parse(off)
    assert build_certificates(spec, cluster_layout("demo", NS, spec)) == []
    spec = MongoClusterSpec.parse(REPLICA_SET_CA)
    assert build_certificates(spec, cluster_layout("demo", NS, spec)) == []


# --- issued from a CA Secret ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="bench CA")


def ca_values(ca: trustme.CA) -> dict[str, str]:
    return {
        "tls.crt": ca.cert_pem.bytes().decode(),
        "tls.key": ca.private_key_pem.bytes().decode(),
    }


def rs_request() -> Any:
    spec = MongoClusterSpec.parse(REPLICA_SET_CA)
    return certificate_requests(cluster_layout("demo", NS, spec))[0]


def test_an_issued_member_certificate_is_signed_by_the_ca_and_loads_as_a_server(
    ca: trustme.CA, tmp_path: Path
) -> None:
    values = issue(ca_values(ca), "bench-ca", rs_request(), NOW)
    cert = x509.load_pem_x509_certificate(values["tls.crt"].encode())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.cert_pem.bytes()))
    assert values["ca.crt"] == ca.cert_pem.bytes().decode()
    # What mongod reads: key and certificate in one file; Python's TLS stack loads it the same.
    combined = tmp_path / "tls-combined.pem"
    combined.write_text(values["tls-combined.pem"])
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(combined)
    assert cert.not_valid_after_utc - NOW == datetime.timedelta(days=90)


def test_an_issued_certificate_is_kept_until_something_requires_a_new_one(
    ca: trustme.CA,
) -> None:
    request = rs_request()
    values = issue(ca_values(ca), "bench-ca", request, NOW)
    assert reissue_reason(values, ca_values(ca), request, NOW) is None
    assert reissue_reason(None, ca_values(ca), request, NOW) == "not issued yet"
    other = ca_values(trustme.CA())
    assert reissue_reason(values, other, request, NOW) == "the CA changed"
    moved = dataclasses.replace(request, dns_names=(*request.dns_names, "extra.example"))
    assert reissue_reason(values, ca_values(ca), moved, NOW) == "its names changed"
    later = NOW + datetime.timedelta(days=61)
    assert reissue_reason(values, ca_values(ca), request, later) == (
        "it expires within the renewal window"
    )


def test_a_secret_that_is_no_ca_is_refused_with_its_name(ca: trustme.CA) -> None:
    with pytest.raises(CAError, match=r"Secret mine has no tls\.key"):
        load_ca({"tls.crt": ca.cert_pem.bytes().decode()}, "mine")
    leaf = ca.issue_cert("db.example")
    not_ca = {
        "tls.crt": leaf.cert_chain_pems[0].bytes().decode(),
        "tls.key": leaf.private_key_pem.bytes().decode(),
    }
    with pytest.raises(CAError, match="not a CA certificate"):
        load_ca(not_ca, "mine")
    mismatched = {**ca_values(ca), "tls.key": leaf.private_key_pem.bytes().decode()}
    with pytest.raises(CAError, match=r"not the key of tls\.crt"):
        load_ca(mismatched, "mine")


# --- the I/O half: provision and the operator's connection ---------------------------------


def secret_of(values: dict[str, str], name: str) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": NS, "name": name},
        "data": data,
    }


def mongocluster(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"namespace": NS, "name": "c"},
        "spec": copy.deepcopy(spec),
    }


def body(kube: FakeKube) -> dict[str, Any]:
    found = kube.get("MongoCluster", NS, "c")
    assert found is not None
    return found


def test_a_ca_secret_cluster_gets_owned_certificate_secrets_once(ca: trustme.CA) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET_CA), secret_of(ca_values(ca), "bench-ca"))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    issued = sorted(n for v, k, n in kube.writes if v == "apply" and k == "Secret" and "tls" in n)
    assert issued == ["c-client-tls", "c-rs0-tls"]
    member = kube.objects[("Secret", NS, "c-rs0-tls")]
    assert member["type"] == "kubernetes.io/tls"
    assert member["metadata"]["ownerReferences"][0]["name"] == "c"
    assert set(member["data"]) == {"tls.crt", "tls.key", "ca.crt", "tls-combined.pem"}
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    args = sts["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--tlsMode") + 1] == "preferTLS"

    before = len(kube.writes)
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    again = [w for w in kube.writes[before:] if w[1] == "Secret" and "tls" in w[2]]
    assert again == []  # current certificates are kept, not reissued on every pass


def test_a_missing_ca_secret_or_cert_manager_is_told_as_a_spec_error() -> None:
    kube = FakeKube(mongocluster(REPLICA_SET_CA))
    with pytest.raises(
        SpecError, match=r"spec\.tls\.caSecretName: Secret bench/bench-ca does not exist"
    ):
        reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    issuer = {**REPLICA_SET, "tls": {"enabled": True, "issuerRef": {"name": "bench-ca"}}}
    kube = FakeKube(mongocluster(issuer))
    with pytest.raises(SpecError, match="cert-manager is not installed"):
        reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())


def test_an_issuer_cluster_gets_owned_certificates() -> None:
    issuer = {**REPLICA_SET, "tls": {"enabled": True, "issuerRef": {"name": "bench-ca"}}}
    kube = FakeKube(mongocluster(issuer), served=("cert-manager.io/v1/certificates",))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    assert sorted(kube.verbs("apply", "Certificate")) == ["c-client-tls", "c-rs0-tls"]
    cert = kube.objects[("Certificate", NS, "c-rs0-tls")]
    assert cert["metadata"]["ownerReferences"][0]["name"] == "c"
    assert cert["spec"]["issuerRef"] == {
        "name": "bench-ca",
        "kind": "Issuer",
        "group": "cert-manager.io",
    }


def operator_connector(spec: dict[str, Any], ca: trustme.CA) -> Any:
    """The connector the operator's administration of a provisioned cluster dials with."""
    kube = FakeKube(mongocluster(spec), secret_of(ca_values(ca), "bench-ca"))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    d = reconcile.desired(kube, body(kube), {})
    pool = AdminPool()
    try:
        with reconcile.administration(kube, d, pool) as (admin, _):
            return admin.connector
    finally:
        pool.close()


@pytest.mark.parametrize(("member_auth", "mechanism"), [("keyFile", None), ("x509", X509)])
def test_the_operator_connects_with_the_ca_and_its_client_certificate(
    ca: trustme.CA, member_auth: str, mechanism: str | None
) -> None:
    spec = {
        **REPLICA_SET_CA,
        "tls": {**REPLICA_SET_CA["tls"], "mode": "requireTLS", "memberAuth": member_auth},
    }
    connector = operator_connector(spec, ca)
    assert connector.tls
    assert connector.tls_ca_file is not None and connector.tls_certificate_key_file is not None
    assert Path(connector.tls_ca_file).read_text() == ca.cert_pem.bytes().decode()
    assert oct(os.stat(connector.tls_certificate_key_file).st_mode & 0o777) == "0o600"
    assert connector.bootstrap_credentials is not None
    assert connector.bootstrap_credentials.mechanism == mechanism


@pytest.mark.parametrize(
    ("mode", "member_auth", "dials_tls"),
    [
        ("allowTLS", "keyFile", False),
        ("preferTLS", "keyFile", True),
        ("requireTLS", "keyFile", True),
        ("preferTLS", "x509", True),
    ],
)
def test_the_operator_dials_plain_while_a_cluster_rolls_onto_tls(
    ca: trustme.CA, mode: str, member_auth: str, dials_tls: bool
) -> None:
    """MongoDB's path onto TLS: allowTLS, then preferTLS, then requireTLS, a roll each. Members
    not yet restarted onto allowTLS speak plain only: the operator dials plain under allowTLS,
    and TLS from preferTLS on (every member accepts it by then), or with x509 members. The
    connection Secret's URI follows the same rule."""
    spec = {
        **REPLICA_SET_CA,
        "tls": {**REPLICA_SET_CA["tls"], "mode": mode, "memberAuth": member_auth},
    }
    connector = operator_connector(spec, ca)
    assert connector.tls is dials_tls
    assert (connector.tls_ca_file is not None) is dials_tls
    parsed = MongoClusterSpec.parse(spec)
    data = connection_secret(parsed, cluster_layout("c", "ns", parsed), "pw")["data"]
    uri = base64.b64decode(data["uri"]).decode()
    assert ("tls=true" in uri) is dials_tls


def test_the_operator_waits_for_its_client_certificate() -> None:
    issuer = {**REPLICA_SET, "tls": {"enabled": True, "issuerRef": {"name": "bench-ca"}}}
    kube = FakeKube(mongocluster(issuer), served=("cert-manager.io/v1/certificates",))
    reconcile.provision(
        kube, body(kube), unit_clock(), OperatorConfig()
    )  # cert-manager has not written the Secret yet
    d = reconcile.desired(kube, body(kube), {})
    with (
        pytest.raises(LookupError, match="c-client-tls"),
        reconcile.administration(kube, d, AdminPool()),
    ):
        pass


# --- renewal: the pure planner, then carried out against the in-memory API -----------------

OLD = Certificate("c1", "ca1")
NEW = Certificate("c2", "ca1")


def plan(served: Certificate | None, current: Certificate, seen: float | None, **kw: Any) -> Any:
    options = {"rotate_online": True, "mongos": False, **kw}
    return plan_renewal(served=served, current=current, seen=seen, now=1000.0, **options)


def test_a_renewed_certificate_is_rotated_online_once_the_kubelet_has_written_it() -> None:
    assert plan(None, OLD, None).action == "record"  # new pods start with what is there
    assert plan(OLD, OLD, None) is None
    assert plan(OLD, NEW, None).action == "wait"  # just seen: the files may still be old
    assert plan(OLD, NEW, 1000.0 - PROPAGATION_SECONDS + 1).action == "wait"
    assert plan(OLD, NEW, 1000.0 - PROPAGATION_SECONDS).action == "rotate"


@pytest.mark.parametrize(
    ("current", "options", "why"),
    [
        (Certificate("c2", "ca2"), {}, "the CA changed"),
        (NEW, {"mongos": True}, "mongos routers are rolled by their Deployment"),
        (NEW, {"rotate_online": False}, "no rotateCertificates"),
    ],
)
def test_a_renewal_restarts_where_rotating_online_cannot_do(
    current: Certificate, options: dict[str, bool], why: str
) -> None:
    step = plan(OLD, current, 0.0, **options)
    assert step.action == "restart" and why in step.reason


def test_rotate_certificates_exists_from_5_0_on() -> None:
    assert capabilities("5.0.30").rotate_certificates
    assert capabilities("8.0.4").rotate_certificates


class RecordingAdmin:
    """The one MongoAdmin call renewal makes, recorded."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, dict[str, Any]]] = []

    def rotate_certificates(self, host: str) -> None:
        self.commands.append((host, {"rotateCertificates": 1}))


def test_renewal_records_then_rotates_every_member_then_keeps_quiet(ca: trustme.CA) -> None:
    spec = {**REPLICA_SET_CA, "tls": {**REPLICA_SET_CA["tls"], "mode": "requireTLS"}}
    kube = FakeKube(mongocluster(spec), secret_of(ca_values(ca), "bench-ca"))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    d = reconcile.desired(kube, body(kube), {})
    admin = RecordingAdmin()

    def renew(now: float) -> list[str]:
        return renew_certificates(kube, typing.cast(Any, admin), d, now).notes

    assert renew(0.0) == []  # the served certificate is recorded, nothing said
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    served = sts["metadata"]["annotations"][SERVED_ANNOTATION]
    assert renew(10.0) == [] and admin.commands == []

    # The operator reissues the Secret (e.g. near its end): seen, then rotated after the wait.
    later = NOW + datetime.timedelta(days=61)
    ensure_tls(kube, d, body(kube), later)
    assert renew(100.0) == []
    assert renew(100.0 + PROPAGATION_SECONDS - 1) == [] and admin.commands == []
    (note,) = renew(100.0 + PROPAGATION_SECONDS)
    assert note.startswith("StatefulSet c-rs0: certificate rotate")
    assert [h for h, _ in admin.commands] == list(d.layout.replica_sets[0].hosts)
    assert all(c["rotateCertificates"] == 1 for _, c in admin.commands)
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    assert sts["metadata"]["annotations"][SERVED_ANNOTATION] != served
    assert "annotations" not in sts["spec"]["template"]["metadata"]  # no restart
    assert renew(1000.0) == []


def test_renewal_of_a_new_ca_restarts_the_members_through_their_template(ca: trustme.CA) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET_CA), secret_of(ca_values(ca), "bench-ca"))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    d = reconcile.desired(kube, body(kube), {})
    admin = RecordingAdmin()
    renew_certificates(kube, typing.cast(Any, admin), d, 0.0)
    kube.put(secret_of(ca_values(trustme.CA()), "bench-ca"))  # the user replaced the CA
    ensure_tls(kube, d, body(kube), NOW)
    renew_certificates(kube, typing.cast(Any, admin), d, 1.0)
    (note,) = renew_certificates(kube, typing.cast(Any, admin), d, 1.0 + PROPAGATION_SECONDS).notes
    assert "restart (the CA changed" in note and admin.commands == []
    template = kube.objects[("StatefulSet", NS, "c-rs0")]["spec"]["template"]
    assert RESTART_ANNOTATION in template["metadata"]["annotations"]
