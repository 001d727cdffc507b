"""The mongobench operator as a real process against a local plane: `mongobench-operator run`, as a
user or the Deployment starts it, with short retry backoffs so tests do not wait 60 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localplane.net import free_port, wait_for_port
from localplane.tools import REPO

MONGOBENCH = REPO / ".venv" / "bin" / "mongobench-operator"


@dataclass
class OperatorProcess:
    kubeconfig: Path
    namespaces: tuple[str, ...]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    metrics_port: int = 0
    probe_port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> OperatorProcess:
        self.metrics_port, self.probe_port = free_port(), free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "MONGOBENCH_NAMESPACES": ",".join(self.namespaces),
            "MONGOBENCH_METRICS_PORT": str(self.metrics_port),
            "MONGOBENCH_PROBE_PORT": str(self.probe_port),
            "MONGOBENCH_RETRY_BACKOFF": "0.5",
            **self.env,
        }
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(MONGOBENCH), "run"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for_port(self.probe_port, timeout=timeout)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"operator did not start:\n{self.log.read_text()[-3000:]}") from None
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, sig)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def kill(self) -> None:
        """Die like a crashed pod: no cleanup, no graceful shutdown."""
        self.stop(signal.SIGKILL)

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def healthz(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.probe_port}/healthz"
        with urllib.request.urlopen(url, timeout=5) as response:
            return dict(json.loads(response.read()))

    def log_records(self) -> list[dict[str, Any]]:
        records = []
        for line in self.log.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                records.append({"message": line, "unstructured": True})
        return records


def wait_until(predicate: Any, timeout: float = 30, interval: float = 0.1, what: str = "") -> Any:
    """Poll `predicate` until it returns something truthy; its value, or TimeoutError."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what or predicate}: last={last!r}")


def start_operator(
    kubeconfig: Path, namespaces: Iterable[str], log: Path, **env: str
) -> OperatorProcess:
    return OperatorProcess(kubeconfig, tuple(namespaces), log, env=dict(env)).start()
