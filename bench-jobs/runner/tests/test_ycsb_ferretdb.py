"""Protocol tier: the runner driving YCSB with the project's binding against FerretDB on loopback.

Every workload A-F is loaded and run with small counts, the document is checked against its
schema and against the data FerretDB holds; parallel clients split the key space and merge; a
server that dies mid-run yields a Failed document with a message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pymongo
import pytest
from runner_support import peak_connections, run_runner, runner_env, validate

from localplane.tools import binding_problem
from mongobench_results.merge import merge_documents
from mongobench_runner.ycsb import ycsb_home

pytestmark = pytest.mark.protocol

RECORDS = 400
OPS = 200
EXPECTED_OPS = {
    "a": {"READ", "UPDATE"},
    "b": {"READ", "UPDATE"},
    "c": {"READ"},
    "d": {"READ", "INSERT"},
    "e": {"SCAN", "INSERT"},
    "f": {"READ", "UPDATE", "READ-MODIFY-WRITE"},
}


@pytest.fixture(scope="module", autouse=True)
def _binding_built() -> None:
    if (problem := binding_problem()) is not None:  # not built, or older than its sources
        pytest.fail(problem)


def _check_latencies(doc: dict) -> None:
    for name, op in doc["operations"].items():
        lat = op["latencyUs"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p999"], name
        assert lat["p999"] <= lat["max"], name


@pytest.mark.parametrize("workload", sorted(EXPECTED_OPS))
def test_load_and_run_every_workload(workload, ferretdb, tmp_path):
    db = f"ycsb_{workload}"
    uri = f"{ferretdb.uri}{db}"
    common = [
        "--workload",
        workload,
        "--uri",
        uri,
        "--threads",
        "4",
        "-p",
        f"recordcount={RECORDS}",
        "-p",
        f"operationcount={OPS}",
        "-p",
        "maxscanlength=20",
        "--label",
        "suite=protocol",
    ]

    load = run_runner(["ycsb", "--phase", "load", *common, "-p", "batchsize=50"], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    validate(load.doc)
    assert load.doc["status"] == "Succeeded" and load.doc["error"] is None
    assert load.doc["operations"]["INSERT"]["count"] == RECORDS
    assert load.doc["operationsTotal"] == RECORDS
    assert load.doc["labels"] == {"suite": "protocol"}
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == RECORDS

    run = run_runner(["ycsb", "--phase", "run", *common], tmp_path)
    assert run.returncode == 0, run.doc["error"]
    doc = run.doc
    validate(doc)
    assert (doc["driver"], doc["phase"], doc["workload"]) == ("ycsb", "run", workload)
    assert doc["status"] == "Succeeded"
    assert set(doc["operations"]) == EXPECTED_OPS[workload]
    assert doc["operationsTotal"] == OPS
    # One denominator: the window measured from the binding's own operation timestamps.
    assert doc["window"]["source"] == "operations"
    assert doc["runtimeSeconds"] == doc["window"]["seconds"]
    assert doc["throughput"] == pytest.approx(OPS / doc["window"]["seconds"], abs=1e-3)
    # YCSB's own run time also counts JVM thread start-up and connecting: longer.
    assert doc["window"]["seconds"] < doc["driverRuntimeSeconds"]
    assert all(op["errors"] == 0 for op in doc["operations"].values())
    # the HDR logs agree with YCSB's own export (count, p99, max)
    assert not [w for w in doc["sanity"]["warnings"] if "HDR log gives" in w]
    assert doc["sanity"]["littlesLaw"]["expectedConcurrency"] == 4
    assert doc["clientCpu"]["totalSeconds"] > 0
    assert doc["properties"]["mongodb.url"] == uri
    _check_latencies(doc)
    if workload in ("d", "e"):
        inserted = doc["operations"]["INSERT"]["count"]
        assert inserted > 0
        assert coll.count_documents({}) == RECORDS + inserted


def test_parallel_clients_load_disjoint_ranges_and_merge_exactly(ferretdb, tmp_path):
    """Two client processes meet at a start barrier (a folder here; a ConfigMap in a cluster),
    the second started 2 s after the first: both measured windows still start together."""
    db = "ycsb_parallel"
    out = [tmp_path / f"client-{i}.json" for i in range(2)]
    barrier = tmp_path / "barrier"
    procs = []
    for i in range(2):
        if i:
            time.sleep(2.0)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mongobench_runner",
                    "ycsb",
                    "--phase",
                    "load",
                    "--workload",
                    "c",
                    "--uri",
                    f"{ferretdb.uri}{db}",
                    "--threads",
                    "2",
                    "-p",
                    f"recordcount={RECORDS}",
                    "--client-index",
                    str(i),
                    "--clients",
                    "2",
                    "--output",
                    f"file:{out[i]}",
                    "--barrier",
                    f"dir:{barrier}",
                    "--barrier-timeout",
                    "60",
                ],
                env=runner_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
    docs = [json.loads(o.read_text()) for o in out]
    assert [d["properties"]["insertstart"] for d in docs] == ["0", str(RECORDS // 2)]
    assert pymongo.MongoClient(ferretdb.uri)[db]["usertable"].count_documents({}) == RECORDS
    merged = merge_documents(docs)
    validate(merged)
    assert merged["operations"]["INSERT"]["count"] == RECORDS
    assert merged["operationsTotal"] == RECORDS
    assert merged["client"]["threads"] == 4
    # Started together: the first operations within a fraction of a second, not 2 s apart.
    assert merged["startSkewSeconds"] < 0.5, merged["clients"]
    gates = [d["startGate"] for d in docs]
    assert gates[0]["startAt"] == gates[1]["startAt"]
    assert gates[0]["clientsReadyAt"] == gates[1]["clientsReadyAt"]
    assert merged["throughput"] == pytest.approx(RECORDS / merged["window"]["seconds"], abs=1e-3)
    # the CLI merge gives the same document
    cli = subprocess.run(
        [sys.executable, "-m", "mongobench_runner", "merge", *map(str, out)],
        capture_output=True,
        text=True,
        env=runner_env(),
        check=True,
    )
    assert json.loads(cli.stdout)["operations"] == merged["operations"]


def _scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        text = r.read().decode()
    out = {}
    for row in text.splitlines():
        if row and not row.startswith("#"):
            key, _, value = row.rpartition(" ")
            out[key] = float(value)
    return out


def test_server_down_mid_run_gives_a_failed_document_with_live_metrics_before(tmp_path):
    from localplane.ferretdb import start_ferretdb
    from localplane.net import free_port

    server = start_ferretdb(tmp_path / "fdb")
    try:
        uri = f"{server.uri}ycsb_down?serverSelectionTimeoutMS=500&connectTimeoutMS=500"
        common = ["--workload", "c", "--uri", uri, "--threads", "2", "-p", "recordcount=200"]
        assert run_runner(["ycsb", "--phase", "load", *common], tmp_path).returncode == 0
        port = free_port()
        term_log = tmp_path / "termination-log"
        term_log.touch()
        out = tmp_path / "down.json"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mongobench_runner",
                "ycsb",
                "--phase",
                "run",
                *common,
                "-p",
                "operationcount=10000000",
                "-p",
                "maxexecutiontime=12",
                "-p",
                "status.interval=1",
                "--metrics-port",
                str(port),
                "--metrics-addr",
                "127.0.0.1",
                "--termination-log",
                str(term_log),
                "--output",
                f"file:{out}",
            ],
            env=runner_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        # live metrics show progress before the server goes away
        deadline = time.monotonic() + 60
        seen = 0.0
        while time.monotonic() < deadline and seen <= 0:
            time.sleep(0.5)
            try:
                seen = _scrape(port).get("mongobench_client_operations", 0.0)
            except OSError:
                continue
        assert seen > 0, "no live progress on the metrics port"
        server.stop()
        _, err = proc.communicate(timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 1, err[-2000:]
    doc = json.loads(out.read_text())
    validate(doc)
    assert doc["status"] == "Failed"
    assert "operations failed" in doc["error"] and "READ ERROR=" in doc["error"]
    read = doc["operations"]["READ"]
    assert read["count"] > 0  # what succeeded before the crash is kept
    assert read["errors"] > 0 and read["returnCodes"]["ERROR"] == read["errors"]
    assert read["failed"]["count"] == read["errors"]
    assert term_log.read_text().startswith("Failed: ycsb run workload c")
    assert "Failed" in err.splitlines()[-1]


def test_unreachable_server_fails_fast_with_the_binding_message(tmp_path):
    from localplane.net import free_port

    uri = f"mongodb://127.0.0.1:{free_port()}/x?serverSelectionTimeoutMS=300"
    res = run_runner(
        ["ycsb", "--phase", "run", "--workload", "a", "--uri", uri, "-p", "operationcount=10"],
        tmp_path,
    )
    assert res.returncode == 1
    validate(res.doc)
    assert res.doc["status"] == "Failed"
    assert "binding: init failed: MongoTimeoutException" in res.doc["error"]


def test_bad_arguments_still_produce_a_failed_document(tmp_path):
    res = run_runner(
        ["ycsb", "--phase", "run", "--workload", "zz", "--uri", "mongodb://x/"], tmp_path
    )
    assert res.returncode == 1
    validate(res.doc)
    assert "workload 'zz'" in res.doc["error"]


def test_missing_binding_is_a_clear_failure(tmp_path):
    res = run_runner(
        [
            "ycsb",
            "--phase",
            "run",
            "--workload",
            "a",
            "--uri",
            "mongodb://x/",
            "--ycsb-home",
            str(tmp_path / "nowhere"),
        ],
        tmp_path,
    )
    assert res.returncode == 1
    assert "build the binding" in res.doc["error"]


def test_uri_password_never_reaches_the_document(ferretdb, tmp_path):
    uri = ferretdb.uri.replace("mongodb://", "mongodb://bench:hunter2@") + "x?authSource=admin"
    res = run_runner(
        ["ycsb", "--phase", "run", "--workload", "c", "--uri", uri, "-p", "operationcount=5"],
        tmp_path,
    )
    assert "hunter2" not in json.dumps(res.doc)
    assert "hunter2" not in res.stderr
    assert Path(tmp_path).exists()


SLOW_INIT = """
package slow;
public class SlowInitClient extends io.mongobench.ycsb.MongoDbClient {
  @Override
  public void init() throws site.ycsb.DBException {
    try { Thread.sleep(Long.getLong("slow.init.ms", 0L)); } catch (InterruptedException e) {
      throw new site.ycsb.DBException(e);
    }
    super.init();
  }
}
"""


def _slow_init_classes(tmp_path: Path) -> Path:
    """SLOW_INIT compiled against the binding: its classes folder."""
    src = tmp_path / "src" / "slow"
    src.mkdir(parents=True)
    (src / "SlowInitClient.java").write_text(SLOW_INIT)
    classes = tmp_path / "classes"
    subprocess.run(
        [
            "javac",
            "-d",
            str(classes),
            "-cp",
            f"{ycsb_home() / 'lib'}/*",
            str(src / "SlowInitClient.java"),
        ],
        check=True,
        capture_output=True,
    )
    return classes


def test_a_slow_init_is_outside_the_measured_window(ferretdb, tmp_path):
    """The binding's init() made slow by a known 1.5 s (a subclass compiled here): YCSB's own
    run time includes it, the reported window does not."""
    import argparse

    from mongobench_results.document import epoch_us, utc_now
    from mongobench_runner.__main__ import _properties, ycsb_document
    from mongobench_runner.ycsb import YcsbProcess

    classes = _slow_init_classes(tmp_path)
    uri = f"{ferretdb.uri}ycsb_slow"
    args = argparse.Namespace(
        workload="c", property=[f"recordcount={RECORDS}", f"operationcount={OPS}"], uri=uri,
        threads=2, phase="load", client_index=0, clients=1,
    )  # fmt: skip
    props, shown = _properties(args)
    start = utc_now()
    outcome = YcsbProcess(
        phase="load",
        props=props,
        java_opts=["-Dslow.init.ms=1500"],
        binding_class="slow.SlowInitClient",
        extra_classpath=(classes,),
    ).run()
    doc = ycsb_document(
        args, props=props, shown=shown, outcome=outcome, start=start, end=utc_now(), labels={}
    )
    validate(doc)
    assert doc["status"] == "Succeeded", doc["error"]
    assert doc["window"]["source"] == "operations"
    first_op = epoch_us(doc["window"]["start"])
    assert first_op - int(start.timestamp() * 1e6) >= 1_500_000
    assert doc["driverRuntimeSeconds"] - doc["window"]["seconds"] >= 1.4
    assert doc["throughput"] == pytest.approx(RECORDS / doc["window"]["seconds"], abs=1e-3)


def test_a_duration_only_run_runs_for_its_duration(ferretdb, tmp_path):
    """What the operator sends for `run.durationSeconds` alone: operationcount=0 (no limit) and
    maxexecutiontime. YCSB 0.17 would start no thread for a count of 0; the runner keeps them."""
    uri = f"{ferretdb.uri}ycsb_duration"
    common = ["--workload", "a", "--uri", uri, "--threads", "2", "-p", f"recordcount={RECORDS}"]
    assert run_runner(["ycsb", "--phase", "load", *common], tmp_path).returncode == 0
    res = run_runner(
        ["ycsb", "--phase", "run", *common, "-p", "operationcount=0", "-p", "maxexecutiontime=3"],
        tmp_path,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    doc = res.doc
    assert doc["status"] == "Succeeded" and doc["operationsTotal"] > 0
    assert 1.5 <= doc["runtimeSeconds"] <= 3.5  # ended by maxexecutiontime, not by the count
    assert doc["properties"]["operationcount"] == "0"  # the document shows what was asked


def test_ycsb_connection_per_thread_opens_the_pool_for_every_thread(ferretdb, tmp_path):
    """The binding has no client per thread: mongobench.connectionPerThread sizes its one
    pool to the threads (maxPoolSize = minPoolSize = threadcount), all open at the server."""
    port = int(ferretdb.uri.rsplit(":", 1)[1].split("/")[0])
    common = ["--workload", "c", "--uri", f"{ferretdb.uri}ycsb_conn", "--threads", "6"]
    common += ["-p", "recordcount=50"]
    paced = ["-p", "operationcount=0", "-p", "maxexecutiontime=3", "-p", "target=20"]
    assert run_runner(["ycsb", "--phase", "load", *common], tmp_path).returncode == 0
    args = ["ycsb", "--phase", "run", *common, *paced, "-p", "mongobench.connectionPerThread=true"]
    res, peak = peak_connections(args, tmp_path, port)
    assert res.returncode == 0, res.doc["error"]
    validate(res.doc)
    props = res.doc["properties"]
    assert (props["connections.mode"], props["connections.maxPoolSize"]) == ("perThread", "6")
    assert "minPoolSize=6" in props["mongodb.url"]
    print(f"peak connections: {peak}")
    assert peak >= 6


def test_a_slow_start_behind_the_gate_still_runs_the_whole_duration(ferretdb, tmp_path):
    """Two clients of a 3 s step, the second started 4 s after the first: the first waits at
    the start gate longer than the whole duration. YCSB's own maxexecutiontime counts from its
    threads' start and would end it before its first operation; the binding's clock counts from
    the common start instant, so both clients run the full 3 s from it and end together."""
    from mongobench_results.document import epoch_us

    db = "ycsb_slow_start"
    duration = 3
    common = ["--workload", "c", "--uri", f"{ferretdb.uri}{db}", "--threads", "2"]
    common += ["-p", f"recordcount={RECORDS}"]
    assert run_runner(["ycsb", "--phase", "load", *common], tmp_path).returncode == 0
    out = [tmp_path / f"client-{i}.json" for i in range(2)]
    procs = []
    for i in range(2):
        if i:
            # 4 s after the first client is READY (its entry in the barrier folder), not after
            # its process started: a loaded machine took seconds to start its JVM, and the
            # first then waited less than the step lasts.
            ready = tmp_path / "barrier" / "c0"
            deadline = time.monotonic() + 120
            while not ready.exists() and procs[0].poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert ready.exists(), "the first client never became ready"
            time.sleep(4.0)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable, "-m", "mongobench_runner", "ycsb", "--phase", "run",
                    *common, "-p", "operationcount=0", "-p", f"maxexecutiontime={duration}",
                    "--client-index", str(i), "--clients", "2", "--output", f"file:{out[i]}",
                    "--barrier", f"dir:{tmp_path / 'barrier'}", "--barrier-timeout", "60",
                ],
                env=runner_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
    docs = [json.loads(o.read_text()) for o in out]
    for doc in docs:
        validate(doc)
    first = docs[0]
    # The first client waited at the gate longer than the step lasts, and still measured.
    assert first["startGate"]["waitedSeconds"] > duration, first["startGate"]
    start_us = epoch_us(first["startGate"]["startAt"])
    end_us = start_us + duration * 1_000_000
    for doc in docs:
        assert doc["status"] == "Succeeded", doc["error"]
        assert doc["operationsTotal"] > 0
        assert doc["properties"]["mongobench.durationseconds"] == str(duration)
        assert doc["properties"]["maxexecutiontime"] == str(duration)  # as asked
        window = doc["window"]
        assert window["source"] == "operations"
        # From the common start to its end: its operations ran over the whole duration.
        assert 0 <= epoch_us(window["start"]) - start_us < 500_000, window
        assert -300_000 < epoch_us(window["end"]) - end_us < 500_000, window
        assert doc["throughput"] == pytest.approx(
            doc["operationsTotal"] / window["seconds"], abs=1e-3
        )
    # YCSB's own run time counted the wait at the gate: more than the window by that wait.
    assert first["driverRuntimeSeconds"] > first["window"]["seconds"] + duration
    merged = merge_documents(docs)
    validate(merged)
    for doc in docs:
        print(
            f"client {doc['client']['index']}: waited {doc['startGate']['waitedSeconds']} s, "
            f"window {doc['window']['seconds']} s, YCSB RunTime {doc['driverRuntimeSeconds']} s, "
            f"{doc['operationsTotal']} ops"
        )
    assert merged["startSkewSeconds"] < 0.5, merged["clients"]
    assert duration - 0.3 < merged["window"]["seconds"] < duration + 0.5
    assert merged["throughput"] == pytest.approx(
        merged["operationsTotal"] / merged["window"]["seconds"], abs=1e-3
    )


def test_a_slow_init_without_the_gate_still_runs_the_whole_duration(ferretdb, tmp_path):
    """No gate: every thread's init() takes 4 s, longer than the 3 s duration. YCSB's own
    maxexecutiontime would stop the run before its first operation; the binding's clock
    counts from each thread's first operation."""
    import argparse

    from mongobench_results.document import utc_now
    from mongobench_runner.__main__ import _properties, ycsb_document
    from mongobench_runner.ycsb import YcsbProcess

    classes = _slow_init_classes(tmp_path)
    uri = f"{ferretdb.uri}ycsb_slow_run"
    load = ["ycsb", "--phase", "load", "--workload", "c", "--uri", uri, "-p", "recordcount=200"]
    assert run_runner(load, tmp_path).returncode == 0
    args = argparse.Namespace(
        workload="c", property=["recordcount=200", "operationcount=0", "maxexecutiontime=3"],
        uri=uri, threads=2, phase="run", client_index=0, clients=1, timeout=None,
        max_error_ratio=0.0,
    )  # fmt: skip
    props, shown = _properties(args)
    start = utc_now()
    outcome = YcsbProcess(
        phase="run",
        props=props,
        java_opts=["-Dslow.init.ms=4000"],
        binding_class="slow.SlowInitClient",
        extra_classpath=(classes,),
    ).run()
    doc = ycsb_document(
        args, props=props, shown=shown, outcome=outcome, start=start, end=utc_now(), labels={}
    )
    validate(doc)
    assert doc["status"] == "Succeeded", doc["error"]
    assert doc["operationsTotal"] > 0
    print(
        f"window {doc['window']['seconds']} s, YCSB RunTime {doc['driverRuntimeSeconds']} s, "
        f"{doc['operationsTotal']} ops"
    )
    assert 2.9 < doc["window"]["seconds"] < 3.5, doc["window"]
    assert doc["driverRuntimeSeconds"] > 4 + 2.9  # YCSB's timer would have counted the init


def test_permutation_reads_run_through_the_binding_split_over_two_clients(ferretdb, tmp_path):
    """requestdistribution=permutation is the binding's, not YCSB core's (which refuses it): two
    client pods of three threads read the 400 loaded records, each from its own slice of the
    order (`mongobench.operationstart`), every read a hit. That each key is read exactly once is
    the binding's unit test (PartitionedInsertsWorkloadTest)."""
    uri = f"{ferretdb.uri}ycsb_permutation"
    common = ["--workload", "c", "--uri", uri, "--threads", "3", "-p", f"recordcount={RECORDS}"]
    assert run_runner(["ycsb", "--phase", "load", *common], tmp_path).returncode == 0
    starts, reads = [], 0
    for client in ("0", "1"):
        res = run_runner(
            ["ycsb", "--phase", "run", *common, "-p", f"operationcount={RECORDS}",
             "-p", "requestdistribution=permutation", "--client-index", client, "--clients", "2"],
            tmp_path,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
        assert res.doc["operations"]["READ"]["returnCodes"] == {"OK": RECORDS // 2}
        starts.append(res.doc["properties"]["mongobench.operationstart"])
        reads += res.doc["operations"]["READ"]["count"]
    assert starts == ["0", str(RECORDS // 2)] and reads == RECORDS
