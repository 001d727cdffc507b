"""Unit tier: the start barrier of parallel clients (folder store, real threads, fake clocks)."""

from __future__ import annotations

import threading

import pytest

from mongobench_runner.barrier import (
    MARGIN_US,
    BarrierError,
    DirStore,
    fail,
    parse_barrier,
    start_instant,
    wait,
)

pytestmark = pytest.mark.unit


def test_every_client_computes_the_same_start_after_the_last_one_is_ready(tmp_path):
    store = DirStore(tmp_path / "b")
    ready = {0: 1_000_000, 1: 3_500_000, 2: 2_000_000}
    openings = {}

    def client(i: int) -> None:
        openings[i] = wait(store, i, 3, ready[i], timeout_s=10, poll_s=0.01)

    threads = [threading.Thread(target=client, args=(i,)) for i in ready]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    starts = {o.start_us for o in openings.values()}
    assert starts == {3_500_000 + MARGIN_US}
    assert all(o.ready_us == ready for o in openings.values())


def test_a_client_that_never_comes_fails_the_step_naming_it(tmp_path):
    clock = iter(range(0, 1000, 5))
    with pytest.raises(BarrierError, match=r"clients \[1, 2\] of 3 were not ready within 30 s"):
        wait(
            DirStore(tmp_path),
            0,
            3,
            5,
            timeout_s=30,
            monotonic=lambda: float(next(clock)),
            sleep=lambda s: None,
        )


def test_a_client_that_failed_before_the_start_stops_the_others_at_once(tmp_path):
    store = DirStore(tmp_path)
    fail(store, 1, "binding failed before the start: init failed: auth refused")
    with pytest.raises(BarrierError, match="client 1 failed before the common start: binding"):
        wait(store, 0, 2, 5, timeout_s=3600, sleep=lambda s: None)


def test_start_instant_is_pure_and_the_store_spec_is_checked():
    assert start_instant({0: 10, 1: 20}, margin_us=5) == 25
    assert isinstance(parse_barrier("dir:/x"), DirStore)
    with pytest.raises(ValueError, match="expected dir:PATH or configmap:NAMESPACE/NAME"):
        parse_barrier("configmap:only-a-name")


def test_128_clients_meet_and_the_margin_covers_the_polling_of_many():
    from mongobench_runner.barrier import poll_interval, start_margin_us

    # the margin exceeds a poll at every client count the CRD admits (1 to 256)
    for clients in (1, 8, 64, 80, 128, 256):
        assert start_margin_us(poll_interval(clients)) > poll_interval(clients) * 1e6
    assert start_margin_us(poll_interval(64)) == MARGIN_US
    assert start_margin_us(poll_interval(256)) == 4_000_000


def test_128_parallel_clients_agree_on_one_start(tmp_path):
    store = DirStore(tmp_path / "b")
    openings = {}

    def client(i: int) -> None:
        openings[i] = wait(store, i, 128, 1_000_000 + i, timeout_s=60, poll_s=0.02)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(128)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(openings) == 128
    assert {o.start_us for o in openings.values()} == {1_000_127 + MARGIN_US}
