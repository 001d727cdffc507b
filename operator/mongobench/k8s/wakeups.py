"""Work on a resource woken by another's event, by key and coalesced, as controller-runtime's
work queue does: a key waits in the queue at most once, never runs twice at a time, and the
queue holds keys, not bodies.

Why: a child's event (a Job of a BenchmarkRun, a StatefulSet of a MongoCluster) handled as a
synchronous kopf handler waits for a handler thread holding the child's whole body. Under 200
clusters and 200 runs (make bench-scale) ~730 Job and StatefulSet bodies (~26 MiB, half of it
managedFields) were alive at once, queued behind 16 threads. Handed here, the event ends at once
in kopf's event loop; its work runs later with what it reads then (every such work reads the
resource afresh), and events that arrive while it waits add nothing.

Owned by the operator's state (mongobench.state); it runs on kopf's handler threads, with only
the context variables it is told to carry (kopf's Event posting): a handler's whole context
holds its cause, and the cause holds the body.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Executor
from typing import Any

log = logging.getLogger(__name__)


class Wakeups:
    def __init__(
        self, executor: Executor, carried: Iterable[contextvars.ContextVar[Any]] = ()
    ) -> None:
        self._executor = executor
        self._carried = tuple(carried)
        self._guard = threading.Lock()
        # Queued: the latest work, with the carried variables as they were when it was queued.
        self._work: dict[Hashable, tuple[Callable[[], object], contextvars.Context]] = {}
        self._running: set[Hashable] = set()

    def wake(
        self,
        key: Hashable,
        work: Callable[[], object],
        carried_from: contextvars.Context | None = None,
        *,
        unless_busy: bool = False,
    ) -> bool:
        """Queue `work` for `key`; False when the key was queued already (its latest work runs
        once). A key that is running is queued to run again after it; with `unless_busy` (a
        tick: the running or queued work reads everything afresh anyway) it is left alone. The
        carried variables are read here, or from `carried_from` (see `carried`)."""
        with self._guard:
            queued = key in self._work
            if unless_busy and (queued or key in self._running):
                return False
            self._work[key] = (work, self.carried(carried_from))
            if queued or key in self._running:
                return not queued
        self._executor.submit(self._run, key)
        return True

    def _run(self, key: Hashable) -> None:
        with self._guard:
            work, context = self._work.pop(key)
            self._running.add(key)
        try:
            context.run(work)
        except Exception:
            # As kopf does for an event handler: logged, not retried; the next event wakes it.
            log.exception("wake-up of %s failed", key)
        finally:
            with self._guard:
                self._running.discard(key)
                again = key in self._work
            if again:
                self._executor.submit(self._run, key)

    def carried(self, source: contextvars.Context | None = None) -> contextvars.Context:
        """A new context with only the carried variables, as set here (or in `source`): one per
        work, as a context cannot be entered by two threads at once."""
        context = contextvars.Context()
        for var in self._carried:
            try:
                value = var.get() if source is None else source[var]
            except (LookupError, KeyError):  # not set where this was woken
                continue
            context.run(var.set, value)
        return context

    def __len__(self) -> int:
        """Keys queued or running."""
        with self._guard:
            return len(self._work.keys() | self._running)
