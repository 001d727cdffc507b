"""Unit tier: keyfile rotation. The keyfile format mongod reads (one key, or a YAML list), the
pure step planner (mongocluster.decide.rotation.keyfile_step), the operator's internal identity
trying
each key in turn, and the I/O half through reconcile.sync against the in-memory API: the Secret
as [new, old] then [new], the pod templates' digest that restarts the members, the Events. That
members accept either key of a list and refuse the old key afterwards is the cluster tier's
(e2e/local/tests/test_credential_rotation.py)."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from cluster_fixtures import REPLICA_SET, SHARDED
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo
from pymongo.errors import OperationFailure
from test_rotation import (
    KIND,
    NS,
    admins,
    annotate,
    backdate_request,
    body,
    controller_rolls,
    mongo,
    secret,
    sync,
    template_annotations,
)

from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.mongo import Connector, Credentials, MongoAdmin, PermanentMongoError
from mongobench.mongo.model import (
    internal_credentials,
    internal_credentials_each,
    keyfile_keys,
    keyfile_text,
)
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.decide.rotation import (
    ANNOTATION,
    EXPORTER_ANNOTATION,
    KEYFILE_ANNOTATION,
    NEXT_KEYFILE,
    keyfile_digest,
    keyfile_step,
)

pytestmark = pytest.mark.unit
__all__ = ["admins", "mongo"]  # fixtures shared with test_rotation

OLD, NEW = "b2xkLWtleQ==", "bmV3LWtleQ=="


# ---- the keyfile format and the internal identity -------------------------------------------


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("b2xk\nLWtleQ==\n", ("b2xkLWtleQ==",)),  # one key: whitespace inside is ignored
        (f"- {NEW}\n- {OLD}\n", (NEW, OLD)),
        (f"\n  - '{NEW}'\n  -   \"{OLD}\"\n", (NEW, OLD)),  # quoted, indented, blank lines
    ],
)
def test_a_keyfile_is_one_key_or_a_yaml_list_of_keys(text: str, keys: tuple[str, ...]) -> None:
    assert keyfile_keys(text) == keys


def test_the_keyfile_written_reads_back_as_its_keys() -> None:
    assert keyfile_text((NEW,)) == NEW
    assert keyfile_keys(keyfile_text((NEW, OLD))) == (NEW, OLD)


def test_the_internal_identity_is_tried_with_each_key_new_first() -> None:
    each = internal_credentials_each(keyfile_text((NEW, OLD)))
    assert [(c.username, c.source, c.password) for c in each] == [
        ("__system", "local", NEW),
        ("__system", "local", OLD),
    ]
    assert internal_credentials(OLD).password == OLD


class _Member:
    """A member that accepts one key as __system (the one it started with)."""

    def __init__(self, accepted: str) -> None:
        self.accepted = accepted
        self.tried: list[str] = []

    def client(self, creds: Credentials | None) -> Any:
        member = self

        class Database:
            def command(self, cmd: dict[str, Any]) -> dict[str, Any]:
                assert creds is not None
                member.tried.append(creds.password)
                if creds.password != member.accepted:
                    raise OperationFailure("Authentication failed.", 18)
                return {"ok": 1}

        return {"admin": Database()}


class _ScriptedConnector(Connector):
    def __init__(self, member: _Member, keyfile: str) -> None:
        first, *rest = internal_credentials_each(keyfile)
        super().__init__(Credentials("op", "pw"), bootstrap_credentials=first,
                         bootstrap_fallbacks=rest)  # fmt: skip
        self.member = member

    def client(self, host: str, *, authenticate: bool = True, bootstrap: bool = False) -> Any:
        assert bootstrap
        return self.member.client(self.bootstrap_credentials)


def test_bootstrap_falls_back_to_the_old_key_a_member_not_yet_restarted_runs_with() -> None:
    member = _Member(accepted=OLD)
    connector = _ScriptedConnector(member, keyfile_text((NEW, OLD)))
    admin = MongoAdmin(connector)
    assert admin.bootstrap_command("m:1", {"ping": 1}) == {"ok": 1}
    assert member.tried == [NEW, OLD]
    admin.bootstrap_command("m:1", {"ping": 1})  # sticky: the old key works on every member
    assert member.tried == [NEW, OLD, OLD]


def test_a_refused_last_key_says_the_members_run_another_keyfile() -> None:
    member = _Member(accepted="something-else")
    admin = MongoAdmin(_ScriptedConnector(member, keyfile_text((NEW, OLD))))
    with pytest.raises(PermanentMongoError, match="different keyfile") as err:
        admin.bootstrap_command("m:1", {"ping": 1})
    assert member.tried == [NEW, OLD]
    assert NEW not in str(err.value) and OLD not in str(err.value)


# ---- the planner ----------------------------------------------------------------------------


BOTH = keyfile_text((NEW, OLD))


@pytest.mark.parametrize(
    ("current", "staged", "rolled", "action", "written"),
    [
        (OLD, NEW, True, "both", BOTH),  # staged: the Secret gets [new, old]
        (OLD, NEW, False, "both", BOTH),  # (whatever the pods do)
        (BOTH, NEW, False, "wait", None),  # members restarting with both keys
        (BOTH, NEW, True, "new", NEW),  # every member accepts the new key: only it
        (NEW, NEW, False, "wait", None),  # members restarting with the new key only
        (NEW, NEW, True, "done", None),  # then nextKeyfile is dropped
        (NEW, None, True, "done", None),
    ],
)
def test_keyfile_step(
    current: str, staged: str | None, rolled: bool, action: str, written: str | None
) -> None:
    step = keyfile_step(current, staged, rolled)
    assert (step.action, step.keyfile) == (action, written)
    assert NEW not in step.message and OLD not in step.message


# ---- the I/O half, through a sync -----------------------------------------------------------


def digests(kube: FakeKube) -> set[str | None]:
    return {
        ((obj["spec"]["template"].get("metadata") or {}).get("annotations") or {}).get(
            KEYFILE_ANNOTATION
        )
        for (kind, _, _), obj in kube.objects.items()
        if kind in ("StatefulSet", "Deployment")
    }


def cluster(spec: dict[str, Any]) -> FakeKube:
    meta = {"namespace": NS, "name": "c"}
    return FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND, "metadata": meta,
                     "spec": copy.deepcopy(spec)})  # fmt: skip


def ready_cluster(kube: FakeKube, admins: AdminPool) -> None:
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    controller_rolls(kube)
    for _ in range(3):  # a sharded cluster wires in a few passes
        sync(kube, admins)
    assert body(kube)["status"]["phase"] == cond.PHASE_READY


@pytest.mark.parametrize("spec", [REPLICA_SET, SHARDED], ids=["replicaset", "sharded"])
def test_the_keyfile_rotates_through_both_keys_and_two_rolling_restarts(
    admins: AdminPool, mongo: FakeMongo, spec: dict[str, Any]
) -> None:
    kube = cluster(spec)
    ready_cluster(kube, admins)
    old = secret(kube, "c-keyfile")["keyfile"]
    assert digests(kube) == {None}
    annotate(kube, "keyfile")
    sync(kube, admins)
    backdate_request(kube)
    sync(kube, admins)  # staged, then the Secret holds [new, old] and the templates its digest
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_ROTATING
    values = secret(kube, "c-keyfile")
    new = values[NEXT_KEYFILE]
    assert keyfile_keys(values["keyfile"]) == (new, old) and new != old
    assert digests(kube) == {keyfile_digest(values["keyfile"])}
    assert kube.reasons()[-2:] == [cond.EVENT_ROTATION_STARTED, cond.EVENT_KEYFILE_ROLLING]

    sync(kube, admins)  # the members have not restarted yet: nothing changes
    assert keyfile_keys(secret(kube, "c-keyfile")["keyfile"]) == (new, old)
    assert "the new and the old key" in body(kube)["status"]["rotation"]["message"]

    controller_rolls(kube)
    sync(kube, admins)  # every member accepts either: the Secret holds only the new key
    assert secret(kube, "c-keyfile")["keyfile"] == new
    assert digests(kube) == {keyfile_digest(new)}
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_ROTATING
    assert kube.reasons().count(cond.EVENT_KEYFILE_ROLLING) == 2

    sync(kube, admins)
    assert NEXT_KEYFILE in secret(kube, "c-keyfile")  # still restarting

    controller_rolls(kube)
    sync(kube, admins)
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_COMPLETED
    assert rotation["rotated"] == ["keyfile"] and rotation["requested"] == ["keyfile"]
    assert secret(kube, "c-keyfile") == {"keyfile": new}
    assert ANNOTATION not in (body(kube)["metadata"].get("annotations") or {})
    assert kube.reasons().count(cond.EVENT_CREDENTIALS_ROTATED) == 1
    assert kube.reasons().count(cond.EVENT_KEYFILE_ROLLING) == 2
    assert not mongo.passwords  # no user's password changed
    said = str(body(kube)["status"]) + " ".join(e[4] for e in kube.events)
    assert old not in said and new not in said


def test_users_and_keyfile_together_rotate_the_users_first(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = cluster(REPLICA_SET)
    ready_cluster(kube, admins)
    annotate(kube, "users,keyfile")
    sync(kube, admins)
    backdate_request(kube)
    sync(kube, admins)
    assert len(mongo.passwords) == 4  # updateUser done before the restarts begin
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_ROTATING
    # The keyfile's first restart is the exporter sidecars' too: both digests are on the
    # templates before any member restarts, and no third restart follows.
    exporter = keyfile_digest(secret(kube, "c-exporter")["password"])
    assert template_annotations(kube, EXPORTER_ANNOTATION) == {"c-rs0": exporter}
    assert template_annotations(kube, KEYFILE_ANNOTATION)["c-rs0"] is not None
    for _ in range(2):
        controller_rolls(kube)
        sync(kube, admins)
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_COMPLETED
    assert sorted(rotation["rotated"]) == sorted(
        ["benchmark", "mongobench-admin", "mongobench-exporter", "mongobench-operator", "keyfile"]
    )
    assert kube.reasons().count(cond.EVENT_KEYFILE_ROLLING) == 2


def test_a_crash_between_the_secret_and_the_templates_restarts_the_members_next_pass(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = cluster(REPLICA_SET)
    ready_cluster(kube, admins)
    old = secret(kube, "c-keyfile")["keyfile"]
    both = keyfile_text((NEW, old))
    data = kube.objects[("Secret", NS, "c-keyfile")]["data"]
    data.update(keyfile=base64.b64encode(both.encode()).decode(),
                nextKeyfile=base64.b64encode(NEW.encode()).decode())  # fmt: skip
    kube.objects[(KIND, NS, "c")]["status"]["rotation"] = {
        "phase": cond.ROTATION_ROTATING,
        "requested": ["keyfile"],
    }
    sync(kube, admins)
    assert digests(kube) == {keyfile_digest(both)}  # the restart the crash left undone
    assert secret(kube, "c-keyfile")["keyfile"] == both  # and no step taken past it
