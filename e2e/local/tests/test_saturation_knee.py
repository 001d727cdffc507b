"""Cluster tier: the saturation knee of the Go wire server found on the local plane, with its
curve in the report, and cost per million operations in `compare` when prices are given.

What is real: the apiserver, controller-manager (Jobs), KWOK nodes, the operator process, the
probe and run Jobs' commands (the runner and YCSB with the project's binding, paced by YCSB's
target, executed for real by the harness kubelet) against the wire server
(benchmarks/wireserver) on loopback; the CLI as installed. The plane's clients share its 2
cores: the knee is the clients' as much as the server's (LENIENT_VALIDITY), what is proven is
the search, its status, its curve and its cost, not a figure of the server.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from test_benchmarkrun import apply, wait_run
from test_cli import cli, ok

from localplane.executor import pod_executor, rewrite_hosts
from localplane.operator import start_operator
from localplane.plane import Plane
from localplane.tools import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from knee_spread import KNEE, knee_run

sys.path.insert(0, str(REPO / "benchmarks" / "wireserver"))
from wireserver import WireServer, running_wireserver

pytestmark = pytest.mark.cluster

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
PRICE = 0.096  # of one m5.large node-hour, as the test gives it
# Generous: this plane's 2 cores are shared with the other tests' planes, and a p99 of tens of
# milliseconds at low load happens. What bounds the search here is mostly the clients' share
# of the offered load (minAchievedFraction), which the busy host cannot fake.
LIMIT_MS = 1000
# Coarse, so that the test takes few Jobs: 20 .. 160 ops/s by 25%, 4 probes where the grid has
# 10 when the clients carry 160 (an idle host's 4 client threads carry more), a bisection when
# a busy host's carry less (about 30 ops/s was seen: 20, 40, then 30 and 25 or 35, each near
# the limit judged on up to 3 samples, still under the grid's 10). The knee's reproducibility
# at 5% is make bench-knee's figure, not this test's.
KNEE_TEST = {
    **KNEE,
    "latency": {"percentile": "p99", "limitMs": LIMIT_MS},
    "startOpsPerSecond": 20,
    "maxOpsPerSecond": 160,
    "resolution": 0.25,
    "repetitions": 2,
}
# Each probe's measured window: a paced client's achieved load and p99 need seconds, not the
# benchmark's 20 (YCSB's clock starts with its threads, after the JVM's start-up, so a busy
# host shortens the window by the driver's connect at most).
PROBE_SECONDS = 8


@pytest.fixture
def wireserver(tmp_path: Path) -> Iterator[WireServer]:
    with running_wireserver(tmp_path) as server:
        yield server


@pytest.fixture
def priced_nodes(kube_api: k8s.ApiClient) -> Iterator[list[str]]:
    """Every node of the plane labelled m5.large for the test, its labels restored after."""
    core = k8s.CoreV1Api(kube_api)
    before = {
        n.metadata.name: (n.metadata.labels or {}).get(INSTANCE_TYPE)
        for n in core.list_node().items
    }
    for name in before:
        core.patch_node(name, {"metadata": {"labels": {INSTANCE_TYPE: "m5.large"}}})
    try:
        yield sorted(before)
    finally:
        for name, value in before.items():
            core.patch_node(name, {"metadata": {"labels": {INSTANCE_TYPE: value}}})


def test_the_knee_of_the_wire_server_with_its_curve_and_its_cost(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    wireserver: WireServer,
    priced_nodes: list[str],
    tmp_path: Path,
) -> None:
    target = f"{wireserver.host}:{wireserver.port}"
    k8s.CoreV1Api(kube_api).create_namespaced_secret(
        namespace,
        {"metadata": {"name": "wireserver"}, "stringData": {"uri": f"mongodb://{target}/ycsb"}},
    )
    # Unconfined: a client in the harness's cgroup gets one task's share of the host, starved
    # on a host other planes keep busy; no CPU limit is what this test is about.
    with pod_executor(plane, namespace, uri_rewrite=rewrite_hosts(target), cpu_limits=False):
        operator = start_operator(plane.kubeconfig, [namespace], tmp_path / "operator.log")
        try:
            apply(
                plane,
                namespace,
                knee_run(
                    "knee",
                    "wireserver",
                    knee=KNEE_TEST,
                    run={
                        "durationSeconds": PROBE_SECONDS,
                        "threads": 4,
                        "statusIntervalSeconds": 1,
                    },
                    cost={"prices": {"m5.large": PRICE}},
                    cleanup={"jobs": "OnSuccess"},  # a failed step's pod stays to say why
                ),
            )
            run = wait_run(kube_api, namespace, "knee", ("Succeeded", "Failed"), timeout=900)
        finally:
            operator.stop()
    status = run["status"]
    pods = k8s.CoreV1Api(kube_api).list_namespaced_pod(namespace).items
    why = [  # what the failed clients said (their termination messages)
        (c.state.terminated.message or "")[-600:]
        for p in pods
        if p.status.phase == "Failed"
        for c in p.status.container_statuses or ()
        if c.state and c.state.terminated
    ]
    failed = [
        (s["label"], s.get("message"), (s.get("result") or {}).get("error"))
        for s in status.get("steps", [])
        if s["phase"] == "Failed"
    ]
    assert status["phase"] == "Succeeded", (failed, why)

    # The search: doubling from the start until a probe fails, then bisection, each probe
    # with its offered load, what the clients achieved and the percentile.
    probes = [s for s in status["steps"] if s["kind"] == "probe"]
    assert probes[0]["offeredOpsPerSecond"] == 20
    assert all(p["phase"] == "Succeeded" and p["result"]["throughput"] > 0 for p in probes)
    found = status["knee"]["workloads"][0]
    assert found["done"] and found.get("offeredOpsPerSecond", 0) >= 20, (found, probes)
    assert found["probes"] == len(probes) < found["gridProbes"]
    failing = found.get("failingOpsPerSecond")
    if failing is not None:  # bracketed: within the resolution
        assert failing <= found["offeredOpsPerSecond"] * 1.25 + 1
    # The runs at the knee: its interval.
    at_knee = [s for s in status["steps"] if s["kind"] == "run"]
    assert len(at_knee) == 2
    assert {s["offeredOpsPerSecond"] for s in at_knee} == {found["offeredOpsPerSecond"]}
    # Its interval over both: judged, and what was found (a client short of its target on
    # this loaded plane: ClientBound) accepted by LENIENT_VALIDITY, so both count.
    verdicts = [(s["label"], s.get("validity")) for s in at_knee]
    assert all(s["validity"]["valid"] for s in at_knee), verdicts
    tp = found["throughput"]
    assert tp["n"] == 2 and tp["mean"] > 0 and tp["ciLow"] <= tp["mean"] <= tp["ciHigh"], found
    assert found["limitMs"] == LIMIT_MS and found["percentile"] == "p99"

    # The cost: each measured step's client node, an m5.large, for the step's window.
    for step in [*probes, *at_knee]:
        assert step["cost"]["nodes"] == {"m5.large": 1}, step["cost"]
        assert step["cost"]["perMillionOperations"] > 0
    assert status["cost"]["workloads"][0]["perMillionOperations"] > 0

    # What the user sees: the knee in describe, its curve in the report, cost in compare.
    described = ok(cli(plane, "describe", "knee", "-n", namespace))
    assert "Saturation knee" in described and f"/ {found['gridProbes']}" in described
    out = tmp_path / "report"
    ok(cli(plane, "report", "knee", "-n", namespace, "-o", str(out)))
    assert (out / "figures" / "knee-knee-c.png").stat().st_size > 10_000
    page = (out / "report.html").read_text()
    assert "<h2>Knee</h2>" in page and "p99 latency against achieved throughput" in page
    compared = ok(cli(plane, "compare", "knee", "-n", namespace, "--metric", "cost"))
    assert "cost (per Mops)" in compared
