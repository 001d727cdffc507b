"""CPU cgroups for the harness kubelet's containers, as a kubelet makes them.

A kubelet runs each container in a cgroup whose CFS quota is the container's CPU limit
(`cpu.cfs_quota_us` = limit x `cpu.cfs_period_us` on cgroup v1, `cpu.max` on v2), and cAdvisor
reads the cgroup's CPU time and its `cpu.stat` (periods, throttled periods). `ContainerCgroup`
does the same for one container process tree of the executor: the limit is really enforced by
the kernel, and the process reads its own throttling from `/proc/self/cgroup` as in a pod.

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
            return [_v1("cpu") / PARENT / self.name, _v1("cpuacct") / PARENT / self.name]
        v2 = _v2()
        assert v2 is not None
        return [v2 / PARENT / self.name]

    def create(self) -> None:
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
        if self.version == "v2":
            v2 = _v2()
            assert v2 is not None
            with contextlib.suppress(OSError):  # the controller may already be enabled
                (v2 / "cgroup.subtree_control").write_text("+cpu")
                (v2 / PARENT / "cgroup.subtree_control").write_text("+cpu")
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


def cadvisor_text(containers: Iterable[tuple[ContainerKey, ContainerCgroup]]) -> str:
    """Containers' CPU time and throttling in cAdvisor's metric names and labels (with the
    `node` label kube-prometheus-stack's kubelet ServiceMonitor adds), as Prometheus text."""
    rows = [
        "# TYPE container_cpu_usage_seconds_total counter",
        "# TYPE container_cpu_cfs_periods_total counter",
        "# TYPE container_cpu_cfs_throttled_periods_total counter",
    ]
    for (namespace, pod, container, node), group in containers:
        labels = f'namespace="{namespace}",pod="{pod}",container="{container}",node="{node}"'
        try:
            usage, (periods, throttled) = group.usage_seconds(), group.periods()
        except (OSError, ValueError):
            continue  # gone between the listing and the read
        rows.append(f"container_cpu_usage_seconds_total{{{labels}}} {usage}")
        rows.append(f"container_cpu_cfs_periods_total{{{labels}}} {periods}")
        rows.append(f"container_cpu_cfs_throttled_periods_total{{{labels}}} {throttled}")
    return "\n".join(rows) + "\n"


def serve(text: Callable[[], str]) -> http.server.ThreadingHTTPServer:
    """An HTTP endpoint on loopback answering every GET with `text()` (a scrape target);
    its port is `server.server_address[1]`, stop it with shutdown() and server_close()."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text().encode()
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
