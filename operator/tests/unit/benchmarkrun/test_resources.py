"""Unit tier: the resource profile's disk, network and memory figures, rendered and summarised
(pure; e2e/local/tests/test_cpu_profile.py runs them against a real Prometheus)."""

from __future__ import annotations

import math
import re

import pytest

from mongobench.benchmarkrun.telemetry.cpu import NodeMapping, ResourceProfile, step_window
from mongobench.benchmarkrun.telemetry.resources import (
    ResourceReport,
    Value,
    figure_status,
    group_values,
    summarise_points,
)

pytestmark = pytest.mark.unit

T0 = 1_763_790_000.0
MAPPINGS = (NodeMapping(), NodeMapping(mode="label", label="instance"))


def figures_by_key() -> dict[str, object]:
    return {f"{f.group}.{f.name}": f for f in ResourceProfile.load().figures}


def test_profile_has_disk_network_memory_per_node() -> None:
    # The mongod containers' memory is the shared containerMemory query (test_step_queries).
    figures = ResourceProfile.load().figures
    groups = {(f.group, f.query.scope) for f in figures}
    assert groups == {("disk", "node"), ("network", "node"), ("memory", "node")}
    names = set(figures_by_key())
    assert {
        "disk.readIops",
        "disk.writeIops",
        "disk.readBytesPerSecond",
        "disk.writeBytesPerSecond",
        "disk.utilisationPercent",
        "disk.awaitMs",
        "network.receiveBytesPerSecond",
        "network.transmitBytesPerSecond",
        "network.receivePacketsPerSecond",
        "network.transmitPacketsPerSecond",
        "network.errorsPerSecond",
        "memory.usedBytes",
        "memory.totalBytes",
    } <= names


@pytest.mark.parametrize("mapping", MAPPINGS, ids=lambda m: m.mode)
def test_every_figure_renders_to_a_selector_without_placeholders_or_stray_commas(
    mapping: NodeMapping,
) -> None:
    profile = ResourceProfile.load()
    for f in profile.figures:
        promql = profile.render(
            f.query.name,
            mapping=mapping,
            nodes=["ip-10-0-1-5.ec2.internal"],
            namespace="bench",
            pods=["mc-rs0-0"],
            range_seconds=60,
        )
        assert "{{" not in promql and "}}" not in promql, promql
        assert not re.search(r"\{\s*,|,\s*\}", promql), promql
        if f.query.scope == "node":
            assert "sum by" in promql or "max by" in promql
            if mapping.mode == "uname":
                assert 'node_uname_info{nodename=~"ip-10-0-1-5\\\\.ec2\\\\.internal"}' in promql
            else:
                assert 'instance=~"ip-10-0-1-5\\\\.ec2\\\\.internal"' in promql
        if f.group == "disk":
            assert 'device!~"loop.+|' in promql  # loop and RAM devices are no disks
        if f.group == "network":
            assert 'device!~"lo|veth.+|' in promql  # nor loopback and veth interfaces


def test_summary_is_mean_and_largest_point_ignoring_non_finite_points() -> None:
    assert summarise_points([(T0, 2.0), (T0 + 15, 4.0), (T0 + 30, math.nan)]) == Value(3.0, 4.0)
    # An idle disk's await is 0/0 at every point: no value, which is not "missing".
    assert summarise_points([(T0, math.nan)]) == Value(None, None)
    assert group_values([Value(2.0, 5.0), Value(4.0, 9.0), Value(None, None)]) == Value(3.0, 9.0)


def test_status_keeps_the_mean_and_where_asked_the_max_rounded_by_unit() -> None:
    figures = ResourceProfile.load().figures
    values = {
        "disk.readIops": Value(12.345, 40.0),
        "disk.utilisationPercent": Value(33.333, 91.26),
        "memory.usedBytes": Value(2.5e9 + 0.4, 3e9),
        "disk.awaitMs": Value(None, None),
    }
    assert figure_status(figures, values) == {
        "disk": {
            "readIops": 12.3,  # no max kept for IOPS
            "utilisationPercent": 33.3,
            "utilisationPercentMax": 91.3,
            "awaitMs": None,
            "awaitMsMax": None,
        },
        "memory": {"usedBytes": 2_500_000_000, "usedBytesMax": 3_000_000_000},
    }


def test_report_status_has_nodes_by_role_groups_mongod_and_missing() -> None:
    profile = ResourceProfile.load()
    node_figures = tuple(f for f in profile.figures if f.query.scope == "node")
    report = ResourceReport(
        window=step_window(T0, T0 + 120, 15, 15),
        cluster_nodes=("db-1", "db-2"),
        client_nodes=("client-1",),
        node_figures=node_figures,
        nodes={
            "db-1": {"disk.writeIops": Value(100.0, 150.0), "memory.usedPercent": Value(40, 50)},
            "db-2": {"disk.writeIops": Value(300.0, 320.0), "memory.usedPercent": Value(60, 70)},
            "client-1": {"disk.writeIops": Value(1.0, 2.0)},
        },
        containers={"mc-rs0-0": Value(1e9, 1.5e9)},
        missing=("node client-1 (memory.usedPercent)",),
    )
    status = report.to_status()
    assert status["window"]["start"] == "2025-11-22T05:40:00Z"
    assert [(n["name"], n["role"]) for n in status["nodes"]] == [
        ("db-1", "cluster"),
        ("db-2", "cluster"),
        ("client-1", "client"),
    ]
    assert status["cluster"] == {
        "nodes": 2,
        "disk": {"writeIops": 200.0},
        "memory": {"usedPercent": 50.0, "usedPercentMax": 70.0},
    }
    assert status["clients"] == {"nodes": 1, "disk": {"writeIops": 1.0}}
    assert status["mongod"] == [
        {"pod": "mc-rs0-0", "memoryWorkingSetBytes": 1e9, "memoryWorkingSetBytesMax": 1.5e9}
    ]
    assert status["missing"] == ["node client-1 (memory.usedPercent)"]


def test_empty_matcher_placeholder_leaves_a_valid_selector() -> None:
    text = """
name: t
defines: {disks: 'device!~"loop.+"'}
nodeMappings: {uname: {nodeLabel: nodename, selector: "", join: ""}}
queries: {}
figures: {disk: {x: {unit: ops/s, query: 'rate(a{ {{node_selector}}, {{disks}} }[1m])'}}}
"""
    promql = ResourceProfile.load(text).render("disk.x", mapping=NodeMapping(), range_seconds=4)
    assert promql == 'rate(a{ device!~"loop.+" }[1m])'
