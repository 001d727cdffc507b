"""The operator's own Prometheus metrics: reconcile counts, errors and durations per handler.

mongobench_reconciles_total's outcome is ok, retry (kopf's TemporaryError), error (anything else
raised) or skipped: the handler returned SKIPPED, an event it looked at and dropped without a
reconcile (a child's event that changed no rollout, kopf's initial listing).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, ParamSpec, TypeVar

import kopf
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from mongobench.k8s.conditions import STEP_RUNNING

P = ParamSpec("P")
R = TypeVar("R")

REGISTRY = CollectorRegistry(auto_describe=True)

RECONCILES = Counter(
    "mongobench_reconciles_total",
    "Handler invocations by resource kind, handler and outcome (ok, retry, error, skipped: an"
    " event dropped without a reconcile).",
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
RUN_PHASE = Gauge(
    "mongobench_run_phase",
    "1 for the phase a BenchmarkRun is in; one series per run (the MongoBenchRunFailed alert).",
    ["namespace", "run", "phase"],
    registry=REGISTRY,
)
RUN_STEP_RUNNING = Gauge(
    "mongobench_run_step_running",
    "1 while a step of a BenchmarkRun runs; the benchmark-run dashboard's step annotations.",
    ["namespace", "run", "step", "workload"],
    registry=REGISTRY,
)
RUN_GAUGES: tuple[tuple[Gauge, tuple[str, ...]], ...] = (
    (RUN_THROUGHPUT, tuple(RUN_LABELS)),
    (RUN_THROUGHPUT_SD, tuple(RUN_LABELS)),
    (RUN_LATENCY, (*RUN_LABELS, "operation", "stat")),
    (RUN_REPETITIONS, tuple(RUN_LABELS)),
    (RUN_PHASE, ("namespace", "run", "phase")),
    (RUN_STEP_RUNNING, ("namespace", "run", "step", "workload")),
)
_replacing = threading.Lock()  # one replacement of a run's series at a time


def _series_of(
    gauge: Gauge, names: Sequence[str], namespace: str, name: str
) -> set[tuple[str, ...]]:
    """The label values of the run's series in `gauge`: the gauge itself says (no bookkeeping)."""
    return {
        tuple(sample.labels[n] for n in names)
        for metric in gauge.collect()
        for sample in metric.samples
        if sample.labels.get("namespace") == namespace and sample.labels.get("run") == name
    }


def set_run_phase(namespace: str, name: str, phase: str | None) -> None:
    """Publish the run's current phase (none: the run is gone), replacing its previous one."""
    _replace(RUN_PHASE, namespace, name, {(namespace, name, phase)} if phase else set())


def set_running_steps(namespace: str, name: str, steps: Iterable[Mapping[str, Any]]) -> None:
    """Publish which of the run's status.steps are Running (by label), replacing the previous
    ones: a step's series exists exactly while it runs."""
    running: set[tuple[str, ...]] = {
        (namespace, name, str(s.get("label", s.get("index"))), str(s.get("workload") or ""))
        for s in steps
        if s.get("phase") == STEP_RUNNING
    }
    _replace(RUN_STEP_RUNNING, namespace, name, running)


def _replace(gauge: Gauge, namespace: str, name: str, series: set[tuple[str, ...]]) -> None:
    names = dict(RUN_GAUGES)[gauge]
    with _replacing:
        for labels in _series_of(gauge, names, namespace, name) - series:
            with contextlib.suppress(KeyError):
                gauge.remove(*labels)
        for labels in series:
            gauge.labels(*labels).set(1)


def _run_labels(run: dict[str, Any], workload: str) -> tuple[str, ...]:
    meta = run["metadata"]
    snap = (run.get("status") or {}).get("clusterSnapshot") or {}
    topology = (snap.get("topology") or {}).get("type", "external")
    platform = (snap.get("platform") or {}).get("provider", "unknown")
    return (meta["namespace"], meta["name"], workload, snap.get("name", ""), topology, platform)


def export_run(run: dict[str, Any]) -> None:
    """Publish a finished run's per-workload summary, so Grafana can compare runs."""
    forget_run(run)
    meta = run["metadata"]
    set_run_phase(meta["namespace"], meta["name"], (run.get("status") or {}).get("phase"))
    for entry in (run.get("status") or {}).get("summary") or []:
        labels = _run_labels(run, str(entry["workload"]))
        throughput = entry.get("throughput") or {}
        if throughput.get("mean") is not None:
            RUN_THROUGHPUT.labels(*labels).set(throughput["mean"])
        if throughput.get("sd") is not None:
            RUN_THROUGHPUT_SD.labels(*labels).set(throughput["sd"])
        RUN_REPETITIONS.labels(*labels).set(entry.get("n", 0))
        for op, stats in (entry.get("operations") or {}).items():
            for stat in ("avg", "p99"):
                mean = (stats.get(stat) or {}).get("mean")
                if mean is not None:
                    RUN_LATENCY.labels(*labels, op, stat).set(mean)


def forget_run(run: dict[str, Any]) -> None:
    """Remove every series of the run; the gauges themselves say which (no bookkeeping)."""
    namespace, name = run["metadata"]["namespace"], run["metadata"]["name"]
    with _replacing:
        for gauge, names in RUN_GAUGES:
            for labels in _series_of(gauge, names, namespace, name):
                with contextlib.suppress(KeyError):
                    gauge.remove(*labels)


class Skipped(enum.Enum):
    SKIPPED = "skipped"


SKIPPED: Final = Skipped.SKIPPED
"""What an instrumented handler returns for an event it dropped without a reconcile."""


def instrumented(
    kind: str, handler: str
) -> Callable[[Callable[P, R | Skipped]], Callable[P, R | None]]:
    """Count and time a handler; kopf's TemporaryError counts as a retry, not an error, and a
    return of SKIPPED as skipped. SKIPPED never reaches kopf (None does in its place): kopf
    writes a handler's other results into the handled object's status, an on.event handler's
    too."""

    def decorate(fn: Callable[P, R | Skipped]) -> Callable[P, R | None]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
            started = time.perf_counter()
            outcome = "ok"
            try:
                result = fn(*args, **kwargs)
                if isinstance(result, Skipped):
                    outcome = "skipped"
                    return None
                return result
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
