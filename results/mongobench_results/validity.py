"""A trial's validity: whether a measured step deserves the statistics made of it, and why not.

The operator judges every measured step (a trial) and keeps the verdict beside its result in the
BenchmarkRun's status (`status.steps[].validity`), the archive and the experiment's status:

    validity:
      valid: false
      reasons:
        - {reason: ClientBound, message: "client CPU 97% of limit", value: 0.97, threshold: 0.9}
      warmupSeconds: 4.0      # when the throughput series shows a warm-up (not-steady check)
      attempt: 2              # 1 for the first try; a re-run of an invalid trial counts up

This module is the one definition of that shape and of the reasons' names; readers (records,
compare, the CLI) and the operator use it. A step without `validity` was never judged (a run
from before verdicts existed): it counts as valid and says so (`judged` is False).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The client, not MongoDB, was the bottleneck: a client pod's CPU near its limit or its node's
# capacity, or the client's own saturation signal.
CLIENT_BOUND = "ClientBound"
# The step's nodes were disturbed: CPU steal, CPU throttling of database or client containers,
# load from pods that are not the benchmark's.
NOISY_NODE = "NoisyNode"
# The step's per-second throughput shows a warm-up or a level shift (change-point detection).
NOT_STEADY = "NotSteady"
# Failed operations or retries above the threshold.
ERRORS = "Errors"
# Throughput x mean latency disagrees with the clients' threads (a recording or client problem).
LITTLES_LAW = "LittlesLaw"

REASONS = (CLIENT_BOUND, NOISY_NODE, NOT_STEADY, ERRORS, LITTLES_LAW)


@dataclass(frozen=True)
class Reason:
    reason: str
    message: str
    value: float | None = None
    threshold: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "message": self.message}
        if self.value is not None:
            out["value"] = self.value
        if self.threshold is not None:
            out["threshold"] = self.threshold
        return out


@dataclass(frozen=True)
class Validity:
    valid: bool
    reasons: tuple[Reason, ...] = field(default_factory=tuple)
    warmup_seconds: float | None = None
    attempt: int = 1
    judged: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "valid": self.valid,
            "reasons": [r.to_dict() for r in self.reasons],
            "attempt": self.attempt,
        }
        if self.warmup_seconds is not None:
            out["warmupSeconds"] = self.warmup_seconds
        return out

    @property
    def reason_names(self) -> list[str]:
        return [r.reason for r in self.reasons]

    def text(self) -> str:
        """One cell of a table: `valid`, `unjudged`, or the reasons' names."""
        if not self.judged:
            return "unjudged"
        return "valid" if self.valid else "invalid: " + ", ".join(self.reason_names)


UNJUDGED = Validity(valid=True, judged=False)


def judge(
    reasons: Sequence[Reason], warmup_seconds: float | None = None, attempt: int = 1
) -> Validity:
    """The verdict of a trial from the reasons its checks found (none: valid)."""
    return Validity(
        valid=not reasons, reasons=tuple(reasons), warmup_seconds=warmup_seconds, attempt=attempt
    )


def parse(value: Mapping[str, Any] | None) -> Validity:
    """A step's `validity` as the operator wrote it; UNJUDGED when there is none."""
    if not isinstance(value, Mapping):
        return UNJUDGED
    reasons = tuple(
        Reason(
            reason=str(r.get("reason", "")),
            message=str(r.get("message", "")),
            value=_number(r.get("value")),
            threshold=_number(r.get("threshold")),
        )
        for r in value.get("reasons") or ()
        if isinstance(r, Mapping)
    )
    return Validity(
        valid=bool(value.get("valid", not reasons)),
        reasons=reasons,
        warmup_seconds=_number(value.get("warmupSeconds")),
        attempt=int(value.get("attempt") or 1),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
