"""BenchmarkRun handlers: parse the spec, drive the plan, publish progress and results."""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.api import BenchmarkRunSpec, SpecError
from mongobench.handlers.common import BENCHMARKRUN, write_condition
from mongobench.observability.metrics import instrumented


@kopf.on.resume(*BENCHMARKRUN)
@kopf.on.create(*BENCHMARKRUN)
@instrumented("BenchmarkRun", "reconcile")
def reconcile(
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    body: kopf.Body,
    **_: Any,
) -> None:
    generation = int(meta.get("generation") or 0)
    try:
        BenchmarkRunSpec.parse(dict(spec))
    except SpecError as exc:
        patch.status["phase"] = "Failed"
        write_condition(
            patch,
            status,
            generation,
            type_="Succeeded",
            value="False",
            reason="InvalidSpec",
            message=str(exc),
        )
        kopf.warn(body, reason="InvalidSpec", message=str(exc))
        patch.status["observedGeneration"] = generation
        return
    if not status.get("phase"):
        patch.status["phase"] = "Pending"
        write_condition(
            patch,
            status,
            generation,
            type_="Succeeded",
            value="Unknown",
            reason="Pending",
            message="accepted by the operator",
        )
        kopf.info(body, reason="Accepted", message="BenchmarkRun accepted")
    patch.status["observedGeneration"] = generation
