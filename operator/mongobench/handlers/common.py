"""What every handler shares: the resource coordinates and status-writing helpers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from mongobench.api import GROUP, VERSION
from mongobench.k8s.conditions import ConditionStatus, set_condition

# (group, version, plural), spread into kopf.on.* decorators.
MONGOCLUSTER = (GROUP, VERSION, "mongoclusters")
BENCHMARKRUN = (GROUP, VERSION, "benchmarkruns")


def write_condition(
    patch: kopf.Patch,
    status: Mapping[str, Any],
    generation: int,
    *,
    type_: str,
    value: ConditionStatus,
    reason: str,
    message: str = "",
) -> None:
    """Set one condition in the status patch, keeping the others (merge patch replaces lists)."""
    current = patch.status.get("conditions", status.get("conditions"))
    patch.status["conditions"] = set_condition(
        current, type_, value, reason, message, generation=generation
    )


def reject_spec(
    patch: kopf.Patch,
    body: kopf.Body,
    status: Mapping[str, Any],
    generation: int,
    *,
    condition: str,
    error: Exception,
) -> None:
    """A spec the operator cannot use: phase Failed, the condition and an Event say why."""
    patch.status["phase"] = "Failed"
    patch.status["observedGeneration"] = generation
    write_condition(
        patch,
        status,
        generation,
        type_=condition,
        value="False",
        reason="InvalidSpec",
        message=str(error),
    )
    kopf.warn(body, reason="InvalidSpec", message=str(error))
