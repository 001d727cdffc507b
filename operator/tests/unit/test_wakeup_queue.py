"""Unit tier: the wake-up queue (mongobench.k8s.wakeups) with real threads: a key waits at most
once, never runs twice at a time, runs again when woken while running, carries only the context
variables it is told to (not the handler's cause), and a failure is logged
and frees its key."""

from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mongobench.k8s.wakeups import Wakeups

pytestmark = pytest.mark.unit

WHO = contextvars.ContextVar("WHO", default="nobody")
CAUSE: contextvars.ContextVar[Any] = contextvars.ContextVar("CAUSE", default=None)


def settle(wakeups: Wakeups) -> None:
    for _ in range(500):
        if not len(wakeups):
            return
        threading.Event().wait(0.01)
    raise AssertionError("the queue never emptied")


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


def test_work_carries_only_the_variables_it_is_told_to() -> None:
    """A kopf handler's context holds its cause, and the cause the body: not carried."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool, carried=[WHO])
    seen = []
    WHO.set("kopf's handler")
    CAUSE.set({"body": "a whole Job"})
    wakeups.wake("k", lambda: seen.append((WHO.get(), CAUSE.get())))
    settle(wakeups)
    assert seen == [("kopf's handler", None)]
    pool.shutdown()


def test_a_failure_is_logged_and_frees_its_key(caplog: pytest.LogCaptureFixture) -> None:
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool)
    ran = []
    with caplog.at_level(logging.ERROR, logger="mongobench.k8s.wakeups"):
        wakeups.wake(("BenchmarkRun", "ns", "r"), lambda: 1 / 0)
        settle(wakeups)
    assert "wake-up of ('BenchmarkRun', 'ns', 'r') failed" in caplog.text
    assert "ZeroDivisionError" in caplog.text
    assert wakeups.wake(("BenchmarkRun", "ns", "r"), lambda: ran.append(1))
    settle(wakeups)
    assert ran == [1]
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
