"""Unit tier: logs never carry credentials; handler metrics count outcomes."""

import logging

import kopf
import pytest

from mongobench.config import OperatorConfig
from mongobench.observability.logs import RedactingFilter, redact
from mongobench.observability.metrics import RECONCILES, SKIPPED, Skipped, instrumented

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connecting to mongodb://admin:s3cr3t@rs0-0.rs0-hl:27017/?replicaSet=rs0", "s3cr3t"),
        ("mongodb+srv://u:p%40ss@cluster.example/db", "p%40ss"),
        ("createUser failed: {'user': 'x', 'pwd': 'hunter2'}", "hunter2"),
        ('{"password": "topsecret", "user": "bench"}', "topsecret"),
        ("keyfile=AAAABBBBCCCC", "AAAABBBBCCCC"),
    ],
)
def test_redact_removes_passwords(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert "***" in cleaned


def test_redacting_filter_rewrites_formatted_message() -> None:
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "uri=%s", ("mongodb://a:b1@h",), None
    )
    RedactingFilter().filter(record)
    assert record.getMessage() == "uri=mongodb://a:***@h"


def test_instrumented_counts_ok_retry_and_error() -> None:
    calls = iter([None, kopf.TemporaryError("later"), RuntimeError("boom")])

    @instrumented("Test", "h")
    def handler() -> None:
        outcome = next(calls)
        if outcome is not None:
            raise outcome

    def value(outcome: str) -> float:
        return RECONCILES.labels("Test", "h", outcome)._value.get()  # type: ignore[no-any-return]

    before = {o: value(o) for o in ("ok", "retry", "error")}
    handler()
    with pytest.raises(kopf.TemporaryError):
        handler()
    with pytest.raises(RuntimeError):
        handler()
    assert {o: value(o) - before[o] for o in before} == {"ok": 1, "retry": 1, "error": 1}


def test_instrumented_counts_a_skip_and_hands_kopf_none() -> None:
    """A handler's SKIPPED counts as outcome skipped and never reaches kopf, which would write
    a non-None result into the handled object's status (an on.event handler's too: a PATCH of
    the child for each event dropped)."""
    from kopf._cogs.structs.ids import HandlerId
    from kopf._cogs.structs.patches import Patch
    from kopf._core.actions.execution import Outcome, Result
    from kopf._core.actions.progression import deliver_results

    @instrumented("Test", "skipping")
    def handler(skip: bool) -> Skipped | str:
        return SKIPPED if skip else "done"

    def value(outcome: str) -> float:
        return RECONCILES.labels("Test", "skipping", outcome)._value.get()  # type: ignore[no-any-return]

    def delivered(result: object) -> Patch:
        patch = Patch()
        outcome = Outcome(final=True, result=Result(result) if result is not None else None)
        deliver_results(outcomes={HandlerId("h"): outcome}, patch=patch)
        return patch

    before = {o: value(o) for o in ("ok", "skipped")}
    assert handler(True) is None
    assert handler(False) == "done"
    assert {o: value(o) - before[o] for o in before} == {"ok": 1, "skipped": 1}
    assert delivered(handler(False)) == {"status": {"h": "done"}}  # what kopf does with results
    assert delivered(handler(True)) == {}


def test_config_from_env_and_clear_error() -> None:
    config = OperatorConfig.from_env(
        {
            "MONGOBENCH_NAMESPACES": "a, b",
            "MONGOBENCH_RETRY_BACKOFF": "0.5",
            "MONGOBENCH_EXPERIMENT_TICK_SECONDS": "0.5",
        }
    )
    assert config.namespaces == ("a", "b")
    assert config.retry_backoff == 0.5
    assert config.experiment_tick_seconds == 0.5
    assert OperatorConfig.from_env({}).experiment_tick_seconds == 2.0
    with pytest.raises(SystemExit, match="invalid MONGOBENCH_"):
        OperatorConfig.from_env({"MONGOBENCH_METRICS_PORT": "eighty"})


def test_distinct_hosts_get_distinct_peering_priorities(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    priorities = set()
    for host in ("mongobench-operator-7d9f-abc", "mongobench-operator-7d9f-xyz"):
        monkeypatch.setattr(socket, "gethostname", lambda h=host: h)
        priorities.add(OperatorConfig().priority)
    assert len(priorities) == 2


def test_run_phase_has_one_series_per_run_and_goes_with_the_run() -> None:
    """The MongoBenchRunFailed alert reads mongobench_run_phase{phase="Failed"} == 1."""
    from mongobench.observability.metrics import REGISTRY, export_run, forget_run, set_run_phase

    def phases() -> dict[str, float]:
        return {
            s.labels["phase"]: s.value
            for m in REGISTRY.collect()
            if m.name == "mongobench_run_phase"
            for s in m.samples
            if s.labels["run"] == "r1"
        }

    set_run_phase("bench", "r1", "Loading")
    set_run_phase("bench", "r1", "Running")
    assert phases() == {"Running": 1.0}
    run = {"metadata": {"namespace": "bench", "name": "r1"}, "status": {"phase": "Failed"}}
    export_run(run)  # also after an operator restart, from the stored status
    assert phases() == {"Failed": 1.0}
    forget_run(run)
    assert phases() == {}


def test_running_steps_are_series_while_they_run() -> None:
    """The benchmark-run dashboard annotates mongobench_run_step_running's windows as steps."""
    from mongobench.observability.metrics import REGISTRY, forget_run, set_running_steps

    def running() -> set[tuple[str, str]]:
        return {
            (s.labels["step"], s.labels["workload"])
            for m in REGISTRY.collect()
            if m.name == "mongobench_run_step_running"
            for s in m.samples
            if s.labels["run"] == "r2" and s.value == 1
        }

    steps = [
        {"index": 0, "label": "prepare", "phase": "Succeeded"},
        {"index": 1, "label": "load", "workload": "a", "phase": "Running"},
        {"index": 2, "label": "run a #1", "workload": "a", "phase": "Pending"},
    ]
    set_running_steps("bench", "r2", steps)
    assert running() == {("load", "a")}
    steps[1]["phase"], steps[2]["phase"] = "Succeeded", "Running"
    set_running_steps("bench", "r2", steps)
    assert running() == {("run a #1", "a")}
    forget_run({"metadata": {"namespace": "bench", "name": "r2"}})
    assert running() == set()
