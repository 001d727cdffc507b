"""make bench-scale: the operator under many objects at once.

Applies N MongoClusters (1-member replica sets) and N small BenchmarkRuns (one per cluster: a
tiny load and one run, one client) at once, and prints seconds from the apply to: every
cluster's children created, every cluster Ready, every run Succeeded; the operator's peak RSS
(VmHWM of its process); and the API requests the operator issued per object (the apiserver's
audit log, filtered by the operator's user agents).

Targets (a benchmark, not a test; issue 23): 200 + 200 within 60 s, peak RSS under 75 MiB, API
requests per object at most 35.

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
    BENCH_BEFORE         a git ref of the code before (default main; empty: this tree alone):
                         measured first, on a plane of its own, with its operator/, results/ and
                         archive/ first on PYTHONPATH of the same virtualenv; each figure is
                         printed for both, with after / before
    BENCH_KOPF           1 (default): also the bare-kopf reference (bare_kopf.py: kopf alone,
                         no-op handlers on the same two kinds, the operator's process set-up) on
                         a plane of its own under the same apply, until kopf handled every
                         object: its peak RSS, threads, CPU and requests are kopf's own share of
                         the operator's (column "kopf"); 0 skips it

What is real: apiserver, controller-manager, KWOK nodes, the operator process, the runs' YCSB
clients (executed by the harness kubelet against FerretDB). MongoDB's replica-set state is the
wire model (localplane.mongomodel), one loopback peer per member.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families
from trees import export_tree, pythonpath

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.net import free_port, wait_for_port
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
BEFORE = os.environ.get("BENCH_BEFORE", "main")
BARE_KOPF = os.environ.get("BENCH_KOPF", "1") == "1"
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
    """The process's peak resident set (VmHWM) and most threads, sampled until stopped (it
    outlives the sample only if the process dies first). At the most threads, their names
    (threadnames/ names each OS thread after its Python thread) are counted by kind."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.threads, self.last = pid, 0, 0, 0
        self.names: dict[str, int] = {}  # threads by kind when they were most
        self.rose = time.monotonic()  # when the peak last grew
        self.done = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while not self.done.wait(0.25):
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.last = int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:"):
                        hwm = int(line.split()[1]) * 1024
                        if hwm > self.peak:
                            self.peak, self.rose = hwm, time.monotonic()
                    elif line.startswith("Threads:") and int(line.split()[1]) > self.threads:
                        self.threads = int(line.split()[1])
                        self.names = thread_kinds(self.pid)
            except OSError:
                return


def thread_kinds(pid: int) -> dict[str, int]:
    """The process's threads counted by name, numbers left off (`wakeup_3` counts as `wakeup`)."""
    kinds: dict[str, int] = {}
    for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
        with contextlib.suppress(OSError):
            kind = re.sub(r"[-_]?[0-9_-]+$", "", comm.read_text().strip()) or "?"
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


# Benchmark-only: the measured processes name their OS threads (threadnames/sitecustomize.py).
THREAD_NAMES = str(Path(__file__).with_name("threadnames"))


def with_thread_names(pythonpath: str | None) -> str:
    rest = pythonpath or os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (THREAD_NAMES, rest) if p)


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


@dataclass
class Figures:
    """What one tree's operator did under the N + RUNS objects."""

    applied: float  # seconds of the apply
    marks: dict[str, float]  # seconds from the apply to each milestone reached
    failed: int
    clients: int  # client processes at once, most
    peak_rss: int
    last_rss: int  # at the end: every milestone reached and 2 s more
    threads: int
    thread_names: dict[str, int]  # threads by kind when they were most
    cpu: dict[str, float]  # CPU seconds per process of the plane and the operator
    machine: float  # busy CPU seconds of the whole machine
    elapsed: float
    requests: list[dict[str, Any]]  # the operator's API requests (audit events)
    metrics: str  # the operator's /metrics at the end

    bare: bool = False  # the bare-kopf reference: its only milestone is "handled"
    peak_at: float | None = None  # seconds from the apply to the peak RSS

    @property
    def ok(self) -> bool:
        if self.bare:
            return "handled" in self.marks
        return len(self.marks) == (4 if RUNS else 2) and not self.failed


def measure(work: Path, pythonpath: str | None) -> Figures:
    """A fresh plane and operator (its sources from `pythonpath` first, else this tree's), the
    objects applied, every milestone awaited."""
    work.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        env = {"PYTHONPATH": with_thread_names(pythonpath)}
        plane, operator, uri = _start(work, stack, env)
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
        return Figures(
            t_applied,
            marks,
            failed,
            executor.peak_processes if executor is not None else 0,
            rss.peak,
            rss.last,
            rss.threads,
            rss.names,
            cpu,
            machine,
            elapsed,
            operator_requests(plane.audit_log),
            operator.metrics(),
            peak_at=rss.rose - t0,
        )


def measure_bare_kopf(work: Path) -> Figures:
    """bare_kopf.py on a fresh plane under the same apply, until every object carries kopf's
    last-handled annotation (its create handler ran), then 2 s more."""
    work.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3), audit=True)
        stack.callback(plane.stop)
        plane.apply(REPO / "crds")
        plane.kubectl("create", "namespace", NS)
        probe = free_port()
        with (work / "kopf.log").open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("bare_kopf.py")), NS, str(probe)],
                env={
                    **os.environ,
                    "KUBECONFIG": str(plane.kubeconfig),
                    "PYTHONPATH": with_thread_names(None),
                },
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        stack.callback(_stop, process)
        wait_for_port(probe, timeout=60)
        rss = PeakRss(process.pid)
        custom = k8s.CustomObjectsApi(plane.api_client())
        objects = [cluster(i) for i in range(N)] + [run(i) for i in range(RUNS)]
        time.sleep(2)  # kopf's initial listing
        pids = {"operator": process.pid} | {p.name: p.pid for p in plane.procs}
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        machine0 = machine_cpu_seconds()
        t0 = time.monotonic()
        apply_in_batches(plane, objects)
        t_applied = time.monotonic() - t0

        def handled() -> bool:
            done = 0
            for plural in ("mongoclusters", "benchmarkruns"):
                items = custom.list_namespaced_custom_object(GROUP, "v1alpha1", NS, plural)
                done += sum(
                    "mongobench.io/last-handled-configuration"
                    in (o["metadata"].get("annotations") or {})
                    for o in items["items"]
                )
            return done >= len(objects)

        marks: dict[str, float] = {}
        try:
            wait_until(handled, timeout=TIMEOUT, interval=0.5, what="handled")
            marks["handled"] = time.monotonic() - t0
        except TimeoutError:
            print(f"bench-scale: kopf handled not all in {TIMEOUT:.0f} s", file=sys.stderr)
        elapsed = time.monotonic() - t0
        cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
        machine = machine_cpu_seconds() - machine0
        time.sleep(2)
        rss.done.set()
        requests = operator_requests(plane.audit_log)
    return Figures(
        t_applied,
        marks,
        0,
        0,
        rss.peak,
        rss.last,
        rss.threads,
        rss.names,
        cpu,
        machine,
        elapsed,
        requests,
        "",
        bare=True,
        peak_at=rss.rose - t0,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        trees: dict[str, str | None] = {"after": None}
        if BEFORE:  # the code before first, on a machine as loaded as for this tree
            trees = {"before": pythonpath(export_tree(BEFORE, work / "before")), **trees}
        figures = {name: measure(work / name, path) for name, path in trees.items()}
        if BARE_KOPF:
            figures["kopf"] = measure_bare_kopf(work / "kopf")
    print(
        f"bench-scale: {N} MongoClusters (1 member) + {RUNS} BenchmarkRuns (load + 1 run)"
        + (f", this tree next to {BEFORE}" if BEFORE else "")
        + (", and bare kopf (no-op handlers, the same two kinds)" if BARE_KOPF else "")
    )
    _print_figures(figures)
    return 0 if all(f.ok for f in figures.values()) else 1


Rewrite = Callable[[str], str]  # a client URI sent to FerretDB


def _start(
    work: Path, stack: ExitStack, env: dict[str, str]
) -> tuple[Plane, OperatorProcess, Rewrite | None]:
    """The plane, a wire peer per cluster member, FerretDB when runs are measured (and the
    URI rewrite its clients take), and the operator (`env`: more of its environment); all
    stopped by ``stack``."""
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
        plane.kubeconfig, [NS], work / "operator.log", MONGOBENCH_HOST_MAP=host_map, **env
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


def _row(label: str, values: Sequence[float | None], unit: str = "", digits: int = 1) -> None:
    """One figure per measurement (before, after, kopf), then after / before when both are."""
    cells = "".join(f"{v:10.{digits}f}" if v is not None else f"{'-':>10}" for v in values)
    ratio = ""
    if len(_COLUMNS) >= 2 and _COLUMNS[:2] == ["before", "after"]:
        before, after = values[0], values[1]
        if before and after is not None:
            ratio = f"   {after / before:5.2f}x"
    print(f"  {label:<36}{cells} {unit:<4}{ratio}")


_COLUMNS: list[str] = []  # the measurements printed, in order (set by _print_figures)


def _print_figures(figures: dict[str, Figures]) -> None:
    runs = list(figures.values())
    _COLUMNS[:] = list(figures)
    print(f"  {'':<36}" + "".join(f"{name:>10}" for name in figures) + "      after / before")
    _row("kubectl apply returned", [f.applied for f in runs], "s")
    for name, what in (
        ("children", "apply -> all children"),
        ("ready", "apply -> all clusters Ready"),
        ("loading", "apply -> all runs loading"),
        ("runs", "apply -> all runs finished"),
    ):
        if name not in ("loading", "runs") or RUNS:
            _row(what, [f.marks.get(name) for f in runs], "s")
    if BARE_KOPF and "kopf" in figures:
        _row("apply -> kopf handled all (no-op)", [f.marks.get("handled") for f in runs], "s")
    if RUNS:
        real = [None if f.bare else f for f in runs]
        _row("runs Failed (target 0)", [f.failed if f else None for f in real], digits=0)
        clients = [f.clients if f else None for f in real]
        _row(f"client processes at once (cap {CLIENTS})", clients, digits=0)
    _row("operator peak RSS (target < 75)", [f.peak_rss / 2**20 for f in runs], "MiB")
    _row("  reached, s after the apply began", [f.peak_at for f in runs], "s")
    _row("operator RSS at the end", [f.last_rss / 2**20 for f in runs], "MiB")
    _row("operator threads at most", [f.threads for f in runs], digits=0)
    _row("operator CPU seconds", [f.cpu["operator"] for f in runs], "s")
    total = N + RUNS
    _row("operator API requests per object", [len(f.requests) / total for f in runs])
    _row("  writes per object", [_writes(f.requests) / total for f in runs])
    for name, f in figures.items():
        print(f"  {name}:")
        named = sorted(f.thread_names.items(), key=lambda kv: (-kv[1], kv[0]))
        print(f"    threads at the most, by name: {', '.join(f'{k} {v}' for k, v in named)}")
        _print_cpu(f.cpu, f.machine, f.elapsed)
        _print_requests(f.requests, f.metrics, total)


def _writes(requests: list[dict[str, Any]]) -> int:
    return sum(1 for e in requests if e["verb"] not in ("get", "list", "watch"))


def _print_cpu(cpu: dict[str, float], machine: float, elapsed: float) -> None:
    cores = os.cpu_count() or 1
    print(
        f"    CPU seconds, apply -> the end   {machine:7.1f}     (of {elapsed * cores:.0f}"
        f" on {cores} cores in {elapsed:.0f} s)"
    )
    for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if seconds >= 0.5:
            print(f"      {name:<29} {seconds:7.1f}")
    print(f"      {'the rest (clients, wire peers)':<29} {machine - sum(cpu.values()):7.1f}")


def _print_requests(requests: list[dict[str, Any]], metrics: str, total: int) -> None:
    """The operator's handler calls and API requests per object, the most frequent first."""
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
    top = sorted(kinds.items(), key=lambda kv: -kv[1])[:16]
    print(
        "    most frequent requests per object: "
        + ", ".join(f"{k} {v / total:.1f}" for k, v in top)
    )


if __name__ == "__main__":
    sys.exit(main())
