"""The operator's own Prometheus metrics: reconcile counts, errors and durations per handler."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import kopf
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

P = ParamSpec("P")
R = TypeVar("R")

REGISTRY = CollectorRegistry(auto_describe=True)

RECONCILES = Counter(
    "mongobench_reconciles_total",
    "Handler invocations by resource kind, handler and outcome (ok, retry, error).",
    ["kind", "handler", "outcome"],
    registry=REGISTRY,
)
RECONCILE_SECONDS = Histogram(
    "mongobench_reconcile_duration_seconds",
    "Wall time of one handler invocation.",
    ["kind", "handler"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
BUILD_INFO = Gauge(
    "mongobench_operator_info",
    "Always 1; labels carry the operator's version.",
    ["version"],
    registry=REGISTRY,
)


RUN_LABELS = ["namespace", "run", "workload", "cluster", "topology", "platform"]
RUN_THROUGHPUT = Gauge(
    "mongobench_run_throughput_ops_per_second",
    "Mean throughput over the repetitions of a finished BenchmarkRun's workload.",
    RUN_LABELS,
    registry=REGISTRY,
)
RUN_THROUGHPUT_SD = Gauge(
    "mongobench_run_throughput_sd_ops_per_second",
    "Sample standard deviation of that throughput over the repetitions.",
    RUN_LABELS,
    registry=REGISTRY,
)
RUN_LATENCY = Gauge(
    "mongobench_run_latency_microseconds",
    "Mean over repetitions of an operation's latency statistic (avg or p99).",
    [*RUN_LABELS, "operation", "stat"],
    registry=REGISTRY,
)
RUN_REPETITIONS = Gauge(
    "mongobench_run_repetitions",
    "Repetitions that succeeded (n of the mean).",
    RUN_LABELS,
    registry=REGISTRY,
)
_exported: dict[tuple[str, str], list[tuple[Any, tuple[str, ...]]]] = {}


def _run_labels(run: dict[str, Any], workload: str) -> tuple[str, ...]:
    meta = run["metadata"]
    snap = (run.get("status") or {}).get("clusterSnapshot") or {}
    topology = (snap.get("topology") or {}).get("type", "external")
    platform = (snap.get("platform") or {}).get("provider", "unknown")
    return (meta["namespace"], meta["name"], workload, snap.get("name", ""), topology, platform)


def export_run(run: dict[str, Any]) -> None:
    """Publish a finished run's per-workload summary, so Grafana can compare runs."""
    forget_run(run)
    series: list[tuple[Any, tuple[str, ...]]] = []
    for entry in (run.get("status") or {}).get("summary") or []:
        labels = _run_labels(run, str(entry["workload"]))
        throughput = entry.get("throughput") or {}
        if throughput.get("mean") is not None:
            RUN_THROUGHPUT.labels(*labels).set(throughput["mean"])
            series.append((RUN_THROUGHPUT, labels))
        if throughput.get("sd") is not None:
            RUN_THROUGHPUT_SD.labels(*labels).set(throughput["sd"])
            series.append((RUN_THROUGHPUT_SD, labels))
        RUN_REPETITIONS.labels(*labels).set(entry.get("n", 0))
        series.append((RUN_REPETITIONS, labels))
        for op, stats in (entry.get("operations") or {}).items():
            for stat in ("avg", "p99"):
                mean = (stats.get(stat) or {}).get("mean")
                if mean is not None:
                    full = (*labels, op, stat)
                    RUN_LATENCY.labels(*full).set(mean)
                    series.append((RUN_LATENCY, full))
    _exported[(run["metadata"]["namespace"], run["metadata"]["name"])] = series


def forget_run(run: dict[str, Any]) -> None:
    for gauge, labels in _exported.pop((run["metadata"]["namespace"], run["metadata"]["name"]), []):
        with contextlib.suppress(KeyError):
            gauge.remove(*labels)


def instrumented(kind: str, handler: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Count and time a handler; kopf's TemporaryError counts as a retry, not an error."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            outcome = "ok"
            try:
                return fn(*args, **kwargs)
            except kopf.TemporaryError:
                outcome = "retry"
                raise
            except Exception:
                outcome = "error"
                raise
            finally:
                RECONCILES.labels(kind, handler, outcome).inc()
                RECONCILE_SECONDS.labels(kind, handler).observe(time.perf_counter() - started)

        return wrapper

    return decorate


def serve(port: int, version: str) -> Any:
    """Start the /metrics HTTP endpoint on all interfaces (Prometheus scrapes the pod)."""
    BUILD_INFO.labels(version).set(1)
    return start_http_server(port, registry=REGISTRY)
