"""Unit tier: the properties the runner gives YCSB for a run bounded by time, and what the
document says of them (no JVM runs here; the protocol tier runs them against FerretDB)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mongobench_results.document import utc_now
from mongobench_runner import workload as wl
from mongobench_runner.__main__ import ycsb_document
from mongobench_runner.barrier import ClientGate, DirStore
from mongobench_runner.ycsb import (
    DURATION,
    UNBOUNDED_OPERATIONS,
    YcsbOutcome,
    YcsbProcess,
    duration_record,
)

pytestmark = pytest.mark.unit


def client_props(phase: str, client_index: int = 0, clients: int = 1, **overrides: str):
    """A client's properties as the runner builds them from workload A and `-p` overrides."""
    return wl.effective_properties(
        wl.load_workload("a"),
        {"recordcount": "1000", "threadcount": "4", **overrides},
        phase=phase,
        client_index=client_index,
        clients=clients,
    )


def given_to_ycsb(props: dict[str, str], phase: str, gate: ClientGate | None = None):
    return YcsbProcess(phase=phase, props=props, gate=gate).ycsb_properties(Path("/w"))


def test_a_duration_only_run_is_ended_by_the_binding_from_its_start():
    """What the operator sends for `run.durationSeconds: 30` alone."""
    props = client_props("run", operationcount="0", maxexecutiontime="30")
    ycsb = given_to_ycsb(props, "run")
    assert ycsb["workload"] == wl.PARTITIONED_WORKLOAD
    assert ycsb[DURATION] == "30"  # PhaseDeadline: 30 s from the operations' start
    # YCSB's own timer counts from thread start: only a backstop now, past the start-up.
    assert ycsb["maxexecutiontime"] == str(30 + 120)
    assert ycsb["operationcount"] == str(UNBOUNDED_OPERATIONS)  # 0 would start no thread


def test_behind_the_start_gate_the_backstop_also_outlasts_the_gates_timeout(tmp_path):
    """Two clients: the gate may hold a thread up to the barrier timeout plus its grace (the
    JVM's own gate timeout) before the first operation; the backstop never cuts into that."""
    props = client_props("run", 1, 2, operationcount="0", maxexecutiontime="30")
    gate = ClientGate(DirStore(tmp_path), index=1, clients=2, timeout_s=300)
    ycsb = given_to_ycsb(props, "run", gate)
    assert ycsb[DURATION] == "30"
    gate_timeout_s = int(ycsb["mongobench.startgate.timeoutms"]) / 1000
    assert gate_timeout_s == 300 + 120
    assert int(ycsb["maxexecutiontime"]) == 30 + 120 + gate_timeout_s


def test_a_count_bound_with_a_duration_keeps_both_bounds():
    props = client_props("run", 0, 2, operationcount="5000", maxexecutiontime="60")
    ycsb = given_to_ycsb(props, "run")
    assert (ycsb["operationcount"], ycsb[DURATION]) == ("2500", "60")


def test_count_bounded_runs_and_loads_are_unchanged():
    run = client_props("run", operationcount="5000")
    ycsb = given_to_ycsb(run, "run")
    assert DURATION not in ycsb and "maxexecutiontime" not in ycsb
    assert ycsb["operationcount"] == "5000"
    # A load is bounded by its records, whatever maxexecutiontime says (YCSB's timer as before).
    load = client_props("load", maxexecutiontime="30")
    ycsb = given_to_ycsb(load, "load")
    assert DURATION not in ycsb and ycsb["maxexecutiontime"] == "30"
    assert duration_record(load, "load") == {}


def test_a_workload_class_of_the_users_keeps_ycsbs_timer_and_the_document_says_so():
    props = client_props(
        "run", operationcount="0", maxexecutiontime="30", workload="org.example.MyWorkload"
    )
    ycsb = given_to_ycsb(props, "run")
    assert DURATION not in ycsb and ycsb["maxexecutiontime"] == "30"
    assert ycsb["operationcount"] == str(UNBOUNDED_OPERATIONS)
    assert duration_record(props, "run") == {}
    args = argparse.Namespace(
        workload="a", phase="run", client_index=0, clients=1, timeout=None, max_error_ratio=0.0
    )
    outcome = YcsbOutcome(
        returncode=0, timed_out=False, interrupted=False, export=None, export_error=None,
        operations={}, binding_errors=[], op_error_samples=[], stderr_tail=[], status_lines=0,
        cpu_user_s=0.0, cpu_system_s=0.0, wall_s=31.0,
    )  # fmt: skip
    now = utc_now()
    doc = ycsb_document(
        args, props=props, shown=props, outcome=outcome, start=now, end=now, labels={}
    )
    assert any(
        "org.example.MyWorkload keeps YCSB's own maxexecutiontime" in w
        for w in doc["sanity"]["warnings"]
    ), doc["sanity"]["warnings"]


def test_the_document_shows_the_binding_duration_beside_what_was_asked():
    props = client_props("run", operationcount="0", maxexecutiontime="30")
    assert duration_record(props, "run") == {DURATION: "30"}
    assert props["maxexecutiontime"] == "30"  # the document's properties: what was asked
