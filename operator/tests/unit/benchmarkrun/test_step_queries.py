"""Unit tier: the queries one step's resource profile sends to Prometheus, counted at an HTTP
stand-in on loopback (the operator's real urllib client talks to it). Each figure is asked for
once per step: the cAdvisor container CPU that the mongod containers, every role and the noisy
neighbours all need is one query, their memory one more. The stand-in answers like Prometheus
(``/api/v1/query_range`` matrices, string values), keyed by the metric a query names.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_kube import FakeKube

from mongobench.benchmarkrun.build import jobs
from mongobench.benchmarkrun.telemetry.cpu import ResourceProfile
from mongobench.benchmarkrun.telemetry.cpu_status import cpu_for_step, fine_cpu_scraped
from mongobench.config import OperatorConfig
from mongobench.mongocluster.build import labels

pytestmark = pytest.mark.unit

T0 = 1_763_790_000.0
NS = "bench"
START, END = "2025-11-22T05:40:00Z", "2025-11-22T05:41:00Z"
DB_NODE, CLIENT_NODE = "db-1", "client-1"
# (node, pod, container, cores, bytes): a shard member with its exporter sidecar, a router, a
# client, and a pod that is none of the benchmark's on the database's node.
CONTAINERS = [
    (DB_NODE, "mc-shard0-0", "mongod", 1.5, 3e9),
    (DB_NODE, "mc-shard0-0", "exporter", 0.05, 4e7),
    (DB_NODE, "mc-mongos-0", "mongos", 0.4, 2e8),
    (CLIENT_NODE, "run-a-0-xyz", "client", 0.9, 5e8),
]
HOG = (DB_NODE, "other", "hog", "burn", 0.6)
FINE_SCRAPED = {"yes": True}  # whether the stand-in has series of a run's own finer CPU scrape


def _matrix(promql: str) -> list[dict[str, Any]]:
    def series(metric: dict[str, str], value: float) -> dict[str, Any]:
        return {"metric": metric, "values": [[T0 + 5 * i, str(value)] for i in range(3)]}

    if "container_cpu_usage_seconds_total" in promql:
        node, ns, pod, container, cores = HOG
        hog = {"node": node, "namespace": ns, "pod": pod, "container": container}
        return [
            series({"node": n, "namespace": NS, "pod": p, "container": c}, cpu)
            for n, p, c, cpu, _ in CONTAINERS
        ] + [series(hog, cores)]
    if "container_memory_working_set_bytes" in promql:
        return [
            series({"pod": p, "container": c}, mem)
            for _, p, c, _, mem in CONTAINERS
            if c != "exporter"
        ]
    if "node_cpu_seconds_total" in promql:
        if 'job="' in promql and not FINE_SCRAPED["yes"]:
            return []  # the run's PodMonitor was never scraped
        modes = {"user": 0.5, "system": 0.2, "iowait": 0.0, "steal": 0.0, "idle": 1.3}
        return [
            series({"nodename": n, "mode": m}, v)
            for n in (DB_NODE, CLIENT_NODE)
            for m, v in modes.items()
        ]
    return [series({"nodename": n}, 1.0) for n in (DB_NODE, CLIENT_NODE)]


class _Prometheus(BaseHTTPRequestHandler):
    queries: list[str]

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        promql = urllib.parse.parse_qs(url.query)["query"][0]
        self.queries.append(promql)
        body = {"status": "success", "data": {"resultType": "matrix", "result": _matrix(promql)}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[tuple[str, list[str]]]:
    queries: list[str] = []
    handler = type("Handler", (_Prometheus,), {"queries": queries})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", queries
    finally:
        server.shutdown()
        server.server_close()


def _pod(name: str, node: str, lbls: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": lbls},
        "spec": {"nodeName": node},
    }


def _kube() -> FakeKube:
    def member(name: str, component: str) -> dict[str, Any]:
        lbls = {**labels.component_labels("mc", component), jobs.CLUSTER_LABEL: "mc"}  # type: ignore[arg-type]
        return _pod(name, DB_NODE, lbls)

    return FakeKube(
        member("mc-shard0-0", "shard"),
        member("mc-mongos-0", "mongos"),
        _pod("run-a-0-xyz", CLIENT_NODE, {"job-name": "run-a-0"}),
    )


def test_a_step_asks_prometheus_for_each_figure_once(prometheus: tuple[str, list[str]]) -> None:
    url, queries = prometheus
    query = cpu_for_step(_kube(), OperatorConfig(prometheus_url=url, prometheus_scrape_interval=5))
    assert query is not None
    run = {"metadata": {"namespace": NS, "name": "run"}, "spec": {"clusterRef": {"name": "mc"}}}
    status = query(run, {"job": "run-a-0"}, START, END)

    # Every query once; container CPU and memory once each, whichever parts need them.
    assert [q for q, n in Counter(queries).items() if n > 1] == []
    by_metric = Counter(
        m
        for q in queries
        for m in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes")
        if m in q
    )
    assert by_metric == {
        "container_cpu_usage_seconds_total": 1,
        "container_memory_working_set_bytes": 1,
    }
    node_figures = [f for f in ResourceProfile.load().figures if f.query.scope == "node"]
    assert len(queries) == 1 + len(node_figures) + 2  # node CPU, node figures, containers

    # ... and every part got its figures from those two answers.
    assert status["cpu"]["mongod"] == [{"pod": "mc-shard0-0", "avgCores": 1.5, "maxCores": 1.5}]
    assert status["resources"]["mongod"] == [
        {"pod": "mc-shard0-0", "memoryWorkingSetBytes": 3e9, "memoryWorkingSetBytesMax": 3e9}
    ]
    roles = status["roles"]
    assert roles["mongos"]["sum"]["cpuCores"] == 0.4
    assert roles["mongos"]["sum"]["memoryWorkingSetBytes"] == 2e8
    assert roles["clients"]["sum"]["cpuCores"] == 0.9
    # The exporter sidecar is no role's cost, and no neighbour: it is in a database pod.
    assert roles["mongod"]["sum"]["cpuCores"] == 1.5
    assert "missing" not in roles
    neighbours = {n["node"]: n for n in status["neighbours"]["nodes"]}
    assert neighbours[DB_NODE]["pods"] == ["other/hog"]
    assert neighbours[DB_NODE]["cores"] == 0.6
    assert neighbours[CLIENT_NODE]["cores"] == 0.0


def test_the_container_cpu_query_covers_the_steps_nodes_and_the_runs_own_pods() -> None:
    from mongobench.benchmarkrun.telemetry.cpu import NodeMapping, rate_range

    promql = ResourceProfile.load().render(
        "containerCpu",
        mapping=NodeMapping(),
        namespace=NS,
        pods=["mc-shard0-0", "run-a-0-xyz"],
        node_names=[DB_NODE, CLIENT_NODE],
        range_seconds=rate_range(5, 5),
    )
    # The nodes' containers (neighbours), or the run's pods wherever cAdvisor has no `node`.
    assert f'node=~"{CLIENT_NODE}|{DB_NODE}"' in promql
    assert f'namespace="{NS}", pod=~"mc-shard0-0|run-a-0-xyz"' in promql
    assert " or " in promql
    assert "sum by (node, namespace, pod, container)" in promql


def _step(url: str, **spec: Any) -> dict[str, Any]:
    query = cpu_for_step(_kube(), OperatorConfig(prometheus_url=url, prometheus_scrape_interval=5))
    assert query is not None
    run = {
        "metadata": {"namespace": NS, "name": "run"},
        "spec": {"clusterRef": {"name": "mc"}, **spec},
    }
    return query(run, {"job": "run-a-0"}, START, END)


def _query_range_args(queries: list[str], metric: str) -> list[str]:
    return [q for q in queries if metric in q]


@pytest.mark.parametrize("scraped", [True, False], ids=["fine", "fallback"])
def test_a_run_at_1s_resolution_asks_for_its_own_series_at_1s_and_says_what_it_got(
    prometheus: tuple[str, list[str]], scraped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, queries = prometheus
    monkeypatch.setitem(FINE_SCRAPED, "yes", scraped)
    status = _step(url, monitoring={"cpuResolutionSeconds": 1})
    node_cpu = _query_range_args(queries, "node_cpu_seconds_total")
    # The run's own job, at 4 x 1 s; then, only where it had no series, the default.
    assert 'job="mongobench-cpu/bench/run"' in node_cpu[0] and "[4s]" in node_cpu[0]
    if scraped:
        assert len(node_cpu) == 1
        assert status["cpu"]["resolutionSeconds"] == 1
        assert status["cpu"]["job"] == "mongobench-cpu/bench/run"  # the archive asks it again
        assert status["cpu"]["window"]["stepSeconds"] == 1
        assert "missing" not in status["cpu"], status["cpu"]["missing"]
    else:
        assert len(node_cpu) == 2 and "job=" not in node_cpu[1] and "[20s]" in node_cpu[1]
        assert status["cpu"]["resolutionSeconds"] == 5 and "job" not in status["cpu"]
        assert any("cpu at 1 s resolution" in m for m in status["cpu"]["missing"])
    # Container series stay at Prometheus' interval, asked once.
    assert len(_query_range_args(queries, "container_cpu_usage_seconds_total")) == 1


def test_a_run_without_a_resolution_keeps_prometheus_interval(
    prometheus: tuple[str, list[str]],
) -> None:
    url, queries = prometheus
    status = _step(url)
    (node_cpu,) = _query_range_args(queries, "node_cpu_seconds_total")
    assert "job=" not in node_cpu and "[20s]" in node_cpu
    assert status["cpu"]["resolutionSeconds"] == 5
    assert status["cpu"]["nodes"][0]["points"] == 3  # the stand-in's points in the window


def test_the_archive_asks_again_for_the_series_the_steps_figures_came_from(
    prometheus: tuple[str, list[str]],
) -> None:
    from mongobench.benchmarkrun.act.archive import cpu_series

    url, queries = prometheus
    status = _step(url, monitoring={"cpuResolutionSeconds": 1})
    queries.clear()
    found = cpu_series(
        {"cpu": status["cpu"]}, OperatorConfig(prometheus_url=url, prometheus_scrape_interval=5)
    )
    (asked,) = queries
    # The run's own 1 s job (never both jobs summed: that would count every CPU twice).
    assert 'job="mongobench-cpu/bench/run"' in asked and "[4s]" in asked
    assert found["cpuSeries"]["stepSeconds"] == 1


def test_the_fine_scrape_probe_asks_for_the_runs_own_job(
    prometheus: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What holds a run's next Job (decide.WaitForCpuScrape): the fine job's series, asked by
    its name; an unreachable Prometheus holds nothing (the step's CPU says why it is missing)."""
    url, queries = prometheus
    scraped = fine_cpu_scraped(OperatorConfig(prometheus_url=url))
    assert scraped is not None and scraped("mongobench-cpu/ns/r") is True
    assert queries == ['count(node_cpu_seconds_total{job="mongobench-cpu/ns/r"})']
    monkeypatch.setitem(FINE_SCRAPED, "yes", False)
    assert scraped("mongobench-cpu/ns/r") is False
    closed = fine_cpu_scraped(OperatorConfig(prometheus_url="http://127.0.0.1:9"))
    assert closed is not None and closed("mongobench-cpu/ns/r") is True
    assert fine_cpu_scraped(OperatorConfig()) is None
