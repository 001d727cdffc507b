"""Protocol tier against FerretDB: a real MongoDB-wire server (SQLite backend) on loopback.

FerretDB has no replica sets, sharding or users, so only what it implements is proven here:
hello/health, serverStatus facts, FCV read, idempotent collection and index creation, and how a
real server's refusal (CommandNotFound) surfaces as a permanent error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pymongo import MongoClient

from localplane.ferretdb import FerretDB, running_ferretdb
from mongobench.mongo import (
    Connector,
    MappedResolver,
    MongoAdmin,
    Mongos,
    PermanentMongoError,
    ReplicaSetSpec,
    Role,
)
from mongobench.mongo.model import IndexSpec

pytestmark = pytest.mark.protocol

# FerretDB stands in for a member reached by its cluster DNS name, as the operator would.
NAME = "bench-0.bench-hl.bench.svc.cluster.local:27017"


@pytest.fixture(scope="module")
def ferret() -> Iterator[FerretDB]:
    with running_ferretdb() as server:
        yield server


@pytest.fixture
def admin(ferret: FerretDB) -> Iterator[MongoAdmin]:
    resolver = MappedResolver({NAME: f"{ferret.host}:{ferret.port}"})
    with Connector(resolver=resolver, timeout_seconds=3) as connector:
        yield MongoAdmin(connector)


def test_hello_reports_a_healthy_standalone(admin: MongoAdmin) -> None:
    hello = admin.hello(NAME)
    assert hello.writable_primary and not hello.initialized and not hello.is_mongos
    assert hello.max_wire_version >= 9  # what pymongo 4.20 requires


def test_server_facts_from_a_real_server_status(admin: MongoAdmin) -> None:
    facts = admin.server_facts(NAME)
    assert facts.host == NAME and facts.version and facts.version.split(".")[0].isdigit()
    assert facts.process is not None and facts.process.startswith("ferretdb")
    assert facts.uptime_seconds is not None and facts.uptime_seconds >= 0


def test_collection_and_index_creation_is_idempotent(admin: MongoAdmin, ferret: FerretDB) -> None:
    indexes = [
        IndexSpec("field0_1", (("field0", 1),)),
        # a run's declared index: compound, descending, unique (spec.indexes)
        IndexSpec("by-f1-f2", (("field1", 1), ("field2", -1)), unique=True),
    ]
    first = admin.ensure_collection(NAME, "ycsb_idem", "usertable", indexes)
    assert first == (
        "created ycsb_idem.usertable",
        "created index field0_1",
        "created index by-f1-f2",
    )
    # the second call meets the server's own NamespaceExists (48) and existing indexes
    assert admin.ensure_collection(NAME, "ycsb_idem", "usertable", indexes) == ()
    with MongoClient(ferret.uri, directConnection=True, serverSelectionTimeoutMS=3000) as c:
        found = {ix["name"]: ix for ix in c["ycsb_idem"]["usertable"].list_indexes()}
        assert "ycsb_idem" in c.list_database_names()
    assert {"_id_", "field0_1", "by-f1-f2"} <= set(found)
    assert dict(found["by-f1-f2"]["key"]) == {"field1": 1, "field2": -1}
    assert found["by-f1-f2"].get("unique") is True


def test_feature_compatibility_version_is_read_and_left_alone(admin: MongoAdmin) -> None:
    current = admin.feature_compatibility_version(NAME)
    assert current.count(".") == 1
    assert admin.ensure_feature_compatibility_version(NAME, current, binaries="7.0.14") is False


def test_a_server_without_replica_sets_refuses_initiate_permanently(admin: MongoAdmin) -> None:
    status = admin.replica_set_status(ReplicaSetSpec("rs0", Role.REPLICA, (NAME,)))
    assert not status.initialized and status.members[0].state == "UNINITIALIZED"
    with pytest.raises(PermanentMongoError) as err:
        admin.ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, (NAME,)))
    assert err.value.code == 59 and "replSetInitiate" in err.value.message


def test_a_standalone_is_not_accepted_as_mongos(admin: MongoAdmin) -> None:
    with pytest.raises(PermanentMongoError, match="not a mongos"):
        admin.list_shards(Mongos((NAME,)))


def test_a_server_without_a_profiler_refuses_it_permanently(admin: MongoAdmin) -> None:
    """spec.profiler against FerretDB (what the local plane's data path is): its refusal is a
    permanent error, which the run reports as ProfilerUnavailable and goes on."""
    server = ReplicaSetSpec("bench", Role.REPLICA, (NAME,))
    with pytest.raises(PermanentMongoError) as refused:
        admin.set_profiler([server], "ycsb_profile", 1, 50)
    assert refused.value.operation == "profile"


def test_disk_use_of_a_real_collection(admin: MongoAdmin, ferret: FerretDB) -> None:
    """$collStats storageStats as a real wire server answers it, one document (no shard)."""
    with MongoClient(ferret.uri, directConnection=True, serverSelectionTimeoutMS=3000) as c:
        c["ycsb_disk"]["usertable"].drop()
        c["ycsb_disk"]["usertable"].insert_many(
            [{"_id": f"user{i}", "f": "x" * 100} for i in range(50)]
        )
    use = admin.disk_use(NAME, "ycsb_disk", "usertable")
    total = use.total()
    assert (use.namespace, total.documents) == ("ycsb_disk.usertable", 50)
    assert total.data_bytes > 50 * 100 and total.storage_bytes > 0
    assert [s.shard for s in use.shards] == [None]
    assert admin.disk_use(NAME, "ycsb_disk", "absent").shards == ()
