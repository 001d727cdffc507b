"""Unit tier: a running cluster's roll between TLS modes (mongocluster.decide.tls_roll, pure;
roll_tls,
through reconcile against the in-memory API), a new CA through a trust bundle (tls_ca, pure;
tls_secrets.ensure_tls), and what wakes certificate work (the Secrets a cluster follows, the
sync queued for a renewal). That members answer as their mode says, that a run spans the roll
with no failed operation and that a replaced certificate is rotated into every member is the
cluster tier's (e2e/local/tests/test_tls_roll.py)."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from typing import Any

import pytest
import trustme
from cryptography import x509
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo
from test_cluster_tls import NOW, REPLICA_SET_CA, ca, ca_values
from test_cluster_tls import secret_of as bench_secret
from test_rotation import KIND, NS, admins, body, mongo, secret, sync
from test_rotation_keyfile import controller_rolls, ready_cluster

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.act.tls_secrets import (
    Renewals,
    certificate_state,
    ensure_tls,
    followed_secrets,
    renew_certificates,
)
from mongobench.mongocluster.build.certificates import renewal_time, signed_by
from mongobench.mongocluster.decide.tls_ca import (
    join_bundle,
    plan_ca_change,
    split_bundle,
    under_way,
)
from mongobench.mongocluster.decide.tls_renewal import SERVED_ANNOTATION, plan_renewal
from mongobench.mongocluster.decide.tls_roll import (
    DISABLED,
    effective_spec,
    jobs_without_ca,
    next_mode,
    plain_client_pods,
    template_mode,
)
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit
__all__ = ["admins", "ca", "mongo"]  # fixtures shared with test_rotation, test_cluster_tls

PLAIN: dict[str, Any] = {k: v for k, v in REPLICA_SET_CA.items() if k != "tls"}
TLS_ON = {"enabled": True, "caSecretName": "bench-ca"}


# ---- the pure planner -----------------------------------------------------------------------


def step(current: str, target: str, **kw: Any) -> tuple[str, str]:
    options = {"rolled": True, "certificates_ready": True, "plain_clients": 0, **kw}
    s = next_mode(current=current, target=target, **options)
    return s.action, s.mode


@pytest.mark.parametrize(
    ("current", "target", "kw", "expected"),
    [
        (DISABLED, "requireTLS", {}, ("step", "allowTLS")),
        ("allowTLS", "requireTLS", {}, ("step", "preferTLS")),
        ("preferTLS", "requireTLS", {}, ("step", "requireTLS")),
        ("requireTLS", "requireTLS", {}, ("done", "requireTLS")),
        # a step waits for the members to have restarted onto the previous one
        ("allowTLS", "requireTLS", {"rolled": False}, ("wait", "allowTLS")),
        ("requireTLS", "requireTLS", {"rolled": False}, ("wait", "requireTLS")),
        # the first one for the certificates, the last one for clients still dialling plain
        (DISABLED, "requireTLS", {"certificates_ready": False}, ("wait", DISABLED)),
        ("preferTLS", "requireTLS", {"plain_clients": 2}, ("wait", "preferTLS")),
        ("allowTLS", "preferTLS", {"plain_clients": 2}, ("step", "preferTLS")),
        # the URI switches only once no client Job is left whose pods would not trust the CA
        ("allowTLS", "requireTLS", {"clients_without_ca": 1}, ("wait", "allowTLS")),
        ("preferTLS", "requireTLS", {"clients_without_ca": 1}, ("step", "requireTLS")),
        # the same steps down, off TLS
        ("requireTLS", DISABLED, {}, ("step", "preferTLS")),
        ("allowTLS", DISABLED, {"certificates_ready": False}, ("step", DISABLED)),
        (DISABLED, DISABLED, {}, ("hold", DISABLED)),
    ],
)
def test_the_roll_moves_one_mode_per_restart(
    current: str, target: str, kw: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert step(current, target, **kw) == expected


def test_the_pods_are_built_in_the_mode_they_roll_through() -> None:
    spec = MongoClusterSpec.parse({**PLAIN, "tls": {**TLS_ON, "memberAuth": "x509"}})
    assert effective_spec(spec, "requireTLS") == spec
    allow = effective_spec(spec, "allowTLS").tls
    assert (allow.enabled, allow.mode, allow.member_auth) == (True, "allowTLS", "keyFile")
    assert not allow.operator_dials_tls  # members not yet restarted speak plain only
    prefer = effective_spec(spec, "preferTLS").tls
    assert prefer.operator_dials_tls  # every member accepts TLS by then
    off = effective_spec(spec, DISABLED).tls
    assert not off.enabled and off.ca_secret_name == "bench-ca"  # the source kept


def test_the_mode_is_read_from_a_pod_template() -> None:
    def sts(args: list[str]) -> dict[str, Any]:
        container = {"name": "mongod", "args": args}
        return {"spec": {"template": {"spec": {"containers": [container]}}}}

    assert template_mode(sts(["--tlsMode", "preferTLS", "--x"]), "mongod") == "preferTLS"
    assert template_mode(sts(["--port", "27017"]), "mongod") == DISABLED
    assert template_mode(sts([]), "mongos") is None
    assert template_mode(None, "mongod") is None


def test_client_jobs_created_before_tls_mount_no_ca() -> None:
    def job(volumes: list[str], ended: str | None = None) -> dict[str, Any]:
        pod = {"volumes": [{"name": v, "secret": {"secretName": v}} for v in volumes]}
        conditions = [{"type": ended, "status": "True"}] if ended else []
        return {"spec": {"template": {"spec": pod}}, "status": {"conditions": conditions}}

    jobs = [job(["sa"]), job(["sa", "c-client-tls"]), job(["sa"], "Complete"), job([], "Failed")]
    assert jobs_without_ca(jobs, "c-client-tls") == 1


def test_client_pods_started_before_the_switch_dial_plain() -> None:
    def pod(created: str, phase: str = "Running") -> dict[str, Any]:
        return {"metadata": {"creationTimestamp": created}, "status": {"phase": phase}}

    pods = [
        pod("2026-11-26T10:00:00Z"),
        pod("2026-11-26T10:00:05Z"),  # the switch's second: it may have read either URI
        pod("2026-11-26T10:00:06Z"),
        pod("2026-11-26T09:00:00Z", "Succeeded"),
    ]
    assert plain_client_pods(pods, "2026-11-26T10:00:05Z") == 2
    assert plain_client_pods(pods, None) == 3


# ---- through a sync ---------------------------------------------------------------------------


def secret_of(values: dict[str, str], name: str) -> dict[str, Any]:
    found = bench_secret(values, name)
    found["metadata"]["namespace"] = NS
    return found


def plain_cluster(ca: trustme.CA) -> FakeKube:
    meta = {"namespace": NS, "name": "c"}
    return FakeKube(
        {"apiVersion": "mongobench.io/v1alpha1", "kind": KIND, "metadata": meta,
         "spec": copy.deepcopy(PLAIN)},
        secret_of(ca_values(ca), "bench-ca"),
    )  # fmt: skip


def modes(kube: FakeKube) -> set[str | None]:
    return {
        template_mode(obj, "mongod")
        for (kind, _, _), obj in kube.objects.items()
        if kind == "StatefulSet"
    }


def uri(kube: FakeKube) -> str:
    return secret(kube, "c-connection")["uri"]


def enable_tls(kube: FakeKube, tls: dict[str, Any]) -> None:
    kube.patch(KIND, NS, "c", {"spec": {"tls": tls}})
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())


def tls_status(kube: FakeKube) -> dict[str, Any]:
    return dict(body(kube)["status"].get("tls") or {})


def test_a_running_cluster_rolls_onto_tls_one_mode_per_restart(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)
    ready_cluster(kube, admins)
    assert modes(kube) == {DISABLED} and "tls=true" not in uri(kube)
    assert "tls" not in body(kube)["status"]

    enable_tls(kube, TLS_ON)
    assert modes(kube) == {DISABLED}  # provision keeps the members' mode: the sync steps
    assert secret(kube, "c-rs0-tls")["tls-combined.pem"]  # the certificates come first
    sync(kube, admins)
    assert modes(kube) == {"allowTLS"} and "tls=true" not in uri(kube)
    tls = tls_status(kube)
    assert (tls["mode"], tls["phase"]) == ("allowTLS", cond.TLS_ROLLING)
    assert kube.reasons().count(cond.EVENT_TLS_MODE_ROLLING) == 1

    sync(kube, admins)  # the members have not restarted yet
    assert modes(kube) == {"allowTLS"} and "restarting" in tls_status(kube)["message"]

    controller_rolls(kube)
    sync(kube, admins)  # every member accepts TLS: clients switch
    assert modes(kube) == {"preferTLS"} and "tls=true" in uri(kube)
    since = tls_status(kube)["clientsSince"]

    kube.put(_client_pod("old", "2026-01-01T00:00:00Z"))  # started before the switch
    kube.put(_client_pod("new", "2999-01-01T00:00:00Z"))  # after it: dials TLS
    controller_rolls(kube)
    sync(kube, admins)
    assert modes(kube) == {"preferTLS"}
    assert "1 client pod(s)" in tls_status(kube)["message"]

    kube.objects[("Pod", NS, "old")]["status"]["phase"] = "Succeeded"
    sync(kube, admins)
    assert modes(kube) == {"requireTLS"}
    sync(kube, admins)
    assert tls_status(kube)["phase"] == cond.TLS_ROLLING  # restarting onto requireTLS

    controller_rolls(kube)
    sync(kube, admins)
    tls = tls_status(kube)
    assert (tls["mode"], tls["phase"]) == ("requireTLS", cond.TLS_ROLLED)
    assert tls["clientsSince"] == since and tls["completedAt"]
    reasons = kube.reasons()
    assert reasons.count(cond.EVENT_TLS_MODE_ROLLING) == 3
    assert reasons.count(cond.EVENT_TLS_ROLLED) == 1
    sync(kube, admins)
    assert kube.reasons() == reasons  # nothing more to say
    assert body(kube)["status"]["phase"] == cond.PHASE_READY


def test_clients_since_is_stamped_only_once_the_uri_reads_tls(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client reads the URI when its container starts: one created after `clientsSince` must
    have read the TLS URI, or the step to requireTLS would not wait for it (it dials plain)."""
    kube = plain_cluster(ca)
    ready_cluster(kube, admins)
    enable_tls(kube, TLS_ON)
    sync(kube, admins)
    controller_rolls(kube)
    ticks = iter(range(10, 60))  # a clock that moves one second per reading

    def ticking() -> datetime.datetime:
        return datetime.datetime(2026, 11, 26, 10, 0, next(ticks), tzinfo=datetime.UTC)

    switched_at: list[str] = []
    apply = kube.apply

    def recording(obj: Mapping[str, Any]) -> dict[str, Any]:
        written = apply(obj)
        if obj["metadata"]["name"] == "c-connection" and "tls=true" in uri(kube):
            switched_at.append(f"2026-11-26T10:00:{next(ticks):02d}Z")  # a moment after it
        return written

    monkeypatch.setattr(kube, "apply", recording)
    # every member accepts TLS: the URI switches
    assert (
        reconcile.sync(
            kube, NS, "c", ResourceLocks(), admins, clock=ticking, config=OperatorConfig()
        )
        is not None
    )
    assert modes(kube) == {"preferTLS"} and switched_at
    assert tls_status(kube)["clientsSince"] > switched_at[0]


def test_a_cluster_created_with_tls_starts_in_its_mode_without_a_roll(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    ready_cluster(kube, admins)
    assert modes(kube) == {"requireTLS"} and "tls=true" in uri(kube)
    assert tls_status(kube) == {
        "mode": "requireTLS",
        "message": "every member runs --tlsMode requireTLS",
    }
    assert cond.EVENT_TLS_MODE_ROLLING not in kube.reasons()


def _client_pod(name: str, created: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": NS,
            "name": name,
            "creationTimestamp": created,
            "labels": {"mongobench.io/client-of": "c"},
        },
        "status": {"phase": "Running"},
    }


# ---- a new CA through the trust bundle ---------------------------------------------------------

OLD_CA, NEW_CA, THIRD = (trustme.CA().cert_pem.bytes().decode() for _ in range(3))


@pytest.mark.parametrize(
    ("bundle", "leaves_from_new", "taken_up", "phase", "kept", "reissue", "waiting"),
    [
        ((OLD_CA,), False, True, cond.CA_BUNDLING, (NEW_CA, OLD_CA), False, False),
        ((OLD_CA,), False, False, cond.CA_BUNDLING, (NEW_CA, OLD_CA), False, False),
        ((NEW_CA, OLD_CA), False, False, cond.CA_BUNDLING, (NEW_CA, OLD_CA), False, True),
        ((NEW_CA, OLD_CA), False, True, cond.CA_REISSUING, (NEW_CA, OLD_CA), True, False),
        ((NEW_CA, OLD_CA), True, False, cond.CA_REISSUING, (NEW_CA, OLD_CA), False, True),
        ((NEW_CA, OLD_CA), True, True, cond.CA_PRUNING, (NEW_CA,), False, False),
        ((NEW_CA,), True, False, cond.CA_PRUNING, (NEW_CA,), False, True),
        ((NEW_CA,), True, True, cond.CA_COMPLETED, (NEW_CA,), False, False),
        # a CA change during a CA change: the newest joins the bundle first
        ((NEW_CA, OLD_CA), False, True, cond.CA_BUNDLING, (THIRD, NEW_CA, OLD_CA), False, False),
    ],
)
def test_a_new_ca_is_trusted_first_then_signs_then_the_old_one_goes(
    bundle: tuple[str, ...],
    leaves_from_new: bool,
    taken_up: bool,
    phase: str,
    kept: tuple[str, ...],
    reissue: bool,
    waiting: bool,
) -> None:
    new = THIRD if phase == cond.CA_BUNDLING and len(kept) == 3 else NEW_CA
    s = plan_ca_change(
        new_ca=new, bundle=bundle, leaves_from_new=leaves_from_new, taken_up=taken_up
    )
    assert (s.phase, s.bundle, s.reissue, s.waiting) == (phase, kept, reissue, waiting)


def test_a_bundle_splits_into_its_certificates() -> None:
    joined = join_bundle((NEW_CA, OLD_CA))
    assert split_bundle(joined) == (NEW_CA, OLD_CA)
    assert split_bundle(NEW_CA + "\n\n") == (NEW_CA,)


def served_everywhere(kube: FakeKube, admins: AdminPool, d: Any) -> None:
    """The renewals carried to the members (restarted or rotated) and the restarts over."""
    renew_certificates(kube, _NoMongo(), d, 0.0, propagation=0.0)  # seen
    renew_certificates(kube, _NoMongo(), d, 1.0, propagation=0.0)  # carried
    controller_rolls(kube)


class _NoMongo:
    rotated: list[str] = []

    def rotate_certificates(self, host: str) -> None:
        self.rotated.append(host)


def test_a_new_ca_goes_through_bundling_reissuing_and_pruning(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    ready_cluster(kube, admins)
    d = reconcile.desired(kube, body(kube), body(kube)["status"])
    renew_certificates(kube, _NoMongo(), d, 0.0)  # the served certificates recorded
    old = ca.cert_pem.bytes().decode()
    leaf = secret(kube, "c-rs0-tls")["tls.crt"]
    new_ca = trustme.CA()
    new = new_ca.cert_pem.bytes().decode()
    kube.put(secret_of(ca_values(new_ca), "bench-ca"))

    def phase() -> str:
        return str(body(kube)["status"]["tls"]["caRotation"]["phase"])

    ensure_tls(kube, d, body(kube), NOW)
    values = secret(kube, "c-rs0-tls")
    assert split_bundle(values["ca.crt"]) == (new, old) and values["tls.crt"] == leaf
    assert split_bundle(secret(kube, "c-client-tls")["ca.crt"]) == (new, old)
    assert phase() == cond.CA_BUNDLING
    ensure_tls(kube, d, body(kube), NOW)  # members not restarted onto the bundle yet
    assert secret(kube, "c-rs0-tls")["tls.crt"] == leaf

    served_everywhere(kube, admins, d)
    ensure_tls(kube, d, body(kube), NOW)
    values = secret(kube, "c-rs0-tls")
    assert signed_by(values, new) and split_bundle(values["ca.crt"]) == (new, old)
    assert phase() == cond.CA_REISSUING

    served_everywhere(kube, admins, d)
    ensure_tls(kube, d, body(kube), NOW)
    assert split_bundle(secret(kube, "c-rs0-tls")["ca.crt"]) == (new,)
    assert phase() == cond.CA_PRUNING
    # The Secrets hold the end state now; the members do not serve it yet (seen at cluster
    # tier: Completed while the last member was still being replaced).
    ensure_tls(kube, d, body(kube), NOW)
    assert phase() == cond.CA_PRUNING

    served_everywhere(kube, admins, d)
    ensure_tls(kube, d, body(kube), NOW)
    assert phase() == cond.CA_COMPLETED
    assert kube.reasons().count(cond.EVENT_CA_ROTATING) == 4
    served = kube.objects[("StatefulSet", NS, "c-rs0")]["metadata"]["annotations"]
    assert SERVED_ANNOTATION in served


def test_a_ca_change_is_under_way_from_bundling_to_pruning() -> None:
    def status(phase: str | None) -> dict[str, Any]:
        return {"tls": {"caRotation": {"phase": phase}}} if phase else {}

    assert [under_way(status(p)) for p in (cond.CA_BUNDLING, cond.CA_REISSUING, cond.CA_PRUNING)]
    assert not under_way(status(cond.CA_COMPLETED)) and not under_way(status(None))
    assert not under_way(None)


def test_a_ca_change_looks_again_at_once_after_a_certificate_was_carried(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    """rotateCertificates changes nothing an event announces (no restart, no status): without
    a sync queued at once, a CA change would stay in Reissuing (seen at cluster tier)."""
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    ready_cluster(kube, admins)
    d = reconcile.desired(kube, body(kube), body(kube)["status"])
    carried = reconcile.MongoPass(renewals=Renewals(["StatefulSet c-rs0: certificate rotate"]))
    quiet = reconcile.MongoPass()
    changing = copy.deepcopy(body(kube))
    changing["status"]["tls"] = {"caRotation": {"phase": cond.CA_REISSUING}}
    assert (
        reconcile.tls_pass(
            kube, changing, d, carried, {}, clock=unit_clock, config=OperatorConfig()
        )
        == 0.0
    )
    # Otherwise the next sync is due when a certificate nears its end, not at once.
    later = reconcile.tls_pass(
        kube, body(kube), d, carried, {}, clock=unit_clock, config=OperatorConfig()
    )
    assert later is not None and later > 3600
    nothing_carried = reconcile.tls_pass(
        kube, changing, d, quiet, {}, clock=unit_clock, config=OperatorConfig()
    )
    assert nothing_carried == pytest.approx(later, abs=60)


# ---- what wakes certificate work ---------------------------------------------------------------


def test_a_cluster_follows_its_certificate_secrets_and_the_ca_it_names() -> None:
    cluster = {"metadata": {"namespace": NS, "name": "c"}, "spec": {**PLAIN, "tls": TLS_ON}}
    assert followed_secrets(cluster) == ["c-rs0-tls", "c-client-tls", "bench-ca"]
    assert followed_secrets({**cluster, "spec": PLAIN}) == []
    assert followed_secrets({**cluster, "spec": {"version": "nonsense"}}) == []


def test_a_secret_is_followed_by_its_certificate_alone() -> None:
    one = {"tls.crt": "YQ==", "ca.crt": "Yg==", "tls.key": "c2VjcmV0"}
    assert certificate_state(one) == certificate_state({**one, "tls.key": "b3RoZXI="})
    assert certificate_state(one) != certificate_state({**one, "tls.crt": "Yw=="})
    assert certificate_state({"password": "eA=="}) is None


def test_a_renewal_says_when_the_kubelet_will_have_written_it() -> None:
    from mongobench.mongocluster.decide.tls_renewal import Certificate

    old, new = Certificate("c1", "ca"), Certificate("c2", "ca")
    waiting = plan_renewal(
        served=old, current=new, seen=100.0, now=130.0, rotate_online=True, mongos=False,
        propagation=120.0,
    )  # fmt: skip
    assert waiting is not None and (waiting.action, waiting.due_in) == ("wait", 90.0)


def test_an_issued_certificate_is_due_at_two_thirds_of_its_life(ca: trustme.CA) -> None:
    from test_cluster_tls import rs_request

    from mongobench.mongocluster.build.certificates import issue

    values = issue(ca_values(ca), "bench-ca", rs_request(), NOW)
    cert = x509.load_pem_x509_certificate(values["tls.crt"].encode())
    due = renewal_time(values)
    assert due is not None
    life = cert.not_valid_after_utc - (NOW - datetime.timedelta(minutes=5))
    assert abs((due - NOW) / life - 2 / 3) < 0.01
    assert renewal_time({}) is None


def test_from_prefer_to_require_waits_for_no_client_when_clients_dialled_tls_from_the_start(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": {**TLS_ON, "mode": "preferTLS"}}})
    ready_cluster(kube, admins)
    assert "tls=true" in uri(kube)
    kube.put(_client_pod("running", "2026-01-01T00:00:00Z"))
    enable_tls(kube, {**TLS_ON, "mode": "requireTLS"})
    sync(kube, admins)
    assert modes(kube) == {"requireTLS"}
    assert tls_status(kube)["phase"] == cond.TLS_ROLLING
