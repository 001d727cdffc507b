"""Live Prometheus metrics of a running benchmark client, fed by YCSB's status lines.

Served on --metrics-port while the client runs (a private registry: no process/GC collectors).
"""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from mongobench_runner.status import StatusLine, parse_status_line


class LiveMetrics:
    def __init__(self, *, driver: str, phase: str, workload: str, client_index: int) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.info = Gauge(
            "mongobench_client_info",
            "Benchmark client identity (value 1)",
            ["driver", "phase", "workload", "client"],
            registry=r,
        )
        self.info.labels(driver, phase, workload, str(client_index)).set(1)
        self.running = Gauge("mongobench_client_running", "1 while the driver runs", registry=r)
        self.elapsed = Gauge(
            "mongobench_client_elapsed_seconds", "Seconds since the driver started", registry=r
        )
        self.ops = Gauge(
            "mongobench_client_operations", "Operations completed so far (all types)", registry=r
        )
        self.throughput = Gauge(
            "mongobench_client_throughput_ops_per_second",
            "Operations per second over the last status interval",
            registry=r,
        )
        self.op_count = Counter(
            "mongobench_client_operation",
            "Operations completed so far, by type",
            ["operation"],
            registry=r,
        )
        self.latency_avg = Gauge(
            "mongobench_client_latency_avg_microseconds",
            "Mean latency of all operations so far, by type",
            ["operation"],
            registry=r,
        )
        self.latency_max = Gauge(
            "mongobench_client_latency_max_microseconds",
            "Maximum latency so far, by type",
            ["operation"],
            registry=r,
        )
        self.latency_interval = Gauge(
            "mongobench_client_interval_latency_microseconds",
            "Latency percentile over the last status interval, by type",
            ["operation", "quantile"],
            registry=r,
        )
        # (seconds since the start, ops/s over the interval ending then), one per status line:
        # the result document keeps it and the runner judges its steadiness (series.py).
        self.throughput_points: list[tuple[int, float]] = []
        # The same instants' mean latency (us) over every operation of the interval (a duet
        # pairs them with its partner's); absent for an interval without operations.
        self.latency_points: dict[int, float] = {}
        self._lock = threading.Lock()
        self._sum: dict[str, float] = {}
        self._count: dict[str, int] = {}
        self._max: dict[str, float] = {}

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - pod-wide scrape
        start_http_server(port, addr=addr, registry=self.registry)

    def observe(self, line: StatusLine) -> None:
        with self._lock:
            self.elapsed.set(line.elapsed_s)
            self.ops.set(line.total_ops)
            if line.current_ops_per_s is not None:
                self.throughput.set(line.current_ops_per_s)
                self.throughput_points.append((line.elapsed_s, line.current_ops_per_s))
            counted = [o for o in line.operations.values() if o.count > 0]
            if counted:
                total = sum(o.count for o in counted)
                mean = sum(o.avg_us * o.count for o in counted) / total
                self.latency_points[line.elapsed_s] = round(mean, 1)
            for name, s in line.operations.items():
                if s.count <= 0:
                    continue
                self.op_count.labels(name).inc(s.count)
                self._sum[name] = self._sum.get(name, 0.0) + s.avg_us * s.count
                self._count[name] = self._count.get(name, 0) + s.count
                self._max[name] = max(self._max.get(name, 0.0), s.max_us)
                self.latency_avg.labels(name).set(self._sum[name] / self._count[name])
                self.latency_max.labels(name).set(self._max[name])
                for q, v in (("0.9", s.p90_us), ("0.99", s.p99_us), ("0.999", s.p999_us)):
                    self.latency_interval.labels(name, q).set(v)


class StatusFollower:
    """Feeds the status lines a driver appends to a log file (the Locust driver prints them in
    YCSB's format) into live metrics; call `poll` while the driver runs and once after."""

    def __init__(self, path: Path, metrics: LiveMetrics) -> None:
        self.path = path
        self.metrics = metrics
        self.offset = 0
        self.partial = b""

    def poll(self) -> int:
        """Status lines observed by this call."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return 0
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        seen = 0
        for raw in lines:
            line = parse_status_line(raw.decode(errors="replace"))
            if line is not None:
                self.metrics.observe(line)
                seen += 1
        return seen
