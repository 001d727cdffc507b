"""Cluster tier: the four studies of manifests/studies/, reduced, run on the local plane, each
ending with `mongobench report` holding the figure that study published.

What is real: the kustomize builds of the studies' `reduced/` overlays as shipped (the test adds
only the lenient validity policy: on this plane the clients share the database's 2 cores, so
the default policy would judge every trial client-bound), the apiserver, controller-manager,
one operator process watching the four studies' namespaces, the benchmark clients (the runner
with YCSB, Locust's YCSB driver and the studies' Locust scenarios from their ConfigMap, executed
by the harness kubelet), Prometheus, the `mongobench` command. What stands in: one FerretDB per
study as the data path, and one wire model per study (localplane.mongomodel) for mongod's
replica-set and sharding state, members registered up front under the names the experiments
give their clusters (<experiment>-k<group>); the shard distribution is the model's, from the
documents it is told were loaded.

The four studies run at once (one operator, four namespaces), so the file costs about as much as
its longest study.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pymongo
import pytest
import yaml
from kubernetes import client as k8s
from test_benchmarkexperiment import Watch, register_sharded, why
from test_benchmarkrun import GROUP, VERSION, get
from test_cli import MONGOBENCH
from test_run_queue import DropsReachFerretDB
from test_standalone import register_standalone

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.pytest_plugin import RESTRICTED_LABELS, S3_BUCKET
from localplane.s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Server, start_s3server
from localplane.tools import REPO
from mongobench_archive import ArchiveError, open_root

pytestmark = pytest.mark.cluster

STUDIES = REPO / "manifests" / "studies"
LOADED = 200  # what the reduced studies load; the models report it as the documents loaded
ENDED = ("Succeeded", "Failed")


STANDALONE = -1  # Study.clusters' value for a Standalone topology (one mongod, no replica set)


@dataclass(frozen=True)
class Study:
    folder: str
    namespace: str
    kind: str  # what ends the study: a BenchmarkExperiment, or a BenchmarkRun
    name: str
    clusters: dict[str, int]  # cluster name -> shards (0: a replica set, STANDALONE: one mongod)
    # Clusters whose runs overlap (study 4): a FerretDB and a wire model each, every drop the
    # model receives carried out on its FerretDB; else one of each for the study, cleared by
    # its Watch as each run appears (its clusters' runs take turns).
    data_per_cluster: bool = False
    also: tuple[tuple[str, str], ...] = ()  # further (kind, name) the study ends with


STUDY_LIST = (
    Study(
        "1-aws-vs-openstack", "study-1", "benchmarkexperiments", "aws-vs-openstack",
        {"aws-vs-openstack-k0": 1, "aws-vs-openstack-k1": 2},
    ),
    Study(
        "2-cloud-write-concerns", "study-2", "benchmarkexperiments", "cloud-write-concerns",
        {"cloud-write-concerns-k0": STANDALONE},
    ),
    Study(
        # One factor at a time: the baseline (k0), 2 shards (k1), 2 mongos on 1 shard (k2).
        "3-sharded-automation", "study-3", "benchmarkexperiments", "sharded-automation",
        {"sharded-automation-k0": 1, "sharded-automation-k1": 2, "sharded-automation-k2": 1},
    ),
    Study(
        "4-monitoring", "study-4", "benchmarkruns", "monitoring-week",
        {"monitoring": 2, "shard-keys-k0": 2, "bucketed-writes-k0": 2},
        data_per_cluster=True,
        also=(
            ("benchmarkexperiments", "shard-keys"),
            ("benchmarkexperiments", "bucketed-writes"),
            ("benchmarkruns", "monitoring-queries"),
        ),
    ),
)  # fmt: skip


def reduced(plane: Plane, study: Study) -> str:
    """The study's reduced build as shipped, with the lenient validity policy of this plane."""
    docs = [
        d
        for d in yaml.safe_load_all(
            plane.kubectl("kustomize", str(STUDIES / study.folder / "reduced")).stdout
        )
        if d
    ]
    for doc in docs:
        if doc["kind"] == "BenchmarkExperiment":
            doc["spec"]["run"]["validity"] = copy.deepcopy(LENIENT_VALIDITY)
        elif doc["kind"] == "BenchmarkRun":
            doc["spec"]["validity"] = copy.deepcopy(LENIENT_VALIDITY)
    return yaml.safe_dump_all(docs)


def register(model: MongoModel, namespace: str, cluster: str, shards: int) -> None:
    if shards == STANDALONE:
        register_standalone(model, namespace, cluster)
    elif shards:
        register_sharded(model, namespace, cluster, shards)
        model.sharded.documents["ycsb.usertable"] = LOADED
    else:
        model.member(f"{cluster}-rs0-0.{cluster}-rs0-hl.{namespace}.svc.cluster.local:27017")


def by_cluster(rewrites: dict[str, Callable[[str], str]]) -> Callable[[str], str]:
    """A URI to the FerretDB of the cluster whose Service it names (<cluster>-mongos...)."""

    def rewrite(uri: str) -> str:
        host = urllib.parse.urlsplit(uri).netloc.rpartition("@")[2]
        return next(r for c, r in rewrites.items() if host.startswith(f"{c}-"))(uri)

    return rewrite


@dataclass
class Running:
    operator: OperatorProcess
    namespaces: dict[str, str]  # study folder -> its namespace
    watches: dict[str, Watch]
    s3: S3Server  # the operator's default archive (the chart's archive.bucket): s3://mongobench


@pytest.fixture(scope="module")
def studies(
    plane: Plane, prometheus: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    """The four reduced studies applied at once, in a namespace each, under one operator."""
    api = plane.api_client()
    core = k8s.CoreV1Api(api)
    suffix = tmp_path_factory.mktemp("studies").name[-6:].replace("_", "")
    namespaces = {s.folder: f"{s.namespace}-{suffix}" for s in STUDY_LIST}
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    with ExitStack() as stack:
        stack.callback(api.close)
        # The default archive a user sets once; the studies name only their prefixes.
        s3 = start_s3server(tmp_path_factory.mktemp("s3server"), buckets=[S3_BUCKET])
        stack.callback(s3.close)
        host_map: dict[str, str] = {}
        watches: dict[str, Watch] = {}
        for study in STUDY_LIST:
            ns = namespaces[study.folder]
            core.create_namespace({"metadata": {"name": ns, "labels": RESTRICTED_LABELS}})
            stack.callback(
                core.delete_namespace, ns, propagation_policy="Background", _request_timeout=10
            )
            if study.data_per_cluster:
                rewrites = {}
                for cluster, shards in study.clusters.items():
                    ferret = stack.enter_context(running_ferretdb())
                    model = stack.enter_context(
                        MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1)
                    )
                    register(model, ns, cluster, shards)
                    data: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(ferret.uri)
                    stack.callback(data.close)
                    model.dropped = DropsReachFerretDB(data)
                    host_map |= model.host_map
                    rewrites[cluster] = rewrite_hosts(f"{ferret.host}:{ferret.port}")
                rewrite = by_cluster(rewrites)
                stack.enter_context(pod_executor(plane, ns, uri_rewrite=rewrite, timeout=900))
                continue
            ferret = stack.enter_context(running_ferretdb())
            # A client process may take minutes on a busy 2-core machine (four studies at once).
            rewrite = rewrite_hosts(f"{ferret.host}:{ferret.port}")
            stack.enter_context(pod_executor(plane, ns, uri_rewrite=rewrite, timeout=900))
            model = stack.enter_context(
                MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1)
            )
            for cluster, shards in study.clusters.items():
                register(model, ns, cluster, shards)
            host_map |= model.host_map
            # Drops the data path's collection as each run appears (every cell's cluster is new),
            # and forgets a deleted cluster's MongoDB state.
            watches[study.folder] = stack.enter_context(Watch(api, ns, ferret.uri, model))
        operator = start_operator(
            plane.kubeconfig,
            namespaces.values(),
            log,
            MONGOBENCH_HOST_MAP=",".join(f"{k}={v}" for k, v in host_map.items()),
            MONGOBENCH_PROMETHEUS_URL=prometheus,
            MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1",
            MONGOBENCH_ARCHIVE_URL=f"s3://{S3_BUCKET}",
            MONGOBENCH_ARCHIVE_ENDPOINT=s3.endpoint,
            MONGOBENCH_ARCHIVE_REGION=REGION,
            AWS_ACCESS_KEY_ID=ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        )
        stack.callback(operator.stop)
        for study in STUDY_LIST:
            plane.kubectl(
                "apply", "--server-side", "-n", namespaces[study.folder], "-f", "-",
                input=reduced(plane, study),
            )  # fmt: skip
        yield Running(operator, namespaces, watches, s3)


def finished(plane: Plane, running: Running, study: Study) -> dict[str, Any]:
    """The study's experiment or run once ended (Succeeded, or the reasons it did not)."""
    api = plane.api_client()
    ns = running.namespaces[study.folder]
    try:
        body: dict[str, Any] = wait_until(
            lambda: (
                (o := get(api, ns, study.kind, study.name)).get("status", {}).get("phase") in ENDED
                and o
            ),
            timeout=1500,
            interval=1,
            what=f"{study.name} ended",
        )
        if body["status"]["phase"] != "Succeeded":
            runs = {
                r["metadata"]["name"]: r
                for r in k8s.CustomObjectsApi(api).list_namespaced_custom_object(
                    GROUP, VERSION, ns, "benchmarkruns"
                )["items"]
            }
            status = body["status"]
            pytest.fail(f"{study.name}: {status.get('conditions')}\n{why(status, runs)}")
        return body
    finally:
        api.close()  # type: ignore[no-untyped-call]


def mongobench(plane: Plane, running: Running, study: Study, command: str, *args: str) -> str:
    """`mongobench COMMAND` of the study's experiment (or run) on a wide terminal; its output."""
    ref = f"experiment/{study.name}" if study.kind == "benchmarkexperiments" else study.name
    done = subprocess.run(
        [str(MONGOBENCH), command, ref, "-n", running.namespaces[study.folder], *args],
        capture_output=True, text=True, check=False, timeout=900,
        env={**os.environ, "KUBECONFIG": str(plane.kubeconfig), "COLUMNS": "250"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def report(plane: Plane, running: Running, study: Study, out: Path, *args: str) -> str:
    """`mongobench report` of the study, as its README says; the HTML page."""
    mongobench(plane, running, study, "report", "-o", str(out), *args)
    return (out / "report.html").read_text()


def figures(out: Path) -> set[str]:
    return {p.name for p in (out / "figures").iterdir()}


def captions(page: str) -> list[str]:
    return re.findall(r"<figcaption>([^<]*)</figcaption>", page)


def study(folder: str) -> Study:
    return next(s for s in STUDY_LIST if s.folder == folder)


# Each study's test waits for its own end: the four run at once from the module's fixture.
@pytest.mark.timeout(1800)
def test_study_1_throughput_per_workload_per_configuration(
    plane: Plane, studies: Running, tmp_path: Path
) -> None:
    s = study("1-aws-vs-openstack")
    body = finished(plane, studies, s)
    cells = {c["label"]: c for c in body["status"]["cells"]}
    assert set(cells) == {"shards=1", "shards=2"}
    for cell in cells.values():
        assert set(cell["summary"]) == {"load", "a", "c"}
        assert all(w["throughput"] > 0 for w in cell["summary"].values())
    # The study's figure: throughput per workload, a bar per configuration, grouped as the
    # README compares the two clouds (platform, shards and members: without members the full
    # study's 3 x 3 runs would pool with its 3 x 1; one platform on this plane).
    grouping = "platform,shards,members"
    page = report(plane, studies, s, tmp_path / "r", "--group-by", grouping)
    assert "throughput.png" in figures(tmp_path / "r")
    assert "Throughput per workload (mean, 95% CI) (throughput.png)" in captions(page)
    configurations = re.findall(r"<td>(platform=[^<]*,shards=\d,members=\d)</td>", page)
    assert sorted(set(configurations)) == [
        "platform=kind,shards=1,members=1",
        "platform=kind,shards=2,members=1",
    ]
    # The study's tables (README: pairs across the platform): one platform on this plane, so
    # the same command pairs across shards, 1 against 2, checking the layout, not the numbers
    # (one repetition here: no verdict). Rows: the other keys x workload, the load left out.
    pairing = ("--group-by", grouping, "--pair-by", "shards", "--baseline-value", "1")
    for metric, shown in (("throughput", "throughput"), ("cpu", "cpu database")):
        doc = json.loads(
            mongobench(plane, studies, s, "compare", *pairing, "--metric", metric, "-o", "json")
        )
        assert (doc["pairBy"], doc["values"], doc["topologyKeys"]) == (
            "shards", ["2"], ["platform", "members"]
        )  # fmt: skip
        rows = doc["rows"]
        assert [(r["platform"], r["members"], r["workload"], r["metric"]) for r in rows] == [
            ("kind", "1", w, shown) for w in ("a", "c")
        ]
        assert {"1 mean", "2 mean", "change", "hedgesG", "hedgesGUncorrected"} <= set(rows[0])
    lines = mongobench(plane, studies, s, "compare", *pairing).splitlines()
    assert max(map(len, lines)) <= 100
    header = next(line for line in lines if line.startswith("platform,members"))
    assert header.split() == [
        "platform,members", "workload", "1", "(ops/s)", "2", "change", "95%", "CI", "g", "verdict"
    ]  # fmt: skip


@pytest.mark.timeout(1800)
def test_study_2_completion_time_by_write_concern_and_processes(
    plane: Plane, studies: Running, tmp_path: Path
) -> None:
    """The README's commands draw the study's figures and table; the clients ran beside the
    mongod (a required pod affinity the real scheduler met, else the steps would not start) and
    read each loaded document once."""
    s = study("2-cloud-write-concerns")
    body = finished(plane, studies, s)
    cells = {c["label"]: c for c in body["status"]["cells"]}
    assert set(cells) == {
        f"writeConcern={w},processes={p}" for w in ("acknowledged", "journaled") for p in (1, 2)
    }
    assert all(set(c["summary"]) == {"load", "read"} for c in cells.values())
    # One cluster for the four cells: only run fields differ.
    assert sorted(n for n, _ in studies.watches[s.folder].clusters.values()) == [
        "cloud-write-concerns-k0"
    ]
    api = plane.api_client()
    try:
        runs = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, VERSION, studies.namespaces[s.folder], "benchmarkruns"
        )["items"]
    finally:
        api.close()  # type: ignore[no-untyped-call]
    assert len(runs) == 4
    for run in runs:
        assert run["spec"]["clients"]["besideDatabase"] is True
        reads = [x for x in run["status"]["steps"] if x["kind"] == "run"]
        assert reads
        for read in reads:  # over the permutation: LOADED reads, over the cell's client pods
            operation = read["result"]["operations"]["READ"]
            assert (operation["count"], operation["errors"]) == (LOADED, 0)
    # The README's report: the inserts' completion time and the reads' rate against processes,
    # a line per write concern.
    page = report(plane, studies, s, tmp_path / "r")
    assert {"time-to-load-processes.png", "scaling-processes-read.png"} <= figures(tmp_path / "r")
    # The processes are the experiment's dimension: no note that they differ.
    assert "differs from" not in page
    shown = " ".join(captions(page))
    assert "Time to load against processes, one line per other dimensions" in shown
    assert "Workload read: throughput against processes, one line per other dimensions" in shown
    # The README's table: rows processes x workload, acknowledged against journaled. One
    # repetition here: the load, measured once a cell, is left out (the full size's 3 show it).
    pairing = ("--group-by", "processes,writeConcern", "--pair-by", "writeConcern")
    pairing += ("--baseline-value", "acknowledged", "--metric", "seconds")
    doc = json.loads(mongobench(plane, studies, s, "compare", *pairing, "-o", "json"))
    assert (doc["pairBy"], doc["values"], doc["topologyKeys"]) == (
        "writeConcern", ["journaled"], ["processes"]
    )  # fmt: skip
    rows = doc["rows"]
    assert [(r["processes"], r["workload"], r["metric"]) for r in rows] == [
        (p, "read", "run time") for p in ("1", "2")
    ]
    assert {"acknowledged mean", "journaled mean", "change", "hedgesG"} <= set(rows[0])
    lines = mongobench(plane, studies, s, "compare", *pairing).splitlines()
    assert max(map(len, lines)) <= 100
    header = next(line for line in lines if line.startswith("processes"))
    assert header.split() == [
        "processes", "workload", "acknowledged", "(s)", "journaled", "change", "95%", "CI",
        "g", "verdict",
    ]  # fmt: skip


@pytest.mark.timeout(1800)
def test_study_3_one_factor_at_a_time_its_tables_and_figures_from_the_readmes_commands(
    plane: Plane, studies: Running, tmp_path: Path
) -> None:
    """Study 3 reduced: one factor at a time (3 cells, not the product's 4), one importer into a
    ranged pitchID, one timed find and aggregation; the README's commands draw its deploy-time
    table, its time-against-factor figures (one line, the baseline's) and the shard balance."""
    s = study("3-sharded-automation")
    body = finished(plane, studies, s)
    cells = {c["label"]: c for c in body["status"]["cells"]}
    assert list(cells) == ["shards=1,mongos=1", "shards=2,mongos=1", "shards=1,mongos=2"]
    for cell in cells.values():
        assert set(cell["summary"]) == {"load", "find", "aggregation"}
        assert cell["summary"]["find"]["n"] == 1  # one query a repetition: its run time
    # Deploy times: a row per cell in the study's layout (the factor varied and its value).
    table = mongobench(plane, studies, s, "deploy-times", "-o", "csv").splitlines()
    assert table[1] == "factor,value,pods,deployments,provisioned s,configured s,ready s"
    rows = [r.split(",") for r in table[2:]]
    assert [r[:3] for r in rows] == [["baseline", "-", "3"], ["shards", "2", "4"],
                                     ["mongos", "2", "4"]]  # fmt: skip
    assert all(int(r[3]) >= 1 and all(r[4:]) for r in rows)
    # Time vs shards and vs mongos (the import's and each query's), deploy times, balance.
    page = report(plane, studies, s, tmp_path / "r", "--metric", "seconds")
    found = figures(tmp_path / "r")
    assert {
        "time-to-load-shards.png", "time-to-load-mongos.png", "run-time-find-shards.png",
        "run-time-aggregation-shards.png", "run-time-find-mongos.png", "deploy-times.png",
        "shard-distribution.png",
    } <= found  # fmt: skip
    caption = "Workload find: run time against shards, one line per other dimensions"
    assert any(c.startswith(caption) for c in captions(page))
    # A ranged key loaded in pitchID order: the two-shard cell's documents on one shard.
    assert re.search(r"sharded-automation-k1-shard\d 100\.0% \(\d+\)", page)
    compared = mongobench(plane, studies, s, "compare", "--metric", "seconds")
    assert "run time" in compared and "time to load" in compared


@pytest.mark.timeout(3000)
def test_study_4_week_shard_keys_bucketed_writes_and_queries_each_drawn_by_its_command(
    plane: Plane, studies: Running, tmp_path: Path
) -> None:
    s = study("4-monitoring")
    run = finished(plane, studies, s)
    steps = {x["label"]: x for x in run["status"]["steps"]}
    # Every opcounter the study's agents watched moves: the mix has deletes too.
    operations = steps["run crud #1"]["result"]["operations"]
    assert {"READ", "INSERT", "UPDATE", "DELETE"} <= set(operations)
    (load,) = [x for x in run["status"]["steps"] if x["kind"] == "load"]
    shards = [(x["shard"], x["documents"]) for x in load["distribution"]["shards"]]
    assert shards == [("monitoring-shard0", LOADED // 2), ("monitoring-shard1", LOADED // 2)]
    page = report(plane, studies, s, tmp_path / "r")
    assert "shard-distribution.png" in figures(tmp_path / "r")
    assert re.search(r"monitoring-shard0 50\.0% \(\d+\), monitoring-shard1 50\.0% \(\d+\)", page)
    # The profiler's slow operations and the disk used per collection (README: describe). The
    # wire model answers profile, system.profile and $collStats; FerretDB carries the data.
    described = mongobench(plane, studies, s, "describe")
    assert "Slow operations" in described
    assert "Disk use per collection" in described
    ended = {
        name: finished(plane, studies, replace(s, kind=kind, name=name)) for kind, name in s.also
    }

    # The shard-key test (README: compare --shards): a row per key, a column per shard.
    keys = replace(s, kind="benchmarkexperiments", name="shard-keys")
    assert [c["label"] for c in ended["shard-keys"]["status"]["cells"]] == [
        "shardKey=hashed-id", "shardKey=ts", "shardKey=sensor-ts"
    ]  # fmt: skip
    lines = mongobench(plane, studies, keys, "compare", "--shards").splitlines()
    assert max(map(len, lines)) <= 100
    assert lines[0].strip() == "Documents (chunks) per shard after the last load"
    assert lines[2].split() == ["configuration", "shard", "key", "documents", "shard0", "shard1"]
    rows = json.loads(mongobench(plane, studies, keys, "compare", "--shards", "-o", "json"))
    assert sorted((r["configuration"], r["shardKey"]) for r in rows) == [
        ("shardKey=hashed-id", "{_id: hashed}"),
        ("shardKey=sensor-ts", "{sensor: 1, ts: 1}"),
        ("shardKey=ts", "{ts: 1}"),
    ]
    for row in rows:
        assert row["documents"] == sum(row[f"shard{i} documents"] for i in (0, 1)), row
        assert all(isinstance(row[f"shard{i} chunks"], int) for i in (0, 1)), row

    # The bucketed write test (README: compare with three metrics): bucketed against a
    # document per measurement, one workload (writes) whose WRITE latencies pair.
    buckets = replace(s, kind="benchmarkexperiments", name="bucketed-writes")
    assert [c["label"] for c in ended["bucketed-writes"]["status"]["cells"]] == [
        "writes=per-measurement", "writes=bucketed"
    ]  # fmt: skip
    metrics = ("--metric", "throughput", "--metric", "avg", "--metric", "p99")
    rows = [
        x.split() for x in mongobench(plane, studies, buckets, "compare", *metrics).splitlines()
    ]
    assert ["throughput", "writes=bucketed"] in [x[:2] for x in rows]
    assert ["WRITE", "avg", "writes=bucketed"] in [x[:3] for x in rows]
    doc = json.loads(mongobench(plane, studies, buckets, "compare", *metrics, "-o", "json"))
    written = {(r["configuration"], r["metric"]) for r in doc["rows"] if r["workload"] == "writes"}
    assert written == {
        (c, m)
        for c in ("writes=per-measurement", "writes=bucketed")
        for m in ("throughput", "WRITE avg", "WRITE p99")
    }

    # The queries (README: compare --metric avg of the one run): a row per query, its run time.
    queries = replace(s, kind="benchmarkruns", name="monitoring-queries")
    lines = mongobench(plane, studies, queries, "compare", "--metric", "avg").splitlines()
    assert lines[0].strip() == "Per-workload summary (mean ± SD, 95% CI, n)"
    assert lines[2].split() == ["workload", "metric", "n", "mean", "±", "SD", "CI", "CV"]
    assert len(lines[2]) <= 100  # the table's width (the shard distribution follows it)
    timed = [x.split()[:4] for x in lines if x.split()[1:2] and x.split()[1].isupper()]
    assert [t for t in timed if t[0] != "load"] == [
        ["by-sensor", "BY_SENSOR", "avg", "(us)"],
        ["time-range", "TIME_RANGE", "avg", "(us)"],
        ["aggregation", "AGGREGATION", "avg", "(us)"],
        ["count", "COUNT", "avg", "(us)"],
    ]
    assert all(x.split()[4] == "2" for x in lines if x.split()[1:2] == ["BY_SENSOR"])


def readme_commands(folder: str, namespace: str) -> list[list[str]]:
    """The `mongobench` commands of the study's README that read its archive (s3://BUCKET/...),
    from its shell blocks and its tables, as words: the bucket the operator's default, a run's
    namespace (`studies` in the README) the one the study ran in."""
    text = (STUDIES / folder / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    found = [
        line.strip()
        for block in blocks
        for line in block.replace("\\\n", " ").splitlines()
        if line.strip().startswith("mongobench ")
    ]
    found += re.findall(r"`(mongobench [^`]*)`", text)
    commands = [
        [re.sub(r"^(s3://.*)/studies/([^/]+)$", rf"\1/{namespace}/\2", w) for w in shlex.split(c)]
        for c in (c.replace("BUCKET", S3_BUCKET) for c in found if "s3://BUCKET/" in c)
    ]
    return [c for i, c in enumerate(commands) if c not in commands[:i]]


def wait_archived(plane: Plane, running: Running, study: Study) -> None:
    """Every run of the study's namespace Archived, and every experiment's summary uploaded."""
    api = plane.api_client()
    objects = k8s.CustomObjectsApi(api)
    ns = running.namespaces[study.folder]

    def archived() -> bool:
        def items(plural: str) -> list[dict[str, Any]]:
            got: dict[str, Any] = objects.list_namespaced_custom_object(GROUP, VERSION, ns, plural)
            return list(got["items"])

        runs_done = all(
            any(
                c["type"] == "Archived" and c["status"] == "True"
                for c in r.get("status", {}).get("conditions", [])
            )
            for r in items("benchmarkruns")
        )
        summaries = items("benchmarkexperiments")
        return runs_done and all(
            "location" in e.get("status", {}).get("archive", {}) for e in summaries
        )

    try:
        wait_until(archived, timeout=300, interval=1, what=f"{study.folder} archived")
    finally:
        api.close()  # type: ignore[no-untyped-call]


def in_archive(running: Running, url: str) -> bool:
    """Whether the archive holds a run under `url`."""
    root = open_root(
        url, endpoint_url=running.s3.endpoint, region=REGION,
        access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
    )  # fmt: skip
    try:
        return bool(root.runs())
    except ArchiveError:  # "no archived run here"
        return False


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("folder", [s.folder for s in STUDY_LIST])
def test_the_readmes_commands_draw_each_study_from_its_archive(
    plane: Plane, studies: Running, tmp_path: Path, folder: str
) -> None:
    """What a user types after a study: each README command over the archive, as written (the
    bucket the operator's default), exits 0 and prints or writes something. A command naming a
    second cloud's folder (study 1's OpenStack half, which the reduced study does not run) is
    run over the folders this run archived, its pairing left out."""
    s = study(folder)
    finished(plane, studies, s)
    for kind, name in s.also:
        finished(plane, studies, replace(s, kind=kind, name=name))
    wait_archived(plane, studies, s)
    env = {**os.environ, **studies.s3.env(), "COLUMNS": "100"}
    ran = []
    for written in readme_commands(folder, studies.namespaces[folder]):
        words = list(written)
        urls = [w for w in words if w.startswith("s3://")]
        present = [u for u in urls if in_archive(studies, u)]
        assert present, f"none of {urls} holds a run"
        if present != urls:  # study 1: the half this plane ran; a pairing needs both
            if "--pair-by" in words:
                continue
            words = [w for w in words if not w.startswith("s3://") or w in present]
        if words[1] == "report":
            words[words.index("-o") + 1] = str(tmp_path / words[words.index("-o") + 1])
        done = subprocess.run(
            [str(MONGOBENCH), *words[1:]], capture_output=True, text=True, check=False,
            timeout=600, env=env,
        )  # fmt: skip
        assert done.returncode == 0, (words, done.stderr[-2000:])
        assert done.stdout.strip(), words
        ran.append(words)
    assert ran, f"{folder}: no README command read the archive"
    if folder == "1-aws-vs-openstack":
        # The study's CPU figure: the database nodes' mean at each sample, from the archive's
        # raw series (the live objects have none), per configuration.
        made = figures(tmp_path / "aws-vs-openstack")
        assert {f"cpu-average-platform_kind_shards_{n}_members_1.png" for n in (1, 2)} <= made
    if folder == "4-monitoring":
        # The shard-key test as a figure: a bar per key, its shards' shares of the documents.
        page = (tmp_path / "shard-keys" / "report.html").read_text()
        assert "shard-distribution.png" in figures(tmp_path / "shard-keys")
        assert all(f"shardKey={k}" in page for k in ("hashed-id", "ts", "sensor-ts"))
