"""Unit tier: per-step CPU figures from Prometheus series, and the metric profile's PromQL.

Series are shaped like real ``/api/v1/query_range`` answers for
``sum by (nodename, mode) (rate(node_cpu_seconds_total[..]))`` on 2-CPU nodes: string values,
all eight node-exporter modes, totals that drift a little from the CPU count.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from mongobench.benchmarkrun.telemetry.cpu import (
    SPLIT_MODES,
    CpuReport,
    NodeMapping,
    ResourceProfile,
    group,
    parse_matrix,
    rate_range,
    regex_alternation,
    summarise,
)

pytestmark = pytest.mark.unit

T0 = 1_763_790_000.0


def matrix(node: str, points: list[dict[str, float]], label: str = "nodename") -> list[Any]:
    """A query_range matrix for one node: one series per mode, one point per second."""
    modes = sorted({m for p in points for m in p})
    return [
        {
            "metric": {label: node, "mode": mode},
            "values": [[T0 + i, str(p[mode])] for i, p in enumerate(points) if mode in p],
        }
        for mode in modes
    ]


def busy_point(user: float, system: float, iowait: float, steal: float, total: float = 2.0) -> Any:
    other = 0.02  # softirq: busy, but not part of the split
    idle = total - user - system - iowait - steal - other
    return {
        "user": user,
        "system": system,
        "iowait": iowait,
        "steal": steal,
        "idle": idle,
        "nice": 0.0,
        "irq": 0.0,
        "softirq": other,
    }


# A mongod node under YCSB load, then quieter; a client node running the YCSB threads.
MONGOD = [busy_point(0.9, 0.3, 0.1, 0.05), busy_point(1.1, 0.4, 0.1, 0.05)]
CLIENT = [busy_point(0.5, 0.1, 0.0, 0.0), busy_point(0.7, 0.1, 0.0, 0.0)]


def test_node_figures_are_percent_of_all_cpus_like_dstat() -> None:
    nodes = summarise(parse_matrix(matrix("mongo-0", MONGOD), "nodename"))
    n = nodes["mongo-0"]
    # busy = 100 - idle: (0.9+0.3+0.1+0.05+0.02)/2 = 68.5 %, then 83.5 %.
    assert n.avg == pytest.approx(76.0)
    assert n.max == pytest.approx(83.5)
    assert n.user == pytest.approx(50.0)
    assert n.system == pytest.approx(17.5)
    assert n.iowait == pytest.approx(5.0)
    assert n.steal == pytest.approx(2.5)
    assert n.cpus == pytest.approx(2.0)


def test_counter_jitter_cannot_push_the_split_above_busy_or_busy_above_100() -> None:
    # Rates of a scrape that landed late: the modes add up to 2.1 CPUs on a 2-CPU node.
    jittery = [busy_point(1.5, 0.4, 0.05, 0.05, total=2.1)]
    jittery[0]["idle"] = 0.0
    n = summarise(parse_matrix(matrix("n", jittery), "nodename"))["n"]
    assert sum(getattr(n, m) for m in SPLIT_MODES) <= n.avg + 1e-9
    assert n.avg <= 100.0 + 1e-9
    assert n.max <= 100.0 + 1e-9


def test_node_without_idle_series_is_left_out_rather_than_reported_idle() -> None:
    partial = [{"user": 1.0, "system": 0.2}]
    assert summarise(parse_matrix(matrix("n", partial), "nodename")) == {}


def test_nan_points_from_prometheus_are_ignored() -> None:
    answer = matrix("n", MONGOD)
    for series in answer:
        series["values"].append([T0 + 2, "NaN"])
    n = summarise(parse_matrix(answer, "nodename"))["n"]
    assert n.points == 2
    assert n.avg == pytest.approx(76.0)


def test_cluster_and_client_groups_average_their_own_nodes() -> None:
    answer = [
        *matrix("mongo-0", MONGOD),
        *matrix("mongo-1", [busy_point(0.3, 0.1, 0.0, 0.0)] * 2),
        *matrix("client-0", CLIENT),
    ]
    nodes = summarise(parse_matrix(answer, "nodename"))
    cluster = group(nodes, ["mongo-0", "mongo-1", "gone"])
    clients = group(nodes, ["client-0"])
    assert cluster is not None and clients is not None
    assert cluster.nodes == 2  # "gone" has no data: not averaged in as 0 %
    assert cluster.avg == pytest.approx((76.0 + 21.0) / 2)
    assert cluster.max == pytest.approx(83.5)  # the busiest node's busiest point
    assert clients.user == pytest.approx(30.0)
    assert group(nodes, ["gone"]) is None


def report(nodes: dict[str, Any], containers: Any) -> CpuReport:
    return CpuReport(
        start=datetime.fromtimestamp(T0, UTC),
        end=datetime.fromtimestamp(T0 + 600, UTC),
        step_seconds=1,
        cluster_nodes=("mongo-0",),
        client_nodes=("client-0", "mongo-0"),
        nodes=nodes,
        cluster=group(nodes, ["mongo-0"]),
        clients=group(nodes, ["client-0", "mongo-0"]),
        containers=containers,
        missing=("mongod containers (no cAdvisor series)",),
    )


def test_status_is_small_json_with_roles_and_missing_mongod_cpu_not_zero() -> None:
    answer = [*matrix("mongo-0", MONGOD), *matrix("client-0", CLIENT)]
    status = report(summarise(parse_matrix(answer, "nodename")), None).to_status()
    text = json.dumps(status)
    assert len(text) < 2000
    assert status["window"] == {
        "start": "2025-11-22T05:40:00Z",
        "end": "2025-11-22T05:50:00Z",
        "stepSeconds": 1,
    }
    assert [(n["name"], n["role"]) for n in status["nodes"]] == [
        ("mongo-0", "both"),
        ("client-0", "client"),
    ]
    assert status["nodes"][0] == {
        "name": "mongo-0",
        "role": "both",
        "avg": 76.0,
        "max": 83.5,
        "user": 50.0,
        "system": 17.5,
        "iowait": 5.0,
        "steal": 2.5,
        "cpus": 2,
        "points": 2,  # at the window's step: how fine the figures are
    }
    assert status["mongod"] is None
    assert status["missing"] == ["mongod containers (no cAdvisor series)"]


def test_packaged_profile_renders_every_query_without_leftover_placeholders() -> None:
    profile = ResourceProfile.load()
    assert set(profile.queries) == {
        "nodeCpuByMode",
        "containerCpu",
        "containerMemory",
    }
    for mapping in (NodeMapping(), NodeMapping(mode="label", label="instance")):
        for name in profile.queries:
            promql = profile.render(
                name,
                mapping=mapping,
                nodes=["ip-10-0-1-5.ec2.internal"],
                namespace="bench",
                pods=["mc-rs0-0", "mc-rs0-1"],
                range_seconds=rate_range(1, 1),
                node_names=["ip-10-0-1-5.ec2.internal"],
            )
            assert "{{" not in promql and "}}" not in promql


def test_node_names_are_matched_exactly_and_aliases_apply() -> None:
    profile = ResourceProfile.load()
    uname = profile.render(
        "nodeCpuByMode",
        mapping=NodeMapping(aliases={"kind-worker": "vm"}),
        nodes=["kind-worker", "ip-10-0-1-5.ec2.internal"],
        range_seconds=60,
    )
    # Dots escaped (a dot would match any character), in a double-quoted PromQL string.
    assert 'node_uname_info{nodename=~"ip-10-0-1-5\\\\.ec2\\\\.internal|vm"}' in uname
    assert "[60s]" in uname
    label = profile.render(
        "nodeCpuByMode",
        mapping=NodeMapping(mode="label", label="node"),
        nodes=["w1"],
        range_seconds=4,
    )
    assert 'node_cpu_seconds_total{ node=~"w1" }' in label
    assert "sum by (node, mode)" in label
    assert "node_uname_info" not in label


def test_rate_range_always_spans_two_scrapes() -> None:
    assert rate_range(1, 1) == 4  # Grafana's $__rate_interval rule
    assert rate_range(60, 15) == 75


def test_profile_with_unknown_placeholder_is_refused() -> None:
    text = """
name: resources
nodeMappings: {uname: {nodeLabel: nodename, selector: "", join: ""}}
queries: {q: {scope: node, query: 'rate(x[{{window}}])'}}
"""
    with pytest.raises(ValueError, match="window"):
        ResourceProfile.load(text).render("q", mapping=NodeMapping(), range_seconds=4)


def test_bad_node_mapping_is_refused() -> None:
    with pytest.raises(ValueError, match="label name"):
        NodeMapping(mode="label", label="kubernetes.io/hostname")
    assert regex_alternation(['a"b']) == 'a\\"b'


def test_window_bounds_may_be_rfc3339_strings_as_in_step_status() -> None:
    from mongobench.benchmarkrun.telemetry.cpu import _as_datetime

    assert _as_datetime("2025-11-22T05:40:00Z").timestamp() == T0
    assert _as_datetime(T0) == _as_datetime(datetime.fromtimestamp(T0, UTC))
