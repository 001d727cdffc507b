"""The verdict both drivers give on failed operations (pure), so YCSB and Locust word it alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mongobench_results.document import OpResult


def error_ratio_problem(
    operations: Mapping[str, OpResult],
    *,
    errors: int,
    attempted: int,
    transactions: int,
    max_error_ratio: float,
    samples: Sequence[str],
) -> str | None:
    """The failed operations by return code when more failed than --max-error-ratio allows
    (all of them when nothing was attempted); None when within it."""
    if not errors or (attempted and errors / attempted <= max_error_ratio):
        return None
    codes = ", ".join(
        f"{name} " + "/".join(f"{c}={n}" for c, n in op.return_codes.items() if c != "OK")
        for name, op in sorted(operations.items())
        if op.errors
    )
    first = f"; first: {samples[0]}" if samples else ""
    return (
        f"{errors} of {transactions} operations failed ({codes}), more than "
        f"--max-error-ratio {max_error_ratio:g}{first}"
    )
