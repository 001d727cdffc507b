"""make bench-knee: the saturation knee of one configuration found three times on the local plane.

Three BenchmarkRuns with the same spec.knee (YCSB workload C, 1 client x 4 threads, p99 under
the limit) search the offered load against the Go wire server (benchmarks/wireserver), each
executed for real by the harness kubelet, at the same time on one plane: the host's other load
(2 cores shared with whatever else runs) then weighs on the three alike, where one after the
other it would drift between them. Printed: each
search's knee with its interval, the probes it used next to a geometric grid of the same
resolution, and the spread of the three knees ((max - min) / mean): issue 27 aims at 5%. A
benchmark that prints; no assertion. `knee_spread()` returns the spread for make bench-history.

This plane's clients share 2 cores with the server and the control plane: the knee it finds is
the clients' as much as the server's (LENIENT_VALIDITY, as the cluster tests).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from localplane.executor import pod_executor, rewrite_hosts
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.tools import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "wireserver"))
from wireserver import running_wireserver

NS = "bench"
SEARCHES = int(os.environ.get("BENCH_KNEE_SEARCHES", "3"))
# The knee target: generous enough that the p99 of a plane sharing 2 busy cores (load average
# 20-45 when measured: a p99 of 0.7 s at 25 ops/s was seen) stays under it at low load; an idle
# host answers in about a millisecond. The start is low for the same reason: 4 client threads
# carried about 30 ops/s there.
KNEE: dict[str, Any] = {
    "latency": {"percentile": "p99", "limitMs": 1000},
    "startOpsPerSecond": 10,
    "maxOpsPerSecond": 1280,
    "resolution": 0.05,
    "repetitions": 3,
}
# The measured phase of each probe (counted from its operations' start, not the JVM's).
RUN_SECONDS = int(os.environ.get("BENCH_KNEE_SECONDS", "20"))


def knee_run(name: str, secret: str, **spec: Any) -> dict[str, Any]:
    """A BenchmarkRun searching the knee of workload C against the URI in Secret `secret`."""
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": {
            "uriSecretRef": {"name": secret, "key": "uri"},
            "workloads": [{"name": "c"}],
            "load": {"recordCount": 200, "threads": 2},
            "run": {"durationSeconds": RUN_SECONDS, "threads": 4, "statusIntervalSeconds": 1},
            "knee": KNEE,
            "validity": LENIENT_VALIDITY,
            "cleanup": {"jobs": "Always"},
            **spec,
        },
    }


def _searches(plane: Plane, names: list[str]) -> list[dict[str, Any]]:
    for name in names:
        # Each its own collection: the searches load and read side by side.
        run = knee_run(name, "wireserver", collection=name.replace("-", "_"))
        plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(run))

    def done() -> list[dict[str, Any]] | None:
        items = json.loads(plane.kubectl("get", "benchmarkrun", "-n", NS, "-o", "json").stdout)
        ended = [
            dict(o)
            for o in items["items"]
            if o.get("status", {}).get("phase") in ("Succeeded", "Failed")
        ]
        if len(ended) < len(names):
            return None
        return sorted(ended, key=lambda o: str(o["metadata"]["name"]))

    return list(wait_until(done, timeout=3600, interval=5.0, what="the searches finished"))


def searches(count: int = SEARCHES) -> list[dict[str, Any]]:
    """`count` knee runs of the same configuration, at the same time, on a fresh plane."""
    with tempfile.TemporaryDirectory(prefix="bench-knee-") as tmp:
        work = Path(tmp)
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=1))
        try:
            plane.apply(REPO / "crds")
            plane.kubectl("create", "namespace", NS)
            with (
                running_wireserver(work) as server,
                # Unconfined: in the harness's cgroup the clients would get one task's share
                # of a busy host between them.
                pod_executor(
                    plane,
                    NS,
                    uri_rewrite=rewrite_hosts(f"{server.host}:{server.port}"),
                    cpu_limits=False,
                ),
            ):
                uri = f"mongodb://{server.host}:{server.port}/ycsb"
                plane.kubectl(
                    "create", "secret", "generic", "wireserver", "-n", NS,
                    f"--from-literal=uri={uri}",
                )  # fmt: skip
                operator = start_operator(plane.kubeconfig, [NS], work / "operator.log")
                try:
                    return _searches(plane, [f"knee-{i + 1}" for i in range(count)])
                finally:
                    operator.stop()
        finally:
            plane.stop()


def spread(knees: list[float]) -> float:
    """(max - min) / mean of the knees, in percent."""
    if not knees:
        return float("nan")
    mean = sum(knees) / len(knees)
    return 100.0 * (max(knees) - min(knees)) / mean if mean else float("nan")


def report(runs: list[dict[str, Any]]) -> tuple[float, list[str]]:
    """The spread of the knees (percent) and the lines printed for each search."""
    knees: list[float] = []
    lines = []
    for run in runs:
        status = run.get("status") or {}
        found = ((status.get("knee") or {}).get("workloads") or [{}])[0]
        offered = found.get("offeredOpsPerSecond")
        tp = found.get("throughput") or {}
        lat = found.get("latencyMs") or {}
        if offered is not None and status.get("phase") == "Succeeded":
            knees.append(float(offered))
        lines.append(
            f"  {run['metadata']['name']:8} {status.get('phase', '?'):9} knee {offered} ops/s "
            f"offered, achieved {tp.get('mean')} [{tp.get('ciLow')}, {tp.get('ciHigh')}] "
            f"(n {tp.get('n', 0)}), p99 {lat.get('mean')} ms; probes {found.get('probes')} "
            f"vs grid {found.get('gridProbes')}; {found.get('reason')}"
        )
        if status.get("phase") != "Succeeded":
            why = [
                c.get("message") for c in status.get("conditions") or () if c["type"] == "Succeeded"
            ]
            lines.append(f"    failed: {why}")
    return spread(knees), lines


def knee_spread() -> float:
    """Percent spread of the knee across three searches of the same configuration on the
    local plane against the wire server (make bench-history reads it)."""
    value, lines = report(searches())
    for line in lines:
        print(line, file=sys.stderr)
    return value


def main() -> int:
    runs = searches()
    value, lines = report(runs)
    limit = KNEE["latency"]["limitMs"]
    print(
        f"bench-knee: {len(runs)} searches of workload C against the wire server, "
        f"p99 under {limit} ms, resolution {KNEE['resolution']:.0%}"
    )
    for line in lines:
        print(line)
    probes = [
        ((r.get("status") or {}).get("knee") or {}).get("workloads", [{}])[0].get("probes")
        for r in runs
    ]
    grid = (
        ((runs[0].get("status") or {}).get("knee") or {})
        .get("workloads", [{}])[0]
        .get("gridProbes")
    )
    print(f"bench-knee: knee spread {value:.1f}%, probes {probes} vs a grid of {grid}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
