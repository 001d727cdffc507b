"""Cluster tier (needs only Prometheus): every panel query of every committed Grafana dashboard
runs against a REAL Prometheus (Debian's 2.42, scraping every second on loopback) that holds
REAL series, and must return a non-empty answer.

The series come from the exporters themselves, not from hand-written samples:
  * node-exporter on this machine (node_cpu_seconds_total, node_uname_info);
  * the operator's metrics REGISTRY, after `export_run` of two finished BenchmarkRuns whose
    summaries `results.summarise` computed, and `instrumented` handlers that returned, asked to
    be retried and failed;
  * two benchmark clients' `LiveMetrics`, fed YCSB status lines captured from a real run.

Dashboard variables become `.*` (the dashboards' "All"), `$__rate_interval` 1m. A misspelled
metric or label makes the answer empty and the test fail (see the negative control). What is not
proven: Grafana itself is not run, so rendering, transformations and variable dropdowns are only
checked as far as the SDK models (unit tier) and Prometheus' label API go.
"""

from __future__ import annotations

import json
import math
import re
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
from prometheus_client import start_http_server

from localplane.net import free_port
from localplane.prometheus import Prometheus, start_prometheus
from localplane.tools import REPO
from mongobench.bench.results import summarise
from mongobench.observability import metrics
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
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    servers = []
    clients = [
        LiveMetrics(driver="ycsb", phase="run", workload="a", client_index=i) for i in range(2)
    ]
    try:
        for run in RUNS:
            metrics.export_run(run)
        metrics.BUILD_INFO.labels(version("mongobench")).set(1)  # as metrics.serve
        invoke_handlers()
        for c in clients:
            c.running.set(1)  # as the runner does while its driver runs
            line = parse_status_line(STATUS_LINES[0])
            assert line is not None
            c.observe(line)

        operator_port = free_port()
        servers.append(start_http_server(operator_port, "127.0.0.1", metrics.REGISTRY))
        client_ports = []
        for c in clients:
            client_ports.append(free_port())
            servers.append(start_http_server(client_ports[-1], "127.0.0.1", c.registry))

        scrape_configs: list[dict[str, Any]] = [
            # The pod labels a ServiceMonitor/PodMonitor would add. honor_labels keeps the run
            # gauges' own `namespace` (the run's) instead of renaming it exported_namespace.
            {
                "job_name": "mongobench-operator",
                "honor_labels": True,
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{operator_port}"],
                        "labels": {"namespace": "mongobench", "pod": "mb-operator-0"},
                    }
                ],
            },
            {
                "job_name": "mongobench-clients",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{port}"],
                        "labels": {"namespace": "bench", "pod": f"ycsb-rs3-run-a-r1-{i}"},
                    }
                    for i, port in enumerate(client_ports)
                ],
            },
        ]
        server = start_prometheus(
            Path(tmp_path_factory.mktemp("prometheus")), extra_scrape_configs=scrape_configs
        )
        try:
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
            wait_until(
                lambda: (scraped_value(server, "count_over_time(node_uname_info[1m])") or 0) >= 3,
                "three node-exporter scrapes",
            )
            yield server
        finally:
            server.stop()
    finally:
        for run in RUNS:
            metrics.forget_run(run)
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
    }
    assert len(TARGETS) >= 30


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
