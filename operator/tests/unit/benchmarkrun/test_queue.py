"""Unit tier: one BenchmarkRun at a time on a target (benchmarkrun.decide.queue, pure), and how the
controller carries it out (benchmarkrun.act.orchestrate against the in-memory API, fake_kube): a
later
run waits as Queued behind the run ahead, says where in line, and starts by itself once the
target is free; a queued run deleted leaves without touching the data of the run ahead."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import kopf
import pytest
from fake_kube import FakeKube, unit_clock

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.act import orchestrate
from mongobench.benchmarkrun.act.orchestrate import DataOps
from mongobench.benchmarkrun.decide.queue import claim, ordinal, place_in_queue
from mongobench.config import OperatorConfig
from mongobench.handlers import benchmarkrun as handlers
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit

NS = "ns"
T0 = "2026-12-07T04:00:00Z"
T1 = "2026-12-07T04:00:01Z"
T2 = "2026-12-07T04:00:02Z"


def body(
    name: str,
    created: str = T0,
    *,
    phase: str | None = None,
    started: bool = False,
    deleting: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": NS, "name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = T2
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if started:
        status["startTime"] = created
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": meta,
        "spec": {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}], **spec},
        "status": status,
    }


def where(me: dict[str, Any], *others: dict[str, Any]) -> tuple[str, int, str] | None:
    place = place_in_queue(claim(me), [claim(me), *(claim(o) for o in others)])
    return None if place is None else (place.behind, place.place, place.reason)


RUNNING = {"phase": cond.RUN_RUNNING, "started": True}


# --- the pure decision ---------------------------------------------------------------------


def test_the_first_created_runs_and_each_later_run_waits_its_turn_in_line() -> None:
    first = body("first", T0, **RUNNING)
    second, third = body("second", T1), body("third", T2)
    assert where(first, second, third) is None  # started: the queue asks nothing of it
    assert where(second, first, third) == ("first", 1, cond.QUEUED_TARGET_BUSY)
    assert where(third, first, second) == ("second", 2, cond.QUEUED_TARGET_BUSY)
    # Before anything started (the cluster not Ready yet), the older one is first in line.
    assert where(body("early", T0), body("late", T1)) is None
    assert where(body("late", T1), body("early", T0)) == ("early", 2, cond.QUEUED_TARGET_BUSY)


def test_runs_created_in_the_same_second_are_served_by_name() -> None:
    assert where(body("a", T0), body("b", T0)) is None
    assert where(body("b", T0), body("a", T0)) == ("a", 2, cond.QUEUED_TARGET_BUSY)


def test_a_run_started_out_of_order_still_holds_the_target() -> None:
    """An older run that started before the queue existed (an operator upgrade) is waited for,
    whatever its place."""
    assert where(body("a", T0), body("b", T1, **RUNNING)) == ("b", 1, cond.QUEUED_TARGET_BUSY)


@pytest.mark.parametrize(
    "ahead",
    [
        body("first", T0, phase=cond.RUN_SUCCEEDED, started=True),
        body("first", T0, phase=cond.RUN_FAILED, started=True),
        body("first", T0, phase=cond.RUN_FAILED),  # refused before the start
        body("first", T0, deleting=True, **RUNNING),
        body("first", T0, deleting=True, phase=cond.RUN_QUEUED),
    ],
    ids=["succeeded", "failed", "refused", "deleted-running", "deleted-queued"],
)
def test_a_run_ahead_that_finished_failed_or_is_deleted_frees_the_target(
    ahead: dict[str, Any],
) -> None:
    assert where(body("second", T1), ahead) is None
    # The one behind the deleted run moves up, behind the next one that still holds.
    holder = body("zero", T0, **RUNNING)
    assert where(body("second", T1), ahead, holder) == ("zero", 1, cond.QUEUED_TARGET_BUSY)


def test_only_runs_on_the_same_target_queue_together() -> None:
    ahead = body("first", T0, **RUNNING)
    assert where(body("second", T1, clusterRef={"name": "other"}), ahead) is None
    uri = {"uriSecretRef": {"name": "db", "key": "uri"}, "clusterRef": None}
    external = body("ext1", T0, **RUNNING, **uri)
    assert where(body("ext2", T1, **uri), external) == ("ext1", 1, cond.QUEUED_TARGET_BUSY)
    # The same Secret's other key is another database.
    other_key = {"uriSecretRef": {"name": "db", "key": "uri2"}, "clusterRef": None}
    assert where(body("ext2", T1, **other_key), external) is None
    # A cluster and a Secret of the same name are not one target.
    assert where(body("ext2", T1, uriSecretRef={"name": "c"}, clusterRef=None), ahead) is None


def test_shared_runs_run_together_on_distinct_data_and_queue_on_the_same_data() -> None:
    shared = {"concurrency": "Shared"}
    first = body("first", T0, **RUNNING, **shared)
    other_collection = body("second", T1, collection="orders", **shared)
    other_database = body("second", T1, database="tenant2", **shared)
    assert where(other_collection, first) is None
    assert where(other_database, first) is None
    same = body("second", T1, **shared)
    found = place_in_queue(claim(same), [claim(first), claim(same)])
    assert found is not None and (found.behind, found.reason) == ("first", cond.QUEUED_SAME_DATA)
    assert "ycsb.usertable" in found.message
    # Exclusive on either side: no sharing, whatever the data.
    assert where(body("second", T1, collection="orders"), first) == (
        "first",
        1,
        cond.QUEUED_TARGET_BUSY,
    )
    exclusive_first = body("first", T0, **RUNNING)
    assert where(other_collection, exclusive_first) == ("first", 1, cond.QUEUED_TARGET_BUSY)


def test_an_exclusive_run_waiting_keeps_later_shared_runs_behind_it() -> None:
    """No starvation: shared runs created after a queued exclusive one do not overtake it."""
    shared = {"concurrency": "Shared"}
    running = body("a", T0, **RUNNING, **shared)
    waiting = body("b", T1)  # Exclusive: waits for a
    later = body("c", T2, collection="orders", **shared)
    assert where(waiting, running, later) == ("a", 1, cond.QUEUED_TARGET_BUSY)
    assert where(later, running, waiting) == ("b", 2, cond.QUEUED_TARGET_BUSY)


def test_places_read_as_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"
    ]  # fmt: skip


def test_the_message_names_the_run_ahead_its_place_and_the_target() -> None:
    found = place_in_queue(
        claim(body("third", T2)),
        [claim(body("first", T0, **RUNNING)), claim(body("second", T1))],
    )
    assert found is not None
    assert found.message.startswith("2nd in line behind run second on MongoCluster c")
    assert found.status() == {"place": 2, "behind": "second", "message": found.message}


# --- the controller ------------------------------------------------------------------------


class Data(DataOps):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def prepare(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        self.calls.append("prepare")
        return "prepared"

    def drop(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
        self.calls.append("drop")
        return "dropped"


def cluster() -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"namespace": NS, "name": "c"},
        "spec": {},
        "status": {"phase": cond.PHASE_READY},
    }


def advance(kube: FakeKube, name: str, data: Data) -> orchestrate.Outcome | None:
    return orchestrate.advance(kube, NS, name, OperatorConfig(), data, clock=unit_clock)


def stored(kube: FakeKube, name: str) -> dict[str, Any]:
    run = kube.get("BenchmarkRun", NS, name)
    assert run is not None
    return dict(run.get("status") or {})


def test_a_second_run_on_a_busy_cluster_waits_queued_then_starts_when_the_first_ends() -> None:
    kube = FakeKube(cluster(), body("first", T0), body("second", T1))
    data = Data()
    advance(kube, "first", data)
    assert data.calls == ["prepare"] and "startTime" in stored(kube, "first")
    before = len(kube.events)

    outcome = advance(kube, "second", data)
    assert outcome is not None and outcome.phase == cond.RUN_QUEUED
    now = stored(kube, "second")
    queued = get_condition(now["conditions"], cond.QUEUED)
    assert queued is not None and queued["status"] == cond.TRUE
    assert queued["reason"] == cond.QUEUED_TARGET_BUSY
    assert queued["message"].startswith("1st in line behind run first on MongoCluster c")
    assert now["queue"]["behind"] == "first" and "startTime" not in now
    assert data.calls == ["prepare"]  # its prepare did not touch the first run's data
    assert kube.reasons()[before:] == [cond.EVENT_QUEUED]
    advance(kube, "second", data)  # nothing changed: no second Event, no write
    assert kube.reasons()[before:] == [cond.EVENT_QUEUED]

    kube.objects[("BenchmarkRun", NS, "first")]["status"]["phase"] = cond.RUN_SUCCEEDED
    outcome = advance(kube, "second", data)
    assert outcome is not None and outcome.phase == cond.RUN_LOADING
    now = stored(kube, "second")
    assert "startTime" in now and "queue" not in now
    left = get_condition(now["conditions"], cond.QUEUED)
    assert left is not None and (left["status"], left["reason"]) == (
        cond.FALSE,
        cond.QUEUED_TARGET_FREE,
    )
    assert data.calls == ["prepare", "prepare"]


def test_a_run_that_never_waited_has_no_queued_condition() -> None:
    kube = FakeKube(cluster(), body("only", T0))
    advance(kube, "only", Data())
    assert get_condition(stored(kube, "only").get("conditions"), cond.QUEUED) is None


def test_a_queued_run_deleted_leaves_the_data_of_the_run_ahead_alone() -> None:
    """Its cleanup.data Always reaches only data it made: it never started, so none."""
    kube = FakeKube(cluster())
    data = Data()
    state = SimpleNamespace(
        kube=kube,
        run_kube=kube,
        cluster_data=data,
        forget=lambda *key: None,
        config=OperatorConfig(),
    )
    queued = body("second", T1, phase=cond.RUN_QUEUED, cleanup={"data": "Always"})
    ran = body("third", T1, phase=cond.RUN_FAILED, started=True, cleanup={"data": "Always"})
    original = handlers.state_of
    handlers.state_of = lambda memo: state  # type: ignore[assignment]
    try:
        for run in (queued, ran):
            handlers.delete(body=run, spec=run["spec"], status=run["status"], memo=kopf.Memo())
    finally:
        handlers.state_of = original
    assert data.calls == ["drop"]  # the started run's only


def test_two_runs_deciding_at_once_on_one_target_do_not_both_start() -> None:
    """b (created first, in the same second as a) is preparing, its startTime not written yet,
    when a (ahead by name) decides: the target's lock makes a read the queue after b's pass."""
    kube = FakeKube(cluster(), body("b", T0))
    locks = ResourceLocks()
    entered, release = threading.Event(), threading.Event()

    class Slow(Data):
        def prepare(self, spec: BenchmarkRunSpec, cluster: Any) -> str:
            entered.set()
            release.wait(10)
            return super().prepare(spec, cluster)

    def advance_locked(name: str, data: Data) -> None:
        orchestrate.advance(
            kube,
            NS,
            name,
            OperatorConfig(),
            data,
            target_lock=lambda target: locks.lock("target", NS, target),
            clock=unit_clock,
        )

    first = threading.Thread(target=advance_locked, args=("b", Slow()))
    first.start()
    assert entered.wait(10)
    kube.put(body("a", T0))
    second = threading.Thread(target=advance_locked, args=("a", Data()))
    second.start()
    second.join(2)  # without the lock, a's pass ends here, started beside b
    release.set()
    first.join(10)
    second.join(10)
    assert "startTime" in stored(kube, "b")
    assert stored(kube, "a")["phase"] == cond.RUN_QUEUED
    assert stored(kube, "a")["queue"]["behind"] == "b"


def test_an_experiment_cell_whose_runs_all_wait_is_pending_not_running() -> None:
    """A cell's runs are BenchmarkRuns and queue like any; until one starts, the cell has not."""
    from mongobench.experiment.act.reconcile import cell_phase

    assert cell_phase([cond.RUN_QUEUED, cond.PHASE_PENDING]) == cond.PHASE_PENDING
    assert cell_phase([cond.RUN_SUCCEEDED, cond.RUN_QUEUED]) == cond.RUN_RUNNING


def test_the_queue_is_read_only_once_the_cluster_is_ready_and_never_after_the_start() -> None:
    """A LIST of the namespace's runs per pass costs: none while the cluster is awaited (the
    run waits for it first) nor once the run has started (only runs not started queue)."""
    waiting = cluster()
    waiting["status"]["phase"] = cond.PHASE_PROVISIONING
    kube = FakeKube(waiting, body("only", T0))
    kube.refuse("list", "BenchmarkRun")
    data = Data()
    outcome = advance(kube, "only", data)
    assert outcome is not None and outcome.phase == cond.PHASE_PENDING
    kube.refusals.clear()
    kube.objects[("MongoCluster", NS, "c")]["status"]["phase"] = cond.PHASE_READY
    advance(kube, "only", data)
    assert "startTime" in stored(kube, "only")
    kube.refuse("list", "BenchmarkRun")
    outcome = advance(kube, "only", data)
    assert outcome is not None and outcome.phase not in (cond.RUN_FAILED, cond.RUN_QUEUED)
