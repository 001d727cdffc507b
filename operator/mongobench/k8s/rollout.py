"""What of a workload (StatefulSet, Deployment) a reconcile acts on, and whether an event
changed it.

A StatefulSet's events are mostly not news to its MongoCluster: the operator's own applies,
the controller's bookkeeping (collisionCount, currentReplicas). Only its rollout (how many pods
the spec asks, how many exist, are ready, run the latest template, whether the controller has
seen the spec) changes what a sync would do; each event that changes nothing of it would cost a
whole sync. Owned by the operator's state (mongobench.state), one entry per workload, forgotten
when it is deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

Rollout = tuple[Any, ...]


def rollout(workload: Mapping[str, Any]) -> Rollout:
    """The fields of a StatefulSet or Deployment a MongoCluster's sync reads."""
    meta = workload.get("metadata") or {}
    spec = workload.get("spec") or {}
    status = workload.get("status") or {}
    return (
        spec.get("replicas"),
        status.get("replicas"),
        status.get("readyReplicas"),
        status.get("updatedReplicas"),
        status.get("availableReplicas"),
        status.get("updateRevision"),
        int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 0),
    )


class SeenRollouts:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], Rollout] = {}
        self._guard = threading.Lock()

    def changed(self, kind: str, workload: Mapping[str, Any]) -> bool:
        """Whether `workload`'s rollout differs from the one last seen (True the first time,
        e.g. after a restart); records it."""
        meta = workload["metadata"]
        key, now = (kind, meta["namespace"], meta["name"]), rollout(workload)
        with self._guard:
            before = self._seen.get(key)
            self._seen[key] = now
        return before != now

    def seen(self, kind: str, namespace: str, name: str) -> bool:
        """Whether this operator has seen the workload's rollout since it started."""
        with self._guard:
            return (kind, namespace, name) in self._seen

    def forget(self, kind: str, namespace: str, name: str) -> None:
        with self._guard:
            self._seen.pop((kind, namespace, name), None)

    def __len__(self) -> int:
        with self._guard:
            return len(self._seen)
