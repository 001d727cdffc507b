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
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from test_benchmarkexperiment import Watch, register_sharded, why
from test_benchmarkrun import GROUP, VERSION, get, node_aliases
from test_cli import MONGOBENCH

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.pytest_plugin import RESTRICTED_LABELS
from localplane.tools import REPO

pytestmark = pytest.mark.cluster

STUDIES = REPO / "manifests" / "studies"
LOADED = 200  # what the reduced studies load; the models report it as the documents loaded
ENDED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Study:
    folder: str
    namespace: str
    kind: str  # what ends the study: a BenchmarkExperiment, or a BenchmarkRun
    name: str
    clusters: dict[str, int]  # cluster name -> shards (0: a replica set)


STUDY_LIST = (
    Study(
        "1-aws-vs-openstack", "study-1", "benchmarkexperiments", "aws-vs-openstack",
        {"aws-vs-openstack-k0": 1, "aws-vs-openstack-k1": 2},
    ),
    Study(
        "2-cloud-write-concerns", "study-2", "benchmarkexperiments", "cloud-write-concerns",
        {"cloud-write-concerns-k0": 0},
    ),
    Study(
        # One factor at a time: the baseline (k0), 2 shards (k1), 2 mongos on 1 shard (k2).
        "3-sharded-automation", "study-3", "benchmarkexperiments", "sharded-automation",
        {"sharded-automation-k0": 1, "sharded-automation-k1": 2, "sharded-automation-k2": 1},
    ),
    Study("4-monitoring", "study-4", "benchmarkruns", "monitoring-week", {"monitoring": 2}),
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
    if shards:
        register_sharded(model, namespace, cluster, shards)
        model.sharded.documents["ycsb.usertable"] = LOADED
    else:
        model.member(f"{cluster}-rs0-0.{cluster}-rs0-hl.{namespace}.svc.cluster.local:27017")


@dataclass
class Running:
    operator: OperatorProcess
    namespaces: dict[str, str]  # study folder -> its namespace
    watches: dict[str, Watch]


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
        host_map: dict[str, str] = {}
        watches: dict[str, Watch] = {}
        for study in STUDY_LIST:
            ns = namespaces[study.folder]
            core.create_namespace({"metadata": {"name": ns, "labels": RESTRICTED_LABELS}})
            stack.callback(
                core.delete_namespace, ns, propagation_policy="Background", _request_timeout=10
            )
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
            MONGOBENCH_PROMETHEUS_NODE_ALIASES=node_aliases(api),
        )
        stack.callback(operator.stop)
        for study in STUDY_LIST:
            plane.kubectl(
                "apply", "--server-side", "-n", namespaces[study.folder], "-f", "-",
                input=reduced(plane, study),
            )  # fmt: skip
        yield Running(operator, namespaces, watches)


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
    page = report(plane, studies, s, tmp_path / "r")
    # The study's figure: the inserts' completion time against processes, a line per write
    # concern (the reads' trials are still judged; client-bound ones count as the lenient
    # policy accepts that reason, and the table says so).
    assert "time-to-load-processes.png" in figures(tmp_path / "r")
    # The processes are the experiment's dimension: no note that they differ.
    assert "differs from" not in page
    assert "Time to load against processes, one line per other dimensions" in " ".join(
        captions(page)
    )


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


@pytest.mark.timeout(1800)
def test_study_4_shard_distribution_of_a_mix_with_deletes(
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
