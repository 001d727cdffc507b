"""Cluster tier: every panel query of every committed Grafana dashboard runs against a REAL
Prometheus (3.5, pinned) that holds REAL series, scraped the way kube-prometheus-stack scrapes
a cluster: the real Prometheus Operator on the session's plane selects the monitors by their
`release` label and generates the scrape configuration (localplane.monitoring). Each panel must
return a non-empty answer.

The series come from the exporters themselves, not from hand-written samples:
  * node-exporter on this machine, through kube-prometheus-stack's node-exporter ServiceMonitor
    (node_cpu_seconds_total, node_uname_info), with only the collectors the stack enables
    (monitoring.NODE_EXPORTER_COLLECTORS): a panel needing one left out has an empty answer;
  * the operator's metrics REGISTRY, through the chart's Service and ServiceMonitor
    (localplane.monitoring.serve_operator), after
    `export_run` of two finished BenchmarkRuns whose summaries `summary.summarise` computed,
    `instrumented` handlers that returned, asked to be retried and failed, and a run in progress
    (its phase and running step);
  * two benchmark clients' `LiveMetrics`, through the chart's clients PodMonitor, fed YCSB status
    lines captured from a real run;
  * the REAL mongodb_exporter, one per pod of a sharded MongoCluster as the operator builds it
    (2 shards x 2 members, 1 config server, 1 mongos), with the pod's exporter flags, through the
    cluster's own PodMonitor (its podTargetLabels give the series their cluster labels). Each
    exporter reaches a scripted mongod/mongos (localplane.exporter) answering with a real
    mongod's documents; one more exporter reaches FerretDB, a real MongoDB wire server, for the
    series it exports there (mongodb_up, mongodb_version_info).
The pods are KWOK's, with their workloads' labels; each says where its process serves metrics
on loopback (localplane.monitoring, "Scrape addresses").

Dashboard variables become `.*` (the dashboards' "All"), `$__rate_interval` 1m. A misspelled
metric or label makes the answer empty and the test fail (see the negative control). What is not
proven: Grafana itself is not run, so rendering, transformations and variable dropdowns are only
checked as far as the SDK models (unit tier) and Prometheus' label API go (test_install.py
resolves the variables as Grafana does, localplane.grafana, after a real run).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from prometheus_client import start_http_server

from localplane.exporter import (
    Exporter,
    Member,
    ReplicaSet,
    ScriptedMongod,
    ShardedCluster,
    load_diagnostic_data,
    start_exporter,
)
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.monitoring import RELEASE_LABELS as STACK_LABELS
from localplane.monitoring import Monitoring, scrape_annotations, serve_operator
from localplane.net import free_port
from localplane.plane import Plane
from localplane.prometheus import Prometheus
from localplane.tools import REPO, binary
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS
from mongobench.observability import metrics
from mongobench_results.summary import summarise
from mongobench_runner.metrics import LiveMetrics
from mongobench_runner.status import parse_status_line

pytestmark = pytest.mark.cluster

DASHBOARDS = REPO / "dashboards" / "json"
BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
VARIABLE_QUERY = re.compile(r"^label_values\((?P<match>.*),\s*(?P<label>\w+)\)$")

# YCSB -s status lines of a real run (as in bench-jobs/runner/tests/test_status.py).
STATUS_LINES = [
    "2026-11-22 05:45:30:214 1 sec: 68 operations; 67.93 current ops/sec; est completion in 14"
    " seconds [READ: Count=41, Max=70975, Min=2962, Avg=18910.71, 90=33535, 99=70975,"
    " 99.9=70975, 99.99=70975] [UPDATE: Count=29, Max=262655, Min=19600, Avg=61233.93,"
    " 90=132223, 99=262655, 99.9=262655, 99.99=262655] ",
    "2026-11-22 05:45:36:214 7 sec: 719 operations; 124 current ops/sec; est completion in 3"
    " second [READ: Count=66, Max=32319, Min=1401, Avg=8942.14, 90=19055, 99=32319, 99.9=32319,"
    " 99.99=32319] [UPDATE: Count=58, Max=495103, Min=13352, Avg=63091.24, 90=163839,"
    " 99=495103, 99.9=495103, 99.99=495103] ",
]


# ---------------------------------------------------------------------------------------------
# The dashboards' queries


def load_boards() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}


def panel_targets() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for name, board in load_boards().items():
        for p in board["panels"]:
            for inner in [p, *p.get("panels", [])]:
                for t in inner.get("targets", []):
                    out.append((name, inner["title"], t))
    return out


def annotation_queries() -> list[tuple[str, str, str]]:
    return [
        (name, a["name"], a["expr"])
        for name, board in load_boards().items()
        for a in board.get("annotations", {}).get("list", [])
    ]


def variable_queries() -> list[tuple[str, str, str]]:
    return [
        (name, v["name"], v["query"])
        for name, board in load_boards().items()
        for v in board["templating"]["list"]
        if v["type"] == "query"
    ]


def substitute(expr: str, variables: set[str]) -> str:
    """As Grafana would with every variable on "All" (allValue .*)."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in BUILTINS:
            return BUILTINS[name]
        assert name in variables, f"${name} is no variable of the dashboard: {expr}"
        return ".*"

    out = re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", value, expr)
    assert "$" not in out, out
    return out


def board_variables(name: str) -> set[str]:
    return {v["name"] for v in load_boards()[name]["templating"]["list"]}


# ---------------------------------------------------------------------------------------------
# Real exporters and a real Prometheus scraping them


def realistic_run(name: str, cluster: str, topology: str, platform: str) -> dict[str, Any]:
    """A finished BenchmarkRun as the operator holds it: summary computed from step results."""

    def step(workload: str, throughput: float, read_avg: float) -> dict[str, Any]:
        return {
            "kind": "run",
            "workload": workload,
            "phase": "Succeeded",
            "result": {
                "throughput": throughput,
                "operations": {
                    "READ": {"avg": read_avg, "p99": read_avg * 4.2},
                    "UPDATE": {"avg": read_avg * 1.7, "p99": read_avg * 9.5},
                },
            },
        }

    scale = 1.0 if topology == "ReplicaSet" else 1.6
    steps = [
        {"kind": "load", "workload": "a", "phase": "Succeeded", "result": None},
        *(step("a", 4120.0 * scale + d, 810.0 - d / 10) for d in (-60.0, 0.0, 45.0)),
        *(step("b", 9310.0 * scale + d, 402.0 - d / 10) for d in (-120.0, 80.0, 10.0)),
        step("c", 11800.0 * scale, 350.0),  # one repetition: no SD exported
    ]
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"namespace": "bench", "name": name},
        "status": {
            "phase": "Succeeded",
            "clusterSnapshot": {
                "name": cluster,
                "version": "7.0.14",
                "topology": {"type": topology},
                "platform": {"provider": platform},
            },
            "summary": summarise(steps),
        },
    }


RUNS = [
    realistic_run("ycsb-rs3", "rs3", "ReplicaSet", "kind"),
    realistic_run("ycsb-sharded", "sh2", "Sharded", "eks"),
]
LIVE_RUN = {"metadata": {"namespace": "bench", "name": "ycsb-live"}}
BROKEN_RUN = {"metadata": {"namespace": "bench", "name": "ycsb-broken"}}
LIVE_STEPS = [
    {"index": 1, "label": "load", "workload": "a", "phase": "Succeeded"},
    {"index": 2, "label": "run a #1", "workload": "a", "phase": "Running"},
]
# A sharded MongoCluster as the operator builds it, one exporter per pod.
CLUSTER = "demo"
CLUSTER_SPEC = {
    "version": "7.0.14",
    "topology": {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 2, "configServers": 1, "mongos": 1},
    },
}
# FerretDB stands for a one-member replica set's mongod.
FERRET_SPEC = {"version": "7.0.14", "topology": {"replicaSet": {"members": 1}}}
# Where the pods live on the plane: the runs' and clusters', and the operator's.
BENCH, OPERATOR_NS = "dashboards-bench", "dashboards-mongobench"
HANDLERS = [("MongoCluster", "sync"), ("BenchmarkRun", "tick")]


def invoke_handlers() -> None:
    """Each instrumented handler once per outcome: ok, retry and error."""
    for kind, name in HANDLERS:

        @metrics.instrumented(kind, name)
        def handler(outcome: str) -> None:
            time.sleep(0.003)
            if outcome == "retry":
                raise kopf.TemporaryError("not yet", delay=1)
            if outcome == "error":
                raise RuntimeError("boom")

        handler("ok")
        with pytest.raises(kopf.TemporaryError):
            handler("retry")
        with pytest.raises(RuntimeError):
            handler("error")


def counter(kind: str, handler: str, outcome: str) -> float:
    value: float = metrics.RECONCILES.labels(kind, handler, outcome)._value.get()
    return value


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def scraped_value(prom: Prometheus, promql: str) -> float | None:
    result = prom.query(promql)
    return float(result[0]["value"][1]) if result else None


@pytest.fixture(scope="module")
def ferretdb() -> Iterator[FerretDB]:
    with running_ferretdb() as server:
        yield server


def target_label(pod_label: str) -> str:
    """How the Prometheus Operator names a podTargetLabels label (invalid characters -> _)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", pod_label)


def cluster_pods(
    name: str = CLUSTER, raw: dict[str, Any] = CLUSTER_SPEC
) -> tuple[list[tuple[str, dict[str, str], list[str]]], dict[str, Any]]:
    """(pod name, pod labels, exporter args) of every pod of a cluster, and its PodMonitor."""
    spec = MongoClusterSpec.parse(raw)
    objects = build_workload_objects(spec, cluster_layout(name, BENCH, spec), PRESETS["kind"])
    (monitor,) = [o for o in objects if o["kind"] == "PodMonitor"]
    pods = []
    for o in objects:
        if o["kind"] not in ("StatefulSet", "Deployment"):
            continue
        template = o["spec"]["template"]
        (exporter,) = [c for c in template["spec"]["containers"] if c["name"] == "exporter"]
        for i in range(o["spec"]["replicas"]):
            suffix = str(i) if o["kind"] == "StatefulSet" else f"7d9f-{i}"
            pods.append((f"{o['metadata']['name']}-{suffix}", template["metadata"]["labels"],
                         exporter["args"]))  # fmt: skip
    return pods, monitor


def start_mongodb_exporters(
    workdir: Path, ferretdb: FerretDB
) -> tuple[list[ScriptedMongod], list[Exporter], list[dict[str, Any]]]:
    """Peers and exporters for CLUSTER's pods, one more for FerretDB; and what the plane gets:
    the clusters' PodMonitors as the operator builds them and a pod per exporter (KWOK's, with
    its template's labels, pointed at its exporter: localplane.monitoring)."""
    pods, monitor = cluster_pods()
    documents = load_diagnostic_data()
    # Members are named by their peers' own loopback addresses (see localplane.exporter).
    ports = {name: free_port() for name, _, _ in pods}
    sets: dict[str, ReplicaSet] = {}
    for name, labels, _ in pods:
        rs = labels.get("mongobench.io/replset")
        if rs is not None:
            role = {"shard": "shardsvr", "configsvr": "configsvr"}.get(
                labels["app.kubernetes.io/component"], ""
            )
            members = sets.setdefault(rs, ReplicaSet(rs, role, [])).members
            members.append(
                Member(
                    f"127.0.0.1:{ports[name]}",
                    "PRIMARY" if not members else "SECONDARY",
                    lag_seconds=4.0 * len(members),
                )
            )
    sharded = ShardedCluster(
        cluster_id=sets[next(iter(sets))].replica_set_id,
        config_db="demo-cfg/127.0.0.1:1",
        chunks={rs: 40 + 3 * i for i, rs in enumerate(r for r in sets if "shard" in r)},
    )
    peers: list[ScriptedMongod] = []
    exporters: list[Exporter] = []
    objects = [monitored(monitor)]
    for name, labels, args in pods:
        rs = labels.get("mongobench.io/replset")
        if rs is not None:
            index = [m.host for m in sets[rs].members].index(f"127.0.0.1:{ports[name]}")
            peer = ScriptedMongod(documents, replset=sets[rs], member=index, port=ports[name])
        else:
            peer = ScriptedMongod(documents, sharded=sharded, port=ports[name])
        peers.append(peer)
        exporters.append(start_exporter(name, args, peer.uri, workdir))
        objects.append(served_pod(name, BENCH, labels, "exporter", exporters[-1].target))
    # FerretDB: what the exporter exports against a real wire server. --collect-all panics
    # there from the second scrape on (FerretDB lacks `top`); the diagnostic data collector
    # alone gives mongodb_version_info (compatible mode) beside mongodb_up.
    ferret_pods, ferret_monitor = cluster_pods("ferret", FERRET_SPEC)
    ((ferret_pod, ferret_labels, _),) = ferret_pods
    args = [a if a != "--collect-all" else "--collector.diagnosticdata" for a in pods[0][2]]
    exporters.append(start_exporter("ferretdb", args, ferretdb.uri, workdir))
    objects.append(monitored(ferret_monitor))
    objects.append(served_pod(ferret_pod, BENCH, ferret_labels, "exporter", exporters[-1].target))
    return peers, exporters, objects


def monitored(monitor: dict[str, Any]) -> dict[str, Any]:
    """A cluster's PodMonitor as the chart's operator creates it (MONGOBENCH_MONITOR_LABELS: the
    chart's monitorLabels, kube-prometheus-stack's release), scraped every 5 s with a 5 s
    timeout: the exporter gives its queries the scrape timeout less --web.timeout-offset (1 s),
    and 2 s timed out on a loaded machine."""
    monitor = copy.deepcopy(monitor)
    monitor["metadata"]["labels"] |= STACK_LABELS
    for endpoint in monitor["spec"]["podMetricsEndpoints"]:
        endpoint |= {"interval": "5s", "scrapeTimeout": "5s"}
    return monitor


def wait_scraped(server: Monitoring, pods: set[str], scrapes: int = 3) -> None:
    """Until every target of ``pods`` (their `pod` label) and of each node's node-exporter is up
    in /api/v1/targets and was scraped ``scrapes`` times while up (its lastScrape changed): a
    mongodb_exporter registers its collectors from its second request on, so rate() over its
    counters has two points from its third scrape."""
    seen: dict[str, set[str]] = {}

    def scraped() -> bool:
        targets = [
            t for t in server.targets()
            if t["labels"].get("pod") in pods or t["labels"].get("job") == "node-exporter"
        ]  # fmt: skip
        for t in targets:
            if t["health"] == "up":
                seen.setdefault(t["scrapePool"] + t["scrapeUrl"], set()).add(t["lastScrape"])
        nodes = [t for t in targets if t["labels"].get("job") == "node-exporter"]
        return (
            pods <= {t["labels"].get("pod") for t in targets}
            and len(nodes) == len(server.node_exporters)
            and all(
                t["health"] == "up"
                and len(seen.get(t["scrapePool"] + t["scrapeUrl"], ())) >= scrapes
                for t in targets
            )
        )

    wait_until(scraped, f"every target up and scraped {scrapes} times", timeout=120)


def served_pod(
    name: str, namespace: str, labels: dict[str, str], container: str, target: str
) -> dict[str, Any]:
    """A pod KWOK runs with `labels`, whose `metrics` port is served on loopback `target`."""
    host, _, port = target.rpartition(":")
    assert host == "127.0.0.1", target
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": scrape_annotations({"metrics": int(port)}),
        },
        "spec": {
            "containers": [
                {
                    "name": container,
                    "image": "scratch",
                    "ports": [{"name": "metrics", "containerPort": 9216}],
                }
            ]
        },
    }


def clients_podmonitor(namespace: str) -> dict[str, Any]:
    """The chart's PodMonitor of the benchmark clients, as `helm install` renders it where the
    Prometheus Operator's CRDs are served, scraping each second."""
    rendered = subprocess.run(
        [str(binary("helm")), "template", "mb", str(REPO / "charts" / "mongobench"),
         "--namespace", namespace, "--show-only=templates/podmonitor.yaml",
         "--api-versions=monitoring.coreos.com/v1/PodMonitor",
         "--set=metrics.podMonitor.interval=1s"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    monitor: dict[str, Any] = yaml.safe_load(rendered)
    return monitor


@pytest.fixture(scope="module")
def prom(
    bare_plane: Plane,
    prometheus_server: Monitoring,
    tmp_path_factory: pytest.TempPathFactory,
    ferretdb: FerretDB,
) -> Iterator[Monitoring]:
    servers = []
    clients = [
        LiveMetrics(driver="ycsb", phase="run", workload="a", client_index=i) for i in range(2)
    ]
    peers: list[ScriptedMongod] = []
    exporters: list[Exporter] = []
    namespaces: list[str] = []
    try:
        peers, exporters, objects = start_mongodb_exporters(
            Path(tmp_path_factory.mktemp("exporters")), ferretdb
        )
        for run in RUNS:
            metrics.export_run(run)
        metrics.set_run_phase("bench", "ycsb-live", "Running")  # as the handler does
        metrics.set_running_steps("bench", "ycsb-live", LIVE_STEPS)
        metrics.set_run_phase("bench", "ycsb-broken", "Failed")
        metrics.BUILD_INFO.labels(version("mongobench")).set(1)  # as metrics.serve
        invoke_handlers()
        for c in clients:
            c.running.set(1)  # as the runner does while its driver runs
            line = parse_status_line(STATUS_LINES[0])
            assert line is not None
            c.observe(line)

        operator_port = free_port()
        servers.append(start_http_server(operator_port, "127.0.0.1", metrics.REGISTRY))
        # The clients through the chart's PodMonitor, with the labels the Jobs give them; the
        # operator (a process here) through the chart's Service and ServiceMonitor (below).
        objects.append(clients_podmonitor(OPERATOR_NS))
        for i, c in enumerate(clients):
            port = free_port()
            servers.append(start_http_server(port, "127.0.0.1", c.registry))
            labels = {
                "mongobench.io/component": "benchmark-client",
                "mongobench.io/run": "ycsb-rs3",
                "mongobench.io/step": "run-a-r1",
            }
            objects.append(served_pod(f"ycsb-rs3-run-a-r1-{i}", BENCH, labels, "runner",
                                      f"127.0.0.1:{port}"))  # fmt: skip
        for ns in (BENCH, OPERATOR_NS):
            bare_plane.kubectl("create", "namespace", ns)
            namespaces.append(ns)
        server = prometheus_server  # the session plane's kube-prometheus-stack
        serve_operator(bare_plane, OPERATOR_NS, operator_port, release="mb")
        bare_plane.kubectl(
            "apply", "--server-side", "-f", "-",
            input="\n---\n".join(yaml.safe_dump(o) for o in objects),
        )  # fmt: skip
        ok = 'mongobench_reconciles_total{kind="MongoCluster", handler="sync", outcome="ok"}'
        first = counter("MongoCluster", "sync", "ok")
        wait_until(lambda: scraped_value(server, ok) == first, "first operator scrape")
        wait_until(lambda: len(server.query("mongobench_client_info")) == 2, "client scrapes")
        # A second round, so that rate() over the window sees counters increase.
        invoke_handlers()
        for c in clients:
            line = parse_status_line(STATUS_LINES[1])
            assert line is not None
            c.observe(line)
        second = counter("MongoCluster", "sync", "ok")
        wait_until(lambda: scraped_value(server, ok) == second, "second operator scrape")
        ops = 'sum(mongobench_client_operation_total{operation="READ"})'
        wait_until(lambda: scraped_value(server, ops) == 2 * (41 + 66), "client counters")
        wait_scraped(server, {o["metadata"]["name"] for o in objects if o["kind"] == "Pod"})
        yield server
    finally:
        for ns in namespaces:
            bare_plane.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        for run in [*RUNS, LIVE_RUN, BROKEN_RUN]:
            metrics.forget_run(run)
        for e in exporters:
            e.stop()
        for peer in peers:
            peer.stop()
        for httpd, thread in servers:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=5)


def api(prom: Prometheus, endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
    """The API's JSON answer, also for the 400/422 it gives a bad query (status "error")."""
    url = f"{prom.url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            body: dict[str, Any] = json.load(resp)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    return body


def evaluate(prom: Prometheus, promql: str, *, range_query: bool) -> list[dict[str, Any]]:
    """The instant answer's series; for range targets the last 30 s as a range query too (as
    Grafana sends them), which must not be empty either. A PromQL error fails the test."""
    body = api(prom, "query", {"query": promql})
    assert body["status"] == "success", f"{body.get('error')}: {promql}"
    if range_query:
        now = time.time()
        ranged = api(
            prom, "query_range", {"query": promql, "start": now - 30, "end": now, "step": 1}
        )
        assert ranged["status"] == "success", f"{ranged.get('error')}: {promql}"
        assert ranged["data"]["result"], f"empty range answer: {promql}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(r["value"][1])) for r in result)


# ---------------------------------------------------------------------------------------------


TARGETS = panel_targets()


def test_dashboards_have_queries() -> None:
    assert {name for name, _, _ in TARGETS} == {
        "benchmark-comparison",
        "benchmark-clients",
        "operator",
        "nodes-cpu",
        "mongodb-cluster",
        "benchmark-run",
    }
    assert len(TARGETS) >= 70


@pytest.mark.parametrize(
    ("board", "title", "target"),
    TARGETS,
    ids=[f"{b}:{title}:{t['refId']}" for b, title, t in TARGETS],
)
def test_panel_query_returns_real_series(
    prom: Prometheus, board: str, title: str, target: dict[str, Any]
) -> None:
    promql = substitute(target["expr"], board_variables(board))
    result = evaluate(prom, promql, range_query=bool(target.get("range")))
    assert result, f"{board} / {title}: empty answer for {promql}"
    assert finite(result), f"{board} / {title}: no finite value: {result}"


@pytest.mark.parametrize(
    ("board", "name", "expr"),
    annotation_queries(),
    ids=[f"{b}:{n}" for b, n, _ in annotation_queries()],
)
def test_annotation_query_marks_the_running_step(
    prom: Prometheus, board: str, name: str, expr: str
) -> None:
    """Grafana draws a region where the series is non-zero and titles it by its labels."""
    result = evaluate(prom, substitute(expr, board_variables(board)), range_query=True)
    assert {(r["metric"]["run"], r["metric"]["step"]) for r in result} == {
        ("ycsb-live", "run a #1")
    }


def test_exporter_against_ferretdb_exports_up_and_version(prom: Prometheus) -> None:
    """What the real exporter reports from a real MongoDB wire server (FerretDB)."""
    up = prom.query('mongodb_up{mongobench_io_cluster="ferret"}')
    assert [float(r["value"][1]) for r in up] == [1.0]
    version = prom.query('mongodb_version_info{mongobench_io_cluster="ferret"}')
    assert version and version[0]["metric"]["mongodb"]


def test_mongodb_series_carry_the_podmonitor_labels_and_the_exporters_own(
    prom: Prometheus,
) -> None:
    """The cluster dashboard's variables and the alerts group by these labels."""
    pods, _ = cluster_pods()
    up = prom.query(f'mongodb_up{{mongobench_io_cluster="{CLUSTER}"}}')
    assert {r["metric"]["pod"] for r in up} == {name for name, _, _ in pods}
    assert {r["metric"].get("mongobench_io_replset") for r in up} == {
        "demo-cfg",
        "demo-shard0",
        "demo-shard1",
        None,
    }
    assert {r["metric"]["cluster_role"] for r in up} == {"mongod", "mongos"}
    # One primary per replica set; secondaries lag by what their peers report.
    primaries = prom.query("mongodb_mongod_replset_my_state == 1")
    assert sorted(r["metric"]["set"] for r in primaries) == ["demo-cfg", "demo-shard0",
                                                             "demo-shard1"]  # fmt: skip
    lag = prom.query("max by (set, name) (mongodb_mongod_replset_member_replication_lag)")
    assert {r["metric"]["set"] for r in lag} == {"demo-shard0", "demo-shard1"}
    assert all(3 <= float(r["value"][1]) <= 6 for r in lag), lag
    chunks = prom.query("max by (shard) (mongodb_mongos_sharding_shard_chunks_total)")
    assert {r["metric"]["shard"]: float(r["value"][1]) for r in chunks} == {
        "demo-shard0": 40.0,
        "demo-shard1": 43.0,
    }


def chart_alerts() -> list[tuple[str, str]]:
    """(alert, expr) of the chart's PrometheusRule, rendered as alerts/check.py renders it."""
    spec = importlib.util.spec_from_file_location("alerts_check", REPO / "alerts" / "check.py")
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    groups = check.render(str(binary("helm")))["spec"]["groups"]
    return [(r["alert"], r["expr"]) for r in check.alerts(groups)]


# Series of the alerts that come from components this tier does not run.
NOT_HERE = ("kube_job_",)  # kube-state-metrics


def test_alert_series_exist_with_the_labels_the_rules_select(prom: Prometheus) -> None:
    """Every selector of every alert (metric name and label matchers) finds real series, so a
    rule cannot stay silent for a misspelled name or label; thresholds are promtool's part."""
    _, monitor = cluster_pods()
    label_names = {target_label(k) for k in monitor["spec"]["podTargetLabels"]}
    checked = set()
    for alert, expr in chart_alerts():
        for name, matchers in re.findall(
            r"\b((?:mongodb|mongobench|kube)_\w+|up)\b(\{[^}]*\})?", expr
        ):
            if name in label_names or name.startswith(NOT_HERE):
                continue
            assert prom.query(name + matchers), f"{alert}: no series for {name}{matchers}"
            checked.add(name)
    assert {"mongodb_up", "up", "mongodb_mongod_replset_my_state", "mongobench_run_phase",
            "mongodb_mongod_replset_member_replication_lag", "mongodb_dbstats_fsUsedSize",
            "mongodb_dbstats_fsTotalSize", "mongobench_reconciles_total"} <= checked  # fmt: skip


@pytest.mark.parametrize(
    ("board", "variable", "query"),
    variable_queries(),
    ids=[f"{b}:{v}" for b, v, _ in variable_queries()],
)
def test_variable_query_lists_values(
    prom: Prometheus, board: str, variable: str, query: str
) -> None:
    """label_values(match, label) is Grafana's; its Prometheus equivalent is the label API."""
    m = VARIABLE_QUERY.match(query)
    assert m, query
    match = substitute(m["match"], board_variables(board))
    body = api(prom, f"label/{m['label']}/values", {"match[]": match})
    assert body["status"] == "success", body
    assert body["data"], f"{board} ${variable}: no values for {query}"


def test_comparison_shows_both_runs_and_their_statistics(prom: Prometheus) -> None:
    """The main dashboard's numbers are the runs' summaries, per run and workload."""
    mean = {
        (r["metric"]["run"], r["metric"]["workload"]): float(r["value"][1])
        for r in prom.query("mongobench_run_throughput_ops_per_second")
    }
    expected = {
        (run["metadata"]["name"], s["workload"]): s["throughput"]["mean"]
        for run in RUNS
        for s in run["status"]["summary"]
    }
    assert mean == pytest.approx(expected)
    # Workload c ran once: no SD, so no CV; the CV query must not invent one.
    cv = prom.query(
        "mongobench_run_throughput_sd_ops_per_second / mongobench_run_throughput_ops_per_second"
    )
    assert {(r["metric"]["run"], r["metric"]["workload"]) for r in cv} == {
        (run, w) for run in ("ycsb-rs3", "ycsb-sharded") for w in ("a", "b")
    }
    by_topology = prom.query(
        "avg by (topology, platform, workload) (mongobench_run_throughput_ops_per_second)"
    )
    assert {(r["metric"]["topology"], r["metric"]["platform"]) for r in by_topology} == {
        ("ReplicaSet", "kind"),
        ("Sharded", "eks"),
    }


def test_a_misspelled_metric_fails_the_check(prom: Prometheus) -> None:
    """Negative control: the non-empty assertion is what catches a typo (Prometheus answers an
    unknown metric with success and no series)."""
    (_, _, target) = next(t for t in TARGETS if t[0] == "benchmark-comparison")
    good = substitute(target["expr"], board_variables("benchmark-comparison"))
    typo = good.replace("mongobench_run_", "mongobench_runs_")
    assert typo != good
    assert evaluate(prom, good, range_query=False)
    assert evaluate(prom, typo, range_query=False) == []
    # A syntax error is an error, not an empty answer.
    bad = api(prom, "query", {"query": good + ")"})
    assert (bad["status"], bad["errorType"]) == ("error", "bad_data")
    with pytest.raises(AssertionError, match="parse error"):
        evaluate(prom, good + ")", range_query=False)
