"""Cluster tier: per-step CPU, disk, network and memory from a REAL Prometheus scraping a REAL
node-exporter (loopback).

The node-exporter reports the one real machine; the tests name it "kind-worker" through the
configurable node mapping, as a Kubernetes node whose host name differs would be. Scrapes are
every second (localplane.prometheus), so windows of a few seconds have points.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

from localplane.net import free_port
from mongobench.benchmarkrun.cpu import (
    SPLIT_MODES,
    CpuUnavailable,
    NodeMapping,
    ResourceProfile,
    query_range,
    query_window,
)
from mongobench.benchmarkrun.resources import query_resources

pytestmark = pytest.mark.cluster

SCRAPE = 1.0  # localplane.prometheus's scrape_interval
NODE = "kind-worker"
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def instant(prom: str, promql: str) -> list[dict[str, Any]]:
    qs = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{prom}/api/v1/query?{qs}", timeout=5) as resp:
        result: list[dict[str, Any]] = json.load(resp)["data"]["result"]
    return result


@pytest.fixture(scope="module")
def host(prometheus: str) -> dict[str, str]:
    """The real machine's node_uname_info labels (nodename, instance, job)."""
    (info,) = instant(prometheus, 'node_uname_info{job="node"}')
    labels: dict[str, str] = info["metric"]
    return labels


def mappings(host: dict[str, str]) -> list[NodeMapping]:
    return [
        NodeMapping(aliases={NODE: host["nodename"]}),
        NodeMapping(mode="label", label="instance", aliases={NODE: host["instance"]}),
    ]


def window(prom: str, start: float, end: float, mapping: NodeMapping) -> Any:
    return query_window(
        prom,
        start,
        end,
        SCRAPE,
        cluster_nodes=[NODE],
        client_nodes=[],
        namespace="bench",
        pods=["mc-rs0-0"],
        scrape_interval=SCRAPE,
        mapping=mapping,
    )


def wait_scraped(prom: str, until: float) -> None:
    """Until Prometheus holds a sample newer than ``until`` (so the window is complete)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ts = instant(prom, 'timestamp(node_uname_info{job="node"})')
        if ts and float(ts[0]["value"][1]) > until + SCRAPE:
            return
        time.sleep(0.2)
    raise TimeoutError("no fresh node-exporter scrape")


def test_busy_window_shows_more_user_cpu_than_idle_window(
    prometheus: str, host: dict[str, str]
) -> None:
    idle_start = time.time()
    time.sleep(7)
    idle_end = time.time()
    # One spinner per CPU, so the busy window is busy whatever the machine's size.
    spinners = [
        subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=8)])
        for _ in range(os.cpu_count() or 1)
    ]
    busy_start = time.time()
    for p in spinners:
        assert p.wait(timeout=60) == 0
    busy_end = time.time()
    wait_scraped(prometheus, busy_end)

    for mapping in mappings(host):
        idle = window(prometheus, idle_start, idle_end, mapping)
        busy = window(prometheus, busy_start, busy_end, mapping)
        i, b = idle.nodes[NODE], busy.nodes[NODE]
        assert b.user > i.user + 10, (mapping.mode, i, b)
        assert b.avg > i.avg
        for n in (i, b):
            split = sum(getattr(n, m) for m in SPLIT_MODES)
            assert split <= n.avg + 1e-6 <= 100 + 1e-6
            assert n.max <= 100 + 1e-6
            assert n.cpus == pytest.approx(os.cpu_count(), abs=0.5)
        status = busy.to_status()
        assert status["cluster"]["user"] == round(b.user, 1)
        assert status["clients"] is None
        # Every mode of the split came from node-exporter; only cAdvisor is missing locally.
        assert busy.missing == ("mongod containers (no cAdvisor series)",)
        assert status["mongod"] is None


def test_every_mode_of_the_split_is_exported(prometheus: str, host: dict[str, str]) -> None:
    profile = ResourceProfile.load()
    now = time.time()
    for mapping in mappings(host):
        promql = profile.render(
            "nodeCpuByMode", mapping=mapping, nodes=[NODE], range_seconds=4 * SCRAPE
        )
        result = query_range(prometheus, promql, now - 10, now, SCRAPE)
        modes = {r["metric"]["mode"] for r in result}
        assert {"idle", *SPLIT_MODES} <= modes, (mapping.mode, modes)


def test_every_query_in_the_profile_runs(prometheus: str, host: dict[str, str]) -> None:
    profile = ResourceProfile.load()
    now = time.time()
    names = [*profile.queries, *(f.query.name for f in profile.figures)]
    for mapping in mappings(host):
        for name in names:
            promql = profile.render(
                name,
                mapping=mapping,
                nodes=[NODE, "ip-10-0-1-5.ec2.internal"],
                namespace="bench",
                pods=["mc-rs0-0", "mc-cfg-0"],
                range_seconds=4 * SCRAPE,
            )
            query_range(prometheus, promql, now - 30, now, SCRAPE)  # raises on any error


def test_node_nobody_scrapes_is_missing_not_zero(prometheus: str, host: dict[str, str]) -> None:
    now = time.time()
    report = query_window(
        prometheus,
        now - 10,
        now,
        SCRAPE,
        cluster_nodes=[NODE, "kind-worker2"],
        client_nodes=["kind-worker3"],
        namespace="bench",
        pods=[],
        scrape_interval=SCRAPE,
        mapping=mappings(host)[0],
    )
    assert set(report.nodes) == {NODE}
    assert report.missing == ("node kind-worker2", "node kind-worker3")
    assert report.clients is None
    assert report.to_status()["clients"] is None


def test_step_starting_and_ending_in_one_second_still_gets_cpu(
    prometheus: str, host: dict[str, str]
) -> None:
    # Job timestamps have whole seconds: a short step's window can be empty as written.
    second = float(int(time.time()) - 5)
    report = query_window(
        prometheus,
        second,
        second,
        SCRAPE,
        cluster_nodes=[NODE],
        client_nodes=[],
        namespace="bench",
        pods=[],
        scrape_interval=SCRAPE,
        mapping=mappings(host)[0],
    )
    assert set(report.nodes) == {NODE}
    with pytest.raises(ValueError, match="ends before it starts"):
        query_window(
            prometheus,
            second,
            second - 1,
            SCRAPE,
            cluster_nodes=[NODE],
            client_nodes=[],
            namespace="bench",
            pods=[],
            scrape_interval=SCRAPE,
        )


def test_prometheus_error_answer_raises_with_its_words(prometheus: str) -> None:
    now = time.time()
    with pytest.raises(CpuUnavailable, match=r"HTTP 400.*parse error"):
        query_range(prometheus, "sum by (mode (", now - 10, now, SCRAPE)


def test_unreachable_prometheus_raises_cpu_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    now = time.time()
    with pytest.raises(CpuUnavailable) as exc:
        query_window(
            url,
            now - 60,
            now,
            15,
            cluster_nodes=[NODE],
            client_nodes=[],
            namespace="bench",
            pods=[],
            timeout=2,
        )
    assert "unreachable" in exc.value.reason
    assert url in exc.value.reason


def test_disk_writes_show_in_the_windows_disk_figures_with_network_and_memory(
    prometheus: str, host: dict[str, str], tmp_path: Any
) -> None:
    """128 MiB written and fsynced in the middle of a window: at least half of it shows as the
    node's disk write throughput (node-exporter counts every write of the disk, ours included);
    memory total is the machine's; network figures are there (no traffic may leave loopback
    here, so only their presence is checked)."""
    written = 128 * 2**20
    start = time.time()
    time.sleep(4)
    with (tmp_path / "blob").open("wb") as out:
        for _ in range(written // 2**20):
            out.write(os.urandom(2**20))
        out.flush()
        os.fsync(out.fileno())
    time.sleep(4)
    end = time.time()
    wait_scraped(prometheus, end)
    mem_total = next(
        int(line.split()[1]) * 1024
        for line in open("/proc/meminfo")  # noqa: SIM115 - two lines read
        if line.startswith("MemTotal:")
    )
    for mapping in mappings(host):
        report = query_resources(
            prometheus,
            start,
            end,
            SCRAPE,
            cluster_nodes=[NODE],
            client_nodes=[],
            namespace="bench",
            pods=["mc-rs0-0"],
            scrape_interval=SCRAPE,
            mapping=mapping,
        )
        status = report.to_status()
        (node,) = status["nodes"]
        disk, network, memory = node["disk"], node["network"], node["memory"]
        assert disk["writeBytesPerSecond"] >= 0.5 * written / (end - start), (mapping.mode, disk)
        assert disk["writeIops"] > 0 and disk["utilisationPercentMax"] > 0
        assert disk["awaitMs"] is not None and disk["awaitMs"] >= 0
        assert memory["totalBytes"] == pytest.approx(mem_total, rel=0.01)
        assert 0 < memory["usedBytes"] <= memory["usedBytesMax"] <= memory["totalBytes"]
        assert 0 < memory["usedPercent"] < 100
        for key in ("receiveBytesPerSecond", "transmitBytesPerSecond", "errorsPerSecond"):
            assert network[key] >= 0, network
        assert status["cluster"]["nodes"] == 1 and status["clients"] is None
        # Only cAdvisor is absent locally: reported as missing, never as zero.
        assert status["mongod"] is None
        assert status["missing"] == [
            "mongod containers (mongod.memoryWorkingSetBytes: no cAdvisor series)"
        ]


def test_node_without_node_exporter_is_missing_from_the_resources_too(
    prometheus: str, host: dict[str, str]
) -> None:
    now = time.time()
    report = query_resources(
        prometheus,
        now - 10,
        now,
        SCRAPE,
        cluster_nodes=[NODE],
        client_nodes=["kind-worker3"],
        namespace="bench",
        pods=[],
        scrape_interval=SCRAPE,
        mapping=mappings(host)[0],
    )
    status = report.to_status()
    assert [n["name"] for n in status["nodes"]] == [NODE]
    assert status["clients"] is None
    assert status["missing"] == ["node kind-worker3 (no node-exporter series)"]
