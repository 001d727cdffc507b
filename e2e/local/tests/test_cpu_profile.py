"""Cluster tier: per-step CPU, disk, network and memory from a REAL Prometheus scraping a REAL
node-exporter (loopback), the session's kube-prometheus-stack monitoring (localplane.monitoring).

Each fake node's node-exporter reports the one real machine as that node's host; the tests read
node "kind-worker" through each node mapping (`uname`, and `label` on `instance` with an alias,
as a Kubernetes node whose scrape label differs would be). Scrapes are every second. A window
lasts until Prometheus holds enough scrapes of it (waited for, never slept: a loaded host
delays scrapes), and what is asserted of the busy machine does not depend on the machine's other
load (which fills it on a shared host).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

from localplane.net import free_port
from mongobench.benchmarkrun.telemetry.cpu import (
    SPLIT_MODES,
    CpuUnavailable,
    NodeMapping,
    ResourceProfile,
    WindowQuery,
    query_range,
    query_window,
)
from mongobench.benchmarkrun.telemetry.resources import query_resources

pytestmark = pytest.mark.cluster

SCRAPE = 1.0  # localplane.prometheus's scrape_interval
NODE = "kind-worker"
UNAME = f'node_uname_info{{job="node-exporter", nodename="{NODE}"}}'
# Names of no node of the plane: no node-exporter reports them.
UNSCRAPED = ("kind-worker8", "kind-worker9")
SPIN = "while True:\n    pass\n"
# Scrapes a window holds before it ends: 4 give the first rate (localplane's 1 s scrapes, a
# range of 4), the rest the points averaged.
WINDOW_SCRAPES = 8


def instant(prom: str, promql: str, at: float | None = None) -> list[dict[str, Any]]:
    query = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
    qs = urllib.parse.urlencode(query)
    with urllib.request.urlopen(f"{prom}/api/v1/query?{qs}", timeout=5) as resp:
        result: list[dict[str, Any]] = json.load(resp)["data"]["result"]
    return result


@pytest.fixture(scope="module")
def host(prometheus: str) -> dict[str, str]:
    """Node NODE's node_uname_info labels (nodename, instance, job)."""
    (info,) = instant(prometheus, UNAME)
    labels: dict[str, str] = info["metric"]
    return labels


def mappings(host: dict[str, str]) -> list[NodeMapping]:
    return [
        NodeMapping(aliases={NODE: host["nodename"]}),
        NodeMapping(mode="label", label="instance", aliases={NODE: host["instance"]}),
    ]


def node_window(prom: str, start: float, end: float, mapping: NodeMapping) -> WindowQuery:
    """The window of the one scraped node and its member pod, as the operator asks for it."""
    return WindowQuery(
        prom_url=prom,
        start=start,
        end=end,
        step_seconds=SCRAPE,
        cluster_nodes=[NODE],
        client_nodes=[],
        namespace="bench",
        pods=["mc-rs0-0"],
        scrape_interval=SCRAPE,
        mapping=mapping,
    )


def window(prom: str, start: float, end: float, mapping: NodeMapping) -> Any:
    return query_window(node_window(prom, start, end, mapping))


def wait_scraped(prom: str, until: float) -> None:
    """Until Prometheus holds a sample newer than ``until`` (so the window is complete)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ts = instant(prom, f"timestamp({UNAME})")
        if ts and float(ts[0]["value"][1]) > until + SCRAPE:
            return
        time.sleep(0.2)
    raise TimeoutError("no fresh node-exporter scrape")


def wait_scrapes(prom: str, since: float, count: int = WINDOW_SCRAPES) -> None:
    """Until Prometheus holds ``count`` node-exporter scrapes taken after ``since``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        now = time.time()
        span = f"{max(1, int((now - since) * 1000))}ms"
        got = instant(prom, f"count_over_time({UNAME}[{span}])", at=now)
        if got and float(got[0]["value"][1]) >= count:
            return
        time.sleep(0.2)
    raise TimeoutError(f"fewer than {count} node-exporter scrapes in 120 s")


def children_cpu_seconds() -> float:
    """User CPU seconds of this process's waited-for children."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime


def test_busy_window_holds_the_cpu_its_spinners_used(prometheus: str, host: dict[str, str]) -> None:
    """One spinner per CPU for a window of WINDOW_SCRAPES scrapes: the node's user CPU in that
    window holds at least most of the user CPU the spinners used by their own account
    (getrusage), whatever else the machine runs. (An idle window to compare with is no
    reference on a shared host: its other load keeps it near 100% busy.)"""
    used_before = children_cpu_seconds()
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 1)]
    busy_start = time.time()
    try:
        wait_scrapes(prometheus, busy_start)
    finally:
        busy_end = time.time()
        for p in spinners:
            p.send_signal(signal.SIGTERM)
        for p in spinners:
            assert p.wait(timeout=60) == -signal.SIGTERM
    spun = children_cpu_seconds() - used_before
    wait_scraped(prometheus, busy_end)
    cpus = os.cpu_count() or 1
    spun_percent = 100 * spun / (cpus * (busy_end - busy_start))
    assert spun_percent > 5, spun  # the spinners ran (a CPU-starved host still gives them some)

    for mapping in mappings(host):
        b = window(prometheus, busy_start, busy_end, mapping).nodes[NODE]
        # The window's first point is one rate range in: its rates cover all of it but the
        # scrape-aligned edges, so most of the spinners' CPU, never less.
        assert b.user >= 0.7 * spun_percent, (mapping.mode, spun_percent, b)
        assert b.points >= WINDOW_SCRAPES - 4 - 1, (mapping.mode, b)
        split = sum(getattr(b, m) for m in SPLIT_MODES)
        assert split <= b.avg + 1e-6 <= 100 + 1e-6
        assert b.max <= 100 + 1e-6
        assert b.cpus == pytest.approx(cpus, abs=0.5)
        busy = window(prometheus, busy_start, busy_end, mapping)
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
        WindowQuery(
            prom_url=prometheus,
            start=now - 10,
            end=now,
            step_seconds=SCRAPE,
            cluster_nodes=[NODE, UNSCRAPED[0]],
            client_nodes=[UNSCRAPED[1]],
            namespace="bench",
            pods=[],
            scrape_interval=SCRAPE,
            mapping=mappings(host)[0],
        )
    )
    assert set(report.nodes) == {NODE}
    assert report.missing == tuple(f"node {n}" for n in UNSCRAPED)
    assert report.clients is None
    assert report.to_status()["clients"] is None


def test_step_starting_and_ending_in_one_second_still_gets_cpu(
    prometheus: str, host: dict[str, str]
) -> None:
    # Job timestamps have whole seconds: a short step's window can be empty as written.
    second = float(int(time.time()) - 5)
    report = query_window(
        WindowQuery(
            prom_url=prometheus,
            start=second,
            end=second,
            step_seconds=SCRAPE,
            cluster_nodes=[NODE],
            client_nodes=[],
            namespace="bench",
            pods=[],
            scrape_interval=SCRAPE,
            mapping=mappings(host)[0],
        )
    )
    assert set(report.nodes) == {NODE}
    with pytest.raises(ValueError, match="ends before it starts"):
        query_window(
            WindowQuery(
                prom_url=prometheus,
                start=second,
                end=second - 1,
                step_seconds=SCRAPE,
                cluster_nodes=[NODE],
                client_nodes=[],
                namespace="bench",
                pods=[],
                scrape_interval=SCRAPE,
            )
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
            WindowQuery(
                prom_url=url,
                start=now - 60,
                end=now,
                step_seconds=15,
                cluster_nodes=[NODE],
                client_nodes=[],
                namespace="bench",
                pods=[],
                timeout=2,
            )
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
    wait_scrapes(prometheus, start, 4)  # the window's first rate range: before the writes
    with (tmp_path / "blob").open("wb") as out:
        for _ in range(written // 2**20):
            out.write(os.urandom(2**20))
        out.flush()
        os.fsync(out.fileno())
    wait_scrapes(prometheus, time.time(), 4)  # the writes' last rate range inside the window
    end = time.time()
    wait_scraped(prometheus, end)
    mem_total = next(
        int(line.split()[1]) * 1024
        for line in open("/proc/meminfo")  # noqa: SIM115 - two lines read
        if line.startswith("MemTotal:")
    )
    for mapping in mappings(host):
        report = query_resources(node_window(prometheus, start, end, mapping))
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
        WindowQuery(
            prom_url=prometheus,
            start=now - 10,
            end=now,
            step_seconds=SCRAPE,
            cluster_nodes=[NODE],
            client_nodes=[UNSCRAPED[1]],
            namespace="bench",
            pods=[],
            scrape_interval=SCRAPE,
            mapping=mappings(host)[0],
        )
    )
    status = report.to_status()
    assert [n["name"] for n in status["nodes"]] == [NODE]
    assert status["clients"] is None
    assert status["missing"] == [f"node {UNSCRAPED[1]} (no node-exporter series)"]
