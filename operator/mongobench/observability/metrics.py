"""The operator's own Prometheus metrics: reconcile counts, errors and durations per handler."""

from __future__ import annotations

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
