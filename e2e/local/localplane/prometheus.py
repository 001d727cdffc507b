"""A real Prometheus scraping a real node-exporter every second, both on free loopback ports.

Prometheus is the pinned 3.x release hack/build-tools.sh builds (PROMETHEUS_VERSION, as the
monitoring stack's, localplane.monitoring); node-exporter is Debian's `prometheus-node-exporter`
(`make setup` installs it; Debian's own services are not used). `start_prometheus` returns
once the first node-exporter sample is queryable, so PromQL in tests (dashboards, rules, CPU
accounting) runs against real series.
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
# File service discovery of operator processes (start_prometheus(operator_sd=True)): a test
# writes the ports its operator serves /metrics on, Prometheus picks them up within a second.
OPERATOR_JOB = "mongobench-operator"
OPERATOR_TARGETS = "operator-targets.json"
# The harness kubelet's cAdvisor series (PodExecutor.serve_cadvisor), found the same way.
CADVISOR_JOB = "kubelet"
CADVISOR_TARGETS = "cadvisor-targets.json"


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
    operator_sd: bool = False,
    keep_workdir: bool = False,
    timeout: float = 60,
    scrape_interval: int = 1,
) -> Prometheus:
    """Prometheus scraping every ``scrape_interval`` seconds (1 by default: tests see series
    soon), node-exporter among its targets."""
    workdir.mkdir(parents=True, exist_ok=True)
    if operator_sd:
        (workdir / OPERATOR_TARGETS).write_text("[]")
        (workdir / CADVISOR_TARGETS).write_text("[]")
        extra_scrape_configs = [
            {
                # As kube-prometheus-stack's kubelet ServiceMonitor (its cAdvisor endpoint):
                # the containers' own namespace and pod labels are kept.
                "job_name": CADVISOR_JOB,
                "honor_labels": True,
                "file_sd_configs": [
                    {"files": [str(workdir / CADVISOR_TARGETS)], "refresh_interval": "1s"}
                ],
            },
            {
                # As the chart's ServiceMonitor: honor_labels keeps the run gauges' own
                # `namespace` (the run's) instead of renaming it exported_namespace.
                "job_name": OPERATOR_JOB,
                "honor_labels": True,
                "file_sd_configs": [
                    {"files": [str(workdir / OPERATOR_TARGETS)], "refresh_interval": "1s"}
                ],
            },
            *extra_scrape_configs,
        ]
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


def set_cadvisor_targets(server: Prometheus, ports: Sequence[int]) -> None:
    """The harness kubelets' cAdvisor endpoints Prometheus scrapes (start_prometheus(
    operator_sd=True))."""
    targets = [{"targets": [f"127.0.0.1:{port}" for port in ports]}] if ports else []
    tmp = server.workdir / f".{CADVISOR_TARGETS}.tmp"
    tmp.write_text(json.dumps(targets))
    tmp.replace(server.workdir / CADVISOR_TARGETS)


def set_operator_targets(server: Prometheus, ports: Sequence[int]) -> None:
    """The operator processes Prometheus scrapes (file SD of start_prometheus(operator_sd=True)),
    labelled as a ServiceMonitor would label the chart's operator pod."""
    targets = [
        {
            "targets": [f"127.0.0.1:{port}" for port in ports],
            "labels": {"namespace": "mongobench", "pod": "mongobench-operator"},
        }
    ]
    tmp = server.workdir / f".{OPERATOR_TARGETS}.tmp"
    tmp.write_text(json.dumps(targets if ports else []))
    tmp.replace(server.workdir / OPERATOR_TARGETS)  # atomic: never a half-written file


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
