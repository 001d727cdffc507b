"""Unit tier: the operator's verdict on a trial, the re-runs it asks for, the run's tally."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.api.benchmarkrun import BenchmarkRunSpec, ValidityPolicy
from mongobench.benchmarkrun.decide import validity
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.benchmarkrun.decide.reruns import with_reruns
from mongobench_results import validity as v

pytestmark = pytest.mark.unit
POLICY = ValidityPolicy()


def merged(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "runtimeSeconds": 60.0,
        "throughput": 1000.0,
        "operationsTotal": 60000,
        "client": {"index": None, "count": 2, "threads": 4},
        "clientCpu": {"totalSeconds": 30.0},
        "properties": {},
        "operations": {"READ": {"count": 60000, "errors": 0}},
        "sanity": {"littlesLaw": {"ok": True, "ratio": 1.0}},
        "clients": [
            {"index": 0, "steadiness": {"steady": True, "judged": True, "points": 60}},
            {"index": 1, "steadiness": {"steady": True, "judged": True, "points": 60}},
        ],
    }
    doc.update(over)
    return doc


def reasons(verdict: v.Validity) -> list[str]:
    return verdict.reason_names


def test_a_clean_trial_is_valid() -> None:
    verdict = validity.judge_step(POLICY, merged(), None, limit_cores=1.0)
    assert verdict.valid and verdict.text() == "valid"


def test_a_client_at_its_cpu_limit_is_client_bound() -> None:
    # 2 clients x 60 s x 0.5 cores = 60 core-seconds allowed; 58 used.
    verdict = validity.judge_step(
        POLICY, merged(clientCpu={"totalSeconds": 58.0}), None, limit_cores=0.5
    )
    assert reasons(verdict) == [v.CLIENT_BOUND]
    assert verdict.reasons[0].value == pytest.approx(0.967, abs=1e-3)
    assert "limit" in verdict.reasons[0].message


def test_a_throttled_client_is_client_bound() -> None:
    cpu = {"totalSeconds": 1.0, "cfsPeriods": 1000, "cfsThrottledPeriods": 600}
    verdict = validity.judge_step(POLICY, merged(clientCpu=cpu), None, limit_cores=4.0)
    assert reasons(verdict) == [v.CLIENT_BOUND]
    assert "throttled" in verdict.reasons[0].message


def test_a_client_that_misses_its_target_rate_is_client_bound() -> None:
    doc = merged(properties={"target": "1000"}, throughput=1200.0)  # 2 clients x 1000 targeted
    assert reasons(validity.judge_step(POLICY, doc, None, limit_cores=None)) == [v.CLIENT_BOUND]


def test_without_a_limit_a_client_only_node_near_capacity_is_client_bound() -> None:
    profile = {"cpu": {"nodes": [{"name": "c1", "role": "client", "avg": 97.0, "steal": 0.0}]}}
    verdict = validity.judge_step(POLICY, merged(), profile, limit_cores=None)
    assert reasons(verdict) == [v.CLIENT_BOUND]
    shared = {"cpu": {"nodes": [{"name": "n1", "role": "both", "avg": 97.0, "steal": 0.0}]}}
    assert validity.judge_step(POLICY, merged(), shared, limit_cores=None).valid


def test_steal_makes_a_noisy_node() -> None:
    profile = {"cpu": {"nodes": [{"name": "db1", "role": "cluster", "avg": 50, "steal": 12.5}]}}
    verdict = validity.judge_step(POLICY, merged(), profile, limit_cores=1.0)
    assert reasons(verdict) == [v.NOISY_NODE]
    assert verdict.reasons[0].threshold == POLICY.steal_percent


def test_a_long_warm_up_or_a_shift_is_not_steady_and_a_short_warm_up_is_reported() -> None:
    short = merged()
    short["clients"][0]["steadiness"] = {"steady": False, "warmupSeconds": 3.0}
    verdict = validity.judge_step(POLICY, short, None, limit_cores=1.0)
    assert verdict.valid and verdict.warmup_seconds == 3.0  # 5% of 60 s: reported only
    long = merged()
    long["clients"][1]["steadiness"] = {"steady": False, "warmupSeconds": 12.0}
    assert reasons(validity.judge_step(POLICY, long, None, limit_cores=1.0)) == [v.NOT_STEADY]
    shifted = merged()
    shifted["clients"][0]["steadiness"] = {"steady": False, "shiftsSeconds": [41.0]}
    verdict = validity.judge_step(POLICY, shifted, None, limit_cores=1.0)
    assert reasons(verdict) == [v.NOT_STEADY] and "41 s" in verdict.reasons[0].message
    # With the runner's segment levels, the message says how large the shift was: a user weighs
    # a 3% wobble and a halving differently. A warm-up's levels come first and are skipped.
    sized = merged()
    sized["clients"][0]["steadiness"] = {
        "steady": False,
        "warmupSeconds": 2.0,
        "shiftsSeconds": [21.0],
        "levels": [90.0, 140.0, 162.0],
    }
    verdict = validity.judge_step(POLICY, sized, None, limit_cores=1.0)
    assert "level shift at 21 s (140 -> 162 ops/s, +16%)" in verdict.reasons[0].message


def test_a_change_of_level_within_max_level_shift_is_no_reason_and_a_larger_one_is() -> None:
    """The demo's trials on a 2-CPU machine: a -7% shift and a 10-s rise of +9% are this host's
    own wander (reported in the client's document, valid); -18% is not; the size is said."""

    def judged(steadiness: dict[str, Any], policy: ValidityPolicy = POLICY) -> v.Validity:
        doc = merged()
        doc["clients"][0]["steadiness"] = {"steady": False, **steadiness}
        return validity.judge_step(policy, doc, None, limit_cores=1.0)

    assert POLICY.max_level_shift == 0.1
    assert judged({"shiftsSeconds": [10.0], "levels": [290.8, 271.9]}).valid
    rise = {"warmupSeconds": 30.0, "levels": [121.6, 132.0]}  # half the 60-s window, +9%
    verdict = judged(rise)
    assert verdict.valid and verdict.warmup_seconds == 30.0  # reported all the same
    steep = judged({"warmupSeconds": 30.0, "levels": [90.0, 140.0]})
    assert reasons(steep) == [v.NOT_STEADY]
    assert "warm-up of 30 s (50% of the 60 s window, 90 -> 140 ops/s, +56%)" in (
        steep.reasons[0].message
    )
    drop = judged({"shiftsSeconds": [12.0, 40.0], "levels": [297.5, 290.0, 245.4]})
    assert reasons(drop) == [v.NOT_STEADY]
    assert drop.reasons[0].message.endswith("level shift at 40 s (290 -> 245 ops/s, -15%)")
    lenient = BenchmarkRunSpec.parse(
        {"workloads": [{"name": "a"}], "validity": {"maxLevelShift": 0.2}}
    ).validity
    assert judged({"shiftsSeconds": [40.0], "levels": [290.0, 245.4]}, lenient).valid


def test_errors_and_littles_law() -> None:
    doc = merged(
        operations={"READ": {"count": 9900, "errors": 100}},
        sanity={"littlesLaw": {"ok": False, "ratio": 0.4, "diagnosis": "0.4 of 1 busy"}},
    )
    assert reasons(validity.judge_step(POLICY, doc, None, limit_cores=1.0)) == [
        v.ERRORS,
        v.LITTLES_LAW,
    ]
    lenient = ValidityPolicy(error_rate=0.05, littles_law=False)
    assert validity.judge_step(lenient, doc, None, limit_cores=1.0).valid


def test_an_accepted_reason_is_judged_and_kept_but_the_trial_counts() -> None:
    """A shared-node platform (or the local plane): the starved or shared client is found
    ClientBound, said so, and the trial still counts; what is not accepted still does not."""
    starved = merged(clientCpu={"totalSeconds": 62.0}, properties={"target": "1000"})
    accepting = BenchmarkRunSpec.parse(
        {"workloads": [{"name": "a"}], "validity": {"accept": ["ClientBound"]}}
    ).validity
    assert accepting.accept == ("ClientBound",)
    verdict = validity.judge_step(accepting, starved, None, limit_cores=0.5)
    assert verdict.valid
    # Both findings (its limit and its target) kept, each marked accepted.
    assert [(r.reason, r.accepted) for r in verdict.reasons] == [(v.CLIENT_BOUND, True)] * 2
    assert verdict.text() == "valid (accepted: ClientBound)"
    # The default policy judges the same trial invalid: accept changes no threshold.
    strict = validity.judge_step(POLICY, starved, None, limit_cores=0.5)
    assert not strict.valid and reasons(strict) == [v.CLIENT_BOUND] and len(strict.reasons) == 2
    noisy = {"cpu": {"nodes": [{"name": "db1", "role": "cluster", "avg": 50, "steal": 12.5}]}}
    both = validity.judge_step(accepting, starved, noisy, limit_cores=0.5)
    assert not both.valid and both.text() == "invalid: NoisyNode (accepted: ClientBound)"
    steps = [
        {"kind": "run", "validity": verdict.to_dict(), "attempt": 1},
        {"kind": "run", "validity": verdict.to_dict(), "attempt": 1},
    ]
    assert validity.condition_message(steps) == (
        True,
        "all 2 trials valid; accepted: ClientBound",
    )


def test_accept_names_the_verdicts_reasons_and_nothing_else() -> None:
    from typing import get_args

    from mongobench.api import SpecError
    from mongobench.api.benchmarkrun import ValidityReason

    assert get_args(ValidityReason) == v.REASONS
    with pytest.raises(SpecError, match=r"accept\[0\]: 'Slow' is not one of ClientBound"):
        BenchmarkRunSpec.parse({"workloads": [{"name": "a"}], "validity": {"accept": ["Slow"]}})


def spec(rerun: int, between: str = "None") -> BenchmarkRunSpec:
    return BenchmarkRunSpec.parse(
        {
            "workloads": [{"name": "a"}],
            "repetitions": 2,
            "dataReset": {"between": between},
            "validity": {"rerunInvalid": rerun},
        }
    )


def entry(index: int, rep: int, valid: bool, attempt: int = 1) -> dict[str, Any]:
    return {
        "index": index,
        "kind": "run",
        "workload": "a",
        "repetition": rep,
        "attempt": attempt,
        "phase": "Succeeded",
        "validity": {"valid": valid, "reasons": [], "attempt": attempt},
    }


def labels(steps: list[Any]) -> list[str]:
    return [s.label for s in steps]


def test_an_invalid_trial_is_re_run_right_after_it_up_to_the_policy() -> None:
    s = spec(rerun=2)
    base = make_plan(s)
    assert labels(base) == ["prepare", "load", "run a #1", "run a #2", "cleanup"]
    status = {"steps": [entry(2, 1, valid=False)]}
    plan = with_reruns(s, base, status)
    assert labels(plan) == [
        "prepare",
        "load",
        "run a #1",
        "run a #1 (attempt 2)",
        "run a #2",
        "cleanup",
    ]
    assert [p.index for p in plan] == list(range(6))
    assert plan[3].job_name("r") != plan[2].job_name("r")
    status["steps"].append(entry(3, 1, valid=False, attempt=2))
    assert labels(with_reruns(s, base, status))[3:6] == [
        "run a #1 (attempt 2)",
        "run a #1 (attempt 3)",
        "run a #2",
    ]
    status["steps"].append(entry(4, 1, valid=False, attempt=3))
    assert len(with_reruns(s, base, status)) == 7  # two re-runs at most
    assert with_reruns(spec(rerun=0), base, status) == base


def test_a_valid_trial_or_a_reload_policy() -> None:
    s = spec(rerun=1)
    base = make_plan(s)
    assert with_reruns(s, base, {"steps": [entry(2, 1, valid=True)]}) == base
    r = spec(rerun=1, between="Repetitions")
    base = make_plan(r)
    invalid = next(p.index for p in base if p.label == "run a #1")
    plan = with_reruns(r, base, {"steps": [entry(invalid, 1, valid=False)]})
    assert labels(plan)[invalid + 1 : invalid + 3] == ["reload", "run a #1 (attempt 2)"]


def test_the_run_counts_its_trials_and_replaced_attempts_count_nowhere() -> None:
    steps = [entry(2, 1, False), entry(3, 1, True, attempt=2), entry(4, 2, False)]
    assert validity.condition_message(steps) == (False, "2 of 3 trials invalid; 1 re-run")
    assert validity.superseded(steps) == {2}
    assert validity.condition_message([entry(2, 1, True)]) == (True, "all 1 trials valid")


def test_the_condition_says_what_to_change_per_reason() -> None:
    """Unit tier: TrialsValid's message carries each reason's advice (the results library's
    table), so `kubectl describe` tells the user what to change, not only what happened."""
    bound = v.judge([v.Reason(v.CLIENT_BOUND, "client CPU 97% of its limit", 0.97, 0.9)])
    steps = [entry(2, 1, False), entry(3, 2, False), entry(4, 3, True)]
    steps[0]["validity"] = steps[1]["validity"] = bound.to_dict()
    ok, message = validity.condition_message(steps)
    assert not ok
    assert message == ("2 of 3 trials invalid (ClientBound 2: " + v.advice(v.CLIENT_BOUND) + ")")
    assert "clients.resources.limits.cpu" in message


def test_neighbours_are_the_containers_that_are_not_the_benchmarks() -> None:
    from mongobench.benchmarkrun.telemetry import neighbours
    from mongobench.benchmarkrun.telemetry.cpu import ContainerSeries

    def series(cores: float) -> list[tuple[float, float]]:
        return [(0, cores), (1, cores)]

    result = ContainerSeries(
        cpu={
            ("db1", "bench", "mc-rs0-0", "mongod"): series(1.5),  # the database: its own
            ("db1", "bench", "run-02-run-a-r1-0-xyz", "client"): series(0.5),  # a client
            ("db1", "other", "hog", "burn"): series(0.6),
            ("db1", "other", "hog", "sidecar"): series(0.4),  # a pod's containers add up
            ("c1", "bench", "run-02-run-a-r1-1-abc", "client"): series(0.9),
            ("elsewhere", "other", "far", "x"): series(2.0),  # not on the step's nodes
        },
        memory=None,
    )
    own = [
        ("bench", "mc-rs0-0"),
        ("bench", "run-02-run-a-r1-0-xyz"),
        ("bench", "run-02-run-a-r1-1-abc"),
    ]
    found = neighbours.summarise(result, ["db1", "c1"], own, {"db1": 2.0, "c1": 4.0})
    assert found["cadvisor"] is True
    assert found["nodes"] == [
        {"node": "c1", "cores": 0.0, "share": 0.0, "pods": []},
        {"node": "db1", "cores": 1.0, "share": 0.5, "pods": ["other/hog"]},
    ]
    verdict = validity.judge_step(
        POLICY, merged(), {"cpu": None, "neighbours": found}, limit_cores=1.0
    )
    assert reasons(verdict) == [v.NOISY_NODE]
    assert "other/hog" in verdict.reasons[0].message
    assert neighbours.summarise(ContainerSeries(None, None), ["db1"], own, {})["cadvisor"] is False


@pytest.mark.parametrize(
    ("validity", "message"),
    [
        ({"clientCpuFraction": 1.5}, "clientCpuFraction: 1.5 is not a share"),
        ({"maxWarmupFraction": 1.0}, "maxWarmupFraction must be below 1"),
        ({"maxLevelShift": 1.5}, "maxLevelShift: 1.5 is not a share"),
        ({"neighbourCpuFraction": 0.95}, "neighbourCpuFraction must be below clientCpuFraction"),
        ({"rerunInvalid": 9}, "rerunInvalid: 9 is not 0..5"),
        ({"stealPercent": -1}, "stealPercent: -1.0 is not a percent"),
    ],
)
def test_a_policy_the_crd_would_refuse_is_an_invalid_spec(
    validity: dict[str, Any], message: str
) -> None:
    from mongobench.api import SpecError

    with pytest.raises(SpecError, match=message):
        BenchmarkRunSpec.parse({"workloads": [{"name": "a"}], "validity": validity})
