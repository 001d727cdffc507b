"""Unit tier: the dependents (mongobench.runtime.dependents) with the real wake-up queue: a follower
is woken when what it follows reports a state it did not see, in either order of follow and
report, once per change; unfollowed, forgotten or paused, it is not."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from mongobench.runtime.dependents import Dependents
from mongobench.runtime.wakeups import Wakeups

pytestmark = pytest.mark.unit

CLUSTER = ("MongoCluster", "ns", "c")
RUN = ("BenchmarkRun", "ns", "r")


@pytest.fixture
def queue() -> Iterator[Wakeups]:
    pool = ThreadPoolExecutor(2)
    wakeups = Wakeups(pool)
    yield wakeups
    wakeups.close()
    pool.shutdown()


def test_a_follower_wakes_when_what_it_follows_changes_from_what_it_saw(queue: Wakeups) -> None:
    deps = Dependents(queue)
    woken: list[str] = []
    deps.follow(RUN, CLUSTER, "NotReady", lambda: woken.append("run"))
    assert deps.changed(CLUSTER, "NotReady") == 0  # what it saw already
    assert deps.changed(("MongoCluster", "ns", "other"), "Ready") == 0  # not its cluster
    assert deps.changed(CLUSTER, "Ready") == 1
    assert queue.idle(timeout=5) and woken == ["run"]
    assert deps.changed(CLUSTER, "Ready") == 0  # the same news twice wakes it once
    assert deps.changed(CLUSTER, "NotFound", gone=True) == 1
    assert queue.idle(timeout=5) and woken == ["run", "run"]


def test_a_state_reported_before_the_follower_registered_wakes_it_at_once(queue: Wakeups) -> None:
    """The cluster became Ready between the run's look and the run's event that follows it."""
    deps = Dependents(queue)
    woken: list[str] = []
    deps.changed(CLUSTER, "Ready")
    deps.follow(RUN, CLUSTER, "Ready", lambda: woken.append("saw it"))
    deps.follow(RUN, CLUSTER, "NotReady", lambda: woken.append("missed it"))
    assert queue.idle(timeout=5) and woken == ["missed it"]
    # A follower that saw nothing yet is woken by any state known.
    deps.follow(("BenchmarkRun", "ns", "new"), CLUSTER, None, lambda: woken.append("new"))
    assert queue.idle(timeout=5) and woken == ["missed it", "new"]


def test_a_gone_resource_keeps_no_state_and_unfollowed_or_forgotten_runs_stay_asleep(
    queue: Wakeups,
) -> None:
    deps = Dependents(queue)
    woken: list[str] = []
    deps.changed(CLUSTER, "NotReady")
    deps.changed(CLUSTER, "NotFound", gone=True)
    deps.follow(RUN, CLUSTER, "Ready", lambda: woken.append("run"))  # nothing known: no wake
    assert queue.idle(timeout=5) and woken == []
    assert deps.following(RUN) == CLUSTER and len(deps) == 1
    deps.unfollow(RUN)
    assert deps.changed(CLUSTER, "NotReady") == 0 and deps.following(RUN) is None
    deps.forget(CLUSTER)  # the cluster's delete handler: its state goes
    deps.follow(RUN, CLUSTER, "Ready", lambda: woken.append("run"))
    deps.forget(RUN)  # the run was deleted
    assert deps.changed(CLUSTER, "NotReady") == 0 and not len(deps)
    assert queue.idle(timeout=5) and woken == []


def test_a_pause_forgets_everything_until_the_replayed_events_follow_again(
    queue: Wakeups,
) -> None:
    deps = Dependents(queue)
    woken: list[str] = []
    deps.follow(RUN, CLUSTER, "NotReady", lambda: woken.append("run"))
    deps.pause()
    assert deps.changed(CLUSTER, "Ready") == 0 and not len(deps)
    deps.follow(RUN, CLUSTER, "NotReady", lambda: woken.append("run"))  # ignored while paused
    deps.resume()
    assert not len(deps)
    deps.follow(RUN, CLUSTER, "NotReady", lambda: woken.append("run"))
    assert queue.idle(timeout=5) and woken == []  # the state seen while paused is not kept
    assert deps.changed(CLUSTER, "Ready") == 1
    assert queue.idle(timeout=5) and woken == ["run"]
