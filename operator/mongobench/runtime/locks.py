"""Per-resource locks: one reconcile of a resource at a time, whatever woke it (its own event,
a child's event, a timer). Owned by the operator's state (mongobench.state); a deleted
resource's lock is forgotten with it."""

from __future__ import annotations

import threading


class ResourceLocks:
    def __init__(self) -> None:
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, kind: str, namespace: str, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault((kind, namespace, name), threading.Lock())

    def forget(self, kind: str, namespace: str, name: str) -> None:
        with self._guard:
            self._locks.pop((kind, namespace, name), None)

    def __len__(self) -> int:
        with self._guard:
            return len(self._locks)
