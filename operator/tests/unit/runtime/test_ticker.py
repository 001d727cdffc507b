"""Unit tier: the ticker (mongobench.runtime.ticker) with real threads and short intervals: a key
ticks until stopped; scheduling again keeps its schedule and takes the latest work (frequent
events never starve it); ticks go through the wake-up queue, so ticks that pile up behind busy
threads run once; a pause (kopf's peering) stops every tick until the resumed resources' events
schedule them again; closing stops the thread."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from mongobench.controller import EVENTS_ONLY, Result
from mongobench.runtime.ticker import SLACK, Ticker
from mongobench.runtime.wakeups import Wakeups

pytestmark = pytest.mark.unit


def until(what: Callable[[], bool], seconds: float = 10) -> None:
    for _ in range(int(seconds / 0.01)):
        if what():
            return
        threading.Event().wait(0.01)
    raise AssertionError("never happened")


def test_a_key_ticks_until_it_stops_ticking() -> None:
    pool = ThreadPoolExecutor(2)
    ticker = Ticker(Wakeups(pool))
    runs: list[int] = []
    ticker.schedule("k", True, 0.02, lambda: runs.append(1), first=0)
    until(lambda: len(runs) >= 3)
    ticker.schedule("k", False, 0.02, lambda: runs.append(1))
    assert ticker.interval("k") is None and not len(ticker)
    pool.submit(lambda: None).result()  # a tick queued before it stopped may still run
    stopped = len(runs)
    threading.Event().wait(0.2)
    assert len(runs) == stopped
    ticker.close()
    pool.shutdown()


def test_scheduling_again_keeps_the_schedule_and_takes_the_latest_work() -> None:
    """A resource whose events come faster than its interval still ticks, with the work its
    latest event gave (kopf's timers without `idle` behave so)."""
    pool = ThreadPoolExecutor(1)
    ticker = Ticker(Wakeups(pool))
    runs: list[int] = []
    for version in range(40):  # an event every 10 ms for ~0.4 s, each rescheduling
        ticker.schedule("k", True, 0.1, lambda v=version: runs.append(v), first=0.1)  # type: ignore[misc]
        threading.Event().wait(0.01)
    assert len(runs) >= 2  # it ticked while its events kept coming (rescheduled, not reset)
    # The latest event's work is what runs next (not a first tick's once its events stopped),
    # and never an older work after a newer one. (Whether the first tick already ran a newer
    # work than the first depends on the threads' timing: a loaded machine may tick at once.)
    until(lambda: runs[-1] == 39)
    assert runs == sorted(runs)
    ticker.schedule("k", True, 60.0, lambda: runs.append(-1))  # a new interval: a new schedule
    assert ticker.interval("k") == 60.0
    ticker.close()
    pool.shutdown()


def test_a_requeue_result_schedules_its_first_look_and_interval_and_events_only_stops() -> None:
    """Ticker.requeue, as the handlers pass their controller's decision (controller.Result)."""
    pool = ThreadPoolExecutor(1)
    ticker = Ticker(Wakeups(pool))
    runs: list[str] = []
    ticker.requeue("k", Result(60.0, first_after=0), lambda: runs.append("k"))
    until(lambda: runs == ["k"])  # the first look at once, the next a minute later
    assert ticker.interval("k") == 60.0
    ticker.requeue("c", Result(30.0), lambda: None, wake_key="k")  # first: one interval
    assert ticker.interval("c") == 30.0 and len(ticker) == 2
    ticker.requeue("k", EVENTS_ONLY, lambda: runs.append("stopped"))
    assert ticker.interval("k") is None and len(ticker) == 1
    ticker.close()
    pool.shutdown()


def test_ticks_behind_busy_threads_run_once() -> None:
    """Ticks go through the wake-up queue: a key waits there at most once, and shares it with
    the resource's other wake-ups (the same key)."""
    pool = ThreadPoolExecutor(1)
    wakeups = Wakeups(pool)
    ticker = Ticker(wakeups)
    gate, runs = threading.Event(), []
    pool.submit(gate.wait)  # the only handler thread is busy
    ticker.schedule("tick", True, 0.01, lambda: runs.append("tick"), wake_key="run", first=0)
    threading.Event().wait(0.2)  # ~20 ticks while the thread is busy
    ticker.stop("tick")
    wakeups.wake("run", lambda: runs.append("event"))
    gate.set()
    until(lambda: not len(wakeups))
    assert runs == ["event"]  # the latest work of the key, once
    ticker.close()
    pool.shutdown()


def test_closing_stops_the_ticks_and_the_thread() -> None:
    pool = ThreadPoolExecutor(1)
    ticker = Ticker(Wakeups(pool))
    runs: list[int] = []
    ticker.schedule("k", True, 0.01, lambda: runs.append(1), first=0)
    until(lambda: bool(runs))
    thread = ticker._thread
    assert thread is not None and thread.is_alive()
    ticker.close()
    assert not thread.is_alive()
    ticker.schedule("k", True, 0.01, lambda: runs.append(1), first=0)  # after close: nothing
    assert not len(ticker)
    pool.shutdown()


def test_the_next_tick_comes_an_interval_after_the_last_one_ended() -> None:
    """As a kopf timer: a tick slower than its interval is not followed by another at once."""
    pool = ThreadPoolExecutor(2)
    ticker = Ticker(Wakeups(pool))
    spans: list[tuple[float, float]] = []

    def slow() -> None:
        began = time.monotonic()
        threading.Event().wait(0.15)
        spans.append((began, time.monotonic()))

    ticker.schedule("k", True, 0.3, slow, first=0)
    until(lambda: len(spans) >= 3)
    ticker.close()
    gaps = [later[0] - earlier[1] for earlier, later in itertools.pairwise(spans)]
    # Ticks due within SLACK go early; at a fixed rate the gaps would be 0.3 - 0.15.
    assert all(gap >= 0.3 - SLACK - 0.01 for gap in gaps), gaps
    pool.shutdown()


def test_a_pause_stops_every_tick_and_the_resumed_events_bring_them_back() -> None:
    """kopf's peering paused the operator: no tick fires while paused, and events that still
    arrive schedule nothing; after the resume, the resources' replayed events schedule their
    ticks again (the first one `first` seconds later), and a resource deleted meanwhile,
    whose event never comes, never ticks again."""
    pool = ThreadPoolExecutor(2)
    wakeups = Wakeups(pool)
    ticker = Ticker(wakeups)
    runs: list[str] = []
    for key in ("kept", "deleted meanwhile"):
        ticker.schedule(key, True, 0.01, lambda k=key: runs.append(k), first=0)  # type: ignore[misc]
    until(lambda: {"kept", "deleted meanwhile"} <= set(runs))
    ticker.pause()
    wakeups.pause()
    assert not len(ticker) and ticker.interval("kept") is None
    ticker.schedule("kept", True, 0.01, lambda: runs.append("while paused"), first=0)
    assert wakeups.idle(timeout=5)
    paused_at = len(runs)
    threading.Event().wait(0.2)  # twenty intervals
    assert len(runs) == paused_at and "while paused" not in runs
    wakeups.resume()
    ticker.resume()
    resumed, first = time.monotonic(), []

    def tick() -> None:
        first.append(first[0] if first else time.monotonic())
        runs.append("resumed")

    ticker.schedule("kept", True, 0.01, tick, first=0.2)
    until(lambda: runs.count("resumed") >= 3)
    assert runs.count("deleted meanwhile") == runs[:paused_at].count("deleted meanwhile")
    assert first[0] - resumed >= 0.2 - SLACK
    ticker.close()
    pool.shutdown()
