"""make bench-monitoring: what the cluster tier's monitoring stack (localplane.monitoring, one per
pytest-xdist worker) costs on an idle plane, this tree next to another ref's.

One plane (3 kind nodes, the Prometheus Operator's CRDs, the apiserver's audit log on), measured
in windows of BENCH_WINDOW seconds (default 60) after BENCH_SETTLE seconds (default 20) of quiet:

  plane        the plane alone
  <tree>       one idle stack started by that tree's `start_monitoring` on the plane

For each window: CPU seconds per minute of the stack's parts (the node-exporters, Prometheus, the
Prometheus Operator, the config reloader, the harness process's own threads: the kubelet loop,
the reload shim, the cAdvisor endpoint), of the apiserver + etcd, requests per minute to the
apiserver (all, and the stack's own by user agent), and the stack's resident memory.

    --compare REF   also the stack of REF's tree (checked out into a temporary `git worktree`),
                    measured first, on the same plane, with the ratio this / REF

Each stack runs in a child process whose PYTHONPATH is its tree's e2e/local: the parent reads the
processes' CPU in /proc, so the figures are the same for either tree's code. Ratios come from
windows measured side by side in one run; no test asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localplane.nodes import NodeSet
from localplane.plane import Plane
from localplane.tools import REPO, prometheus_operator_crds

WINDOW = float(os.environ.get("BENCH_WINDOW", "60"))
SETTLE = float(os.environ.get("BENCH_SETTLE", "20"))
TICK = os.sysconf("SC_CLK_TCK")
PYTHON = REPO / ".venv" / "bin" / "python"
# The stack's clients of the apiserver, by the start of their user agent.
AGENTS = (
    ("Prometheus Operator", ("PrometheusOperator", "prometheus-operator")),
    ("Prometheus", ("Prometheus/",)),
    ("harness", ("OpenAPI-Generator",)),  # the kubernetes client of the kubelet loop
)
# Process name -> the part it is counted in.
PARTS = ("node-exporters", "Prometheus", "Prometheus Operator", "config reloader", "harness")


def part_of(name: str) -> str:
    if name.startswith("node-exporter"):
        return "node-exporters"
    return {
        "prometheus": "Prometheus",
        "prometheus-operator": "Prometheus Operator",
        "config-reloader": "config reloader",
        "harness": "harness",
    }.get(name, name)


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class Window:
    """What one window measured: per minute, except rss (bytes at its end)."""

    cpu: dict[str, float] = field(default_factory=dict)  # part -> CPU s/min
    requests: Counter[str] = field(default_factory=Counter)  # agent -> requests/min
    rss: int = 0
    load: float = 0.0  # the 1-minute load average at its end


def measure(plane: Plane, stack: dict[str, int]) -> Window:
    """One window: CPU of the plane's apiserver + etcd and of ``stack`` (name -> pid), the audit
    log's requests received in it (the file's bytes appended during the window)."""
    time.sleep(SETTLE)
    control = {p.name: p.pid for p in plane.procs if p.name in ("kube-apiserver", "etcd")}
    pids = {**{f"plane:{n}": pid for n, pid in control.items()}, **stack}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    offset = plane.audit_log.stat().st_size
    began = time.monotonic()
    time.sleep(WINDOW)
    minutes = (time.monotonic() - began) / 60
    after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    with plane.audit_log.open("rb") as log:
        log.seek(offset)
        appended = log.read()
    window = Window(load=os.getloadavg()[0])
    for name in pids:
        part = "apiserver + etcd" if name.startswith("plane:") else part_of(name)
        window.cpu[part] = window.cpu.get(part, 0.0) + (after[name] - before[name]) / minutes
    window.rss = sum(rss_bytes(pid) for pid in stack.values())
    seen: set[str] = set()
    for line in appended.decode(errors="replace").splitlines():
        try:
            event: dict[str, Any] = json.loads(line)
        except ValueError:  # the half-written first or last line
            continue
        if event["auditID"] in seen:  # a watch's ResponseStarted and ResponseComplete
            continue
        seen.add(event["auditID"])
        agent = event.get("userAgent", "")
        who = next((n for n, starts in AGENTS if agent.startswith(starts)), "the plane's own")
        window.requests[who] += 1
    for who in window.requests:
        window.requests[who] = round(window.requests[who] / minutes)
    return window


def measure_stack(plane: Plane, tree: Path, workdir: Path) -> Window:
    """The stack of ``tree``'s localplane, in a child process, measured once it is up."""
    env = {**os.environ, "PYTHONPATH": str(tree / "e2e" / "local")}
    child = subprocess.Popen(
        [str(PYTHON), __file__, "--stack-child", str(plane.workdir), str(workdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=tree,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the stack of {tree} did not start (exit {child.wait()})")
        started = json.loads(line)
        stack = {**started["procs"], "harness": child.pid}
        print(f"  started in {started['started_in']:.1f} s: {', '.join(sorted(stack))}")
        return measure(plane, stack)
    finally:
        child.stdin.close()  # the child stops its stack and deletes its objects
        child.wait(timeout=120)


def stack_child(plane_dir: Path, workdir: Path) -> None:
    """In the child: one stack on the attached plane until stdin closes."""
    from localplane.monitoring import running_monitoring

    plane = Plane.attach(plane_dir)
    with running_monitoring(plane, workdir) as stack:
        procs = {p.name: p.pid for p in stack.procs}
        print(json.dumps({"procs": procs, "started_in": stack.started_in}), flush=True)
        sys.stdin.read()


def table(columns: list[tuple[str, Window]], ratio: bool) -> str:
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, values: list[float], fmt: str, stack_only: bool = False) -> None:
        cells = ["-" if stack_only and i == 0 else format(v, fmt) for i, v in enumerate(values)]
        if ratio:
            new, old = values[-1], values[-2]
            cells.append(f"{new / old:.2f}" if old else "-")
        rows.append((label, cells))

    for part in PARTS:
        add(f"CPU s/min: {part}", [w.cpu.get(part, 0.0) for _, w in columns], ".2f", True)
    add(
        "CPU s/min: stack total",
        [sum(w.cpu.get(p, 0.0) for p in PARTS) for _, w in columns],
        ".2f",
        True,
    )
    add("CPU s/min: apiserver + etcd", [w.cpu["apiserver + etcd"] for _, w in columns], ".2f")
    add("requests/min: all", [sum(w.requests.values()) for _, w in columns], ".0f")
    for who, _ in AGENTS:
        add(f"requests/min: {who}", [w.requests[who] for _, w in columns], ".0f", True)
    add("stack RSS MiB", [w.rss / 2**20 for _, w in columns], ".0f", True)
    add("load average (1 min)", [w.load for _, w in columns], ".1f")
    header = [name for name, _ in columns] + (["this / ref"] if ratio else [])
    width = max(len(label) for label, _ in rows)
    lines = [f"{'':<{width}}  " + "  ".join(f"{h:>14}" for h in header)]
    lines += [f"{label:<{width}}  " + "  ".join(f"{c:>14}" for c in cells) for label, cells in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="REF", help="also measure REF's stack, side by side")
    parser.add_argument(
        "--stack-child", nargs=2, metavar=("PLANE", "WORKDIR"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.stack_child:
        stack_child(Path(args.stack_child[0]), Path(args.stack_child[1]))
        return
    with tempfile.TemporaryDirectory(prefix="bench-monitoring-") as tmp:
        root = Path(tmp)
        trees: list[tuple[str, Path]] = []
        if args.compare:
            ref = root / "ref"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "--detach", str(ref), args.compare],
                check=True,
                capture_output=True,
            )
            trees.append((args.compare, ref))
        trees.append(("this tree", REPO))
        try:
            with Plane.start(
                root / "plane", nodes=NodeSet(profile="kind", count=3), audit=True
            ) as plane:
                plane.apply(prometheus_operator_crds())
                print(f"plane alone ({WINDOW:.0f} s window)")
                columns = [("plane alone", measure(plane, {}))]
                for i, (name, tree) in enumerate(trees):
                    print(f"stack of {name}")
                    columns.append((name, measure_stack(plane, tree, root / f"stack-{i}")))
        finally:
            if args.compare:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(root / "ref")],
                    check=False,
                )
        print()
        print(table(columns, ratio=bool(args.compare)))


if __name__ == "__main__":
    main()
