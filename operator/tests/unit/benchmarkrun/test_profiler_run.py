"""Unit tier: spec.profiler and the disk use per collection through the BenchmarkRun controller's
I/O half (orchestrate) against an in-memory Kubernetes API and a recording DataOps: when the
profiler goes on and off, what status keeps of each step, and a server that refuses it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest
from fake_kube import FakeKube
from test_orchestrate import (
    NS,
    Data,
    advance,
    benchmarkrun,
    condition,
    finish_job,
    mongocluster,
    report,
    status,
)

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.act import orchestrate
from mongobench.benchmarkrun.decide import profiling
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.clock import parse_rfc3339
from mongobench.k8s import conditions as cond
from mongobench.mongo.errors import PermanentMongoError
from mongobench.mongo.model import SlowOperation

pytestmark = pytest.mark.unit

SLOW = SlowOperation("query", "ycsb.usertable", "find usertable {filter: {_id: ?}}", 250)
DISK = {"collections": [{"collection": "ycsb.usertable", "documents": 3, "dataBytes": 3300}]}


class Profiled(Data):
    """Records the profiler's levels and the windows read; `refuses`: profile is refused."""

    def __init__(self, refuses: bool = False) -> None:
        super().__init__()
        self.refuses = refuses
        self.windows: list[tuple[datetime, datetime | None]] = []

    def set_profiler(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        level: int,
        slow_ms: int | Mapping[str, int] | None,
    ) -> dict[str, int]:
        self.calls.append(f"profile {level} {slow_ms}")
        if self.refuses:
            raise PermanentMongoError("profile", "m-0", "no such command: 'profile'", code=59)
        return {"rs0": 100}

    def slow_operations(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        since: datetime,
        until: datetime | None,
        top: int,
    ) -> tuple[SlowOperation, ...]:
        self.calls.append(f"slow top {top}")
        self.windows.append((since, until))
        return (SLOW,)

    def disk_use(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> Any:
        self.calls.append("disk")
        return DISK


def run_through(kube: FakeKube, data: Profiled) -> None:
    advance(kube, data)  # prepared, the load's Job applied
    for index, phase in ((1, "load"), (2, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        advance(kube, data)  # collected, then the next Job or the cleanup


def test_the_profiler_is_on_for_each_measured_step_only_and_its_slowest_are_kept() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, profiler={"slowMs": 50, "top": 5}))
    data = Profiled()
    run_through(kube, data)
    # Not during the load: level 1 before the run step, its window read, level 0 with the
    # slowms found; disk use after the load and after the run step.
    assert data.calls == [
        "prepare",
        "disk",
        "profile 1 50",
        "slow top 5",
        "profile 0 {'rs0': 100}",
        "disk",
    ]
    now = status(kube)
    load, run = now["steps"][1:3]
    assert "slowOperations" not in load and load["diskUse"] == DISK
    assert run["slowOperations"] == {"slowMs": 50, "operations": [SLOW.as_status()]}
    assert run["diskUse"] == DISK
    # The step's entries: from level 1 (to the millisecond: the step's startTime is whole
    # seconds and may reach into the step before) to the read, level 0 right after it.
    since, until = data.windows[0]
    assert (since, until) == (parse_rfc3339(now["profiler"]["since"]), None)
    assert {k: v for k, v in now["profiler"].items() if k != "since"} == {
        "state": "Off",
        "slowMs": 50,
        "restoreSlowMs": {"rs0": 100},
    }
    assert condition(kube, cond.PROFILED) == (cond.TRUE, cond.PROFILER_CAPTURED)
    assert now["phase"] == cond.RUN_SUCCEEDED


def test_a_server_that_refuses_the_profiler_is_said_once_and_the_run_goes_on() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=2, profiler={"slowMs": 0}))
    data = Profiled(refuses=True)
    advance(kube, data)
    for index, phase in ((1, "load"), (2, "run"), (3, "run")):
        report(kube, index, phase)
        finish_job(kube, index)
        advance(kube, data)
    assert data.calls.count("profile 1 0") == 1  # not asked again for the second run step
    assert "slow top 10" not in data.calls
    now = status(kube)
    assert now["phase"] == cond.RUN_SUCCEEDED
    assert now["profiler"]["state"] == profiling.UNAVAILABLE
    assert condition(kube, cond.PROFILED) == (cond.FALSE, cond.PROFILER_UNAVAILABLE)
    assert kube.reasons().count(cond.PROFILER_UNAVAILABLE) == 1
    assert all("slowOperations" not in s for s in now["steps"])


def test_an_external_database_cannot_be_profiled_and_has_no_disk_use() -> None:
    run = benchmarkrun(repetitions=1, profiler={"slowMs": 10})
    run["spec"] = {k: v for k, v in run["spec"].items() if k != "clusterRef"}
    run["spec"]["uriSecretRef"] = {"name": "uri", "key": "uri"}
    kube = FakeKube({"kind": "Secret", "metadata": {"namespace": NS, "name": "uri"}}, run)
    data = Profiled()
    run_through(kube, data)
    assert [c for c in data.calls if c.startswith("profile")] == []
    _, why = condition(kube, cond.PROFILED)
    assert why == cond.PROFILER_UNAVAILABLE
    assert "administrator credentials" in status(kube)["profiler"]["message"]


def test_a_run_failed_while_profiled_sets_level_0_and_a_deleted_one_too() -> None:
    kube = FakeKube(mongocluster(), benchmarkrun(repetitions=1, profiler={"slowMs": 50}))
    data = Profiled()
    advance(kube, data)
    report(kube, 1, "load")
    finish_job(kube, 1)
    advance(kube, data)  # the run step's Job applied, the profiler at level 1
    assert status(kube)["profiler"]["state"] == "On"
    spec = BenchmarkRunSpec.parse(kube.objects[("BenchmarkRun", NS, "r")]["spec"])
    # Deleted now: the handler's reset puts level 0 back with the slowms found.
    orchestrate.reset_profiler(kube, data, spec, NS, status(kube))
    assert data.calls[-1] == "profile 0 {'rs0': 100}"
    finish_job(kube, 2, "Failed", "BackoffLimitExceeded")
    advance(kube, data)
    assert status(kube)["phase"] == cond.RUN_FAILED
    assert data.calls[-1] == "profile 0 {'rs0': 100}" and status(kube)["profiler"]["state"] == "Off"


def test_the_slow_operations_kept_per_step_share_the_runs_budget() -> None:
    small = make_plan(BenchmarkRunSpec.parse(benchmarkrun(repetitions=3)["spec"]))
    many = [s for s in small if s.kind == "run"] * 100  # 300 measured steps
    assert profiling.kept_per_step(10, small) == 10
    assert profiling.kept_per_step(100, small) == 100
    assert profiling.kept_per_step(10, many) == profiling.RUN_BUDGET // 300 == 2
    assert profiling.kept_per_step(10, many * 10) == 1  # never none
    ops = [SlowOperation("query", "ycsb.usertable", "find usertable", m) for m in (9, 8, 7)]
    assert [o["millis"] for o in profiling.slow_operations_status(ops, 5, 2)["operations"]] == [
        9,
        8,
    ]


def test_the_slowms_found_first_is_the_one_put_back() -> None:
    first = profiling.switched_on({}, 50, {"rs0": 100}, "2026-12-07T10:00:00.250000Z")
    # a level 0 that failed left 50 on the server: the next step must not restore 50
    again = profiling.switched_on({"profiler": first}, 50, {"rs0": 50}, "2026-12-07T10:01:00Z")
    assert again["restoreSlowMs"] == {"rs0": 100} and again["since"] == "2026-12-07T10:01:00Z"
    assert profiling.window_start(again, "2026-12-07T10:00:59Z") == "2026-12-07T10:01:00Z"
    assert profiling.window_start({}, "2026-12-07T10:00:59Z") == "2026-12-07T10:00:59Z"
