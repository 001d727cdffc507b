"""A real Prometheus scraping a real node-exporter every second, both on free loopback ports,
from a hand-written configuration: for what runs without a plane (`make demo`'s Prometheus,
benchmarks/method_validity.py). The cluster tier scrapes through the real Prometheus Operator
instead (localplane.monitoring, which shares the commands below).

Prometheus is the pinned 3.x release hack/build-tools.sh builds (PROMETHEUS_VERSION, as the
monitoring stack's, localplane.monitoring); node-exporter is Debian's `prometheus-node-exporter`
(`make setup` installs it; Debian's own services are not used). `start_prometheus` returns
once the first node-exporter sample is queryable, so PromQL runs against real series.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localplane import procs
from localplane.net import free_port, wait_for_port
from localplane.tools import binary

INSTALL_HINT = "apt-get install -y prometheus prometheus-node-exporter"


def installed(name: str) -> str:
    """The path of a Debian-installed binary; a clear error naming the package otherwise."""
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(f"{name} is not installed: `{INSTALL_HINT}` (or `make setup`)")
    return path


@dataclass
class Prometheus:
    port: int
    node_exporter_port: int
    workdir: Path
    procs: list[procs.Proc]
    keep_workdir: bool = False
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def node_exporter_url(self) -> str:
        return f"http://127.0.0.1:{self.node_exporter_port}"

    def query(self, promql: str) -> list[dict[str, Any]]:
        """Instant query; the `result` list of the API's vector/matrix answer."""
        qs = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{qs}", timeout=5) as resp:
            body = json.load(resp)
        if body.get("status") != "success":
            raise RuntimeError(f"query {promql!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def stop(self) -> None:
        procs.terminate(self.procs, self._children)
        if not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def node_exporter_command(exporter_bin: str, port: int) -> list[str]:
    # --collector.cpu.info: node_cpu_info (the CPU model), as a run's provenance reads it.
    return [exporter_bin, f"--web.listen-address=127.0.0.1:{port}", "--collector.cpu.info"]


def prometheus_command(prometheus_bin: str, config_file: Path, port: int) -> list[str]:
    """Prometheus on loopback ``port``, its TSDB beside ``config_file``, reloadable over HTTP."""
    return [
        prometheus_bin,
        f"--config.file={config_file}",
        f"--storage.tsdb.path={config_file.parent / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1d",
        "--web.enable-lifecycle",
        "--log.level=warn",
    ]


def start_prometheus(
    workdir: Path,
    *,
    rule_files: Sequence[Path] = (),
    extra_scrape_configs: Sequence[dict[str, Any]] = (),
    keep_workdir: bool = False,
    timeout: float = 60,
    scrape_interval: int = 1,
) -> Prometheus:
    """Prometheus scraping every ``scrape_interval`` seconds (1 by default: tests see series
    soon), node-exporter among its targets."""
    workdir.mkdir(parents=True, exist_ok=True)
    prometheus_bin, exporter_bin = str(binary("prometheus")), installed("prometheus-node-exporter")
    prom_port, exporter_port = free_port(), free_port()
    config = {
        "global": {
            "scrape_interval": f"{scrape_interval}s",
            "scrape_timeout": f"{min(scrape_interval, 10)}s",
            "evaluation_interval": "1s",
        },
        "rule_files": [str(r) for r in rule_files],
        "scrape_configs": [
            {"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]},
            *extra_scrape_configs,
        ],
    }
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    server = Prometheus(prom_port, exporter_port, workdir, [], keep_workdir=keep_workdir)

    def spawn(name: str, cmd: list[str]) -> None:
        proc, popen = procs.spawn(name, cmd, workdir / f"{name}.log", detached=False, cwd=workdir)
        server.procs.append(proc)
        server._children[proc.pid] = popen

    try:
        spawn("node-exporter", node_exporter_command(exporter_bin, exporter_port))
        spawn("prometheus", prometheus_command(prometheus_bin, config_file, prom_port))
        deadline = time.monotonic() + timeout
        for port in (exporter_port, prom_port):
            wait_for_port(port, timeout=max(0.1, deadline - time.monotonic()))
        # Ready when the first scrape has landed and is queryable.
        while not has_node_sample(server):
            for p in server.procs:
                if not p.alive():
                    raise RuntimeError(f"{p.name} exited\n{procs.tail(p.log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no node-exporter sample after {timeout}s\n"
                    f"{procs.tail(workdir / 'prometheus.log')}"
                )
            time.sleep(0.2)
    except BaseException:
        server.stop()
        raise
    return server


def has_node_sample(server: Prometheus, job: str = "node") -> bool:
    """Whether node-exporter's first scrape by ``job`` is queryable (False while it starts)."""
    try:
        return bool(server.query(f'node_cpu_seconds_total{{job="{job}"}}'))
    except OSError:
        return False


@contextmanager
def running_prometheus(workdir: Path | None = None, **kw: Any) -> Iterator[Prometheus]:
    with tempfile.TemporaryDirectory(prefix="prometheus-") as tmp:
        server = start_prometheus(workdir or Path(tmp), **kw)
        try:
            yield server
        finally:
            server.stop()
