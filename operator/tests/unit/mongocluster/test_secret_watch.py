"""Unit tier: the operator watches only the Secrets labelled mongobench.io/watch=true (the
selector kopf lists and watches with, the handler's filter), every certificate Secret it issues
or has cert-manager issue carries that label, and a CA Secret the user names without it is
still used but said to be unwatched (condition CASecretWatched). That a labelled Secret's change
wakes a Ready cluster is the cluster tier's (e2e/local/tests/test_tls_roll.py)."""

from __future__ import annotations

import copy
from typing import Any

import kopf
import pytest
import trustme
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo
from kopf._cogs.structs.references import Resource
from test_cluster_tls import SHARDED_ISSUER, ca, with_certificates
from test_cluster_tls_roll import TLS_ON, plain_cluster
from test_lifecycle import RecordingApi
from test_rotation import KIND, NS, admins, body, mongo, sync
from test_rotation_keyfile import ready_cluster

from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench.k8s.credentials import Credentials
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.act.tls_secrets import ensure_tls
from mongobench.mongocluster.build import labels as lbl
from mongobench.state import OperatorState, state_of

pytestmark = pytest.mark.unit

__all__ = ["admins", "ca", "mongo"]  # fixtures shared with test_rotation, test_cluster_tls

SECRETS = Resource("", "v1", "secrets", kind="Secret", namespaced=True)
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet", namespaced=True)


def test_kopf_lists_and_watches_only_the_secrets_labelled_for_watching(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The selector reaches kopf's list and watch of Secrets (server-side: unlabelled Secrets
    never reach the process), and no other resource's."""
    from mongobench import main

    create = OperatorState.create
    api = RecordingApi(Credentials(server="http://127.0.0.1:9"))  # never asked
    monkeypatch.setattr(OperatorState, "create", staticmethod(lambda **kw: create(api, **kw)))
    settings, memo = kopf.OperatorSettings(), kopf.Memo()
    try:
        main.configure(settings=settings, memo=memo)
    finally:
        OperatorConfig().make_current()
        if hasattr(memo, "state"):
            state_of(memo).close()
    assert settings.watching.label_selectors.collect(SECRETS) == ["mongobench.io/watch=true"]
    assert settings.watching.label_selectors.collect(STATEFULSETS) == []
    (handler,) = [
        h
        for h in kopf.get_default_registry()._watching.get_all_handlers()
        if h.selector is not None and h.selector.check(SECRETS)
    ]
    assert handler.labels == {"mongobench.io/watch": "true"}


def test_every_certificate_secret_is_labelled_for_watching_and_no_other_secret(
    ca: trustme.CA,
) -> None:
    """Issued by the operator from a CA Secret, or by cert-manager (its Secret template): the
    changes of both wake the cluster. Keyfile, users and connection Secrets are not watched:
    nothing wakes on them."""
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    watched = {
        name
        for (kind, _, name), obj in kube.objects.items()
        if kind == "Secret" and obj["metadata"].get("labels", {}).get(lbl.WATCH) == "true"
    }
    assert watched == {"c-rs0-tls", "c-client-tls"}
    for certificate in with_certificates(SHARDED_ISSUER):
        if certificate["kind"] == "Certificate":
            assert certificate["spec"]["secretTemplate"]["labels"][lbl.WATCH] == "true"


def test_a_certificate_secret_issued_before_the_label_is_labelled_with_its_values_kept(
    ca: trustme.CA,
) -> None:
    """After an upgrade from an operator that watched every Secret: the next issue pass labels
    what it issued then, and reissues nothing."""
    kube = plain_cluster(ca)
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    old = kube.objects[("Secret", NS, "c-rs0-tls")]
    del old["metadata"]["labels"][lbl.WATCH]
    data = copy.deepcopy(old["data"])
    d = reconcile.desired(kube, body(kube), {})
    assert ensure_tls(kube, d, body(kube), unit_clock()).secrets == ["c-rs0-tls"]
    labelled = kube.objects[("Secret", NS, "c-rs0-tls")]
    assert labelled["metadata"]["labels"][lbl.WATCH] == "true"
    assert labelled["data"] == data
    assert ensure_tls(kube, d, body(kube), unit_clock()).secrets == []  # once


def ca_watched(kube: FakeKube) -> dict[str, Any] | None:
    return get_condition(body(kube)["status"].get("conditions"), cond.CA_SECRET_WATCHED)


def test_an_unlabelled_ca_secret_is_used_and_said_unwatched_until_labelled(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)  # the user's CA Secret, as users create it: no label
    kube.patch(KIND, NS, "c", {"spec": {"tls": TLS_ON}})
    ready_cluster(kube, admins)
    assert body(kube)["status"]["phase"] == cond.PHASE_READY  # certificates issued from it
    said = ca_watched(kube)
    assert said is not None
    assert (said["status"], said["reason"]) == (cond.FALSE, cond.LABEL_MISSING)
    assert "kubectl label secret bench-ca mongobench.io/watch=true" in said["message"]
    assert "labels" not in kube.objects[("Secret", NS, "bench-ca")]["metadata"]  # untouched

    labelled = copy.deepcopy(kube.objects[("Secret", NS, "bench-ca")])
    labelled["metadata"]["labels"] = dict(lbl.WATCHED)
    kube.put(labelled)
    sync(kube, admins)
    said = ca_watched(kube)
    assert said is not None
    assert (said["status"], said["reason"]) == (cond.TRUE, cond.LABELLED)

    kube.patch(KIND, NS, "c", {"spec": {"tls": {"enabled": False}}})
    sync(kube, admins)
    assert ca_watched(kube) is None  # no CA Secret in use: nothing said about one


def test_a_cluster_without_tls_says_nothing_about_a_ca_secret(
    ca: trustme.CA, admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = plain_cluster(ca)
    ready_cluster(kube, admins)
    assert ca_watched(kube) is None
