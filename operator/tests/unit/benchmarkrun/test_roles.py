"""Unit tier: CPU and memory of every role (shard mongod, config server, mongos, clients) from
cAdvisor series, summarised per pod and per role (pure; e2e/local/tests/test_role_cpu.py runs
the queries against a real Prometheus)."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.benchmarkrun.telemetry import roles
from mongobench.benchmarkrun.telemetry.cpu import (
    NodeMapping,
    ResourceProfile,
    parse_containers,
    rate_range,
)
from mongobench.mongocluster.build import labels

pytestmark = pytest.mark.unit

T0 = 1_763_790_000.0


def pod(name: str, component: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels.component_labels("mc", component)}}  # type: ignore[arg-type]


def points(*values: float) -> list[tuple[float, float]]:
    return [(T0 + 5 * i, v) for i, v in enumerate(values)]


SHARDED = roles.cluster_pod_roles(
    [
        pod("mc-shard0-0", "shard"),
        pod("mc-shard1-0", "shard"),
        pod("mc-cfg-0", "configsvr"),
        pod("mc-mongos-a", "mongos"),
        pod("mc-mongos-b", "mongos"),
    ]
)


def test_pods_take_their_role_from_the_component_label() -> None:
    assert SHARDED == {
        "mc-shard0-0": "mongod",
        "mc-shard1-0": "mongod",
        "mc-cfg-0": "configServer",
        "mc-mongos-a": "mongos",
        "mc-mongos-b": "mongos",
    }
    assert roles.cluster_pod_roles([pod("rs-0", "replicaset")]) == {"rs-0": "mongod"}
    # A pod of the cluster without a component (none today) has no role rather than a guess.
    assert roles.cluster_pod_roles([{"metadata": {"name": "x", "labels": {}}}]) == {}


def test_mongos_cpu_is_read_from_the_mongos_container_and_summed_over_routers() -> None:
    pod_roles = {**SHARDED, "run-c-0": "clients"}
    cpu = {
        ("mc-shard0-0", "mongod"): points(1.0, 1.0),
        ("mc-shard1-0", "mongod"): points(0.5, 1.5),
        ("mc-cfg-0", "mongod"): points(0.1, 0.1),
        ("mc-mongos-a", "mongos"): points(0.2, 0.6),
        ("mc-mongos-b", "mongos"): points(0.4, 0.4),
        # A sidecar's CPU is not the role's.
        ("mc-mongos-a", "exporter"): points(9.0, 9.0),
        ("run-c-0", "client"): points(0.3, 0.5),
    }
    status = roles.summarise(pod_roles, {"cpu": cpu, "memory": None})
    mongos = status["mongos"]
    assert mongos["pods"] == [
        {"pod": "mc-mongos-a", "cpuCores": 0.4, "cpuCoresMax": 0.6},
        {"pod": "mc-mongos-b", "cpuCores": 0.4, "cpuCoresMax": 0.4},
    ]
    # Role maximum: the busiest instant of both routers together, not the sum of each's peak.
    assert mongos["sum"] == {"pods": 2, "cpuCores": 0.8, "cpuCoresMax": 1.0}
    assert mongos["mean"] == {"cpuCores": 0.4}
    assert status["mongod"]["sum"] == {"pods": 2, "cpuCores": 2.0, "cpuCoresMax": 2.5}
    assert status["configServer"]["sum"]["cpuCores"] == 0.1
    assert status["clients"]["pods"] == [{"pod": "run-c-0", "cpuCores": 0.4, "cpuCoresMax": 0.5}]
    assert status["missing"] == ["memory of every role (no cAdvisor series)"]


def test_a_pod_without_series_is_missing_not_zero() -> None:
    cpu = {("mc-mongos-a", "mongos"): points(0.2, 0.2)}
    memory = {("mc-mongos-a", "mongos"): points(100, 300), ("mc-mongos-b", "mongos"): []}
    status = roles.summarise(
        {"mc-mongos-a": "mongos", "mc-mongos-b": "mongos"}, {"cpu": cpu, "memory": memory}
    )
    assert status["mongos"]["pods"][1] == {"pod": "mc-mongos-b"}
    assert status["mongos"]["pods"][0]["memoryWorkingSetBytes"] == 200
    assert status["mongos"]["pods"][0]["memoryWorkingSetBytesMax"] == 300
    assert status["missing"] == [
        "cpu of mongos pod mc-mongos-b",
        "memory of mongos pod mc-mongos-b",
    ]


def test_a_role_with_no_series_at_all_has_no_sum_and_a_role_without_pods_is_absent() -> None:
    status = roles.summarise({"rs-0": "mongod"}, {"cpu": {}, "memory": {}})
    assert status["mongod"] == {"pods": [{"pod": "rs-0"}], "sum": None, "mean": None}
    assert "mongos" not in status and "configServer" not in status


def test_role_memory_query_selects_the_roles_containers_and_the_given_pods() -> None:
    promql = ResourceProfile.load().render(
        "containerMemory",
        mapping=NodeMapping(),
        namespace="bench",
        pods=["mc-mongos-a", "mc-shard0-0"],
        range_seconds=rate_range(5, 5),
    )
    assert 'container=~"mongod|mongos|client"' in promql
    assert 'pod=~"mc-mongos-a|mc-shard0-0"' in promql
    assert "sum by (pod, container)" in promql


def test_containers_parse_by_their_labels_dropping_nan_and_series_of_no_container() -> None:
    matrix = [
        {"metric": {"pod": "p", "container": "mongos"}, "values": [[T0, "0.5"], [T0 + 5, "NaN"]]},
        {"metric": {"pod": "q"}, "values": [[T0, "1"]]},
    ]
    assert parse_containers(matrix, ("pod", "container")) == {("p", "mongos"): [(T0, 0.5)]}
    assert parse_containers(matrix, ("node", "pod", "container")) == {
        ("", "p", "mongos"): [(T0, 0.5)]
    }
