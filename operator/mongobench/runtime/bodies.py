"""The latest body of each watched resource of one kind, by key, fed by its kopf events: reads
the operator would otherwise send as GETs (a BenchmarkRun read its MongoCluster on every
advance: ~4.5 requests and ~5 KiB per run object under make bench-scale).

Why it can stand in for a GET: kopf's watch delivers every change of the resource in order, so
the last event's body is what a GET returns, late by the watch's latency only (a GET sent just
before the change is as late). What the index never does is answer for a resource it has no
event of: a key it does not hold (never seen, deleted, evicted, or the operator paused) is a
miss, and the caller GETs.

- Fed by `seen` (every event but DELETED), emptied of a key by `gone` (DELETED, or a
  deletionTimestamp: the caller reads the apiserver while the object goes), of everything by
  `pause` (kopf's peering: no events arrive while paused; kopf lists every resource again on
  resume). `resume` lets it fill again.
- Bounded: at most `limit` keys, the least recently fed evicted first (a miss, then a GET).
- Read through `WatchedReads`: a KubeApi whose `get` of an indexed kind answers from the index
  when it holds the key, and sends the GET otherwise; every other call goes to the apiserver.
- Small: each body is kept as compact JSON without managedFields and the annotations that copy
  the spec (kubectl's and kopf's last-applied or last-handled configuration); every read
  decodes a copy of its own, so no caller can change what the next one reads.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

from mongobench.k8s.api import KubeApi
from mongobench.k8s.conditions import EventType

# Annotations that copy a spec: no reader of the index needs them.
SPEC_COPIES = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "mongobench.io/last-handled-configuration",
)
# Keys kept at most by default: a watched namespace of many hundreds of clusters stays bounded.
LIMIT = 1024


def trimmed(body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` without managedFields and the spec copies in its annotations."""
    meta = dict(body.get("metadata") or {})
    meta.pop("managedFields", None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in SPEC_COPIES}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return {**body, "metadata": meta}


class LatestBodies:
    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._bodies: OrderedDict[Hashable, bytes] = OrderedDict()
        self._paused = False

    def seen(self, key: Hashable, body: Mapping[str, Any]) -> None:
        """An event of `key` other than its deletion: `body` is its latest state."""
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            self.gone(key)  # going: its finalizers' progress is read from the apiserver
            return
        encoded = json.dumps(trimmed(body), separators=(",", ":")).encode()
        with self._lock:
            if self._paused:
                return
            self._bodies[key] = encoded
            self._bodies.move_to_end(key)
            while len(self._bodies) > self._limit:
                self._bodies.popitem(last=False)

    def gone(self, key: Hashable) -> None:
        """`key` was deleted (or is being deleted): never answer for it again until it is seen."""
        with self._lock:
            self._bodies.pop(key, None)

    def get(self, key: Hashable) -> dict[str, Any] | None:
        """A copy of the latest body of `key`; None when not held (the caller GETs)."""
        with self._lock:
            encoded = self._bodies.get(key)
        if encoded is None:
            return None
        found: dict[str, Any] = json.loads(encoded)
        return found

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            self._bodies.clear()

    def resume(self) -> None:
        with self._lock:
            self._paused = False

    def __len__(self) -> int:
        with self._lock:
            return len(self._bodies)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._bodies


class WatchedReads:
    """A KubeApi that reads `kind` objects from `bodies` (keyed (kind, namespace, name)) when it
    holds them, everything else through `kube`."""

    def __init__(self, kube: KubeApi, kind: str, bodies: LatestBodies) -> None:
        self.kube, self.kind, self.bodies = kube, kind, bodies

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        if kind == self.kind:
            held = self.bodies.get((kind, namespace, name))
            if held is not None:
                return held
        return self.kube.get(kind, namespace, name)

    def list(
        self, kind: str, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        return self.kube.list(kind, namespace, label_selector)

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        return self.kube.create(obj, dry_run=dry_run)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return self.kube.apply(obj)

    def patch(
        self, kind: str, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self.kube.patch(kind, namespace, name, patch)

    def patch_status(self, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self.kube.patch_status(kind, namespace, name, status)

    def delete(self, kind: str, namespace: str, name: str, propagation: str = "Background") -> bool:
        return self.kube.delete(kind, namespace, name, propagation)

    def served(self, group_version: str, plural: str) -> bool:
        return self.kube.served(group_version, plural)

    def version(self) -> dict[str, Any]:
        return self.kube.version()

    def event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        self.kube.event(obj, type_, reason, message)
