"""Unit tier: a Standalone MongoCluster (one mongod, no replica set), from the pure builders
to the controller's I/O half against an in-memory API (fake_kube) and MongoDB (fake_mongo):
what it deploys, the URI clients get, its status and phase, its roll, and the role its CPU is
counted under. How its mongod answers (no setName, NoReplicationEnabled 76) is proven on the
protocol tier against the local wire model (e2e/local/tests/test_mongomodel.py)."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import test_cluster_reconcile as reconciling
from cluster_fixtures import STANDALONE, build, by_kind
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.benchmarkrun.telemetry.roles import cluster_pod_roles
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench.mongo.model import STANDALONE_STATE, MemberStatus, ReplicaSetStatus, Role
from mongobench.mongo.plan import next_rolling_step
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile, rolling
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import cluster_layout, connection_uri
from mongobench.mongocluster.decide.status import Observed, Wiring, WorkloadState, compute_status
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit

NS = "bench"
HOST = "demo-mongod-0.demo-mongod-hl.bench.svc.cluster.local:27017"


def test_one_mongod_without_replset_pdb_or_routers_with_exporter_and_monitor() -> None:
    objects = build(STANDALONE)
    (sts,) = by_kind(objects, "StatefulSet")
    assert (sts["metadata"]["name"], sts["spec"]["replicas"]) == ("demo-mongod", 1)
    pod = sts["spec"]["template"]["spec"]
    mongod, exporter = pod["containers"]
    assert exporter["name"] == "exporter"
    assert "--replSet" not in mongod["args"]  # no oplog written on every insert
    assert mongod["args"][mongod["args"].index("--keyFile") + 1]  # auth on, as the others
    assert sts["metadata"]["labels"][lbl.COMPONENT] == "standalone"
    assert [s["metadata"]["name"] for s in by_kind(objects, "Service")] == ["demo-mongod-hl"]
    assert by_kind(objects, "PodDisruptionBudget") == []  # its one pod is its availability
    assert by_kind(objects, "Deployment") == []
    assert len(by_kind(objects, "PodMonitor")) == 1


def test_clients_get_the_one_host_and_no_replica_set_to_wait_for() -> None:
    spec = MongoClusterSpec.parse(STANDALONE)
    layout = cluster_layout("demo", NS, spec)
    assert layout.standalone and not layout.sharded
    uri = connection_uri(layout, "benchmark", "pw", "ycsb")
    assert uri == f"mongodb://benchmark:pw@{HOST}/ycsb?authSource=admin"


def standalone_status(healthy: bool = True) -> ReplicaSetStatus:
    member = MemberStatus(HOST, 0, STANDALONE_STATE, healthy)
    return ReplicaSetStatus("demo-mongod", Role.STANDALONE, True, (member,), primary=HOST)


def test_status_is_ready_once_the_mongod_answers_and_its_users_exist() -> None:
    layout = cluster_layout("demo", NS, MongoClusterSpec.parse(STANDALONE))
    pods = {"demo-mongod": WorkloadState(1, 1, settled=True)}
    T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:20Z"

    def status(wiring: Wiring | None) -> dict[str, Any]:
        return compute_status(layout, Observed(pods, wiring=wiring), {}, generation=1,
                              created=T0, now=T1)  # fmt: skip

    assert status(Wiring(False, "demo-mongod: waiting for pods"))["phase"] == "Initializing"
    wired = Wiring(
        True,
        "mongod and users configured",
        replica_sets={"demo-mongod": standalone_status().as_status()},
        config_members={"demo-mongod": 1},
    )
    ready = status(wired)
    assert (ready["phase"], ready["members"], ready["readyMembers"]) == ("Ready", 1, 1)
    (entry,) = ready["replicaSets"]
    assert entry["role"] == "standalone" and entry["initialized"] is True
    assert entry["memberStates"] == [{"host": HOST, "state": "STANDALONE", "health": 1}]
    configured = get_condition(ready["conditions"], cond.CONFIGURED)
    assert configured is not None and configured["message"] == "mongod and users configured"


def test_a_roll_restarts_the_one_member_with_no_step_down() -> None:
    assert next_rolling_step(standalone_status(), [HOST]).kind == "restart"
    assert next_rolling_step(standalone_status(healthy=False), [HOST]).kind == "wait"


def test_its_cpu_is_counted_as_the_mongod_role() -> None:
    pods = [{"metadata": {"name": "demo-mongod-0", "labels": {lbl.COMPONENT: "standalone"}}}]
    assert cluster_pod_roles(pods) == {"demo-mongod-0": "mongod"}


# --- the controller's I/O half -----------------------------------------------------------------


# The in-memory MongoDB every administration handle is, and the pool lending it.
mongo = reconciling.mongo
admins = reconciling.admins


def cluster(spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"namespace": NS, "name": "demo"}
    return {"apiVersion": "mongobench.io/v1alpha1", "kind": "MongoCluster", "metadata": meta,
            "spec": copy.deepcopy(spec)}  # fmt: skip


def body(kube: FakeKube) -> dict[str, Any]:
    found = kube.get("MongoCluster", NS, "demo")
    assert found is not None
    return found


def sync(kube: FakeKube, admins: AdminPool) -> str:
    result = reconcile.sync(
        kube, NS, "demo", ResourceLocks(), admins, clock=unit_clock, config=OperatorConfig()
    )
    assert result is not None
    return result.phase


def pod_ready(kube: FakeKube, revision: str = "r1") -> None:
    sts = kube.objects[("StatefulSet", NS, "demo-mongod")]
    generation = sts["metadata"]["generation"]
    sts["status"] = {"observedGeneration": generation, "replicas": 1, "readyReplicas": 1,
                     "updatedReplicas": 1, "updateRevision": revision}  # fmt: skip


def test_a_standalone_is_wired_ready_and_rolled_by_the_controller(
    admins: AdminPool, mongo: FakeMongo
) -> None:
    kube = FakeKube(cluster(STANDALONE))
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    assert kube.verbs("apply", "StatefulSet") == ["demo-mongod"]
    assert kube.verbs("apply", "PodDisruptionBudget") == []
    data = kube.objects[("Secret", NS, "demo-connection")]["data"]["uri"]
    uri = base64.b64decode(data).decode()
    assert "replicaSet=" not in uri and HOST in uri
    pod_ready(kube)
    assert sync(kube, admins) == cond.PHASE_READY
    users = mongo.users["demo-mongod"]
    assert users[0] == "mongobench-operator" and "benchmark" in users
    assert kube.reasons() == [cond.EVENT_READY]

    # A new version: the pod still runs the old revision, so the one member is restarted.
    kube.put({"kind": "Pod", "spec": {}, "metadata": {"namespace": NS, "name": "demo-mongod-0",
              "labels": {lbl.REPLSET: "demo-mongod", rolling.REVISION: "r1"}}})  # fmt: skip
    newer = copy.deepcopy(body(kube)["spec"])
    newer["version"] = "7.0.15"
    kube.objects[("MongoCluster", NS, "demo")]["spec"] = newer
    reconcile.provision(kube, body(kube), unit_clock(), OperatorConfig())
    pod_ready(kube, revision="r2")
    kube.objects[("StatefulSet", NS, "demo-mongod")]["status"]["updatedReplicas"] = 0
    sync(kube, admins)
    assert kube.verbs("delete", "Pod") == ["demo-mongod-0"]
    assert not [c for c in mongo.calls if "step" in c.lower()]
