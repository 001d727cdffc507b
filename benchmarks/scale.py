"""make bench-scale: the operator under many objects at once.

Applies N MongoClusters (1-member replica sets) and N small BenchmarkRuns (one per cluster: a
tiny load and one run, one client) at once, and prints seconds from the apply to: every
cluster's children created, every cluster Ready, every run Succeeded; the operator's peak RSS
(VmHWM of its process); and the API requests the operator issued per object (the apiserver's
audit log, filtered by the operator's user agents).

Targets (a benchmark, not a test): 200 + 200 within 60 s, peak RSS under 100 MiB.

It finishes on a busy 2-core machine too. One `kubectl apply` of all 400 objects once timed
out after 300 s (load average 13): runs whose clusters were already Ready started their clients,
real YCSB JVMs, one per pod and all at once, while the apply was still going, and they starved
the apiserver the apply (and the operator) waited on. Now:
- the objects go in server-side applies of BENCH_BATCH objects (one request each, no read
  first), each batch with its own BENCH_APPLY_TIMEOUT: the wait follows progress, and a
  stalled batch still fails;
- the harness kubelet (localplane.executor) starts only after the apply returned: the client
  pods the operator created meanwhile wait as pods whose node is not ready yet would;
- it runs at most BENCH_CLIENTS client processes at once, as a node's capacity would.
So "apply returned" and the clusters' milestones measure the apiserver and the operator, and
"all runs finished" what the clients take on this machine.

    BENCH_N              clusters (default 200)
    BENCH_RUNS           runs (default N; 0 measures the clusters alone)
    BENCH_TIMEOUT        seconds to wait for each milestone (default 900)
    BENCH_BATCH          objects per server-side apply (default 50)
    BENCH_APPLY_TIMEOUT  seconds for each batch's apply (default 300)
    BENCH_CLIENTS        client processes at once (default twice the cores)

What is real: apiserver, controller-manager, KWOK nodes, the operator process, the runs' YCSB
clients (executed by the harness kubelet against FerretDB). MongoDB's replica-set state is the
wire model (localplane.mongomodel), one loopback peer per member.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO
from mongobench.k8s.client import USER_AGENT

NS = "scale"
N = int(os.environ.get("BENCH_N", "200"))
RUNS = int(os.environ.get("BENCH_RUNS", str(N)))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "900"))
BATCH = int(os.environ.get("BENCH_BATCH", "50"))
APPLY_TIMEOUT = float(os.environ.get("BENCH_APPLY_TIMEOUT", "300"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", str(2 * (os.cpu_count() or 1))))
GROUP = "mongobench.io"


def cluster(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"name": f"s{i}"},
        "spec": {"version": "7.0.14", "topology": {"replicaSet": {"members": 1}}},
    }


def run(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": f"r{i}"},
        "spec": {
            "clusterRef": {"name": f"s{i}"},
            "workloads": [{"name": "c"}],
            "load": {"recordCount": 20, "threads": 1},
            "run": {"operationCount": 20, "threads": 1},
            "repetitions": 1,
            "clients": {"parallelism": 1},
            "collection": f"t{i}",  # one collection each: the runs share FerretDB
        },
    }


class PeakRss:
    """The process's peak resident set (VmHWM), sampled until stopped (it outlives the sample
    only if the process dies first)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.threads = pid, 0, 0
        self.done = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while not self.done.wait(0.5):
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
                    elif line.startswith("Threads:"):
                        self.threads = max(self.threads, int(line.split()[1]))
            except OSError:
                return


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far (all cores, idle and iowait excluded)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def handler_calls(metrics: str) -> tuple[dict[str, float], dict[str, float]]:
    """Calls of each handler that reconciled (outcomes ok, retry and error summed), and events
    each dropped without a reconcile (outcome skipped), from the operator's own counters."""
    calls: dict[str, float] = {}
    skipped: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics):
        if family.name != "mongobench_reconciles":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = f"{sample.labels['kind']} {sample.labels['handler']}"
                into = skipped if sample.labels["outcome"] == "skipped" else calls
                into[key] = into.get(key, 0) + sample.value
    return calls, skipped


def operator_requests(audit_log: Path) -> list[dict[str, Any]]:
    out = []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        agent = event.get("userAgent", "")
        if agent.startswith(("kopf/", USER_AGENT)):
            out.append(event)
    return out


def apply_in_batches(plane: Plane, objects: list[dict[str, Any]]) -> None:
    """Server-side applies of BATCH objects each, every one with its own timeout."""
    for start in range(0, len(objects), BATCH):
        batch = objects[start : start + BATCH]
        plane.kubectl(
            "apply", "--server-side", "--field-manager=bench-scale", "-n", NS, "-f", "-",
            input=yaml.safe_dump_all(batch), timeout=APPLY_TIMEOUT,
        )  # fmt: skip


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, ExitStack() as stack:
        plane, operator, uri = _start(Path(tmp), stack)
        assert operator.process is not None
        rss = PeakRss(operator.process.pid)
        api = plane.api_client()
        api.user_agent = "mongobench-bench"
        custom = k8s.CustomObjectsApi(api)
        objects = [cluster(i) for i in range(N)] + [run(i) for i in range(RUNS)]
        time.sleep(2)  # the operator's initial listing
        pids = {"operator": operator.process.pid} | {p.name: p.pid for p in plane.procs}
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        machine0 = machine_cpu_seconds()
        t0 = time.monotonic()
        apply_in_batches(plane, objects)
        t_applied = time.monotonic() - t0
        executor = None
        if RUNS:  # the clients start now, not during the apply (see the docstring)
            executor = stack.enter_context(
                pod_executor(plane, NS, uri_rewrite=uri, max_processes=CLIENTS)
            )
        marks = _milestones(custom, k8s.AppsV1Api(api), t0)
        elapsed = time.monotonic() - t0
        cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
        machine = machine_cpu_seconds() - machine0
        failed = _phases(custom, "benchmarkruns").count("Failed") if RUNS else 0
        time.sleep(2)
        rss.done.set()
        print(f"bench-scale: {N} MongoClusters (1 member) + {RUNS} BenchmarkRuns (load + 1 run)")
        print(
            f"  kubectl apply returned          {t_applied:7.1f} s   "
            f"({-(-(N + RUNS) // BATCH)} server-side applies of up to {BATCH})"
        )
        _print_milestones(marks)
        if RUNS:
            print(f"  runs Failed                     {failed:7d}     (target 0, within 60 s)")
        if executor is not None:
            print(
                f"  client processes at once, most  {executor.peak_processes:7d}"
                f"     (cap {CLIENTS}, started after the apply)"
            )
        print(f"  operator peak RSS               {rss.peak / 2**20:7.1f} MiB (target < 100)")
        print(f"  operator threads at most        {rss.threads:7d}")
        _print_cpu(cpu, machine, elapsed)
        _print_requests(operator_requests(plane.audit_log), operator.metrics(), N + RUNS)
        return 0 if len(marks) == (4 if RUNS else 2) and not failed else 1


Rewrite = Callable[[str], str]  # a client URI sent to FerretDB


def _start(work: Path, stack: ExitStack) -> tuple[Plane, OperatorProcess, Rewrite | None]:
    """The plane, a wire peer per cluster member, FerretDB when runs are measured (and the
    URI rewrite its clients take), and the operator; all stopped by ``stack``."""
    plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3), audit=True)
    stack.callback(plane.stop)
    model = MongoModel(keyfile=keyfile_from_pods(plane.api_client()), catch_up_seconds=0.1)
    stack.callback(model.stop)
    plane.apply(REPO / "crds")
    plane.kubectl("create", "namespace", NS)
    for i in range(N):
        model.member(f"s{i}-rs0-0.s{i}-rs0-hl.{NS}.svc.cluster.local:27017")
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    uri = None
    if RUNS:
        fdb = stack.enter_context(running_ferretdb(work / "ferretdb"))
        uri = rewrite_hosts(f"{fdb.host}:{fdb.port}")
    operator = start_operator(
        plane.kubeconfig, [NS], work / "operator.log", MONGOBENCH_HOST_MAP=host_map
    )
    stack.callback(operator.stop)
    return plane, operator, uri


def _phases(custom: k8s.CustomObjectsApi, plural: str) -> list[str | None]:
    items = custom.list_namespaced_custom_object(GROUP, "v1alpha1", NS, plural)["items"]
    return [(o.get("status") or {}).get("phase") for o in items]


def _milestones(custom: k8s.CustomObjectsApi, apps: k8s.AppsV1Api, t0: float) -> dict[str, float]:
    """Seconds from ``t0`` to each milestone reached, in order; stops at the first missed."""

    def children() -> bool:
        return len(apps.list_namespaced_stateful_set(NS).items) >= N

    def ready() -> bool:
        return _phases(custom, "mongoclusters").count("Ready") >= N

    def loading() -> bool:
        # Every run has its cluster Ready, its collection prepared and its load Job made:
        # what is left is the clients' work (hundreds of JVMs here on two cores).
        got = _phases(custom, "benchmarkruns")
        return sum(p not in (None, "Pending", "Preparing") for p in got) >= RUNS

    def succeeded() -> bool:
        got = _phases(custom, "benchmarkruns")
        return got.count("Succeeded") + got.count("Failed") >= RUNS

    marks: dict[str, float] = {}
    milestones = (
        ("children", children),
        ("ready", ready),
        ("loading", loading),
        ("runs", succeeded),
    )
    for name, check in milestones:
        if name in ("loading", "runs") and not RUNS:
            continue
        try:
            wait_until(check, timeout=TIMEOUT, interval=0.5, what=name)
        except TimeoutError:  # report what was reached, not a traceback
            print(f"bench-scale: {name} not reached within {TIMEOUT:.0f} s", file=sys.stderr)
            break
        marks[name] = time.monotonic() - t0
    return marks


def _print_milestones(marks: dict[str, float]) -> None:
    for name, what in (
        ("children", "all children       "),
        ("ready", "all clusters Ready "),
        ("loading", "all runs loading   "),
        ("runs", "all runs finished  "),
    ):
        if name in marks:
            print(f"  apply -> {what}     {marks[name]:7.1f} s")
        elif name not in ("loading", "runs") or RUNS:
            print(f"  apply -> {what}     not reached")


def _print_cpu(cpu: dict[str, float], machine: float, elapsed: float) -> None:
    cores = os.cpu_count() or 1
    print(
        f"  CPU seconds, apply -> the end   {machine:7.1f}     (of {elapsed * cores:.0f}"
        f" on {cores} cores in {elapsed:.0f} s)"
    )
    for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if seconds >= 0.5:
            print(f"    {name:<29} {seconds:7.1f}")
    print(f"    {'the rest (clients, wire peers)':<29} {machine - sum(cpu.values()):7.1f}")


def _print_requests(requests: list[dict[str, Any]], metrics: str, total: int) -> None:
    """The operator's API requests and handler calls per object, the most frequent first."""
    writes = [e for e in requests if e["verb"] not in ("get", "list", "watch")]
    print(
        f"  operator API requests per object {len(requests) / total:6.1f}"
        f"   ({len(requests)} requests, {len(writes)} writes, {total} objects)"
    )
    calls, skipped = handler_calls(metrics)
    for what, counts in (("handler calls", calls), ("events dropped", skipped)):
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {v / total:.1f}" for k, v in ranked if v) or "none"
        print(f"    {what} per object: {shown}")
    kinds: dict[str, int] = {}
    for e in requests:
        ref = e.get("objectRef") or {}
        what = ref.get("resource", "?") + (
            f"/{ref['subresource']}" if ref.get("subresource") else ""
        )
        kinds[f"{e['verb']} {what}"] = kinds.get(f"{e['verb']} {what}", 0) + 1
    top = sorted(kinds.items(), key=lambda kv: -kv[1])[:10]
    print("    most frequent: " + ", ".join(f"{k} {v / total:.1f}" for k, v in top))


if __name__ == "__main__":
    sys.exit(main())
