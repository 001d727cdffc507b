"""Unit tier: client documents reassembled from ConfigMap parts, merged, summarised."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongobench.bench.results import assemble, summarise

pytestmark = pytest.mark.unit


def parts(owner: str, text: str, n: int) -> list[dict[str, Any]]:
    size = -(-len(text) // n)
    return [
        {
            "metadata": {
                "name": f"{owner}-p{i}",
                "labels": {
                    "mongobench.io/result-of": owner,
                    "mongobench.io/part": str(i),
                    "mongobench.io/parts": str(n),
                },
            },
            "data": {"result.json": text[i * size : (i + 1) * size]},
        }
        for i in range(n)
    ]


def test_documents_larger_than_one_object_are_reassembled_in_order() -> None:
    doc = {"client": {"index": 0}, "blob": "x" * 5000}
    cms = parts("run-03-run-a-r1-c0", json.dumps(doc), 3)
    got = assemble(list(reversed(cms)), "run-03-run-a-r1", 1)
    assert got.documents == [doc] and got.missing == []


def test_a_client_with_a_missing_part_is_reported_missing_not_guessed() -> None:
    cms = parts("s-c0", json.dumps({"i": 0}), 1) + parts("s-c1", json.dumps({"i": 1}), 2)[:1]
    got = assemble(cms, "s", 2)
    assert got.documents == [{"i": 0}] and got.missing == [1]


def test_other_steps_are_ignored() -> None:
    cms = parts("s-c0", "{}", 1) + parts("s1-c0", '{"other": 1}', 1)
    assert assemble(cms, "s", 1).documents == [{}]


def test_summary_mean_sd_n_over_succeeded_repetitions() -> None:
    def step(workload: str, tp: float, phase: str = "Succeeded") -> dict[str, Any]:
        op = {"avg": tp / 10, "p99": tp / 5}
        return {"kind": "run", "workload": workload, "phase": phase,
                "result": {"throughput": tp, "operations": {"READ": op}}}  # fmt: skip

    steps = [
        step("a", 100),
        step("a", 110),
        step("a", 120),
        step("a", 999, "Failed"),
        step("b", 50),
    ]
    summary = {s["workload"]: s for s in summarise(steps)}
    assert summary["a"]["n"] == 3
    assert summary["a"]["throughput"] == {"mean": 110.0, "sd": 10.0, "n": 3}
    assert summary["b"]["throughput"]["sd"] is None  # one repetition has no SD
    assert summary["a"]["operations"]["READ"]["p99"]["mean"] == 22.0
