"""Unit tier: the profiler's slow operations and the disk use per collection where a user reads
them: `mongobench describe` (its "Slow operations" and "Disk use per collection" sections within
100 columns), the HTML report's tables and the export's per-step columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run
from rich.console import Console

from mongobench_cli import export, render, report
from mongobench_cli.sources import LoadedRun
from mongobench_results import compare, records

pytestmark = pytest.mark.unit

PLAN = "IXSCAN { field0: 1, field1: 1, field2: 1 }"


def _op(
    millis: int, shard: str, shape: str = "find usertable {filter: {_id: ?}, limit: ?}"
) -> dict[str, Any]:
    return {
        "op": "query",
        "ns": "ycsb.usertable",
        "shape": shape,
        "millis": millis,
        "planSummary": PLAN,
        "docsExamined": 1200,
        "keysExamined": 1200,
        "nreturned": 1,
        "shard": shard,
        "queryHash": "1A2B3C4D",
    }


def _disk(documents: int) -> dict[str, Any]:
    per = [
        {"shard": f"c-shard{i}", "documents": documents // 2, "dataBytes": documents * 550,
         "storageBytes": documents * 180, "indexBytes": documents * 20}
        for i in range(2)
    ]  # fmt: skip
    return {
        "collections": [
            {"collection": "ycsb.usertable", "documents": documents, "dataBytes": documents * 1100,
             "storageBytes": documents * 360, "indexBytes": documents * 40, "shards": per}
        ]
    }  # fmt: skip


def profiled_run(name: str = "profiled") -> LoadedRun:
    """A finished sharded run whose measured steps were profiled (spec.profiler)."""
    loaded = benchmark_run(name, workloads=("a",), repetitions=2)
    long_shape = (
        "update usertable {updates: [{q: {_id: ?}, u: {$set: {"
        + ", ".join(f"field{i}: ?" for i in range(10))
        + "}}}]}"
    )
    for step in loaded.run["status"]["steps"]:
        if step["kind"] == "load":
            step["diskUse"] = _disk(1000)
        if step["kind"] == "run":
            ops = [_op(900 - 10 * i, f"c-shard{i % 2}") for i in range(7)]
            ops.append(_op(120, "c-shard1", long_shape))
            step["slowOperations"] = {"slowMs": 100, "operations": ops}
            step["diskUse"] = _disk(1010)
    return loaded


def _describe(loaded: LoadedRun) -> list[str]:
    console = Console(width=100, record=True)
    console.print(render.describe(loaded))
    return console.export_text().splitlines()


def test_describe_shows_slow_operations_and_disk_use_within_100_columns() -> None:
    loaded = profiled_run()
    lines = _describe(loaded)
    assert max(len(line) for line in lines) <= 100
    text = "\n".join(lines)
    assert render.SLOW_OPERATIONS_SECTION in text and render.DISK_USE_SECTION in text
    rows = [" ".join(line.split()) for line in lines]
    first = next(r for r in rows if r.startswith("run a #1 900 query c-shard0"))
    assert "1200/1200/1" in first
    assert "{_id: ?}, limit: ?}" in text  # the shape wraps, never cut
    # At most 5 operations a step in describe; the rest are said, not lost.
    assert sum(1 for r in rows if " query c-shard" in r) == 2 * render.DESCRIBE_SLOW_PER_STEP
    assert f"6 more (at most {render.DESCRIBE_SLOW_PER_STEP} a step here): -o yaml" in text
    # Disk use: after the load and after the last step, the total then each shard.
    load = next(s.label for s in records.steps(loaded.run) if s.kind == "load")
    assert f"{load} ycsb.usertable total 1000 1.0 MiB 352 KiB 39 KiB" in rows
    assert "c-shard0 500 537 KiB 176 KiB 20 KiB" in rows
    assert "run a #2 ycsb.usertable total 1010 1.1 MiB 355 KiB 39 KiB" in rows
    assert not any(r.startswith("run a #1 ycsb.usertable") for r in rows)


def test_describe_of_a_run_without_them_has_neither_section() -> None:
    text = "\n".join(_describe(benchmark_run("plain", workloads=("a",), repetitions=1)))
    assert render.SLOW_OPERATIONS_SECTION not in text
    assert render.DISK_USE_SECTION not in text


def test_a_profiled_run_with_no_slow_operation_says_so() -> None:
    loaded = benchmark_run("quick", workloads=("a",), repetitions=1)
    loaded.run["spec"]["profiler"] = {"slowMs": 100, "top": 10}
    loaded.run["status"].setdefault("conditions", []).append(
        {"type": "Profiled", "status": "True", "reason": "Captured"}
    )
    assert "Slow operations: none took 100 ms or more" in "\n".join(_describe(loaded))


def test_a_replica_sets_slow_operations_have_no_shard_column() -> None:
    loaded = profiled_run()
    for step in loaded.run["status"]["steps"]:
        for op in (step.get("slowOperations") or {}).get("operations") or []:
            del op["shard"]
    header = next(
        line for line in _describe(loaded) if line.strip().startswith("step") and " ms " in line
    )
    assert header.split() == ["step", "ms", "op", "plan", "docs/keys/ret", "shape"]


def test_the_report_has_the_slow_operations_and_disk_use_tables(tmp_path: Path) -> None:
    runs = [profiled_run("p1"), benchmark_run("plain", workloads=("a",), repetitions=2)]
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in runs], metrics=("throughput",)
    )
    page = report.write(runs, result, tmp_path).html.read_text()
    assert f"<h2>{render.SLOW_OPERATIONS_SECTION}</h2>" in page
    assert f"<h2>{render.DISK_USE_SECTION}</h2>" in page
    slow = page.split(f"<h2>{render.SLOW_OPERATIONS_SECTION}</h2>")[1].split("</table>")[0]
    assert slow.count("<tr>") == 1 + report.REPORT_SLOW_PER_RUN  # header, then run p1's slowest
    disk = page.split(f"<h2>{render.DISK_USE_SECTION}</h2>")[1].split("</table>")[0]
    assert disk.count("<tr>") == 1 + 3  # the last step's total and its two shards


def test_the_export_carries_each_steps_figures() -> None:
    loaded = profiled_run()
    kept = export.archive_run_object(loaded)["status"]["steps"]  # run.json: all of it
    assert [len(s["slowOperations"]["operations"]) for s in kept if s.get("slowOperations")] == [
        8,
        8,
    ]
    rows = {r["stepLabel"]: r for r in export.step_rows(loaded)}
    assert rows["run a #1"]["slowOperations"] == 8 and rows["run a #1"]["slowestMs"] == 900
    assert rows["run a #1"]["diskDocuments"] == 1010
    load = next(r for r in rows.values() if r["kind"] == "load")
    assert load["slowOperations"] is None and load["diskDataBytes"] == 1_100_000


def test_records_read_back_at_most_what_the_operator_keeps() -> None:
    loaded = profiled_run()
    step = next(s for s in loaded.run["status"]["steps"] if s["kind"] == "run")
    step["slowOperations"]["operations"] = [_op(5, "c-shard0", "x" * 500)] * 150 + ["junk"]
    ops = [o for o in records.slow_operations(loaded.run) if o.step == step["label"]]
    assert len(ops) == records.SLOW_OPERATIONS_MAX
    assert len(ops[0].shape) == records.SHAPE_CHARS
    # a run from before spec.profiler reads as none
    assert records.slow_operations(benchmark_run("old", workloads=("a",)).run) == []
    assert records.disk_use(benchmark_run("old", workloads=("a",)).run) == []


def test_a_profiled_run_is_not_comparable_with_an_unprofiled_one() -> None:
    """The profiler writes a document per slow operation: it costs the server throughput."""
    profiled = profiled_run()
    profiled.run["spec"]["profiler"] = {"slowMs": 100, "top": 10}
    plain = benchmark_run("plain", workloads=("a",), repetitions=2)
    assert records.workload_parameters(profiled.run, "a")["profiler"] == {"slowMs": 100, "top": 10}
    assert "profiler" not in records.workload_parameters(plain.run, "a")
    assert "profiler" not in records.workload_parameters(profiled.run, records.LOAD)
