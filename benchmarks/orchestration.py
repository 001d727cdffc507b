"""make bench-orchestration: the time the operator adds between benchmark steps.

One BenchmarkRun (workloads a, b, c; 3 repetitions; 2 clients; YCSB against FerretDB, executed
for real by the harness kubelet) on the local plane with the apiserver's audit log on. From the
audit log (microsecond timestamps):
  handoff  = a step's Job marked complete (controller-manager's last status write) -> the next
             step's Job created by the operator
  collect  = that Job marked complete -> the operator's status write carrying the step's result
Pod start and the benchmark itself are excluded. Target: median under 1 s each.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO
from mongobench.k8s.client import USER_AGENT

NS = "bench"


def ts(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(
        event["requestReceivedTimestamp"].replace("Z", "+00:00")
    ).timestamp()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-orchestration-") as tmp:
        phase, events = _run_on_plane(Path(tmp))
    created, handoffs, collects = _gaps(events)
    print(f"bench-orchestration: {len(created)} step Jobs, run {phase} (a, b, c x 3, 2 clients)")
    for what, values in (("next Job created  ", handoffs), ("results in status", collects)):
        print(
            f"  Job complete -> {what}  median {statistics.median(values):.3f} s"
            f"  max {max(values):.3f} s  (n={len(values)}, target < 1 s)"
        )
    return 0 if phase == "Succeeded" else 1


def _run_on_plane(work: Path) -> tuple[str, list[dict[str, Any]]]:
    """The BenchmarkRun on a fresh plane: its final phase and the apiserver's audit events."""
    plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3), audit=True)
    model = MongoModel(keyfile=keyfile_from_pods(plane.api_client()), catch_up_seconds=0.1)
    try:
        plane.apply(REPO / "crds")
        plane.kubectl("create", "namespace", NS)
        model.member(f"o-rs0-0.o-rs0-hl.{NS}.svc.cluster.local:27017")
        host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
        with (
            running_ferretdb(work / "ferretdb") as fdb,
            pod_executor(plane, NS, uri_rewrite=rewrite_hosts(f"{fdb.host}:{fdb.port}")),
        ):
            operator = start_operator(
                plane.kubeconfig, [NS], work / "operator.log", MONGOBENCH_HOST_MAP=host_map
            )
            try:
                cluster = {
                    "apiVersion": "mongobench.io/v1alpha1",
                    "kind": "MongoCluster",
                    "metadata": {"name": "o"},
                    "spec": {"version": "7.0.14", "topology": {"replicaSet": {"members": 1}}},
                }
                plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(cluster))
                run = {
                    "apiVersion": "mongobench.io/v1alpha1",
                    "kind": "BenchmarkRun",
                    "metadata": {"name": "r"},
                    "spec": {
                        "clusterRef": {"name": "o"},
                        "workloads": [{"name": w} for w in "abc"],
                        "load": {"recordCount": 200, "threads": 2},
                        "run": {"operationCount": 200, "threads": 2},
                        "repetitions": 3,
                        "clients": {"parallelism": 2},
                        "cleanup": {"jobs": "Never"},
                    },
                }
                plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(run))

                def done() -> str | None:
                    out = plane.kubectl(
                        "get", "benchmarkrun", "r", "-n", NS, "-o", "jsonpath={.status.phase}"
                    ).stdout
                    return out if out in ("Succeeded", "Failed") else None

                phase = wait_until(done, timeout=600, interval=0.5, what="run finished")
            finally:
                operator.stop()
        events = [json.loads(line) for line in plane.audit_log.read_text().splitlines()]
    finally:
        model.stop()
        plane.stop()
    return phase, events


def _gaps(
    events: list[dict[str, Any]],
) -> tuple[list[tuple[float, str]], list[float], list[float]]:
    """From the audit events: the step Jobs created (time, name) in order, and per Job
    completion the seconds to the next Job's creation and to the status write after it."""
    jobs_path = f"/apis/batch/v1/namespaces/{NS}/jobs/"
    completed: dict[str, float] = {}  # job -> last status write by the controller-manager
    created: list[tuple[float, str]] = []  # operator's first apply of each job
    status_writes: list[float] = []
    for e in events:
        uri = e["requestURI"].split("?")[0]
        agent = e.get("userAgent", "")
        if (
            uri.startswith(jobs_path)
            and uri.endswith("/status")
            and "kube-controller-manager" in agent
        ):
            completed[uri[len(jobs_path) : -len("/status")]] = ts(e)
        elif uri.startswith(jobs_path) and e["verb"] == "patch" and agent.startswith(USER_AGENT):
            name = uri[len(jobs_path) :]
            if name not in {n for _, n in created}:
                created.append((ts(e), name))
        elif uri.endswith("/benchmarkruns/r/status") and e["verb"] == "patch":
            status_writes.append(ts(e))
    created.sort()
    handoffs, collects = [], []
    for (_, job), (t_next, _) in itertools.pairwise(created):
        done_at = completed.get(job)
        if done_at is None:
            continue
        handoffs.append(t_next - done_at)
        after = [t for t in status_writes if t >= done_at]
        if after:
            collects.append(after[0] - done_at)
    return created, handoffs, collects


if __name__ == "__main__":
    sys.exit(main())
