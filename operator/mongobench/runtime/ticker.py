"""Periodic work per resource, kept by key, not by body: what kopf's timers did for MongoClusters,
BenchmarkRuns and BenchmarkExperiments.

Why: kopf keeps the last body of every object that has a timer (its `live_fresh_body`) for as
long as the object exists, and one asyncio task per timer. Under 200 MongoClusters and 200
BenchmarkRuns (make bench-scale) that was ~12 MiB of bodies, half of it managedFields. Here a
resource's own event decides from its body whether it ticks (what the timers' `when` filters
did: `schedule`) and the body is let go; an entry keeps its key, interval and work. Due work
goes to the wake-up queue (runtime.wakeups): a tick and a child's event for one resource share its
key there and coalesce, a tick never runs beside another of the same resource, and a tick that
finds its key queued or running is dropped (as a kopf timer waits for its last call).

Timing follows kopf's timers: the first tick comes `first` seconds after the resource starts to
tick (kopf's `idle`, counted once), then each one `interval` after the last one ended (up to
SLACK early, so that ticks due together go out in one pass);
registering again with the same interval keeps the schedule (only the work is replaced), so
frequent events never starve it. A failed tick is retried by the queue after its key's backoff
(runtime.wakeups); the ticks meanwhile leave the key alone.

Pause (kopf's peering, runtime.peering): kopf stops its own timers when peering pauses the
operator and starts them again from the resources' events after the resume. So does the
ticker: `pause` forgets every entry and ignores `schedule` until `resume`; kopf re-lists every
resource when it resumes, and each one's event schedules its ticks again (first tick `first`
seconds later), while a resource deleted meanwhile never ticks again.

Owned by the operator's state (mongobench.state); one thread that only queues work.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mongobench.runtime.wakeups import Wakeups

if TYPE_CHECKING:
    from mongobench.controller import Result

SLACK = 0.05  # seconds


@dataclass
class _Entry:
    interval: float
    due: float
    wake_key: Hashable
    work: Callable[[], object]


class Ticker:
    def __init__(self, wakeups: Wakeups, clock: Callable[[], float] = time.monotonic) -> None:
        self._wakeups = wakeups
        self._clock = clock
        self._entries: dict[Hashable, _Entry] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._paused = False

    def schedule(
        self,
        key: Hashable,
        ticking: bool,
        interval: float,
        work: Callable[[], object],
        *,
        wake_key: Hashable | None = None,
        first: float | None = None,
    ) -> None:
        """While `ticking`, run `work` every `interval` seconds, woken under `wake_key` (default
        `key`); otherwise stop. Called from the resource's events, with what its body says."""
        if not ticking:
            self.stop(key)
            return
        wake = key if wake_key is None else wake_key
        with self._changed:
            if self._closed or self._paused:
                return
            entry = self._entries.get(key)
            if entry is not None and entry.interval == interval:
                entry.work, entry.wake_key = work, wake
                return
            start = interval if first is None else first
            self._entries[key] = _Entry(interval, self._clock() + start, wake, work)
            self._changed.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="ticker", daemon=True)
                self._thread.start()

    def requeue(
        self,
        key: Hashable,
        result: Result,
        work: Callable[[], object],
        *,
        wake_key: Hashable | None = None,
    ) -> None:
        """`schedule` as a controller's requeue decision says (mongobench.controller.Result):
        every `requeue_after` seconds, the first `first_after`; stopped when it says none."""
        interval = result.requeue_after
        if interval is None:
            self.stop(key)
            return
        self.schedule(key, True, interval, work, wake_key=wake_key, first=result.first_after)

    def stop(self, key: Hashable) -> None:
        with self._changed:
            self._entries.pop(key, None)

    def pause(self) -> None:
        """Stop every tick and forget them; `schedule` does nothing until `resume`."""
        with self._changed:
            self._paused = True
            self._entries.clear()
            self._changed.notify()

    def resume(self) -> None:
        """Take `schedule` again: the resources' replayed events bring their ticks back."""
        with self._changed:
            self._paused = False

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._entries.clear()
            self._changed.notify()
            thread = self._thread
        if thread is not None:
            thread.join(5)

    def interval(self, key: Hashable) -> float | None:
        """How often `key` ticks; None when it does not."""
        with self._changed:
            entry = self._entries.get(key)
            return None if entry is None else entry.interval

    def __len__(self) -> int:
        """Resources ticking."""
        with self._changed:
            return len(self._entries)

    def _loop(self) -> None:
        with self._changed:
            while not self._closed:
                now = self._clock()
                # Ticks due within SLACK go together: one pass per SLACK at most, not one per
                # resource (hundreds of them tick every second or two).
                for entry in self._entries.values():
                    if entry.due <= now + SLACK:
                        entry.due = now + entry.interval
                        # Under the lock (it only queues): once stop() returns, its key is
                        # never woken again.
                        try:
                            self._wakeups.wake(
                                entry.wake_key,
                                functools.partial(self._tick, entry),
                                unless_busy=True,
                            )
                        except RuntimeError:  # the handler threads were shut down: stopping
                            return
                nxt = min((e.due for e in self._entries.values()), default=now + 60.0)
                self._changed.wait(max(0.0, nxt - self._clock()))

    def _tick(self, entry: _Entry) -> None:
        """The entry's latest work; its next tick comes an interval after this one ends, as a
        kopf timer's does (a slow tick under load is not followed by one at once)."""
        try:
            entry.work()
        finally:
            with self._changed:
                entry.due = max(entry.due, self._clock() + entry.interval)
