"""Pure: when a BenchmarkExperiment looks again, from its body as its own event delivers it
(handlers.benchmarkexperiment passes the Result to runtime.ticker; the body is let go).

Its clusters and runs move on their own, and their events are not followed: the experiment looks
every `experiment_tick_seconds` (2 s; MONGOBENCH_EXPERIMENT_TICK_SECONDS) until it ends.

Rules (first match wins):
  EVENTS_ONLY  gone or going, ended (Succeeded, Failed), or its spec refused
  TICK         otherwise (also before its first reconcile): every experiment_tick_seconds
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongobench.config import OperatorConfig
from mongobench.controller import EVENTS_ONLY, Result, live, settled
from mongobench.k8s import conditions as cond

TERMINAL = (cond.RUN_SUCCEEDED, cond.RUN_FAILED)


def ticks(body: Mapping[str, Any], *, deleted: bool, config: OperatorConfig) -> Result:
    """How often the experiment looks now (the rules above); `deleted`: its DELETED event."""
    phase = (body.get("status") or {}).get("phase")
    if not live(body, deleted) or phase in TERMINAL or settled(body, cond.SUCCEEDED):
        return EVENTS_ONLY
    return Result(config.experiment_tick_seconds)
