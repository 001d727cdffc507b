"""Unit tier: the start barrier of parallel clients (folder store, real threads, fake clocks)."""

from __future__ import annotations

import argparse
import threading

import pytest

from mongobench_runner.barrier import (
    MARGIN_US,
    BarrierError,
    ClientGate,
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


def _duet_gate(tmp_path, index: int, clients: int, offset: int, total: int) -> ClientGate:
    args = argparse.Namespace(
        barrier=f"dir:{tmp_path}",
        client_index=index,
        clients=clients,
        barrier_timeout=10.0,
        barrier_offset=offset,
        barrier_clients=total,
    )
    return ClientGate.of(args)


def test_a_duets_two_runs_wait_for_each_other_and_start_at_one_instant(tmp_path):
    # A has 2 clients, B 1 (keys 2): A's clients are ready early, B's long after (its previous
    # step ran longer); nobody starts before B is ready, and all start at one instant.
    gates = [_duet_gate(tmp_path, i, 2, 0, 3) for i in (0, 1)] + [_duet_gate(tmp_path, 0, 1, 2, 3)]
    assert [(g.index, g.clients) for g in gates] == [(0, 3), (1, 3), (2, 3)]
    ready = [1_000_000, 1_200_000, 9_000_000]
    starts: dict[int, int] = {}
    b_ready = threading.Event()

    def client(i: int) -> None:
        if i == 2:
            b_ready.wait(10)
        starts[i] = gates[i].open(ready[i])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    threads[0].join(0.3)
    assert not starts  # A's clients are still waiting for B's
    b_ready.set()
    for t in threads:
        t.join(10)
    assert set(starts.values()) == {9_000_000 + MARGIN_US}


def test_a_duet_offset_that_does_not_fit_the_barrier_is_refused(tmp_path):
    with pytest.raises(ValueError, match="this run's 2 clients must fit in the barrier"):
        _duet_gate(tmp_path, 0, 2, 2, 3)
