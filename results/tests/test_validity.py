"""Unit tier: a trial's validity as the operator writes it and readers see it."""

from __future__ import annotations

import pytest

from mongobench_results import records, validity

pytestmark = pytest.mark.unit


def test_round_trip_keeps_reasons_warmup_and_attempt() -> None:
    verdict = validity.judge(
        [validity.Reason(validity.CLIENT_BOUND, "client CPU 97% of its limit", 0.97, 0.9)],
        warmup_seconds=4.0,
        attempt=2,
    )
    again = validity.parse(verdict.to_dict())
    assert again == verdict
    assert not again.valid
    assert again.text() == "invalid: ClientBound"


def test_no_reasons_is_valid() -> None:
    assert validity.judge([]).text() == "valid"


def test_a_step_without_a_verdict_counts_as_valid_but_unjudged() -> None:
    run = {"status": {"steps": [{"index": 0, "kind": "run", "phase": "Succeeded", "result": {}}]}}
    (step,) = records.steps(run)
    assert step.validity.valid
    assert step.validity.text() == "unjudged"


def test_steps_carry_the_operators_verdict() -> None:
    run = {
        "status": {
            "steps": [
                {
                    "index": 0,
                    "kind": "run",
                    "phase": "Succeeded",
                    "validity": {
                        "valid": False,
                        "reasons": [{"reason": "NoisyNode", "message": "steal 12%"}],
                    },
                }
            ]
        }
    }
    (step,) = records.steps(run)
    assert step.validity.reason_names == [validity.NOISY_NODE]


def test_an_accepted_reason_is_kept_and_shown_but_the_trial_is_valid() -> None:
    found = [
        validity.Reason(validity.CLIENT_BOUND, "client CPU 104% of its limit", 1.04, 0.9),
        validity.Reason(validity.NOISY_NODE, "node n1: CPU steal 12.0%", 12.0, 5.0),
    ]
    lenient = validity.judge(found, accept=[validity.CLIENT_BOUND, validity.NOISY_NODE])
    assert lenient.valid
    assert [r.accepted for r in lenient.reasons] == [True, True]
    assert lenient.reason_names == []
    assert lenient.text() == "valid (accepted: ClientBound, NoisyNode)"
    written = lenient.to_dict()
    assert written["valid"] is True
    assert [r.get("accepted") for r in written["reasons"]] == [True, True]
    assert validity.parse(written) == lenient
    # A reason not accepted still makes the trial invalid; the accepted one is said beside it.
    partly = validity.judge(found, accept=[validity.CLIENT_BOUND])
    assert not partly.valid
    assert partly.reason_names == [validity.NOISY_NODE]
    assert partly.text() == "invalid: NoisyNode (accepted: ClientBound)"
    assert "accepted" not in partly.to_dict()["reasons"][1]
    # Without a stored `valid`, what is stored decides: accepted reasons alone leave it valid.
    assert validity.parse({"reasons": written["reasons"]}).valid
    assert not validity.parse({"reasons": [{"reason": "Errors", "message": "1%"}]}).valid


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        (validity.CLIENT_BOUND, ("clients.resources.limits.cpu", "clients.parallelism")),
        (validity.NOT_STEADY, ("run.durationSeconds", "warmup")),
        (validity.NOISY_NODE, ("node", "neighbour")),
        (validity.ERRORS, ("failed", "run.targetOpsPerSecond")),
        (validity.LITTLES_LAW, ("run.threads",)),
    ],
)
def test_every_reason_says_what_to_change(reason: str, words: tuple[str, ...]) -> None:
    """Unit tier: the one advice table status, describe, compare and the report read."""
    tip = validity.advice(reason)
    assert all(w in tip for w in words), tip
    assert validity.Reason(reason, "seen").advice == tip
    assert validity.advice_line(reason, 2) == f"{reason} 2: {tip}"


def test_every_reason_has_advice_and_an_unknown_one_none() -> None:
    assert set(validity.ADVICE) == set(validity.REASONS)
    assert validity.advice("Cosmic") == "" and validity.advice_line("Cosmic") == "Cosmic"
