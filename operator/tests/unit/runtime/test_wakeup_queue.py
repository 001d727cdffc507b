"""Unit tier: the wake-up queue (mongobench.runtime.wakeups) with real threads: a key waits at most
once, never runs twice at a time, runs again when woken while running, runs outside the context
that woke it (a handler's cause holds a body); a failure is logged and retried after a
per-key backoff that grows until a success resets it; a pause (kopf's peering) drops what waits
and starts nothing until the resume; closing stops the retries."""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
import pytest

from mongobench.runtime.wakeups import Backoff, Wakeups

pytestmark = pytest.mark.unit

CAUSE: contextvars.ContextVar[Any] = contextvars.ContextVar("CAUSE", default=None)


def settle(wakeups: Wakeups, seconds: float = 5) -> None:
    until(lambda: not len(wakeups), seconds)


def until(what: Callable[[], bool], seconds: float = 5) -> None:
    for _ in range(int(seconds / 0.01)):
        if what():
            return
        threading.Event().wait(0.01)
    raise AssertionError("never happened")


def test_events_while_a_key_waits_wake_it_once_with_the_latest_work() -> None:
    pool = ThreadPoolExecutor(1)
    gate, ran = threading.Event(), []
    wakeups = Wakeups(pool)
    pool.submit(gate.wait)  # the only thread is busy: what is queued waits
    assert wakeups.wake("run-a", lambda: ran.append("a1"))
    assert not wakeups.wake("run-a", lambda: ran.append("a2"))
    assert not wakeups.wake("run-a", lambda: ran.append("a3"))
    assert wakeups.wake("run-b", lambda: ran.append("b1"))
    assert len(wakeups) == 2
    gate.set()
    settle(wakeups)
    assert ran == ["a3", "b1"]
    pool.shutdown()


def test_a_key_woken_while_it_runs_runs_again_after_never_beside() -> None:
    pool = ThreadPoolExecutor(4)
    wakeups = Wakeups(pool)
    inside, release = threading.Event(), threading.Event()
    running, most, runs = [0], [0], []
    guard = threading.Lock()

    def work(n: int) -> None:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if n == 1:
            inside.set()
            release.wait(5)
        runs.append(n)
        with guard:
            running[0] -= 1

    wakeups.wake("k", lambda: work(1))
    assert inside.wait(5)
    assert wakeups.wake("k", lambda: work(2))  # queued behind the running one
    assert not wakeups.wake("k", lambda: work(3))
    threading.Event().wait(0.1)  # three idle threads: none may start "k" now
    assert runs == []
    release.set()
    settle(wakeups)
    assert runs == [1, 3] and most[0] == 1
    pool.shutdown()


def test_work_runs_outside_the_context_that_woke_it() -> None:
    """A kopf handler's context holds its cause, and the cause the body: work woken from a
    handler must not keep it alive."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool)
    seen = []
    CAUSE.set({"body": "a whole Job"})
    wakeups.wake("k", lambda: seen.append(CAUSE.get()))
    settle(wakeups)
    assert seen == [None]
    pool.shutdown()


def test_a_failure_is_logged_and_retried_after_its_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(0.05, 1))
    key = ("BenchmarkRun", "ns", "r")
    attempts: list[int] = []

    def flaky() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ZeroDivisionError

    with caplog.at_level(logging.ERROR, logger="mongobench.runtime.wakeups"):
        wakeups.wake(key, flaky)
        settle(wakeups)
    assert "wake-up of ('BenchmarkRun', 'ns', 'r') failed; retried in 0.05 s" in caplog.text
    assert "ZeroDivisionError" in caplog.text
    assert len(attempts) == 2  # not dropped until the next event: retried, then done
    wakeups.close()
    pool.shutdown()


def test_a_failing_key_is_retried_with_growing_delays_until_it_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """controller-runtime's rate-limited queue: the delay doubles per failure in a row, up to a
    cap, per key; a success forgets the failures, so the next failure waits the first delay."""
    caplog.set_level(logging.ERROR, logger="mongobench.runtime.wakeups")
    pool = ThreadPoolExecutor(2)
    wakeups = Wakeups(pool, backoff=Backoff(0.05, 0.2))
    starts: list[float] = []
    failing = [5]  # failures to come

    def work() -> None:
        starts.append(time.monotonic())
        if failing[0]:
            failing[0] -= 1
            raise RuntimeError("the apiserver said 500")

    other: list[int] = []
    wakeups.wake("k", work)
    wakeups.wake("other", lambda: other.append(1))  # another key: not held back by "k"
    settle(wakeups, seconds=10)
    assert other == [1]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert len(starts) == 6, starts  # five failures, each retried, then a success
    delays = (0.05, 0.1, 0.2, 0.2, 0.2)  # doubling, then capped
    assert [r.getMessage().split("retried in ")[1] for r in caplog.records] == [
        f"{d:.3g} s (failure {n} in a row)" for n, d in enumerate(delays, 1)
    ]
    for gap, delay in zip(gaps, delays, strict=True):  # never earlier than the backoff
        assert gap >= delay - 0.005, gaps
    # The success forgot the failures: the next failure waits the first delay again.
    failing[0] = 1
    caplog.clear()
    wakeups.wake("k", work)
    settle(wakeups)
    assert [r.getMessage().split("retried in ")[1] for r in caplog.records] == [
        "0.05 s (failure 1 in a row)"
    ]
    wakeups.close()
    pool.shutdown()


def test_an_event_during_a_backoff_runs_at_once_a_tick_waits() -> None:
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(30, 30))
    runs: list[str] = []

    def fail() -> None:
        runs.append("failed")
        raise RuntimeError("MongoDB unreachable")

    wakeups.wake("k", fail)
    until(lambda: wakeups.retrying("k") is not None)
    assert not wakeups.wake("k", lambda: runs.append("tick"), unless_busy=True)
    assert wakeups.wake("k", lambda: runs.append("event"))  # new information: now
    settle(wakeups)
    assert runs == ["failed", "event"] and wakeups.retrying("k") is None
    wakeups.close()
    pool.shutdown()


def test_a_forgotten_key_is_not_retried() -> None:
    """Its resource was deleted (OperatorState.forget): a failure of its last work is not
    retried for ever."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(0.3, 0.3))
    runs: list[int] = []

    def fail() -> None:
        runs.append(1)
        raise RuntimeError("404")

    wakeups.wake("k", fail)
    until(lambda: wakeups.retrying("k") is not None)
    wakeups.forget("k")
    assert wakeups.retrying("k") is None and not len(wakeups)
    threading.Event().wait(0.7)  # two backoffs
    assert runs == [1]
    wakeups.close()
    pool.shutdown()


def test_a_permanent_error_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(0.01, 0.01))
    runs: list[int] = []

    def refuse() -> None:
        runs.append(1)
        raise kopf.PermanentError("the spec cannot work")

    with caplog.at_level(logging.ERROR, logger="mongobench.runtime.wakeups"):
        wakeups.wake("k", refuse)
        settle(wakeups)
    threading.Event().wait(0.1)  # ten backoffs
    assert runs == [1] and "failed for good, not retried" in caplog.text
    wakeups.close()
    pool.shutdown()


def test_a_pause_drops_queued_work_and_starts_nothing_until_resumed() -> None:
    """kopf's peering paused the operator: what waits is dropped (the active peer does it, and
    kopf replays every resource's events after the resume); the work running then ends."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(0.2, 0.2))
    inside, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def running() -> None:
        inside.set()
        release.wait(5)
        runs.append("running")

    def failing() -> None:
        runs.append("failing")
        raise RuntimeError("500")

    wakeups.wake("failing", failing)
    until(lambda: wakeups.retrying("failing") is not None)
    wakeups.wake("running", running)
    assert inside.wait(5)
    wakeups.wake("queued", lambda: runs.append("queued"))  # behind the only thread
    wakeups.wake("running", lambda: runs.append("running again"))  # behind itself
    wakeups.pause()
    assert not wakeups.wake("woken while paused", lambda: runs.append("woken while paused"))
    assert not wakeups.idle(timeout=0)  # the running one is still running
    release.set()
    assert wakeups.idle(timeout=5)
    threading.Event().wait(0.5)  # two backoffs of "failing", the thread free
    pool.submit(lambda: None).result()  # submissions from before the pause have run
    assert runs == ["failing", "running"] and not len(wakeups)
    wakeups.resume()
    assert wakeups.wake("queued", lambda: runs.append("after the resume"))
    settle(wakeups)
    assert runs == ["failing", "running", "after the resume"]
    wakeups.close()
    pool.shutdown()


def test_closing_stops_the_retries_and_their_thread() -> None:
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, backoff=Backoff(0.01, 0.01))
    runs: list[int] = []

    def fail() -> None:
        runs.append(1)
        raise RuntimeError("500")

    wakeups.wake("k", fail)
    until(lambda: len(runs) >= 2)
    thread = wakeups._retrier
    assert thread is not None and thread.is_alive()
    wakeups.close()
    assert not thread.is_alive()
    pool.submit(lambda: None).result()
    stopped = len(runs)
    threading.Event().wait(0.1)
    assert len(runs) == stopped
    assert not wakeups.wake("k", fail)
    pool.shutdown()


def test_a_tick_leaves_a_busy_key_alone() -> None:
    """`unless_busy` (the ticker's wake-ups): a key running or queued is not woken again, as a
    kopf timer waits for its last call; any other wake-up still queues a rerun."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool)
    inside, release, runs = threading.Event(), threading.Event(), []

    def first() -> None:
        inside.set()
        release.wait(5)
        runs.append("first")

    wakeups.wake("k", first)
    assert inside.wait(5)
    assert not wakeups.wake("k", lambda: runs.append("tick"), unless_busy=True)  # running
    assert wakeups.wake("k", lambda: runs.append("event"))
    assert not wakeups.wake("k", lambda: runs.append("tick"), unless_busy=True)  # queued
    release.set()
    settle(wakeups)
    assert runs == ["first", "event"]
    assert wakeups.wake("k", lambda: runs.append("tick"), unless_busy=True)  # idle again
    settle(wakeups)
    assert runs == ["first", "event", "tick"]
    pool.shutdown()
