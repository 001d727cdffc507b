"""Unit tier (local files only): how `mongobench compare`, `describe`, `list` and the experiment
view say what their verdicts rest on: the valid trials behind each cell, the multiple-comparison
adjustment, the interval's method. Runs are made by builders.py with the operator's validity
verdicts on their steps, exported to archive folders and read back by the real command."""

from __future__ import annotations

import io
import json

import pytest
from builders import benchmark_run
from rich.console import Console
from typer.testing import CliRunner

from mongobench_cli import experiment, export, render
from mongobench_cli.app import app
from mongobench_results import compare, validity

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A baseline with four valid trials a workload, and a candidate 20% faster whose second
    trial of A was disturbed by a noisy neighbour."""
    root = tmp_path_factory.mktemp("validity")
    base, new = root / "base", root / "new"
    export.export(
        [benchmark_run("base", repetitions=4, seed=1, invalid={})],
        str(base),
    )
    export.export(
        [
            benchmark_run(
                "new",
                repetitions=4,
                throughput=1200,
                seed=2,
                invalid={"a#2": ("NoisyNode",)},
            )
        ],
        str(new),
    )
    return str(base), str(new)


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def rows(doc: dict, workload: str) -> dict:  # type: ignore[type-arg]
    return next(
        r
        for r in doc["rows"]
        if r["workload"] == workload and r["metric"] == "throughput" and not r["baseline"]
    )


def test_the_table_has_a_validity_column_and_names_the_adjustment(
    archives: tuple[str, str],
) -> None:
    text = invoke("compare", *archives, "--metric", "throughput", "--wide")
    assert "Holm across the 2 comparisons of this table" in text.splitlines()[0]
    a_line = next(ln for ln in text.splitlines() if "3/4 valid (NoisyNode 1)" in ln)
    assert "better" in a_line
    assert "4/4 valid" in text
    assert "p(adj)" in text and "adjusted (Holm) across the 2 comparisons" in text
    assert "invalid trials are left out (--include-invalid keeps them)" in text
    assert "change interval: Fieller's for the relative change" in text
    plain = invoke("compare", *archives, "--metric", "throughput", "--adjust", "none", "--wide")
    assert "no adjustment for the 2 comparisons" in plain
    md = invoke("compare", *archives, "--metric", "throughput", "-o", "markdown")
    assert "| validity |" in md and "| 3/4 valid (NoisyNode 1) |" in md
    assert "Holm across the 2 comparisons" in md


def test_invalid_trials_stay_out_unless_asked(archives: tuple[str, str]) -> None:
    doc = json.loads(invoke("compare", *archives, "--metric", "throughput", "-o", "json"))
    a = rows(doc, "a")
    assert a["n"] == 3 and a["validity"]["reasons"] == {"NoisyNode": 1}
    assert doc["adjust"] == "holm" and doc["family"] == 2 and a["pAdjusted"] >= a["p"]
    kept = json.loads(
        invoke("compare", *archives, "--metric", "throughput", "--include-invalid", "-o", "json")
    )
    assert rows(kept, "a")["n"] == 4 and "includes 1 invalid trials" in rows(kept, "a")["flags"]
    assert kept["includeInvalid"] is True


def test_bootstrap_intervals_name_their_method(archives: tuple[str, str]) -> None:
    args = ("compare", *archives, "--metric", "throughput")
    booted = json.loads(invoke(*args, "--ci", "bootstrap", "-o", "json"))
    method = "percentile bootstrap (2000 resamples, seed 25)"
    assert booted["intervalMethod"] == method and rows(booted, "c")["intervalMethod"] == method
    parametric = json.loads(invoke(*args, "-o", "json"))
    assert rows(parametric, "c")["relativeCiLow"] != rows(booted, "c")["relativeCiLow"]
    assert f"change interval: {method}" in invoke(*args, "--ci", "bootstrap", "--wide")


def test_describe_and_list_show_the_steps_validity(archives: tuple[str, str]) -> None:
    described = invoke("describe", f"{archives[1]}")
    run_a2 = next(ln for ln in described.splitlines() if "run a #2" in ln and "NoisyNode" in ln)
    assert "invalid: NoisyNode" in run_a2
    # Under the reason, what to change (one advice table for status, describe, compare, report).
    flat = " ".join(described.split())
    assert "to change: " + validity.advice_line(validity.NOISY_NODE) in flat
    listed = json.loads(invoke("list", *archives, "-o", "json"))
    assert [r["validity"] for r in listed] == ["8/8 valid", "7/8 valid"]
    assert "7/8 valid" in invoke("list", *archives)


def test_the_experiment_view_names_the_adjustment_and_the_valid_trials() -> None:
    base = benchmark_run("base", workloads=("a",), repetitions=4, seed=1, invalid={})
    new = benchmark_run(
        "new", workloads=("a",), repetitions=4, seed=2, invalid={"a#1": ("ClientBound",)}
    )
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in (base, new)], metrics=("throughput",)
    )
    status = result.to_dict()
    out = io.StringIO()
    Console(file=out, width=200).print(
        experiment.comparison_table(status["rows"], result.baseline, status)
    )
    text = out.getvalue()
    assert "verdicts after Holm across 1 comparisons" in text
    assert "3/4" in text and "4/4" in text


def test_an_unbounded_change_interval_is_said_not_printed() -> None:
    """A baseline whose mean is not significantly different from 0 (three trials, SD as large
    as the mean): Fieller's interval of the change has no bounds, and the table says so."""
    base = benchmark_run("base", workloads=("a",), throughput=60, sd=60, seed=60, operations=40)
    new = benchmark_run("new", workloads=("a",), throughput=200, sd=10, seed=61, operations=40)
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in (base, new)], metrics=("throughput",)
    )
    out = io.StringIO()
    Console(file=out, width=250).print(render.compare_table(result))
    text = out.getvalue()
    new_line = next(ln for ln in text.splitlines() if " new " in ln)
    assert "% [unbounded]" in new_line
    assert "change interval unbounded: the baseline's mean is not significantly different" in text
    row = next(r for r in result.rows if not r.baseline).to_dict()
    assert row["relativeCiUnbounded"] is True and row["relativeCiLow"] is None
