"""Unit tier: the verdict on failed operations that YCSB and Locust documents both carry."""

from __future__ import annotations

import pytest

from mongobench_results import hdr
from mongobench_results.document import OpResult
from mongobench_runner.failures import error_ratio_problem

pytestmark = pytest.mark.unit


def _ops(**codes: dict[str, int]) -> dict[str, OpResult]:
    return {name: OpResult(hdr.new_histogram(), dict(c)) for name, c in codes.items()}


def test_failures_within_the_allowed_ratio_are_no_problem() -> None:
    ops = _ops(READ={"OK": 95, "ERROR": 5})
    assert (
        error_ratio_problem(
            ops, errors=5, attempted=100, transactions=95, max_error_ratio=0.05, samples=[]
        )
        is None
    )
    assert (
        error_ratio_problem(
            ops, errors=0, attempted=0, transactions=0, max_error_ratio=0.0, samples=[]
        )
        is None
    )


def test_too_many_failures_are_named_by_operation_and_code_with_the_first_sample() -> None:
    ops = _ops(
        UPDATE={"OK": 10, "ERROR": 3, "NOT_FOUND": 1}, READ={"OK": 90}, INSERT={"TIMEOUT": 2}
    )
    problem = error_ratio_problem(
        ops,
        errors=6,
        attempted=100,
        transactions=100,
        max_error_ratio=0.01,
        samples=["E11000 duplicate key", "later"],
    )
    assert problem == (
        "6 of 100 operations failed (INSERT TIMEOUT=2, UPDATE ERROR=3/NOT_FOUND=1), "
        "more than --max-error-ratio 0.01; first: E11000 duplicate key"
    )


def test_failures_with_nothing_attempted_are_a_problem_whatever_the_ratio() -> None:
    problem = error_ratio_problem(
        _ops(READ={"ERROR": 4}),
        errors=4,
        attempted=0,
        transactions=0,
        max_error_ratio=1.0,
        samples=[],
    )
    assert problem == "4 of 0 operations failed (READ ERROR=4), more than --max-error-ratio 1"
