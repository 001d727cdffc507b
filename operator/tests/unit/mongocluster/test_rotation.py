"""Unit tier: credential rotation. The pure planner (mongocluster.decide.rotation: what the
annotation
asks, the next stage, where each user lives, when runs hold their next Job) and the I/O half
(mongocluster.act.rotate through reconcile.sync) against the in-memory API and MongoDB: Secrets,
status.rotation, Events, the order that survives a crash. MongoDB's side of a new password
(the old one refused) is the cluster tier's (e2e/local/tests/test_credential_rotation.py)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_fixtures import REPLICA_SET, SHARDED
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.mongo import plan
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.decide.rotation import (
    ANNOTATION,
    EXPORTER_ANNOTATION,
    GRACE_SECONDS,
    MONGOS,
    Request,
    holds_new_jobs,
    keyfile_digest,
    next_stage,
    restarts_exporters,
    rotated_users,
    set_targets,
)
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit

NS = "ns"
KIND = "MongoCluster"
READY = cond.PHASE_READY
WAITING = {"phase": cond.ROTATION_WAITING}


# ---- the planner ----------------------------------------------------------------------------


def test_the_annotation_is_a_list_and_what_cannot_be_rotated_says_why() -> None:
    assert Request.of({}) is None
    assert Request.of({ANNOTATION: "users"}) == Request(("users",), ())
    assert Request.of({ANNOTATION: "users, keyfile"}) == Request(("users", "keyfile"), ())
    named = Request.of({ANNOTATION: "users,keyfile"}, {"keyfile": "the spec names it"})
    assert named == Request(("users",), ("keyfile: the spec names it",))
    only_keyfile = Request.of({ANNOTATION: "keyfile"}, {"keyfile": "x.509"})
    assert only_keyfile is not None and only_keyfile.parts == ()
    typo = Request.of({ANNOTATION: "user"})
    assert typo is not None and typo.refused == ("user: unknown (one of users, keyfile)",)
    empty = Request.of({ANNOTATION: ""})
    assert empty is not None and empty.refused == ("nothing named to rotate",)


@pytest.mark.parametrize(
    ("request_", "rotation", "phase", "since", "clients", "kind"),
    [
        (None, {}, READY, None, 0, "idle"),
        (None, {"phase": cond.ROTATION_COMPLETED}, READY, None, 0, "idle"),
        (Request(("users",), ()), {}, READY, None, 0, "request"),
        (Request(("users",), ()), {"phase": cond.ROTATION_COMPLETED}, READY, None, 0, "request"),
        (Request((), ("keyfile: ...",)), {}, READY, None, 0, "refuse"),
        (Request(("users",), ()), WAITING, cond.PHASE_SCALING, 60.0, 0, "wait"),
        (Request(("users",), ()), WAITING, READY, GRACE_SECONDS - 1, 0, "wait"),
        (Request(("users",), ()), WAITING, READY, GRACE_SECONDS + 1, 2, "wait"),
        (Request(("users",), ()), WAITING, READY, GRACE_SECONDS + 1, 0, "stage"),
        # Under way, the annotation no longer matters (removed only once completed).
        (None, {"phase": cond.ROTATION_ROTATING}, READY, None, 0, "rotate"),
    ],
)
def test_next_stage(
    request_: Request | None,
    rotation: dict[str, Any],
    phase: str,
    since: float | None,
    clients: int,
    kind: str,
) -> None:
    assert next_stage(request_, rotation, phase, since, clients).kind == kind


def test_waiting_says_for_whom() -> None:
    stage = next_stage(Request(("users",), ()), WAITING, READY, 60.0, 2)
    assert stage.message == "waiting for 2 benchmark client pod(s) to finish"


def test_runs_hold_their_next_job_from_the_request_until_it_completes() -> None:
    def cluster(annotation: str | None, phase: str | None) -> dict[str, Any]:
        meta = {"annotations": {ANNOTATION: annotation}} if annotation is not None else {}
        return {"metadata": meta, "status": {"rotation": {"phase": phase}} if phase else {}}

    assert holds_new_jobs(cluster("users", None))  # asked: before the operator even saw it
    assert holds_new_jobs(cluster(None, cond.ROTATION_WAITING))
    assert holds_new_jobs(cluster(None, cond.ROTATION_ROTATING))
    assert not holds_new_jobs(cluster(None, cond.ROTATION_COMPLETED))
    assert holds_new_jobs(cluster("keyfile", None))  # its rolling restarts step primaries down
    assert not holds_new_jobs(cluster("key", None))  # refused: nothing will happen
    assert not holds_new_jobs(None)


def test_each_user_is_changed_where_it_lives() -> None:
    rs = MongoClusterSpec.parse(REPLICA_SET)
    layout = cluster_layout("c", NS, rs)
    assert [u.secret for u in rotated_users(rs, layout)] == [
        "c-operator", "c-admin", "c-benchmark", "c-exporter"
    ]  # fmt: skip
    assert all(set_targets(layout, u) == ["c-rs0"] for u in rotated_users(rs, layout))
    sharded = MongoClusterSpec.parse(SHARDED)
    layout = cluster_layout("c", NS, sharded)
    operator, _, benchmark, exporter = rotated_users(sharded, layout)
    assert set_targets(layout, benchmark) == [MONGOS]  # the cluster's user, through mongos
    assert set_targets(layout, operator) == ["c-cfg", "c-shard0", "c-shard1"]
    # The sidecars beside shard members and mongos log in on every set (config: the cluster's).
    assert set_targets(layout, exporter) == ["c-cfg", "c-shard0", "c-shard1"]
    named = MongoClusterSpec.parse({**REPLICA_SET, "auth": {"adminSecretName": "mine"}})
    assert "c-admin" not in [u.secret for u in rotated_users(named, cluster_layout("c", NS, named))]


def test_the_exporter_rotates_with_the_users_only_while_sidecars_run() -> None:
    rs = MongoClusterSpec.parse(REPLICA_SET)
    assert restarts_exporters(rs, ["users"]) and restarts_exporters(rs, ["users", "keyfile"])
    assert not restarts_exporters(rs, ["keyfile"])
    quiet = MongoClusterSpec.parse({**REPLICA_SET, "monitoring": {"exporter": False}})
    layout = cluster_layout("c", NS, quiet)
    assert "c-exporter" not in [u.secret for u in rotated_users(quiet, layout)]
    assert not restarts_exporters(quiet, ["users"])


def test_the_password_command_changes_the_password_only() -> None:
    assert plan.password_command("benchmark", "pw") == {"updateUser": "benchmark", "pwd": "pw"}


# ---- the I/O half, through a sync -----------------------------------------------------------


@pytest.fixture
def mongo(monkeypatch: pytest.MonkeyPatch) -> FakeMongo:
    fake = FakeMongo()
    monkeypatch.setattr(reconcile, "MongoAdmin", lambda connector: fake)
    return fake


@pytest.fixture
def admins() -> Iterator[AdminPool]:
    pool = AdminPool()
    yield pool
    pool.close()


def body(kube: FakeKube) -> dict[str, Any]:
    found = kube.get(KIND, NS, "c")
    assert found is not None
    return found


def sync(kube: FakeKube, admins: AdminPool) -> None:
    assert (
        reconcile.sync(
            kube, NS, "c", ResourceLocks(), admins, clock=unit_clock, config=OperatorConfig()
        )
        is not None
    )


def secret(kube: FakeKube, name: str) -> dict[str, str]:
    data = kube.objects[("Secret", NS, name)]["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def controller_rolls(kube: FakeKube) -> None:
    """What the StatefulSet and Deployment controllers and the rolling restart end with: every
    pod from the current template, ready."""
    for (kind, _, _), obj in kube.objects.items():
        if kind in ("StatefulSet", "Deployment"):
            replicas = int(obj["spec"].get("replicas", 1))
            obj.setdefault("status", {}).update(
                observedGeneration=obj["metadata"]["generation"],
                replicas=replicas,
                readyReplicas=replicas,
                updatedReplicas=replicas,
            )


def template_annotations(kube: FakeKube, key: str) -> dict[str, str | None]:
    """`key`'s value on each workload's pod template, by workload name."""
    return {
        name: ((obj["spec"]["template"].get("metadata") or {}).get("annotations") or {}).get(key)
        for (kind, _, name), obj in kube.objects.items()
        if kind in ("StatefulSet", "Deployment")
    }


def ready_cluster(kube: FakeKube, admins: AdminPool) -> None:
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    for (kind, _, _), obj in kube.objects.items():
        if kind == "StatefulSet":
            replicas = int(obj["spec"]["replicas"])
            obj["status"] = {
                "observedGeneration": obj["metadata"]["generation"],
                "replicas": replicas,
                "readyReplicas": replicas,
                "updatedReplicas": replicas,
                "availableReplicas": replicas,
                "currentRevision": "r1",
                "updateRevision": "r1",
            }
    sync(kube, admins)
    assert body(kube)["status"]["phase"] == READY


def annotate(kube: FakeKube, value: str) -> None:
    kube.patch(KIND, NS, "c", {"metadata": {"annotations": {ANNOTATION: value}}})


def backdate_request(kube: FakeKube) -> None:
    kube.objects[(KIND, NS, "c")]["status"]["rotation"]["requestedAt"] = "2026-01-01T00:00:00Z"


def client_pod(phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": NS,
            "name": "run-step-1-0",
            "labels": {
                "mongobench.io/client-of": "c",
                "mongobench.io/component": "benchmark-client",
            },
        },
        "status": {"phase": phase},
    }


def test_users_rotate_once_no_client_runs_and_every_stage_is_told(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"},
                     "spec": copy.deepcopy(REPLICA_SET)})  # fmt: skip
    ready_cluster(kube, admins)
    rotated = ("c-operator", "c-admin", "c-benchmark", "c-exporter")
    old = {n: secret(kube, n)["password"] for n in rotated}
    old_uri = secret(kube, "c-connection")["uri"]
    annotate(kube, "users")
    sync(kube, admins)
    rotation = body(kube)["status"]["rotation"]
    assert (rotation["phase"], rotation["requested"]) == (cond.ROTATION_WAITING, ["users"])
    assert kube.reasons()[-1] == cond.EVENT_ROTATION_REQUESTED

    # A client pod still runs: the rotation waits, however long ago it was asked.
    kube.put(client_pod("Running"))
    backdate_request(kube)
    sync(kube, admins)
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_WAITING
    assert "1 benchmark client pod(s)" in body(kube)["status"]["rotation"]["message"]
    assert not mongo.passwords

    kube.objects[("Pod", NS, "run-step-1-0")]["status"]["phase"] = "Succeeded"
    sync(kube, admins)
    # MongoDB and the Secrets have the new passwords; the exporter sidecars read theirs at
    # start: the members restart for them (a digest on the pod template, never the password).
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_ROTATING
    assert "exporter sidecars" in rotation["message"]
    exporter = secret(kube, "c-exporter")["password"]
    assert template_annotations(kube, EXPORTER_ANNOTATION) == {"c-rs0": keyfile_digest(exporter)}
    assert kube.reasons()[-1] == cond.EVENT_EXPORTER_RESTARTING
    sync(kube, admins)  # the members have not restarted yet: still Rotating, no new Event
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_ROTATING
    assert kube.reasons().count(cond.EVENT_EXPORTER_RESTARTING) == 1

    controller_rolls(kube)
    sync(kube, admins)
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_COMPLETED
    assert sorted(rotation["rotated"]) == [
        "benchmark", "mongobench-admin", "mongobench-exporter", "mongobench-operator"
    ]  # fmt: skip
    new = {n: secret(kube, n) for n in old}
    assert all(new[n]["password"] != old[n] and "nextPassword" not in new[n] for n in old)
    assert mongo.passwords == {
        ("c-rs0", new[n]["username"]): new[n]["password"] for n in old
    }  # MongoDB was told exactly what the Secrets now hold
    uri = secret(kube, "c-connection")["uri"]
    assert uri != old_uri and new["c-benchmark"]["password"] in uri
    assert ANNOTATION not in (body(kube)["metadata"].get("annotations") or {})
    assert kube.reasons()[-3:] == [
        cond.EVENT_ROTATION_STARTED, cond.EVENT_EXPORTER_RESTARTING, cond.EVENT_CREDENTIALS_ROTATED
    ]  # fmt: skip
    said = str(body(kube)["status"]) + " ".join(e[4] for e in kube.events)
    assert not any(p in said for p in (*old.values(), *(v["password"] for v in new.values())))

    sync(kube, admins)  # done: nothing more
    assert kube.reasons()[-1] == cond.EVENT_CREDENTIALS_ROTATED


def test_a_rotation_interrupted_after_staging_uses_the_staged_password(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    """A crash after `nextPassword` was written (and maybe after MongoDB got it): the next
    pass sends that same password, never a fresh one, then promotes it."""
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"},
                     "spec": copy.deepcopy(REPLICA_SET)})  # fmt: skip
    ready_cluster(kube, admins)
    staged = base64.b64encode(b"staged-before-the-crash").decode()
    kube.objects[("Secret", NS, "c-benchmark")]["data"]["nextPassword"] = staged
    kube.objects[(KIND, NS, "c")]["status"]["rotation"] = {"phase": cond.ROTATION_ROTATING}
    sync(kube, admins)
    assert mongo.passwords[("c-rs0", "benchmark")] == "staged-before-the-crash"
    assert secret(kube, "c-benchmark")["password"] == "staged-before-the-crash"
    assert body(kube)["status"]["rotation"]["rotated"] == ["benchmark"]  # the others were done


def test_a_keyfile_the_spec_names_is_refused_with_a_warning_and_the_annotation_removed(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    spec = {**copy.deepcopy(REPLICA_SET), "auth": {"keyfileSecretName": "mine"}}
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"}, "spec": spec})  # fmt: skip
    kube.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": NS, "name": "mine"},
              "data": {"keyfile": base64.b64encode(b"theirs").decode()}})  # fmt: skip
    ready_cluster(kube, admins)
    annotate(kube, "keyfile")
    sync(kube, admins)
    rotation = body(kube)["status"]["rotation"]
    assert rotation["phase"] == cond.ROTATION_REFUSED
    assert "named by the spec" in rotation["message"]
    assert kube.reasons()[-1] == cond.EVENT_ROTATION_REFUSED
    assert ANNOTATION not in (body(kube)["metadata"].get("annotations") or {})
    assert secret(kube, "mine") == {"keyfile": "theirs"}


def test_without_exporter_sidecars_users_rotate_with_no_restart(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    spec = {**copy.deepcopy(REPLICA_SET), "monitoring": {"exporter": False}}
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"}, "spec": spec})  # fmt: skip
    ready_cluster(kube, admins)
    annotate(kube, "users")
    sync(kube, admins)
    backdate_request(kube)
    sync(kube, admins)
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_COMPLETED
    assert template_annotations(kube, EXPORTER_ANNOTATION) == {"c-rs0": None}
    assert cond.EVENT_EXPORTER_RESTARTING not in kube.reasons()


def test_a_crash_after_the_exporter_secret_changed_still_restarts_the_sidecars(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    """MongoDB and the exporter Secret hold the new password, the templates not yet (the
    operator died between): the next pass restarts the members all the same."""
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"},
                     "spec": copy.deepcopy(REPLICA_SET)})  # fmt: skip
    ready_cluster(kube, admins)
    kube.objects[(KIND, NS, "c")]["status"]["rotation"] = {
        "phase": cond.ROTATION_ROTATING,
        "requested": ["users"],
        "rotated": ["mongobench-operator", "mongobench-admin", "benchmark", "mongobench-exporter"],
    }
    sync(kube, admins)
    assert not mongo.passwords  # nothing staged: no user changed again
    digest = keyfile_digest(secret(kube, "c-exporter")["password"])
    assert template_annotations(kube, EXPORTER_ANNOTATION) == {"c-rs0": digest}
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_ROTATING
    controller_rolls(kube)
    sync(kube, admins)
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_COMPLETED


def test_a_sharded_clusters_mongos_restarts_for_its_exporter_too(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube({"apiVersion": "mongobench.io/v1alpha1", "kind": KIND,
                     "metadata": {"namespace": NS, "name": "c"},
                     "spec": copy.deepcopy(SHARDED)})  # fmt: skip
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    controller_rolls(kube)
    for _ in range(3):  # a sharded cluster wires in a few passes
        sync(kube, admins)
    assert body(kube)["status"]["phase"] == READY
    annotate(kube, "users")
    sync(kube, admins)
    backdate_request(kube)
    sync(kube, admins)
    exporter = secret(kube, "c-exporter")
    digest = keyfile_digest(exporter["password"])
    assert template_annotations(kube, EXPORTER_ANNOTATION) == dict.fromkeys(
        ("c-cfg", "c-shard0", "c-shard1", "c-mongos"), digest
    )
    assert {
        s: mongo.passwords[(s, exporter["username"])] for s in ("c-cfg", "c-shard0", "c-shard1")
    } == dict.fromkeys(("c-cfg", "c-shard0", "c-shard1"), exporter["password"])
    controller_rolls(kube)
    sync(kube, admins)
    assert body(kube)["status"]["rotation"]["phase"] == cond.ROTATION_COMPLETED
