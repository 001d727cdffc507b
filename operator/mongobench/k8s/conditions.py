"""Standard Kubernetes conditions (metav1.Condition), as pure functions over status dicts.

lastTransitionTime changes only when a condition's status changes, as the API conventions ask,
so a reconcile that observes nothing new writes nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

ConditionStatus = Literal["True", "False", "Unknown"]


def now_rfc3339() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def set_condition(
    conditions: Iterable[Mapping[str, Any]] | None,
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str = "",
    *,
    generation: int | None = None,
    now: str | None = None,
) -> list[dict[str, Any]]:
    """A copy of `conditions` with `type_` set; other conditions keep their order and values."""
    out: list[dict[str, Any]] = []
    found = False
    for existing in conditions or ():
        if existing.get("type") != type_:
            out.append(dict(existing))
            continue
        found = True
        changed = existing.get("status") != status
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": (now or now_rfc3339())
            if changed
            else existing.get("lastTransitionTime") or now or now_rfc3339(),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    if not found:
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now or now_rfc3339(),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    return out


def get_condition(
    conditions: Iterable[Mapping[str, Any]] | None, type_: str
) -> Mapping[str, Any] | None:
    for condition in conditions or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_true(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and condition.get("status") == "True"
