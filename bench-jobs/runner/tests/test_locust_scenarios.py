"""Protocol tier: user Locust scenarios (MongoScenario files) run by the runner against FerretDB.

The study's three shipped scenarios (bench-jobs/locust/scenarios) load and run standalone and
with a master and local workers, from a folder of their own as a ConfigMap mount gives them;
their documents are valid against the result schema and agree with the data. A scenario's own
errors end in a Failed document that names them.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pymongo
import pytest
import yaml
from runner_support import BENCH_JOBS, run_runner, runner_env, validate

from localplane.net import free_port

pytestmark = pytest.mark.protocol

SCENARIOS = BENCH_JOBS / "locust" / "scenarios"
STUDIES = BENCH_JOBS.parent / "manifests" / "studies"
SAMPLE = STUDIES / "3-sharded-automation" / "full" / "experiment.yaml"


@pytest.mark.unit
def test_the_study_sample_runs_the_shipped_scenarios_from_the_kustomized_configmap():
    kustomization = yaml.safe_load((SCENARIOS / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert sorted(generator["files"]) == sorted(p.name for p in SCENARIOS.glob("*.py"))
    run = yaml.safe_load(SAMPLE.read_text())["spec"]["run"]
    refs = [run["load"]["scenario"]] + [w["scenario"] for w in run["workloads"]]
    assert {r["configMapRef"]["name"] for r in refs} == {generator["name"]}
    assert [r["configMapRef"]["key"] for r in refs] == [
        "pitches_find.py", "pitches_find.py", "pitches_aggregation.py",
    ]  # fmt: skip


@pytest.fixture
def mounted(tmp_path: Path) -> Path:
    """The shipped scenarios in a folder away from the driver, as the ConfigMap mount has them
    (mongobench_scenario then comes from the runner's path, not from beside the file)."""
    folder = tmp_path / "scenario"
    folder.mkdir()
    for path in SCENARIOS.glob("*.py"):
        shutil.copy(path, folder / path.name)
    return folder


def _common(ferretdb, db: str, scenario: Path, *extra: str) -> list[str]:
    return [
        "--scenario",
        str(scenario),
        "--uri",
        f"{ferretdb.uri}{db}",
        "--threads",
        "3",
        "-p",
        "recordcount=240",
        "-p",
        "batchsize=20",
        "-p",
        "orders.customers=40",
        *extra,
    ]


@pytest.mark.parametrize(
    ("scenario", "operation"),
    [
        ("bulk_insert.py", "INSERT"),
        ("scatter_gather_find.py", "FIND"),
        ("aggregation.py", "AGGREGATE"),
    ],
)
def test_a_shipped_scenario_loads_its_orders_and_runs(
    scenario, operation, ferretdb, mounted, tmp_path
):
    db = f"scn_{Path(scenario).stem}"
    common = _common(ferretdb, db, mounted / scenario)
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    validate(load.doc)
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 240
    order = coll.find_one({})
    assert {"customer", "region", "status", "amount", "quantity", "created", "tags"} <= set(order)
    codes = load.doc["operations"]["INSERT"]["returnCodes"]
    assert codes["OK"] + codes["BATCHED_OK"] == 240  # insertMany batches of 20, as YCSB's load

    run = run_runner(["locust", "--phase", "run", *common, "-p", "operationcount=60"], tmp_path)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    doc = run.doc
    assert (doc["driver"], doc["status"], doc["operationsTotal"]) == ("locust", "Succeeded", 60)
    assert doc["workload"] == Path(scenario).stem
    assert set(doc["operations"]) == {operation}
    assert doc["properties"]["scenario"] == scenario
    digest = hashlib.sha256((mounted / scenario).read_bytes()).hexdigest()
    assert doc["properties"]["scenario.sha256"] == digest
    assert doc["sanity"]["littlesLaw"]["expectedConcurrency"] == 3
    assert doc["window"]["source"] == "operations" and doc["window"]["seconds"] > 0
    if operation == "INSERT":
        assert coll.count_documents({}) == 240 + 60
    else:
        assert doc["operations"][operation]["count"] == 60
        assert coll.count_documents({}) == 240


@pytest.mark.parametrize(
    ("scenario", "operation"),
    [("pitches_find.py", "FIND"), ("pitches_aggregation.py", "AGGREGATE")],
)
def test_study_3s_pitches_load_in_pitch_id_order_and_one_timed_query_runs(
    scenario, operation, ferretdb, mounted, tmp_path
):
    """Study 3's shapes: one importer writes the pitches (61 columns) with pitchID increasing
    in insert order (what a ranged key on it sends to one shard); one query from one thread
    is the run, its window that query's time."""
    db = f"scn_{Path(scenario).stem}"
    common = [
        "--scenario", str(mounted / scenario), "--uri", f"{ferretdb.uri}{db}", "--threads", "1",
        "-p", "recordcount=240", "-p", "batchsize=20",
    ]  # fmt: skip
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    pitches = list(coll.find({}))  # FerretDB (SQLite) answers in insertion order
    assert [p["pitchID"] for p in pitches] == list(range(240))  # inserted in pitchID order
    assert len(set(pitches[0]) - {"_id"}) == 61 and "start_speed" in pitches[0]

    run = run_runner(["locust", "--phase", "run", *common, "-p", "operationcount=1"], tmp_path)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert run.doc["operationsTotal"] == 1 and set(run.doc["operations"]) == {operation}
    assert run.doc["operations"][operation]["returnCodes"] == {"OK": 1}  # an answer, not empty
    assert run.doc["window"]["seconds"] > 0  # the query's run time


CRUD = [
    f"{op}proportion={p}"
    for op, p in (("read", 0.4), ("update", 0.2), ("insert", 0.2), ("delete", 0.2))
]


@pytest.mark.parametrize(
    ("scenario", "mix", "operations"),
    [
        ("small_documents.py", [], {"READ"}),
        ("crud_mix.py", CRUD, {"READ", "UPDATE", "INSERT", "DELETE"}),
    ],
)
def test_a_studys_own_client_loads_and_runs_without_a_miss(
    scenario, mix, operations, ferretdb, mounted, tmp_path
):
    """The write-concern study's single inserts then reads, and the monitoring study's mix with
    deletes: no read, update or delete misses (a miss fails the run: --max-error-ratio 0)."""
    db = f"scn_{Path(scenario).stem}"
    common = ["--scenario", str(mounted / scenario), "--uri", f"{ferretdb.uri}{db}"]
    common += ["--threads", "3", "-p", "recordcount=120"]
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 120
    if scenario == "small_documents.py":  # one insertOne a document, small ones
        assert load.doc["operations"]["INSERT"]["returnCodes"] == {"OK": 120}
        assert set(coll.find_one({})) == {"_id", "n", "text"}

    props = [arg for p in mix for arg in ("-p", p)]
    run = run_runner(
        ["locust", "--phase", "run", *common, *props, "-p", "operationcount=150"], tmp_path
    )
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    ops = run.doc["operations"]
    assert set(ops) == operations
    assert all(set(op["returnCodes"]) == {"OK"} for op in ops.values())
    inserted = ops.get("INSERT", {}).get("count", 0)
    deleted = ops.get("DELETE", {}).get("count", 0)
    assert coll.count_documents({}) == 120 + inserted - deleted


def test_a_scenario_runs_with_a_master_and_workers(ferretdb, mounted, tmp_path):
    """Distributed as the built-in driver: the budget splits over the workers, inserted keys
    never collide, the master merges the workers' histograms."""
    common = _common(
        ferretdb,
        "scn_dist",
        mounted / "bulk_insert.py",
        "--workers",
        "2",
        "--master-port",
        str(free_port()),
        "--timeout",
        "120",
    )
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    run = run_runner(["locust", "--phase", "run", *common, "-p", "operationcount=90"], tmp_path)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert run.doc["properties"]["locust.workers"] == "2"
    assert run.doc["operationsTotal"] == 90
    assert run.doc["operations"]["INSERT"]["count"] == 90
    coll = pymongo.MongoClient(ferretdb.uri)["scn_dist"]["usertable"]
    assert coll.count_documents({}) == 240 + 90


def test_a_scenario_serves_the_same_live_metrics(ferretdb, mounted, tmp_path):
    common = _common(ferretdb, "scn_live", mounted / "aggregation.py")
    assert run_runner(["locust", "--phase", "load", *common], tmp_path).returncode == 0
    port = free_port()
    out = tmp_path / "live.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mongobench_runner", "locust", "--phase", "run", *common,
         "-p", "operationcount=0", "-p", "maxexecutiontime=4", "-p", "status.interval=1",
         "--metrics-port", str(port), "--metrics-addr", "127.0.0.1", "--output", f"file:{out}"],
        env=runner_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path,
    )  # fmt: skip
    seen = 0.0
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            continue
        for row in text.splitlines():
            if row.startswith('mongobench_client_operation_total{operation="AGGREGATE"}'):
                seen = max(seen, float(row.rpartition(" ")[2]))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert seen > 0, "no live AGGREGATE operations"


def test_permutation_reads_each_loaded_key_once_over_two_clients_and_their_workers(
    ferretdb, mounted, tmp_path
):
    """requestdistribution=permutation, as study 2 reads: the runner splits the permutation over
    two client pods (--client-index) of two Locust workers and three users each. A scenario
    records every key it is given as an _id of its own collection, so a key given twice is a
    duplicate-key error (the run fails: --max-error-ratio 0); then the study's own client reads
    the same way without a miss."""
    db = "scn_perm"
    load = ["--scenario", str(mounted / "small_documents.py"), "--uri", f"{ferretdb.uri}{db}"]
    load += ["--threads", "3", "-p", "recordcount=90"]
    assert run_runner(["locust", "--phase", "load", *load], tmp_path).returncode == 0
    recorder = tmp_path / "recorder.py"
    recorder.write_text(
        "from mongobench_scenario import MongoScenario\n\n"
        "class Recorder(MongoScenario):\n"
        "    def run_operation(self):\n"
        "        self.insert({'_id': self.existing_key()})\n"
    )
    perm = ["-p", "recordcount=90", "-p", "operationcount=90"]
    perm += ["-p", "requestdistribution=permutation", "-p", "table=seen"]
    for client in ("0", "1"):
        res = run_runner(
            ["locust", "--phase", "run", "--scenario", str(recorder), "--uri",
             f"{ferretdb.uri}{db}", "--threads", "3", "--workers", "2", "--master-port",
             str(free_port()), "--timeout", "120", "--client-index", client, "--clients", "2",
             *perm],
            tmp_path,
        )  # fmt: skip
        assert res.returncode == 0, res.doc["error"]
        assert res.doc["operations"]["INSERT"]["returnCodes"] == {"OK": 45}
    seen = pymongo.MongoClient(ferretdb.uri)[db]["seen"]
    assert sorted(d["_id"] for d in seen.find({})) == list(range(90))

    reads = run_runner(
        ["locust", "--phase", "run", *load, "-p", "operationcount=90",
         "-p", "requestdistribution=permutation"],
        tmp_path,
    )  # fmt: skip
    assert reads.returncode == 0, reads.doc["error"]
    assert reads.doc["operations"]["READ"]["returnCodes"] == {"OK": 90}


def test_a_scenarios_own_errors_fail_the_run_and_are_named(ferretdb, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(
        "from mongobench_scenario import MongoScenario\n\n"
        "class Broken(MongoScenario):\n"
        "    def run_operation(self):\n"
        "        with self.measure('FIND'):\n"
        "            raise ValueError('bad filter')\n"
        "        raise KeyError('no such field')\n"
    )
    res = run_runner(
        ["locust", "--phase", "run", "--scenario", str(broken), "--uri",
         f"{ferretdb.uri}scn_broken", "--threads", "2", "-p", "operationcount=6"],
        tmp_path,
    )  # fmt: skip
    assert res.returncode == 1
    validate(res.doc)
    ops = res.doc["operations"]
    # An error inside measure() is the operation's; one outside any is the scenario's.
    assert ops["FIND"]["returnCodes"] == {"ERROR": 6}
    assert ops["SCENARIO"]["returnCodes"] == {"ERROR": 6}
    assert "FIND ERROR=6" in res.doc["error"] and "SCENARIO ERROR=6" in res.doc["error"]
    assert "first: FIND: ValueError: bad filter" in res.doc["error"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "from locust import task\n"
            "from mongobench_scenario import MongoScenario\n\n"
            "class Tasks(MongoScenario):\n"
            "    @task\n"
            "    def find(self):\n"
            "        pass\n",
            "not @task methods (find)",
        ),
        (None, "no such file"),
    ],
    ids=["locust-task", "missing-file"],
)
def test_a_scenario_the_base_cannot_run_is_refused_with_a_message(source, message, tmp_path):
    path = tmp_path / "scn.py"
    if source is not None:
        path.write_text(source)
    res = run_runner(
        ["locust", "--phase", "run", "--scenario", str(path), "--uri", "mongodb://127.0.0.1:9/",
         "-p", "operationcount=1", "--timeout", "60"],
        tmp_path,
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 1
    validate(res.doc)
    assert message in res.doc["error"]


def _measurements(ferretdb, db: str, scenario: Path, *extra: str) -> list[str]:
    """120 measurements of 4 sensors on 2 hosts, one a minute: 30 samples each, one hour."""
    return [
        "--scenario", str(scenario), "--uri", f"{ferretdb.uri}{db}", "--threads", "1",
        "-p", "recordcount=120", "-p", "measurements.sensors=4", "-p", "measurements.hosts=2",
        *extra,
    ]  # fmt: skip


@pytest.mark.parametrize("size", [0, 5], ids=["document-each", "buckets-of-5"])
def test_the_monitoring_studys_writes_go_one_document_each_or_into_bounded_buckets(
    size, ferretdb, mounted, tmp_path
):
    """Study 4's bucketed write test against FerretDB: 40 new measurements (10 of each sensor,
    minutes 30-39 of hour 0) are 40 documents, or 2 buckets of 5 per sensor and hour."""
    db = f"scn_buckets_{size}"
    common = _measurements(ferretdb, db, mounted / "bucketed_writes.py")
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    coll = pymongo.MongoClient(ferretdb.uri)[db]["usertable"]
    assert coll.count_documents({}) == 120
    assert set(coll.find_one({})) == {"_id", "sensor", "host", "metric", "ts", "value"}
    run = run_runner(
        ["locust", "--phase", "run", *common, "-p", "operationcount=40",
         "-p", f"bucketsize={size}"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert run.doc["operations"]["WRITE"]["returnCodes"] == {"OK": 40}
    buckets = list(coll.find({"count": {"$exists": True}}))
    if not size:
        assert (coll.count_documents({}), buckets) == (160, [])
        return
    assert coll.count_documents({}) == 120 + 8
    assert sorted((b["sensor"], b["count"], len(b["measurements"])) for b in buckets) == [
        (f"s{s:04d}", 5, 5) for s in range(4) for _ in range(2)
    ]
    assert {b["hour"].hour for b in buckets} == {0}
    minutes = sorted(
        m["ts"].minute for b in buckets if b["sensor"] == "s0001" for m in b["measurements"]
    )
    assert minutes == list(range(30, 40))


def test_the_monitoring_studys_four_queries_each_answer_from_the_loaded_measurements(
    ferretdb, mounted, tmp_path
):
    """Study 4's queries against FerretDB: each workload's query, named by its `query`
    property, finds loaded measurements every time (an empty answer would be NOT_FOUND); an
    unknown query fails the run naming the known ones."""
    db = "scn_queries"
    common = _measurements(ferretdb, db, mounted / "sensor_queries.py")
    load = run_runner(["locust", "--phase", "load", *common], tmp_path)
    assert load.returncode == 0, load.doc["error"]
    for query in ("by-sensor", "time-range", "aggregation", "count"):
        run = run_runner(
            ["locust", "--phase", "run", *common, "-p", "operationcount=5", "-p", f"query={query}"],
            tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.doc["error"]
        op = query.upper().replace("-", "_")
        assert run.doc["operations"][op]["returnCodes"] == {"OK": 5}, query
    bad = run_runner(
        ["locust", "--phase", "run", *common, "-p", "operationcount=1", "-p", "query=median"],
        tmp_path,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "query must be one of by-sensor, time-range, aggregation, count" in bad.doc["error"]
