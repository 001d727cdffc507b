"""Pure: what every controller (MongoCluster, BenchmarkRun, BenchmarkExperiment) shares.

The Result of a decision about when to look at a resource again (controller-runtime's
reconcile.Result): each controller's `requeue` module decides it from the resource's body, and
the handler passes it to the one scheduler (runtime.ticker, `Ticker.requeue`). Also whether a
refused spec settled a resource (its ticks stop until the spec changes), and how a BenchmarkRun
sees its MongoCluster (the run follows the cluster; both sides must say it alike).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.k8s.conditions import (
    CLUSTER_DELETED,
    CLUSTER_IS_READY,
    CLUSTER_NOT_FOUND,
    CLUSTER_NOT_READY,
    CLUSTER_READY,
    PHASE_FAILED,
    PHASE_READY,
    TRUE,
    get_condition,
    refused,
)


@dataclass(frozen=True)
class Result:
    """When to look again: every `requeue_after` seconds (None: only events wake it), the first
    time `first_after` seconds after it starts to requeue (None: `requeue_after`; kopf's idle)."""

    requeue_after: float | None = None
    first_after: float | None = None

    @property
    def requeues(self) -> bool:
        return self.requeue_after is not None


EVENTS_ONLY = Result()  # no ticks: the resource's or its children's events wake it


# Where a refusal is recorded when the status cannot be written: Kubernetes before 1.33 checks
# a status write against the spec's current rules without ratcheting (kubernetes#129503), so
# an object stored before a rule existed takes no status; its metadata still takes writes.
REFUSED_ANNOTATION = "mongobench.io/refused"


def recorded_refusal(body: Mapping[str, Any], condition: str) -> tuple[str, str] | None:
    """(reason, message) of the refusal recorded for the object's current generation."""
    meta = body.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    status = body.get("status") or {}
    if status.get("phase") == PHASE_FAILED and refused(status, condition, generation):
        found = get_condition(status.get("conditions"), condition) or {}
        return str(found.get("reason")), str(found.get("message"))
    try:
        noted = json.loads((meta.get("annotations") or {})[REFUSED_ANNOTATION])
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(noted, dict) or noted.get("generation") != generation:
        return None
    return str(noted.get("reason")), str(noted.get("message"))


def settled(body: Mapping[str, Any], condition: str) -> bool:
    """Whether work on the object stops until its spec changes (the requeue decisions ask)."""
    return recorded_refusal(body, condition) is not None


def live(body: Mapping[str, Any], deleted: bool) -> bool:
    """Neither gone (its DELETED event) nor going (deletionTimestamp)."""
    return not deleted and not (body.get("metadata") or {}).get("deletionTimestamp")


# How a BenchmarkRun sees its MongoCluster, in the reasons of its ClusterReady condition: the
# run follows the cluster (runtime.dependents) and the cluster's events wake it when this changes.
def cluster_as_runs_see_it(body: Mapping[str, Any], deleted: bool) -> str:
    """The MongoCluster in a run's terms: NotFound (deleted), Ready or NotReady."""
    if deleted:
        return CLUSTER_NOT_FOUND
    status = body.get("status") or {}
    ready = status.get("phase") == PHASE_READY and not body["metadata"].get("deletionTimestamp")
    return CLUSTER_IS_READY if ready else CLUSTER_NOT_READY


def cluster_as_run_saw_it(status: Mapping[str, Any]) -> str | None:
    """What the run recorded of its cluster (as cluster_as_runs_see_it says it); None before
    its first look."""
    found = get_condition(status.get("conditions"), CLUSTER_READY)
    if found is None:
        return None
    if found.get("status") == TRUE:
        return CLUSTER_IS_READY
    if found.get("reason") in (CLUSTER_NOT_FOUND, CLUSTER_DELETED):
        return CLUSTER_NOT_FOUND
    return CLUSTER_NOT_READY
