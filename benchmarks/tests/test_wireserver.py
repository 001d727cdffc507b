"""mongobench-wireserver (benchmarks/wireserver), the server of `make bench-clients`, with pymongo.

It answers what the benchmark clients send: the handshake, inserts (a body array and kind-1
document sequences), finds by _id and with an empty filter, cursors, $set updates and upserts,
deletes, unacknowledged writes (moreToCome), and names what it does not know.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

pytestmark = pytest.mark.protocol

WIRESERVER = Path(__file__).resolve().parents[1] / "wireserver"


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    sys.path.insert(0, str(WIRESERVER))
    try:
        from wireserver import running_wireserver
    finally:
        sys.path.remove(str(WIRESERVER))
    with running_wireserver() as ws:
        yield ws


@pytest.fixture
def client(server: Any) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    c: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        server.uri, serverSelectionTimeoutMS=5000, maxPoolSize=1
    )
    yield c
    c.close()


def test_handshake_and_admin_commands(client: pymongo.MongoClient[dict[str, Any]]) -> None:
    assert client.admin.command("ping")["ok"] == 1.0
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True
    assert hello["maxWireVersion"] == 21
    assert client.server_info()["version"].startswith("7.")


def test_insert_find_update_delete(client: pymongo.MongoClient[dict[str, Any]]) -> None:
    coll = client.t1.usertable
    coll.drop()
    coll.insert_one({"_id": "user1", "field0": "a", "n": 1})
    # insert_many goes as a kind-1 document sequence
    coll.insert_many([{"_id": f"user{i}", "field0": str(i), "n": i} for i in range(2, 12)])
    generated = coll.insert_one({"field0": "no id"}).inserted_id
    assert coll.find_one({"_id": generated}, {"_id": 0}) == {"field0": "no id"}
    assert coll.find_one({"_id": "user1"}) == {"_id": "user1", "field0": "a", "n": 1}
    assert coll.find_one({"_id": "nope"}) is None
    assert coll.find_one({"_id": "user3"}, {"field0": 1}) == {"_id": "user3", "field0": "3"}
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": "user1"})
    assert coll.estimated_document_count() == 12

    # an empty filter with a limit; a scan in _id order; getMore across small batches
    assert len(list(coll.find({}).limit(3))) == 3
    keys = [d["_id"] for d in coll.find({"_id": {"$gte": "user2"}}).sort("_id", 1).limit(4)]
    assert keys == ["user2", "user3", "user4", "user5"]
    assert len(list(coll.find({}, batch_size=2))) == 12
    assert [d["n"] for d in coll.find({"n": {"$gt": 9}}).sort("n", -1)] == [11, 10]

    r = coll.update_one({"_id": "user1"}, {"$set": {"field0": "b", "field1": "new"}})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert coll.find_one({"_id": "user1"}) == {
        "_id": "user1",
        "field0": "b",
        "n": 1,
        "field1": "new",
    }
    assert coll.update_one({"_id": "absent"}, {"$set": {"x": 1}}).matched_count == 0
    up = coll.replace_one({"_id": "user99"}, {"field0": "upserted"}, upsert=True)
    assert up.upserted_id == "user99"
    assert coll.find_one({"_id": "user99"}) == {"_id": "user99", "field0": "upserted"}
    coll.update_one({"_id": "user2"}, {"$inc": {"n": 5}})
    assert coll.find_one({"_id": "user2"}, {"n": 1}) == {"_id": "user2", "n": 7}

    assert coll.delete_one({"_id": "user1"}).deleted_count == 1
    assert coll.find_one({"_id": "user1"}) is None
    assert coll.delete_many({"n": {"$gte": 10}}).deleted_count == 2
    assert "usertable" in client.t1.list_collection_names()
    coll.drop()
    assert coll.find_one({}) is None


def test_unacknowledged_writes_get_no_reply(client: pymongo.MongoClient[dict[str, Any]]) -> None:
    coll = client.t2.get_collection("c", write_concern=pymongo.WriteConcern(w=0))
    coll.drop()
    for i in range(5):
        coll.insert_one({"_id": i})
    # one pooled connection: a stray reply to a w:0 write would answer the next command
    assert client.t2.c.find_one({"_id": 4}) == {"_id": 4}
    assert client.t2.c.estimated_document_count() == 5
    assert client.t2.command("ping")["ok"] == 1.0


def test_unknown_command_is_named(server: Any, client: pymongo.MongoClient[dict[str, Any]]) -> None:
    with pytest.raises(OperationFailure) as e:
        client.admin.command("noSuchCommandForTheTest")
    assert e.value.code == 59
    assert "noSuchCommandForTheTest" in str(e.value)
    assert 'unknown command "noSuchCommandForTheTest"' in server.log.read_text()
