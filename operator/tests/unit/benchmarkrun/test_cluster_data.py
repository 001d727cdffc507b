"""Unit tier: a BenchmarkRun's MongoDB side (benchmarkrun.act.data.ClusterData) on a MongoCluster
whose
Secrets are in an in-memory API (fake_kube) and whose MongoDB is an in-memory model
(fake_mongo): what prepare, drop and the shard distribution do, and how a run records the
distribution after its load on a sharded cluster."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.act import orchestrate
from mongobench.benchmarkrun.act.data import ClusterData, sharding_layout_problem, sharding_spec
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.mongo.errors import PermanentMongoError
from mongobench.mongo.model import Bound, KeyField, Zone
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile

pytestmark = pytest.mark.unit

NS = "ns"
REPLICA_SET = {"version": "7.0.14", "topology": {"type": "ReplicaSet"}}
SHARDED = {
    "version": "8.0.4",
    "topology": {"type": "Sharded", "sharded": {"shards": 2, "membersPerShard": 1}},
}


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


def provisioned(kube: FakeKube, spec: dict[str, Any]) -> dict[str, Any]:
    """A Ready MongoCluster whose objects (and Secrets) the operator created."""
    cluster = kube.put(
        {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "MongoCluster",
            "metadata": {"namespace": NS, "name": "c"},
            "spec": copy.deepcopy(spec),
            "status": {"phase": cond.PHASE_READY},
        }
    )
    reconcile.provision(kube, cluster, unit_clock(), OperatorConfig())
    return cluster


def run_spec(**spec: Any) -> BenchmarkRunSpec:
    return BenchmarkRunSpec.parse(
        {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}], **spec}
    )


def test_a_replica_sets_collection_is_recreated_and_dropped(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    kube = FakeKube()
    cluster = provisioned(kube, REPLICA_SET)
    data = ClusterData(kube, admins)
    assert data.prepare(run_spec(), cluster) == "ycsb.usertable recreated"
    assert mongo.calls == ["drop ycsb.usertable", "create ycsb.usertable"]
    assert data.distribution(run_spec(), cluster) is None  # not sharded
    assert data.drop(run_spec(), cluster) == "ycsb.usertable dropped"
    assert data.drop(run_spec(), cluster) == "ycsb.usertable was already gone"


def test_a_sharded_collection_is_sharded_as_the_spec_says(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    kube = FakeKube()
    cluster = provisioned(kube, SHARDED)
    mongo.shards = {"c-shard0": "c-shard0", "c-shard1": "c-shard1"}
    data = ClusterData(kube, admins)
    message = data.prepare(run_spec(sharding={"key": "_id", "hashed": True}), cluster)
    assert message == "ycsb.usertable recreated, sharded on hashed _id"
    assert mongo.calls[-1] == "shard ycsb.usertable on {'_id': 'hashed'}"
    dist = data.distribution(run_spec(), cluster)
    assert dist is not None and [s["shard"] for s in dist["shards"]] == ["c-shard0", "c-shard1"]


def test_a_compound_key_is_sharded_in_order_and_indexes_follow_on_both_topologies(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    kube = FakeKube()
    data = ClusterData(kube, admins)
    spec = run_spec(
        sharding={"fields": [{"field": "field0"}, {"field": "_id", "type": "Hashed"}]},
        indexes=[
            {
                "name": "by-f1",
                "keys": [{"field": "field1"}, {"field": "field2", "type": "Descending"}],
            },
            {"name": "f3", "keys": [{"field": "field3", "type": "Hashed"}], "unique": False},
        ],
    )
    sharded = provisioned(kube, SHARDED)
    message = data.prepare(spec, sharded)
    assert message == (
        "ycsb.usertable recreated, sharded on compound {field0: 1, _id: hashed}, indexes by-f1, f3"
    )
    # the key's field order is kept; indexes come after sharding
    assert mongo.calls[-4:] == [
        "shard ycsb.usertable on {'field0': 1, '_id': 'hashed'}",
        "create ycsb.usertable",
        "index by-f1 {'name': 'by-f1', 'key': {'field1': 1, 'field2': -1}}",
        "index f3 {'name': 'f3', 'key': {'field3': 'hashed'}}",
    ]
    kube2 = FakeKube()
    replica = provisioned(kube2, REPLICA_SET)
    mongo.calls.clear()
    assert ClusterData(kube2, admins).prepare(spec, replica) == (
        "ycsb.usertable recreated, indexes by-f1, f3"
    )
    assert mongo.calls[-2:] == [
        "index by-f1 {'name': 'by-f1', 'key': {'field1': 1, 'field2': -1}}",
        "index f3 {'name': 'f3', 'key': {'field3': 'hashed'}}",
    ]


def test_an_external_database_is_left_as_the_user_prepared_it(admins: AdminPool) -> None:
    data = ClusterData(FakeKube(), admins)
    spec = BenchmarkRunSpec.parse(
        {"uriSecretRef": {"name": "uri", "key": "uri"}, "workloads": [{"name": "a"}]}
    )
    assert "used as it is" in data.prepare(spec, None)
    assert "nothing dropped" in data.drop(spec, None)
    assert data.distribution(spec, None) is None


def sharded_run(
    mongo: FakeMongo, admins: AdminPool, **spec: Any
) -> tuple[FakeKube, Callable[[], None]]:
    """A Ready two-shard MongoCluster `c` and a BenchmarkRun `r` on it; the run's advance."""
    kube = FakeKube()
    provisioned(kube, SHARDED)
    mongo.shards = {"c-shard0": "c-shard0", "c-shard1": "c-shard1"}
    kube.put(
        {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": {"namespace": NS, "name": "r"},
            "spec": {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}], **spec},
        }
    )
    data = ClusterData(kube, admins)

    def advance() -> None:
        orchestrate.advance(kube, NS, "r", OperatorConfig(), data, clock=unit_clock)

    return kube, advance


def test_a_load_on_a_sharded_cluster_records_the_distribution_on_the_step_and_the_cluster(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    from test_orchestrate import finish_job, report, status

    kube, advance = sharded_run(mongo, admins)
    advance()  # prepare
    advance()  # the load's Job
    report(kube, 1)
    finish_job(kube, 1)
    advance()
    load = status(kube)["steps"][1]
    assert [s["shard"] for s in load["distribution"]["shards"]] == ["c-shard0", "c-shard1"]
    cluster = kube.get("MongoCluster", NS, "c")
    assert cluster is not None and cluster["status"]["distribution"] == load["distribution"]
    assert cond.EVENT_DISTRIBUTION in kube.reasons()


def test_a_sharded_run_profiles_each_shard_not_the_config_servers_and_measures_disk_per_shard(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    from test_orchestrate import finish_job, report, status

    kube, advance = sharded_run(mongo, admins, repetitions=1, profiler={"slowMs": 20, "top": 3})
    advance()  # prepare, the load's Job
    for index, phase in ((1, "load"), (2, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        advance()
    profiled = [c for c in mongo.calls if c.startswith(("profile", "system.profile"))]
    assert profiled == [
        "profile 1 on c-shard0,c-shard1",  # mongos profiles nothing; no config server either
        "system.profile top 3",
        "profile 0 on c-shard0,c-shard1",
    ]
    run = status(kube)["steps"][2]
    assert run["slowOperations"]["operations"][0]["shard"] == "c-shard0"
    use = run["diskUse"]["collections"][0]
    assert (use["collection"], use["documents"]) == ("ycsb.usertable", 1000)
    assert [s["shard"] for s in use["shards"]] == ["c-shard0", "c-shard1"]
    assert mongo.calls.count("collStats ycsb.usertable") == 2  # after the load and the run


def test_split_points_and_zone_bounds_become_key_values_in_key_order() -> None:
    spec = run_spec(
        sharding={
            "fields": [{"field": "field0"}, {"field": "_id"}],
            "splitPoints": [{"field0": "m"}, {"_id": "user5", "field0": "m"}],
            "zones": [
                {"name": "top", "shards": ["c-shard1"], "min": {"field0": "t"}},
                {"name": "low", "shards": ["c-shard0"], "max": {"field0": "c"}},
            ],
        }
    )
    sharding = sharding_spec(spec)
    assert sharding.fields == (KeyField("field0"), KeyField("_id"))
    # a point names a prefix of the key or all of it, whatever order the user wrote it in
    assert sharding.split_points == (("m",), ("m", "user5"))
    assert sharding.zones == (
        Zone("top", ("c-shard1",), ("t",), (Bound.MAX,)),  # no max: MaxKey
        Zone("low", ("c-shard0",), (Bound.MIN,), ("c",)),  # no min: MinKey
    )
    assert sharding.value((Bound.MAX,)) == (Bound.MAX, Bound.MAX)
    assert sharding.value(("t",)) == ("t", Bound.MIN)


@pytest.mark.parametrize(
    ("running", "refused"), [("7.0.14", False), ("8.0.4", True)], ids=["7.0", "8.0"]
)
def test_pre_split_chunks_of_a_hashed_key_is_refused_before_the_drop_where_mongodb_ignores_it(
    mongo: FakeMongo, admins: AdminPool, running: str, refused: bool
) -> None:
    """Issue 39: from 7.2 numInitialChunks is ignored for a hashed key; a run asking for it is
    refused with the reason before anything is dropped, never reported as pre-split."""
    kube = FakeKube()
    cluster = provisioned(kube, SHARDED)
    mongo.running = running
    data = ClusterData(kube, admins)
    spec = run_spec(sharding={"key": "_id", "hashed": True, "preSplitChunks": 8})
    if not refused:
        assert "sharded on hashed _id" in data.prepare(spec, cluster)
        return
    with pytest.raises(PermanentMongoError, match="ignores numInitialChunks for a hashed key"):
        data.prepare(spec, cluster)
    assert not any(c.startswith(("drop", "shard")) for c in mongo.calls)


def test_a_zone_layout_every_release_refuses_is_told_when_the_run_starts() -> None:
    """Issue 39: the start handler refuses (SpecError: condition and Event) what no release
    takes; preSplitChunks, which depends on the release, is left to prepare."""
    same_prefix = {
        "fields": [{"field": "region"}, {"field": "_id", "type": "Hashed"}],
        "zones": [
            {"name": "eu", "shards": ["c-shard0"], "min": {"region": "eu"}, "max": {"region": "eu"}}
        ],
    }
    problem = sharding_layout_problem(run_spec(sharding=same_prefix))
    assert problem is not None and "31390" in problem
    fine = {**same_prefix, "zones": [{**same_prefix["zones"][0], "max": {"region": "us"}}]}
    assert sharding_layout_problem(run_spec(sharding=fine)) is None
    presplit = {"key": "_id", "hashed": True, "preSplitChunks": 8}
    assert sharding_layout_problem(run_spec(sharding=presplit)) is None
