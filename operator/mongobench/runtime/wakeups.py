"""Work on a resource woken by another's event, by key and coalesced, as controller-runtime's
work queue does: a key waits in the queue at most once, never runs twice at a time, failed work
is retried with a per-key backoff, and the queue holds keys, not bodies.

Why: a child's event (a Job of a BenchmarkRun, a StatefulSet of a MongoCluster) handled as a
synchronous kopf handler waits for a handler thread holding the child's whole body. Under 200
clusters and 200 runs (make bench-scale) ~730 Job and StatefulSet bodies (~26 MiB, half of it
managedFields) were alive at once, queued behind 16 threads. Handed here, the event ends at once
in kopf's event loop; its work runs later with what it reads then (every such work reads the
resource afresh), and events that arrive while it waits add nothing.

Failures: failed work is retried after a delay that doubles per consecutive failure of its key
up to a cap (controller-runtime's rate-limited queue); a success forgets the count. A wake-up
while the key waits out its delay runs at once (new information); a tick (`unless_busy`) does
not shorten the delay. kopf's PermanentError is not retried, nor is the work of a resource
that is gone (`forget`, from OperatorState.forget).

Pause (kopf's peering, runtime.peering): while paused nothing is queued and nothing starts; what
was queued or waiting for a retry is dropped, as kopf stops its own timers: the active peer does
the work, and kopf replays every resource's events after the resume, which queues afresh. Work
already running when the pause comes ends (a thread cannot be stopped; kopf's sync handlers
neither); `idle` waits for it.

Owned by the operator's state (mongobench.state); it runs on kopf's handler threads, in their
own context, never a handler's: a handler's context holds its cause, and the cause the body.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass

import kopf

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """Seconds before the n-th consecutive failure of a key is retried: `first`, doubling, at
    most `most` (controller-runtime's ItemExponentialFailureRateLimiter)."""

    first: float = 0.5
    most: float = 60.0

    def delay(self, failures: int) -> float:
        return float(min(self.most, self.first * 2 ** min(failures - 1, 62)))


class Wakeups:
    def __init__(
        self,
        executor: Executor,
        *,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._executor = executor
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._changed = threading.Condition()
        # Queued: the latest work.
        self._work: dict[Hashable, Callable[[], object]] = {}
        self._running: set[Hashable] = set()
        # Failed and waiting out their backoff: when, and the work to retry.
        self._retries: dict[Hashable, tuple[float, Callable[[], object]]] = {}
        self._failures: dict[Hashable, int] = {}
        self._paused = False
        self._closed = False
        self._retrier: threading.Thread | None = None

    def wake(
        self,
        key: Hashable,
        work: Callable[[], object],
        *,
        unless_busy: bool = False,
    ) -> bool:
        """Queue `work` for `key`; False when the key was queued already (its latest work runs
        once) or the queue is paused. A key that is running is queued to run again after it;
        with `unless_busy` (a tick: the running or queued work reads everything afresh anyway)
        it is left alone, as is a key waiting out a retry's backoff."""
        with self._changed:
            if self._paused or self._closed:
                return False
            queued = key in self._work
            if unless_busy and (queued or key in self._running or key in self._retries):
                return False
            self._retries.pop(key, None)  # new information: no need to wait out the backoff
            self._work[key] = work
            if queued or key in self._running:
                return not queued
        self._executor.submit(self._run, key)
        return True

    def _run(self, key: Hashable) -> None:
        with self._changed:
            # A submission outlived by a pause (its work dropped), or one whose key another
            # submission runs already: that one runs the queued work after itself.
            if self._paused or key in self._running or key not in self._work:
                return
            work = self._work.pop(key)
            self._running.add(key)
        failed: BaseException | None = None
        try:
            work()
        except Exception as exc:
            failed = exc
        finally:
            with self._changed:
                self._running.discard(key)
                again = key in self._work and not self._paused
                if failed is None:
                    self._failures.pop(key, None)
                elif not self._paused:
                    self._failed(key, failed, work, rerun=again)
                self._changed.notify_all()
            if again:
                self._executor.submit(self._run, key)

    def _failed(
        self,
        key: Hashable,
        exc: BaseException,
        work: Callable[[], object],
        *,
        rerun: bool,
    ) -> None:
        """Under the lock: log the failure and retry the work after its key's backoff, unless
        newer work for the key runs next (it reads everything afresh)."""
        if isinstance(exc, kopf.PermanentError):
            self._failures.pop(key, None)
            log.error("wake-up of %s failed for good, not retried", key, exc_info=exc)
            return
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = self._backoff.delay(failures)
        if rerun:
            log.error("wake-up of %s failed; newer work runs next", key, exc_info=exc)
            return
        log.error(
            "wake-up of %s failed; retried in %.3g s (failure %d in a row)",
            key,
            delay,
            failures,
            exc_info=exc,
        )
        self._retries[key] = (self._clock() + delay, work)
        if self._retrier is None:
            self._retrier = threading.Thread(target=self._retry_loop, name="retries", daemon=True)
            self._retrier.start()

    def _retry_loop(self) -> None:
        with self._changed:
            while not self._closed:
                now = self._clock()
                due = [k for k, (when, _) in self._retries.items() if when <= now]
                for key in due:
                    _, work = self._retries.pop(key)
                    queued = key in self._work
                    self._work[key] = work
                    if not queued and key not in self._running:
                        try:
                            self._executor.submit(self._run, key)
                        except RuntimeError:  # the handler threads were shut down: stopping
                            return
                nxt = min((when for when, _ in self._retries.values()), default=now + 60.0)
                self._changed.wait(max(0.0, nxt - self._clock()))

    def forget(self, key: Hashable) -> None:
        """The key's resource is gone: drop its queued work, its retry and its failures."""
        with self._changed:
            self._work.pop(key, None)
            self._retries.pop(key, None)
            self._failures.pop(key, None)
            self._changed.notify_all()

    def pause(self) -> None:
        """Stop: drop what is queued and what waits for a retry; start nothing until `resume`."""
        with self._changed:
            self._paused = True
            self._work.clear()
            self._retries.clear()
            self._failures.clear()
            self._changed.notify_all()

    def resume(self) -> None:
        with self._changed:
            self._paused = False

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no work runs (and none is queued); False after `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._running and not self._work, timeout=timeout
            )

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._retries.clear()
            self._changed.notify_all()
            thread = self._retrier
        if thread is not None:
            thread.join(5)

    def retrying(self, key: Hashable) -> float | None:
        """Seconds until `key`'s failed work is retried; None when it waits for no retry."""
        with self._changed:
            entry = self._retries.get(key)
            return None if entry is None else max(0.0, entry[0] - self._clock())

    def __len__(self) -> int:
        """Keys queued, running or waiting for a retry."""
        with self._changed:
            return len(self._work.keys() | self._running | self._retries.keys())
