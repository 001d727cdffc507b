"""CPU and memory cgroups for the harness kubelet's containers, as a kubelet makes them.

A kubelet runs each container in a cgroup whose CFS quota is the container's CPU limit
(`cpu.cfs_quota_us` = limit x `cpu.cfs_period_us` on cgroup v1, `cpu.max` on v2), and cAdvisor
reads the cgroup's CPU time and its `cpu.stat` (periods, throttled periods), and its memory
working set: the memory charged to the cgroup less the page cache the kernel may reclaim first
(`memory.current` - `inactive_file` of `memory.stat` on v2, `memory.usage_in_bytes` -
`total_inactive_file` on v1). `ContainerCgroup` does the same for one container process tree of
the executor: the limit is really enforced by the kernel, and the process reads its own
throttling from `/proc/self/cgroup` as in a pod.

On v1 the memory cgroup is made below the memory cgroup this process already runs in (with
`memory.use_hierarchy` the parent keeps being charged: whatever limits the harness itself runs
under still hold), and a process moved in takes its charged pages with it
(`memory.move_charge_at_immigrate`), as if it had started there. Without a writable memory
hierarchy the container has no memory figure (missing, never zero).

Where: cgroup v1's `cpu` and `cpuacct` hierarchies under /sys/fs/cgroup (this machine's
layout; a v2-only host uses one hierarchy with `cpu.max` when the `cpu` controller is
delegated). Creating cgroups needs write access there (root here); `available()` says whether
it can, and the executor runs containers unconfined (and says so) when it cannot.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path("/sys/fs/cgroup")
PARENT = "mongobench-localplane"
PERIOD_US = 100_000  # the kubelet's CFS period


def _v1(controller: str) -> Path:
    return ROOT / controller


def _v2() -> Path | None:
    for base in (ROOT, ROOT / "unified"):
        controllers = base / "cgroup.controllers"
        if controllers.is_file() and "cpu" in controllers.read_text().split():
            return base
    return None


def _v1_memory() -> Path | None:
    """Where v1 memory cgroups of containers go: below this process's own memory cgroup."""
    base = _v1("memory")
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            own = base / path.lstrip("/")
            return own if (own / "memory.stat").is_file() and os.access(own, os.W_OK) else None
    return None


def available() -> str | None:
    """The cgroup version this user can place containers in ("v1", "v2"), or None."""
    cpu = _v1("cpu")
    if (cpu / "cpu.cfs_quota_us").is_file() and os.access(cpu, os.W_OK):
        return "v1"
    v2 = _v2()
    if v2 is not None and os.access(v2, os.W_OK):
        return "v2"
    return None


@dataclass
class ContainerCgroup:
    """One container's cgroup(s); `limit_cores` None: no quota (accounting only)."""

    name: str
    limit_cores: float | None
    version: str

    @property
    def dirs(self) -> list[Path]:
        if self.version == "v1":
            memory = self.memory_dir
            cpu = [_v1("cpu") / PARENT / self.name, _v1("cpuacct") / PARENT / self.name]
            return cpu if memory is None else [*cpu, memory]
        v2 = _v2()
        assert v2 is not None
        return [v2 / PARENT / self.name]

    @property
    def memory_dir(self) -> Path | None:
        """The cgroup that accounts the container's memory; None where none can be made."""
        if self.version == "v2":
            return self.dirs[0]
        base = _v1_memory()
        return None if base is None else base / PARENT / self.name

    def create(self) -> None:
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
        if self.version == "v2":
            v2 = _v2()
            assert v2 is not None
            with contextlib.suppress(OSError):  # the controller may already be enabled
                (v2 / "cgroup.subtree_control").write_text("+cpu +memory")
                (v2 / PARENT / "cgroup.subtree_control").write_text("+cpu +memory")
        elif self.memory_dir is not None:
            # Pages the process charged before it was moved in move with it (anon and file).
            with contextlib.suppress(OSError):
                (self.memory_dir / "memory.move_charge_at_immigrate").write_text("3")
        if self.limit_cores is None:
            return
        quota = max(int(self.limit_cores * PERIOD_US), 1000)  # the kernel's minimum is 1 ms
        if self.version == "v1":
            (self.dirs[0] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.dirs[0] / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.dirs[0] / "cpu.max").write_text(f"{quota} {PERIOD_US}")

    def add(self, pid: int) -> None:
        """Moves a process in; what it starts afterwards stays in."""
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(pid))

    def usage_seconds(self) -> float:
        """CPU time of every process that ran in it (cAdvisor's container_cpu_usage)."""
        if self.version == "v1":
            return int((self.dirs[1] / "cpuacct.usage").read_text()) / 1e9
        return self._stat().get("usage_usec", 0) / 1e6

    def working_set_bytes(self) -> int | None:
        """cAdvisor's container_memory_working_set_bytes: usage less the inactive page cache
        (never below 0); None without a memory cgroup."""
        memory = self.memory_dir
        if memory is None:
            return None
        if self.version == "v1":
            usage, inactive = "memory.usage_in_bytes", "total_inactive_file"
        else:
            usage, inactive = "memory.current", "inactive_file"
        used = int((memory / usage).read_text())
        stat = dict(line.split() for line in (memory / "memory.stat").read_text().splitlines())
        return max(used - int(stat.get(inactive, 0)), 0)

    def periods(self) -> tuple[int, int]:
        """(CFS periods, throttled periods) so far."""
        stat = self._stat()
        return stat.get("nr_periods", 0), stat.get("nr_throttled", 0)

    def _stat(self) -> dict[str, int]:
        text = (self.dirs[0] / "cpu.stat").read_text()
        return {k: int(v) for k, v in (line.split() for line in text.splitlines() if " " in line)}

    def remove(self) -> None:
        """Once its processes are gone (rmdir of a cgroup with live tasks fails: kept)."""
        for d in self.dirs:
            with contextlib.suppress(OSError):
                d.rmdir()


# (namespace, pod, container, node) of a running container, as cAdvisor labels it.
ContainerKey = tuple[str, str, str, str]


def cadvisor_text(
    containers: Iterable[tuple[ContainerKey, ContainerCgroup]], *, node_label: bool = True
) -> str:
    """Containers' CPU time, throttling and memory working set in cAdvisor's metric names and
    labels, as Prometheus text. ``node_label``: with the `node` label kube-prometheus-stack's
    kubelet ServiceMonitor adds (for a static scrape config); a kubelet's own endpoint
    (localplane.monitoring) leaves it to the scrape, as cAdvisor does."""
    rows = [
        "# TYPE container_cpu_usage_seconds_total counter",
        "# TYPE container_cpu_cfs_periods_total counter",
        "# TYPE container_cpu_cfs_throttled_periods_total counter",
        "# TYPE container_memory_working_set_bytes gauge",
    ]
    for (namespace, pod, container, node), group in containers:
        labels = f'namespace="{namespace}",pod="{pod}",container="{container}"'
        labels += f',node="{node}"' if node_label else ""
        try:
            usage, (periods, throttled) = group.usage_seconds(), group.periods()
            memory = group.working_set_bytes()
        except (OSError, ValueError):
            continue  # gone between the listing and the read
        rows.append(f"container_cpu_usage_seconds_total{{{labels}}} {usage}")
        rows.append(f"container_cpu_cfs_periods_total{{{labels}}} {periods}")
        rows.append(f"container_cpu_cfs_throttled_periods_total{{{labels}}} {throttled}")
        if memory is not None:
            rows.append(f"container_memory_working_set_bytes{{{labels}}} {memory}")
    return "\n".join(rows) + "\n"


def serve(text: Callable[[str], str | None]) -> http.server.ThreadingHTTPServer:
    """An HTTP endpoint on loopback answering a GET of a path with `text(path)` (a scrape
    target; None: 404); its port is `server.server_address[1]`, stop it with shutdown() and
    server_close()."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = text(self.path)
            if found is None:
                self.send_error(404)
                return
            body = found.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="cadvisor", daemon=True).start()
    return server
