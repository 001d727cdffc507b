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
