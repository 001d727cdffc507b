"""Protocol tier: the Locust driver (own processes) against FerretDB, standalone + distributed."""

from __future__ import annotations

import pymongo
import pytest
from runner_support import run_runner, validate

from localplane.net import free_port

pytestmark = pytest.mark.protocol

MIX = {
    "a": {"READ", "UPDATE"},
    "b": {"READ", "UPDATE"},
    "c": {"READ"},
    "d": {"READ", "INSERT"},
    "e": {"SCAN", "INSERT"},
    "f": {"READ", "UPDATE", "READ-MODIFY-WRITE"},
}


@pytest.mark.parametrize("workload", sorted(MIX))
def test_locust_loads_and_runs_every_workload(workload, ferretdb, tmp_path):
    db = f"locust_{workload}"
    common = [
        "--workload",
        workload,
        "--uri",
        f"{ferretdb.uri}{db}",
        "--threads",
        "4",
        "-p",
        "recordcount=300",
        "-p",
        "operationcount=200",
        "-p",
        "maxscanlength=20",
    ]
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    validate(load.doc)
    assert load.doc["operations"]["INSERT"]["count"] == 300
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 300
    run = run_runner(["locust", "--phase", "run", *common], tmp_path)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    doc = run.doc
    assert (doc["driver"], doc["status"], doc["operationsTotal"]) == ("locust", "Succeeded", 200)
    assert set(doc["operations"]) == MIX[workload]
    assert doc["sanity"]["littlesLaw"]["expectedConcurrency"] == 4
    if workload in ("d", "e"):
        assert coll.count_documents({}) == 300 + doc["operations"]["INSERT"]["count"]


def test_locust_distributed_master_and_workers(ferretdb, tmp_path):
    common = [
        "--workload",
        "d",
        "--uri",
        f"{ferretdb.uri}locust_dist",
        "--threads",
        "4",
        "--workers",
        "2",
        "--master-port",
        str(free_port()),
        "-p",
        "recordcount=300",
        "-p",
        "operationcount=300",
        "-p",
        "insertproportion=0.3",
        "-p",
        "readproportion=0.7",
        "--timeout",
        "120",
    ]
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    assert load.doc["operations"]["INSERT"]["count"] == 300
    run = run_runner(["locust", "--phase", "run", *common], tmp_path)
    # reads of the newest keys never hit keys another worker has not inserted yet
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert run.doc["properties"]["locust.workers"] == "2"
    assert run.doc["operationsTotal"] == 300
    inserted = run.doc["operations"]["INSERT"]["count"]
    coll = pymongo.MongoClient(ferretdb.uri)["locust_dist"]["usertable"]
    assert coll.count_documents({}) == 300 + inserted


def test_locust_against_a_dead_server_fails_with_a_message(tmp_path):
    uri = f"mongodb://127.0.0.1:{free_port()}/x?serverSelectionTimeoutMS=200"
    res = run_runner(
        [
            "locust",
            "--phase",
            "run",
            "--workload",
            "c",
            "--uri",
            uri,
            "--threads",
            "2",
            "-p",
            "operationcount=4",
        ],
        tmp_path,
    )
    assert res.returncode == 1
    validate(res.doc)
    assert "READ ERROR=4" in res.doc["error"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-p", "requestdistribution=hotspot"], "requestdistribution=hotspot"),
        (["-p", "mongodb.readPreference=closest"], "mongodb.readPreference"),
    ],
)
def test_locust_refuses_what_it_cannot_honour_before_starting(extra, message, tmp_path):
    res = run_runner(
        ["locust", "--phase", "run", "--workload", "a", "--uri", "mongodb://127.0.0.1:9/", *extra],
        tmp_path,
        timeout=60,
    )
    assert res.returncode == 1
    validate(res.doc)
    assert message in res.doc["error"]


def test_locust_honours_write_concern_and_upsert(ferretdb, tmp_path):
    uri = f"{ferretdb.uri}locust_opts"
    common = ["--workload", "a", "--uri", uri, "--threads", "2", "-p", "recordcount=50"]
    res = run_runner(
        ["locust", "--phase", "load", *common, "-p", "mongodb.writeConcern=majority"], tmp_path
    )
    assert res.returncode == 0, res.doc.get("error")
    # Loading the same keys again: duplicates with insertOne, replacements with upsert.
    again = run_runner(
        ["locust", "--phase", "load", *common, "-p", "mongodb.upsert=true"], tmp_path
    )
    assert again.returncode == 0, again.doc.get("error")
    assert again.doc["operations"]["INSERT"]["count"] == 50
    assert pymongo.MongoClient(ferretdb.uri)["locust_opts"]["usertable"].count_documents({}) == 50
    dup = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert dup.returncode == 1 and dup.doc["operations"]["INSERT"]["errors"] == 50
