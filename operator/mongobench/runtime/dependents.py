"""Resources that wait on another resource's state, by key: a BenchmarkRun on its MongoCluster.

Why: a run waiting for its cluster polled it (a tick every second read the run, the cluster and
the step's Job): 200 runs waiting ~20 s each for their clusters under make bench-scale made most
of the operator's API requests. Here a run follows its cluster with what it saw of it last (a
`state`: e.g. Ready, not ready, absent), and the cluster's own events wake it through the
wake-up queue (runtime.wakeups) when that state differs; the run's ticks slow to a fallback.

A follower registers from its own events (`follow`, with the state its body recorded); the
followed resource's events report its state (`changed`). Both orders work: a state reported
before its follower registered is kept, and a follower that registers with another state is
woken at once. After a wake the follower counts as having seen the new state (its next event
says again what it recorded). Keys and states only: no bodies.

Owned by the operator's state (mongobench.state); `pause` forgets everything as the ticker does
(kopf replays every resource's events after peering resumes the operator).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from mongobench.runtime.wakeups import Wakeups


@dataclass
class _Follower:
    followed: Hashable
    seen: str | None  # None: it saw nothing yet (any reported state wakes it)
    work: Callable[[], object]


class Dependents:
    def __init__(self, wakeups: Wakeups) -> None:
        self._wakeups = wakeups
        self._lock = threading.Lock()
        self._followers: dict[Hashable, _Follower] = {}
        self._by_followed: dict[Hashable, set[Hashable]] = {}
        # The last state each followed resource reported: one short string per resource,
        # dropped when it is gone.
        self._states: dict[Hashable, str] = {}
        self._paused = False

    def follow(
        self, key: Hashable, followed: Hashable, seen: str | None, work: Callable[[], object]
    ) -> None:
        """`key` waits on `followed`, whose state it saw as `seen`: when `followed` reports
        another one, `work` is queued under `key`."""
        with self._lock:
            if self._paused:
                return
            self._drop(key)
            follower = self._followers[key] = _Follower(followed, seen, work)
            self._by_followed.setdefault(followed, set()).add(key)
            now = self._states.get(followed)
            wake = now is not None and now != seen
            if wake:
                follower.seen = now
        if wake:
            self._wakeups.wake(key, work)

    def unfollow(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        follower = self._followers.pop(key, None)
        if follower is None:
            return
        keys = self._by_followed[follower.followed]
        keys.discard(key)
        if not keys:
            del self._by_followed[follower.followed]

    def changed(self, followed: Hashable, state: str, *, gone: bool = False) -> int:
        """`followed` is in `state` now: wake every follower that saw another state. `gone`:
        it was deleted, so its state is not kept. How many were woken."""
        with self._lock:
            if self._paused:
                return 0
            if gone:
                self._states.pop(followed, None)
            else:
                self._states[followed] = state
            due = []
            for key in self._by_followed.get(followed, ()):
                follower = self._followers[key]
                if follower.seen != state:
                    follower.seen = state
                    due.append((key, follower.work))
        for key, work in due:
            self._wakeups.wake(key, work)
        return len(due)

    def forget(self, key: Hashable) -> None:
        """The resource is gone: it follows nothing, and its own state is not kept."""
        with self._lock:
            self._drop(key)
            self._states.pop(key, None)

    def following(self, key: Hashable) -> Hashable | None:
        """What `key` follows; None when it follows nothing."""
        with self._lock:
            follower = self._followers.get(key)
            return None if follower is None else follower.followed

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            self._followers.clear()
            self._by_followed.clear()
            self._states.clear()

    def resume(self) -> None:
        with self._lock:
            self._paused = False

    def __len__(self) -> int:
        """Resources following another."""
        with self._lock:
            return len(self._followers)
