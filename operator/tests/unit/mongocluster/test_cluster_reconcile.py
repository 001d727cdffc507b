"""Unit tier: the MongoCluster controller's I/O half (mongocluster.act.reconcile, provision,
storage,
deletion) against an in-memory Kubernetes API (fake_kube) and an in-memory MongoDB (fake_mongo):
what a create, a sync, a scale-down, a shard removal, a resize and a delete do to the objects,
the status and the Events."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import kopf
import pytest
from cluster_fixtures import REPLICA_SET, SHARDED
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo

from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import deletion, reconcile, rolling
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.decide import predecessor
from mongobench.mongocluster.decide.predecessor import PredecessorPending
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit

NS = "ns"
KIND = "MongoCluster"
PODMONITORS = "monitoring.coreos.com/v1/podmonitors"


def mongocluster(spec: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": KIND,
        "metadata": {"namespace": NS, "name": name},
        "spec": copy.deepcopy(spec),
    }


@pytest.fixture
def mongo(monkeypatch: pytest.MonkeyPatch) -> FakeMongo:
    """Every administration handle the sync builds is this in-memory MongoDB."""
    fake = FakeMongo()
    monkeypatch.setattr(reconcile, "MongoAdmin", lambda connector: fake)
    return fake


@pytest.fixture
def admins() -> Iterator[AdminPool]:
    pool = AdminPool()
    yield pool
    pool.close()


def body(kube: FakeKube, name: str = "c") -> dict[str, Any]:
    found = kube.get(KIND, NS, name)
    assert found is not None
    return found


def sync(kube: FakeKube, admins: AdminPool, name: str = "c") -> reconcile.SyncResult:
    result = reconcile.sync(
        kube, NS, name, ResourceLocks(), admins, clock=unit_clock, config=OperatorConfig()
    )
    assert result is not None
    return result


def pods_ready(kube: FakeKube, ready: int | None = None) -> None:
    """The StatefulSet and Deployment controllers' view: every pod of the spec ready (or
    `ready` of them), on the current template."""
    for (kind, _, _), obj in kube.objects.items():
        if kind not in ("StatefulSet", "Deployment"):
            continue
        replicas = int(obj["spec"]["replicas"])
        count = replicas if ready is None else min(ready, replicas)
        obj["status"] = {
            "observedGeneration": obj["metadata"]["generation"],
            "replicas": replicas,
            "readyReplicas": count,
            "updatedReplicas": replicas,
        }


def phase(kube: FakeKube, name: str = "c") -> str:
    return str(body(kube, name)["status"]["phase"])


# --- create ------------------------------------------------------------------------------------


def test_a_new_cluster_gets_its_secrets_once_and_its_workloads_applied() -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    secrets = {n for n in kube.verbs("create", "Secret")}
    assert {"c-keyfile", "c-admin", "c-benchmark", "c-operator"} <= secrets
    assert kube.verbs("apply", "Secret") == ["c-connection"]  # derived: applied every time
    assert kube.verbs("apply", "StatefulSet") == ["c-rs0"]
    assert "PodMonitor" not in {k for _, k, _ in kube.writes}  # its CRD is not installed
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    assert sts["metadata"]["ownerReferences"][0]["name"] == "c"
    password = kube.objects[("Secret", NS, "c-admin")]["data"]

    kube.served_resources.add(PODMONITORS)  # the Prometheus Operator installed since
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    assert set(kube.verbs("create", "Secret")) == secrets  # none created again
    assert kube.objects[("Secret", NS, "c-admin")]["data"] == password  # nor changed
    assert kube.verbs("apply", "PodMonitor") == ["c"]


def test_a_cluster_created_again_waits_for_what_its_deleted_predecessor_left(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    """Deleted, then created again under the same name before garbage collection removed the
    first one's children (an experiment's next round; CI saw a collector 45 s behind): the new
    cluster takes none of them over. Adopted, they would have kept the old members, with their
    users and keyfile, beside the new cluster's fresh Secrets."""
    kube = FakeKube(mongocluster(SHARDED))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    old = {k: v["data"] for (kind, _, k), v in kube.objects.items() if kind == "Secret"}
    kube.objects.pop((KIND, NS, "c"))
    kube.put(mongocluster(SHARDED))  # the same name, a new uid
    writes = len(kube.writes)

    with pytest.raises(PredecessorPending) as waiting:
        reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    assert {"StatefulSet c-cfg", "StatefulSet c-shard0", "Deployment c-mongos",
            "Secret c-keyfile", "Secret c-admin"} <= set(waiting.value.objects)  # fmt: skip
    assert len(kube.writes) == writes  # nothing created, applied or adopted
    pods_ready(kube)  # the old members still run
    result = sync(kube, admins)
    assert result.phase == cond.PHASE_PENDING and mongo.calls == []
    said = get_condition(body(kube)["status"]["conditions"], cond.READY)
    assert said is not None and "c-cfg" in said["message"] and "same name" in said["message"]
    assert kube.verbs("apply", "StatefulSet") == ["c-cfg", "c-shard0", "c-shard1"]  # the first only

    # Collected: the new cluster creates its own, with fresh credentials.
    for key in [k for k, v in kube.objects.items() if k[0] != KIND]:
        kube.objects.pop(key)
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    uid = body(kube)["metadata"]["uid"]
    sts = kube.objects[("StatefulSet", NS, "c-cfg")]
    assert sts["metadata"]["ownerReferences"][0]["uid"] == uid
    assert kube.objects[("Secret", NS, "c-admin")]["data"] != old["c-admin"]


def test_objects_orphaned_on_purpose_or_owned_by_the_cluster_itself_are_no_predecessors() -> None:
    def owned(*refs: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": "x", "ownerReferences": list(refs)}}

    ours = {"kind": "MongoCluster", "uid": "u2", "controller": True}
    theirs = {"kind": "MongoCluster", "uid": "u1", "controller": True}
    other_kind = {"kind": "StatefulSet", "uid": "u1", "controller": True}
    assert not predecessor.foreign(owned(), "u2")  # orphaned: adopted as before
    assert not predecessor.foreign(owned(ours), "u2")
    assert not predecessor.foreign(owned(other_kind), "u2")
    assert not predecessor.foreign(owned({**theirs, "controller": False}), "u2")
    assert predecessor.foreign(owned(theirs), "u2")


def test_a_sync_before_the_pods_are_ready_says_so_without_mongodb(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube, ready=1)
    result = sync(kube, admins)
    assert result.phase == cond.PHASE_PROVISIONING and result.changed
    status = body(kube)["status"]
    assert status["readyMembers"] == 1 and status["platform"]["provider"]
    assert mongo.calls == []
    writes = len(kube.writes)
    assert not sync(kube, admins).changed  # nothing new: nothing written
    assert len(kube.writes) == writes
    assert kube.events == []


def test_a_ready_replica_set_is_wired_and_ready_is_told_once(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    result = sync(kube, admins)
    assert result.phase == cond.PHASE_READY
    users = mongo.users["c-rs0"]
    assert users[0] == "mongobench-operator" and "benchmark" in users  # the operator's first
    status = body(kube)["status"]
    assert status["replicaSets"][0]["initialized"] is True
    assert "readySeconds" in status["timings"]
    assert kube.reasons() == [cond.EVENT_READY]
    sync(kube, admins)
    assert kube.reasons() == [cond.EVENT_READY]  # not again


def test_a_secret_not_created_yet_makes_the_wiring_wait(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    kube.delete("Secret", NS, "c-operator")
    result = sync(kube, admins)
    assert result.phase == cond.PHASE_INITIALIZING
    configured = get_condition(body(kube)["status"]["conditions"], cond.CONFIGURED)
    assert configured is not None and "c-operator does not exist" in configured["message"]


# --- scale -------------------------------------------------------------------------------------


def test_a_scale_down_waits_for_mongodb_to_remove_the_members(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    five = copy.deepcopy(REPLICA_SET)
    five["topology"]["replicaSet"]["members"] = 5
    kube.objects[(KIND, NS, "c")]["spec"] = five
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    assert kube.objects[("StatefulSet", NS, "c-rs0")]["spec"]["replicas"] == 5

    kube.objects[(KIND, NS, "c")]["spec"] = copy.deepcopy(REPLICA_SET)  # back to 3
    mongo.pinned["c-rs0"] = 5  # MongoDB still has the two members
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    assert kube.objects[("StatefulSet", NS, "c-rs0")]["spec"]["replicas"] == 5  # held
    applies = len(kube.verbs("apply", "StatefulSet"))
    sync(kube, admins)
    assert len(kube.verbs("apply", "StatefulSet")) == applies  # still held: nothing applied
    assert phase(kube) == cond.PHASE_SCALING

    del mongo.pinned["c-rs0"]  # the wiring removed them
    sync(kube, admins)  # sees it and releases the hold: the workloads are applied again
    assert kube.objects[("StatefulSet", NS, "c-rs0")]["spec"]["replicas"] == 3
    assert len(kube.verbs("apply", "StatefulSet")) > applies


def test_a_shard_dropped_from_the_spec_drains_then_its_objects_go(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    spec = copy.deepcopy(SHARDED)
    spec["storage"]["storageClassName"] = None
    kube = FakeKube(mongocluster(spec))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    assert sync(kube, admins).phase == cond.PHASE_READY
    assert set(mongo.shards) == {"c-shard0", "c-shard1"}

    one = copy.deepcopy(spec)
    one["topology"]["sharded"]["shards"] = 1
    kube.objects[(KIND, NS, "c")]["spec"] = one
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    sync(kube, admins)  # removeShard: draining started
    assert phase(kube) == cond.PHASE_SCALING
    assert kube.reasons()[-1] == cond.EVENT_SHARD_DRAINING
    assert body(kube)["status"]["draining"][0]["shard"] == "c-shard1"
    assert ("StatefulSet", NS, "c-shard1") in kube.objects  # its members hold data

    sync(kube, admins)  # still draining
    sync(kube, admins)  # completed: MongoDB no longer lists it, its objects go
    assert ("StatefulSet", NS, "c-shard1") not in kube.objects
    assert ("Service", NS, "c-shard1-hl") not in kube.objects
    assert kube.reasons()[-2:] == [cond.EVENT_SHARD_REMOVED, cond.EVENT_READY]
    assert "deletionPolicy Delete" in kube.events[-2][4]
    assert phase(kube) == cond.PHASE_READY


def test_a_storage_class_that_cannot_expand_is_told_once(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(
        mongocluster(REPLICA_SET),
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "std"}},
    )
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    for i in range(3):
        kube.put(
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "namespace": NS,
                    "name": f"data-c-rs0-{i}",
                    "labels": {"mongobench.io/cluster": "c"},
                },
                "spec": {"storageClassName": "std", "resources": {"requests": {"storage": "20Gi"}}},
            }
        )
    bigger = copy.deepcopy(REPLICA_SET)
    bigger["storage"]["size"] = "40Gi"
    kube.objects[(KIND, NS, "c")]["spec"] = bigger
    sync(kube, admins)
    resized = get_condition(body(kube)["status"]["conditions"], cond.STORAGE_RESIZED)
    assert resized is not None and resized["reason"] == cond.NOT_EXPANDABLE
    assert kube.reasons().count(cond.EVENT_NOT_EXPANDABLE) == 1
    sync(kube, admins)
    assert kube.reasons().count(cond.EVENT_NOT_EXPANDABLE) == 1
    assert kube.verbs("patch", "PersistentVolumeClaim") == []

    kube.objects[("StorageClass", None, "std")]["allowVolumeExpansion"] = True
    sync(kube, admins)
    assert len(kube.verbs("patch", "PersistentVolumeClaim")) == 3


def test_a_new_template_restarts_one_secondary_per_pass_primary_last(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(mongocluster(REPLICA_SET))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    for i in range(3):  # the members' pods, on the first revision
        kube.put(
            {
                "kind": "Pod",
                "metadata": {
                    "namespace": NS,
                    "name": f"c-rs0-{i}",
                    "labels": {lbl.REPLSET: "c-rs0", rolling.REVISION: "r1"},
                },
                "spec": {},
            }
        )
    newer = copy.deepcopy(REPLICA_SET)
    newer["version"] = "8.0.4"
    kube.objects[(KIND, NS, "c")]["spec"] = newer
    reconcile.provision(
        kube, body(kube), unit_clock(), OperatorConfig()
    )  # the StatefulSet's template changes (OnDelete)
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    sts["status"] = {**sts["status"], "updateRevision": "r2", "updatedReplicas": 0}
    sync(kube, admins)
    (restarted,) = kube.verbs("delete", "Pod")  # one member per pass
    assert restarted != "c-rs0-0"  # a secondary: the primary (member 0 here) goes last
    updated = get_condition(body(kube)["status"]["conditions"], cond.UPDATED)
    assert updated is not None and updated["reason"] == cond.ROLLING_RESTART


def _upgrade_started(kube: FakeKube, admins: AdminPool, version: str) -> None:
    """A Ready replica set on its first revision whose spec moves to `version`."""
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    for i in range(3):
        kube.put(
            {
                "kind": "Pod",
                "metadata": {
                    "namespace": NS,
                    "name": f"c-rs0-{i}",
                    "labels": {lbl.REPLSET: "c-rs0", rolling.REVISION: "r1"},
                },
                "spec": {},
            }
        )
    newer = copy.deepcopy(body(kube)["spec"])
    newer["version"] = version
    kube.objects[(KIND, NS, "c")]["spec"] = newer
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    sts["status"] = {**sts["status"], "updateRevision": "r2", "updatedReplicas": 0}


def test_an_fcv_left_behind_is_raised_on_the_old_binaries_before_any_member_restarts(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    # An earlier 6.0 -> 7.0 upgrade with the FCV unset left it at 6.0; 8.0 would not start.
    mongo.running, mongo.fcv = "7.0.14", "6.0"
    kube = FakeKube(mongocluster(REPLICA_SET))
    _upgrade_started(kube, admins, "8.0.4")
    sync(kube, admins)
    assert kube.verbs("delete", "Pod") == []  # the roll waits for the FCV
    assert (mongo.fcv, mongo.fcv_binaries) == ("7.0", "7.0.14")  # the 7.0 binaries' command
    assert cond.EVENT_FCV_SET in kube.reasons()
    updated = get_condition(body(kube)["status"]["conditions"], cond.UPDATED)
    assert updated is not None and "raised to 7.0 on the 7.0.14 binaries" in updated["message"]
    sync(kube, admins)  # now the roll: one secondary first
    (restarted,) = kube.verbs("delete", "Pod")
    assert restarted != "c-rs0-0"
    assert mongo.fcv == "7.0"  # unset in the spec: left at 7.0 after the roll (downgradable)


def test_a_roll_that_skips_a_release_series_waits_and_says_why(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    # An apiserver without the CRD's rules let 7.0 -> 8.2 through: 8.2 needs 8.0 first.
    kube = FakeKube(mongocluster(REPLICA_SET))
    _upgrade_started(kube, admins, "8.2.1")
    sync(kube, admins)
    assert kube.verbs("delete", "Pod") == [] and mongo.fcv is None
    updated = get_condition(body(kube)["status"]["conditions"], cond.UPDATED)
    assert updated is not None and "7.0 cannot be upgraded to 8.2 in one step" in updated["message"]


def test_a_vanished_cluster_syncs_nothing(admins: AdminPool) -> None:
    assert (
        reconcile.sync(
            FakeKube(), NS, "c", ResourceLocks(), admins, clock=unit_clock, config=OperatorConfig()
        )
        is None
    )


# --- delete ------------------------------------------------------------------------------------


def deleted(policy: str | None) -> tuple[FakeKube, dict[str, Any]]:
    spec = copy.deepcopy(REPLICA_SET)
    if policy is not None:
        spec["deletionPolicy"] = policy
    kube = FakeKube(mongocluster(spec))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    return kube, body(kube)


def test_deletion_waits_for_a_run_using_the_cluster() -> None:
    kube, cluster = deleted("Delete")
    kube.put(
        {
            "kind": "BenchmarkRun",
            "metadata": {"namespace": NS, "name": "busy"},
            "spec": {"clusterRef": {"name": "c"}},
            "status": {"phase": cond.RUN_RUNNING},
        }
    )
    with pytest.raises(kopf.TemporaryError, match="busy"):
        deletion.finalize(kube, cluster)
    assert kube.reasons() == [cond.EVENT_IN_USE]
    kube.objects[("BenchmarkRun", NS, "busy")]["status"]["phase"] = cond.RUN_SUCCEEDED
    deletion.finalize(kube, cluster)
    assert body(kube)["status"]["phase"] == cond.PHASE_DELETING


def test_deletion_policy_delete_leaves_everything_to_garbage_collection() -> None:
    kube, cluster = deleted("Delete")
    deletion.finalize(kube, cluster)
    assert kube.verbs("patch") == [] and kube.events == []


def test_deletion_policy_retain_keeps_the_secrets_and_claims() -> None:
    kube, cluster = deleted("Retain")
    sts = kube.objects[("StatefulSet", NS, "c-rs0")]
    kube.put(
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "namespace": NS,
                "name": "data-c-rs0-0",
                "labels": {"app.kubernetes.io/managed-by": "mongobench"},
                "ownerReferences": [{"uid": sts["metadata"]["uid"]}],
            },
        }
    )
    deletion.finalize(kube, cluster)
    assert "ownerReferences" not in kube.objects[("Secret", NS, "c-admin")]["metadata"]
    assert (
        "ownerReferences"
        not in kube.objects[("PersistentVolumeClaim", NS, "data-c-rs0-0")]["metadata"]
    )
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Retain"
    assert kube.reasons() == [cond.EVENT_RETAINED]
    assert kube.events[0][2] == cond.NORMAL and "1 volume claim" in kube.events[0][4]


def test_a_deletion_policy_that_cannot_be_read_keeps_the_data_and_warns() -> None:
    kube, cluster = deleted(None)
    cluster["spec"]["deletionPolicy"] = "Sometimes"
    deletion.finalize(kube, cluster)
    assert "ownerReferences" not in kube.objects[("Secret", NS, "c-admin")]["metadata"]
    assert kube.events[0][2:4] == (cond.WARNING, cond.EVENT_RETAINED)


def test_fcv_is_set_for_the_binaries_the_spec_runs(admins: AdminPool, mongo: FakeMongo) -> None:
    # Lowering the FCV on 8.0 binaries (a downgrade's first step): the command's form follows
    # the binaries (confirm from 7.0 on), so the administration is told which ones run.
    spec = copy.deepcopy(REPLICA_SET) | {"version": "8.0.4", "featureCompatibilityVersion": "7.0"}
    kube = FakeKube(mongocluster(spec))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pods_ready(kube)
    sync(kube, admins)
    assert (mongo.fcv, mongo.fcv_binaries) == ("7.0", "8.0.4")
    assert body(kube)["status"]["featureCompatibilityVersion"] == "7.0"
