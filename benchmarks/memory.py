"""make bench-memory: what the idle operator process holds, this code next to the code before.

Two parts, each printed for both trees with the ratio after / before:

  imports  a fresh interpreter imports the operator's dependencies one after the other, as
           `mongobench-operator run` loads them, then `mongobench.main`: resident MiB after each
           step, the modules it added, and which of the lazily loaded packages (pymongo, bson,
           hdrh, the archive client, the controllers) an idle operator has loaded
  idle     `mongobench-operator run` against a local plane (a namespace with no objects), as
           localplane.operator starts it: VmRSS, RssAnon, RssFile, threads once its CPU time
           stands still (kopf's watches open, the metrics and probe servers up)

    BENCH_BEFORE   a git ref of the code before (default main): its operator/, results/ and
                   archive/ folders go first on PYTHONPATH of the same virtualenv
    BENCH_ROUNDS   idle starts per tree, alternated; the median is printed (default 3)
    BENCH_SETTLE   seconds idle before the figures are read (default 15: the operator gives
                   freed memory back every 10 s, mongobench.memory)

Targets (issue 23, a benchmark, not a test): idle operator RSS under 50 MiB.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from trees import export_tree, pythonpath

from localplane.nodes import NodeSet
from localplane.operator import start_operator
from localplane.plane import Plane
from localplane.tools import REPO

NS = "idle"
BEFORE = os.environ.get("BENCH_BEFORE", "main")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SETTLE = float(os.environ.get("BENCH_SETTLE", "15"))
PYTHON = REPO / ".venv" / "bin" / "python"

# Import steps in the order the operator's process meets them (its entry point, then
# mongobench.main). "a|b": the first that exists (the entry point was mongobench.cli before).
STEPS = (
    ("python", ""),
    ("entry point (its config, mallopt)", "mongobench.__main__|mongobench.cli"),
    ("asyncio + ssl", "asyncio, ssl"),
    ("aiohttp", "aiohttp"),
    ("kopf", "kopf"),
    ("urllib3", "urllib3"),
    ("prometheus_client", "prometheus_client"),
    ("mongobench.main", "mongobench.main"),
)
LAZY = (
    "pymongo",
    "bson",
    "hdrh",
    "mongobench_archive",
    "mongobench_results",
    "mongobench.mongo.admin",
    "mongobench.mongocluster.act.reconcile",
    "mongobench.benchmarkrun.act.orchestrate",
    "mongobench.experiment.act.reconcile",
)

PROBE = """
import importlib, json, sys
sys.modules.setdefault("kubernetes", None)  # as the entry point does

def status():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out

steps = []
for label, names in json.loads(sys.argv[1]):
    for name in filter(None, (n.strip() for n in names.split(","))):
        for candidate in name.split("|"):
            try:
                module = importlib.import_module(candidate)
            except ModuleNotFoundError:
                continue
            if hasattr(module, "fewer_malloc_arenas"):
                module.fewer_malloc_arenas()
            break
    steps.append({"label": label, "modules": len(sys.modules), **status()})
lazy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
print(json.dumps({"steps": steps, "loaded": lazy}))
"""


def import_steps(tree: Path) -> dict[str, Any]:
    out = subprocess.run(
        [str(PYTHON), "-c", PROBE, json.dumps(STEPS), json.dumps(LAZY)],
        env={**os.environ, "PYTHONPATH": pythonpath(tree)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
        elif key == "Threads":
            out[key] = int(value)
    return out


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid: int, quiet: float = 3.0, timeout: float = 90.0) -> None:
    """Until the process used no CPU for `quiet` seconds (its start-up is over)."""
    deadline = time.monotonic() + timeout
    last, since = cpu_ticks(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise TimeoutError(f"the operator (pid {pid}) did not go idle within {timeout:.0f} s")


@contextmanager
def idle_operator(plane: Plane, tree: Path, log: Path) -> Iterator[int]:
    operator = start_operator(plane.kubeconfig, [NS], log, PYTHONPATH=pythonpath(tree))
    try:
        assert operator.process is not None
        yield operator.process.pid
    finally:
        operator.stop()


def idle_figures(plane: Plane, trees: dict[str, Path], work: Path) -> dict[str, dict[str, int]]:
    """The median of ROUNDS idle starts per tree, the trees alternated (drift hits both)."""
    samples: dict[str, list[dict[str, int]]] = {name: [] for name in trees}
    for i in range(ROUNDS):
        for name, tree in trees.items():
            with idle_operator(plane, tree, work / f"operator-{name}-{i}.log") as pid:
                wait_idle(pid)
                time.sleep(SETTLE)
                samples[name].append(proc_status(pid))
    return {
        name: {k: int(statistics.median(s[k] for s in got)) for k in got[0]}
        for name, got in samples.items()
    }


def mib(value: int) -> str:
    return f"{value / 2**20:7.1f}"


def ratio(after: float, before: float) -> str:
    return f"{after / before:6.2f}x" if before else "     -"


def print_imports(before: dict[str, Any], after: dict[str, Any]) -> None:
    print("imports, cumulative (a fresh interpreter)   before    after MiB   ratio   step MiB")
    print("  (a step counts the standard-library modules it is the first to import)")
    prev_b = prev_a = 0
    for b, a in zip(before["steps"], after["steps"], strict=True):
        print(
            f"  {b['label']:<40} {mib(b['VmRSS'])} {mib(a['VmRSS'])}   "
            f"{ratio(a['VmRSS'], b['VmRSS'])}  +{(b['VmRSS'] - prev_b) / 2**20:4.1f}"
            f" -> +{(a['VmRSS'] - prev_a) / 2**20:4.1f}   modules {b['modules']} -> {a['modules']}"
        )
        prev_b, prev_a = b["VmRSS"], a["VmRSS"]
    last_b, last_a = before["steps"][-1], after["steps"][-1]
    for key, what in (("RssAnon", "anonymous"), ("RssFile", "file-backed")):
        print(f"    {what:<38} {mib(last_b[key])} {mib(last_a[key])}")
    print(f"  loaded by importing mongobench.main, before: {', '.join(before['loaded']) or 'none'}")
    print(f"  loaded by importing mongobench.main, after:  {', '.join(after['loaded']) or 'none'}")


def print_idle(idle: dict[str, dict[str, int]]) -> None:
    b, a = idle["before"], idle["after"]
    print(f"idle `mongobench-operator run` (median of {ROUNDS})   before      after   ratio")
    for key, what in (
        ("VmRSS", "RSS"),
        ("RssAnon", "  anonymous (heap, stacks)"),
        ("RssFile", "  file-backed (libraries)"),
        ("VmHWM", "peak RSS during start-up"),
    ):
        print(f"  {what:<35} {mib(b[key])} {mib(a[key])} MiB {ratio(a[key], b[key])}")
    print(f"  {'threads':<35} {b['Threads']:7d} {a['Threads']:7d}")
    print(f"  target: RSS idle < 50 MiB -> {'met' if a['VmRSS'] < 50 * 2**20 else 'not met'}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        before = export_tree(BEFORE, work / "before")
        trees = {"before": before, "after": REPO}
        imports = {name: import_steps(tree) for name, tree in trees.items()}
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=1))
        stack.callback(plane.stop)
        plane.apply(REPO / "crds")
        plane.kubectl("create", "namespace", NS)
        idle = idle_figures(plane, trees, work)
        print(f"bench-memory: this tree next to {BEFORE} ({ROUNDS} idle starts each)")
        print_imports(imports["before"], imports["after"])
        print_idle(idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
