"""Protocol tier: the Locust driver (own processes) against FerretDB, standalone + distributed."""

from __future__ import annotations

import http.client
import json

import pymongo
import pytest
from runner_support import peak_connections, run_runner, validate

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


def _scrape(port):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        text = r.read().decode()
    return {
        key: float(value)
        for key, _, value in (row.rpartition(" ") for row in text.splitlines())
        if key and not key.startswith("#")
    }


@pytest.mark.parametrize("workers", [0, 2], ids=["standalone", "master-and-workers"])
def test_locust_serves_the_same_live_metrics_as_ycsb(workers, ferretdb, tmp_path):
    """The live clients dashboard reads mongobench_client_*: a Locust run feeds them through
    YCSB-format status lines, with the workers' progress merged by the master."""
    import subprocess
    import sys
    import time

    from runner_support import runner_env

    db = f"locust_live_{workers}"
    common = ["--workload", "c", "--uri", f"{ferretdb.uri}{db}", "--threads", "2"]
    common += ["-p", "recordcount=200"]
    if workers:
        common += ["--workers", str(workers), "--master-port", str(free_port())]
    assert run_runner(["locust", "--phase", "load", *common], tmp_path).returncode == 0
    port = free_port()
    out = tmp_path / "live.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mongobench_runner", "locust", "--phase", "run", *common,
         "-p", "operationcount=0", "-p", "maxexecutiontime=8", "-p", "status.interval=1",
         "--metrics-port", str(port), "--metrics-addr", "127.0.0.1",
         "--output", f"file:{out}"],
        env=runner_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path,
    )  # fmt: skip
    live: dict[str, float] = {}
    progress = set()  # operation totals seen while the run goes on, one per status line
    deadline = time.monotonic() + 90
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            scraped = _scrape(port)
        except (OSError, http.client.HTTPException):  # not up yet, or closing as the run ends
            continue
        # A sample taken while the run goes on (the last scrapes may follow its end, when the
        # gauges say it stopped running).
        if scraped.get("mongobench_client_operations", 0) > 0:
            progress.add(scraped["mongobench_client_operations"])
            if scraped.get("mongobench_client_running") == 1.0:
                live = scraped
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert len(progress) >= 2, f"no progress while running: {progress}"
    info = 'mongobench_client_info{client="0",driver="locust",phase="run",workload="c"}'
    assert live, "no sample while running (mongobench_client_running 1 with operations)"
    assert live.get(info) == 1.0, live
    assert live["mongobench_client_operations"] > 0
    assert live['mongobench_client_operation_total{operation="READ"}'] > 0
    assert live['mongobench_client_latency_avg_microseconds{operation="READ"}'] > 0
    p99 = 'mongobench_client_interval_latency_microseconds{operation="READ",quantile="0.99"}'
    assert live[p99] > 0
    doc = json.loads(out.read_text())
    # Live totals never run ahead of what the final document counts.
    assert live["mongobench_client_operations"] <= doc["operationsTotal"]


def test_locust_paces_with_constant_throughput(ferretdb, tmp_path):
    """`target` caps the client's throughput (Locust's constant_throughput per user); only the
    cap is asserted, as a slow machine may stay under it."""
    common = ["--workload", "c", "--uri", f"{ferretdb.uri}locust_paced", "--threads", "4"]
    common += ["-p", "recordcount=200"]
    assert run_runner(["locust", "--phase", "load", *common], tmp_path).returncode == 0
    run = run_runner(
        ["locust", "--phase", "run", *common, "-p", "operationcount=120", "-p", "target=40"],
        tmp_path,
    )
    assert run.returncode == 0, run.doc["error"]
    assert run.doc["throughput"] <= 40 * 1.15, run.doc["throughput"]
    assert run.doc["operationsTotal"] == 120


@pytest.mark.parametrize("upsert", ["false", "true"])
def test_locust_load_batches_inserts_as_the_binding_does(upsert, ferretdb, tmp_path):
    db = f"locust_batch_{upsert}"
    load = run_runner(
        ["locust", "--phase", "load", "--workload", "a", "--uri", f"{ferretdb.uri}{db}",
         "--threads", "3", "-p", "recordcount=100", "-p", "batchsize=7",
         "-p", f"mongodb.upsert={upsert}"],
        tmp_path,
    )  # fmt: skip
    assert load.returncode == 0, load.doc["error"]
    validate(load.doc)
    insert = load.doc["operations"]["INSERT"]
    codes = insert["returnCodes"]
    # Every insert is one operation; the one that fills a batch writes it with insertMany.
    assert insert["count"] == 100 and insert["errors"] == 0
    assert codes["BATCHED_OK"] + codes["OK"] == 100
    assert 1 <= codes["OK"] <= 100 // 7
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 100  # the partial batches at the end were written too


def test_locust_delete_removes_the_documents_it_counts(ferretdb, tmp_path):
    """deleteproportion: DELETE operations that really remove records; a key already deleted
    answers NOT_FOUND (a failed DELETE, as the binding's delete), and the run fails on those
    unless --max-error-ratio admits them."""
    db = "locust_delete"
    common = [
        "--workload",
        "a",
        "--uri",
        f"{ferretdb.uri}{db}",
        "--threads",
        "4",
        "-p",
        "recordcount=200",
        "-p",
        "operationcount=150",
    ]
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    mix = ["-p", "readproportion=0.5", "-p", "updateproportion=0", "-p", "deleteproportion=0.5"]
    run = run_runner(
        ["locust", "--phase", "run", *common, *mix, "--max-error-ratio", "1"], tmp_path
    )
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    ops = run.doc["operations"]
    assert set(ops) == {"READ", "DELETE"}
    deleted = ops["DELETE"]["returnCodes"].get("OK", 0)
    attempted = sum(ops["DELETE"]["returnCodes"].values())
    assert 40 < attempted < 110  # about half of the 150 operations
    assert deleted > 0
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 200 - deleted
    # reads of deleted keys miss: NOT_FOUND, which fails a run that admits no error
    strict = run_runner(["locust", "--phase", "run", *common, *mix], tmp_path)
    assert strict.returncode == 1
    assert "NOT_FOUND" in strict.doc["error"]


def test_ycsb_refuses_a_delete_proportion_it_would_ignore(tmp_path):
    res = run_runner(
        [
            "ycsb",
            "--phase",
            "run",
            "--workload",
            "a",
            "--uri",
            "mongodb://127.0.0.1:9/",
            "-p",
            "deleteproportion=0.1",
        ],
        tmp_path,
    )
    assert res.returncode == 1
    validate(res.doc)
    assert "CoreWorkload has no delete" in res.doc["error"]


def test_locust_connection_per_thread_opens_a_connection_per_user(ferretdb, tmp_path):
    """mongobench.connectionPerThread (spec.clients.connectionPerThread): a MongoClient per
    user, seen as connections at the server; the document says which mode ran, and its pool."""
    db = "locust_conn"
    port = int(ferretdb.uri.rsplit(":", 1)[1].split("/")[0])
    common = ["--workload", "c", "--uri", f"{ferretdb.uri}{db}", "--threads", "6"]
    common += ["-p", "recordcount=50"]
    # paced: users rarely overlap, so a shared pool stays small
    paced = ["-p", "operationcount=0", "-p", "maxexecutiontime=3", "-p", "target=30"]
    assert run_runner(["locust", "--phase", "load", *common], tmp_path).returncode == 0
    shared, shared_peak = peak_connections(
        ["locust", "--phase", "run", *common, *paced], tmp_path, port
    )
    assert shared.returncode == 0, shared.doc["error"]
    assert shared.doc["properties"]["connections.mode"] == "shared"
    per_thread_args = [*common, *paced, "-p", "mongobench.connectionPerThread=true"]
    own, own_peak = peak_connections(["locust", "--phase", "run", *per_thread_args], tmp_path, port)
    assert own.returncode == 0, own.doc["error"]
    validate(own.doc)
    props = own.doc["properties"]
    assert (props["connections.mode"], props["connections.maxPoolSize"]) == ("perThread", "1")
    assert props["connections.mongoClients"] == "1 per thread"
    # each of the 6 users: its pooled connection and its client's monitor
    print(f"peak connections: shared {shared_peak}, per thread {own_peak}")
    assert own_peak >= 12 > shared_peak, (own_peak, shared_peak)
