"""A trial's validity: whether a measured step deserves the statistics made of it, and why not.

The operator judges every measured step (a trial) and keeps the verdict beside its result in the
BenchmarkRun's status (`status.steps[].validity`), the archive and the experiment's status:

    validity:
      valid: false
      reasons:
        - {reason: ClientBound, message: "client CPU 97% of limit", value: 0.97, threshold: 0.9}
        - {reason: NoisyNode, message: "...", accepted: true}   # spec.validity.accept
      warmupSeconds: 4.0      # when the throughput series shows a warm-up (not-steady check)
      attempt: 2              # 1 for the first try; a re-run of an invalid trial counts up

This module is the one definition of that shape and of the reasons' names; readers (records,
compare, the CLI) and the operator use it. A reason the run's policy accepts
(`spec.validity.accept`, e.g. ClientBound on a shared-node platform) is judged and kept, marked
`accepted`, but does not make the trial invalid. A step without `validity` was never judged (a run
from before verdicts existed): it counts as valid and says so (`judged` is False).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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

# What to change so the next trial is valid, per reason: the one table status, describe,
# compare and the report read (the reason's message says what was seen, this what to do).
ADVICE = {
    CLIENT_BOUND: "raise clients.resources.limits.cpu or clients.parallelism (or lower "
    "run.targetOpsPerSecond): the clients, not MongoDB, set the pace",
    NOISY_NODE: "keep the benchmark off the disturbed node named (clients.nodeSelector, the "
    "cluster's placement) or move its neighbour away, then run again",
    NOT_STEADY: "a longer run.durationSeconds, or run.warmupSeconds (warms each trial's own "
    "client process and connections) or a warmup step before the measured window",
    ERRORS: "find why operations failed (the clients' logs); lower run.targetOpsPerSecond or "
    "give the database more resources",
    LITTLES_LAW: "check the clients' threads (run.threads) against what they recorded; a client "
    "that stalled or lost time gives this: run again",
}


def advice(reason: str) -> str:
    """What to change for a trial invalid for `reason` (a name not in REASONS: none known)."""
    return ADVICE.get(reason, "")


def advice_line(reason: str, count: int | None = None) -> str:
    """ "ClientBound 2: raise clients.resources.limits.cpu ..." for lists of reasons."""
    name = reason if count is None else f"{reason} {count}"
    tip = advice(reason)
    return f"{name}: {tip}" if tip else name


@dataclass(frozen=True)
class Reason:
    reason: str
    message: str
    value: float | None = None
    threshold: float | None = None
    # Found, but the policy accepts it (spec.validity.accept): shown, not excluding the trial.
    accepted: bool = False

    @property
    def advice(self) -> str:
        return advice(self.reason)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "message": self.message}
        if self.value is not None:
            out["value"] = self.value
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.accepted:
            out["accepted"] = True
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
        """The reasons that make the trial invalid (the accepted ones are not among them)."""
        return _unique(r.reason for r in self.reasons if not r.accepted)

    @property
    def accepted_names(self) -> list[str]:
        """The reasons found and accepted by the policy."""
        return _unique(r.reason for r in self.reasons if r.accepted)

    def text(self) -> str:
        """One cell of a table: `valid`, `unjudged`, or the reasons' names; accepted reasons
        after them ("valid (accepted: ClientBound)")."""
        if not self.judged:
            return "unjudged"
        text = "valid" if self.valid else "invalid: " + ", ".join(self.reason_names)
        accepted = self.accepted_names
        if accepted:
            text += f" (accepted: {', '.join(accepted)})"
        return text


UNJUDGED = Validity(valid=True, judged=False)


def judge(
    reasons: Sequence[Reason],
    warmup_seconds: float | None = None,
    attempt: int = 1,
    accept: Collection[str] = (),
) -> Validity:
    """The verdict of a trial from the reasons its checks found: valid when none is found or
    every one found is of a kind in `accept` (those are kept, marked accepted)."""
    marked = tuple(replace(r, accepted=True) if r.reason in accept else r for r in reasons)
    return Validity(
        valid=all(r.accepted for r in marked),
        reasons=marked,
        warmup_seconds=warmup_seconds,
        attempt=attempt,
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
            accepted=r.get("accepted") is True,
        )
        for r in value.get("reasons") or ()
        if isinstance(r, Mapping)
    )
    return Validity(
        valid=bool(value.get("valid", all(r.accepted for r in reasons))),
        reasons=reasons,
        warmup_seconds=_number(value.get("warmupSeconds")),
        attempt=int(value.get("attempt") or 1),
    )


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
