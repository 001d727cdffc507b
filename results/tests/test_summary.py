"""Unit tier: client documents reassembled from ConfigMap parts, merged, summarised."""

from __future__ import annotations

import json
from typing import Any

import pytest
from finished_runs import benchmark_run

from mongobench_results.configmaps import assemble
from mongobench_results.merge import merge_documents as merge
from mongobench_results.summary import (
    STATUS_WARNINGS,
    step_result,
    summarise,
    workload_summary,
)

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


# -- every step figure in status, recomputed from the clients' own documents ----------------


def _client_documents() -> list[dict[str, Any]]:
    """Three clients with their own latencies, operation mixes and windows (client 2 started
    1.5 s late and ran with 3 threads), as the runner writes them."""
    import random

    from mongobench_results import hdr
    from mongobench_results.document import OpResult, Window, build_document, utc_now

    t0 = 1_750_000_000_000_000
    docs = []
    shapes = [(0.0, 20.0, 4), (0.2, 19.5, 4), (1.5, 18.0, 3)]  # offset s, window s, threads
    for index, (offset, seconds, threads) in enumerate(shapes):
        rnd = random.Random(index)
        ops = {}
        for name, n in (("READ", 4000 + 500 * index), ("UPDATE", 3000 - 300 * index)):
            h = hdr.new_histogram()
            for _ in range(n):
                h.record_value(int(rnd.lognormvariate(8.5, 0.6)) + 1)
            ops[name] = OpResult(h, {"OK": n})
        transactions = sum(int(o.histogram.get_total_count()) for o in ops.values())
        now = utc_now()
        docs.append(
            build_document(
                driver="ycsb",
                driver_version="test",
                phase="run",
                workload="a",
                properties={},
                labels={},
                client_index=index,
                clients=3,
                threads=threads,
                start=now,
                end=now,
                window=Window(t0 + int(offset * 1e6), t0 + int((offset + seconds) * 1e6)),
                operations=ops,
                transactions=transactions,
                cpu_user_s=1.0,
                cpu_system_s=0.2,
                error=None,
                expected_ops=None,
                throttled=False,
            )
        )
    return docs


def _java_percentile(values: list[tuple[int, int]], p: float, h: Any) -> int:
    """Java HdrHistogram's getValueAtPercentile: the highest equivalent value of the first
    recorded value whose cumulative count reaches ceil(p/100 * total)."""
    import math

    total = sum(n for _, n in values)
    target = max(math.ceil(p / 100.0 * total), 1)
    seen = 0
    for value, n in sorted(values):
        seen += n
        if seen >= target:
            return int(h.get_highest_equivalent_value(value))
    raise AssertionError("unreachable")


def test_every_step_figure_in_status_is_recomputed_from_the_client_documents() -> None:
    from hdrh.histogram import HdrHistogram

    from mongobench_results.document import epoch_us

    docs = _client_documents()
    # As the operator reads them: serialised into ConfigMap parts, reassembled.
    cms = [cm for d in docs for cm in parts(f"s-c{d['client']['index']}", json.dumps(d), 2)]
    got = assemble(cms, "s", 3)
    status = step_result(merge(got.documents))

    starts = [epoch_us(d["window"]["start"]) for d in docs]
    ends = [epoch_us(d["window"]["end"]) for d in docs]
    window_s = (max(ends) - min(starts)) / 1e6
    assert status["window"]["seconds"] == pytest.approx(window_s, abs=1e-6) == 20.0
    assert status["runtimeSeconds"] == status["window"]["seconds"]
    total = sum(d["operationsTotal"] for d in docs)
    assert status["operationsTotal"] == total
    assert status["throughput"] == round(total / window_s, 3)
    assert status["throughput"] == pytest.approx(total / status["runtimeSeconds"], abs=1e-3)
    assert status["startSkewSeconds"] == 1.5
    assert status["endSpreadSeconds"] == pytest.approx(0.5)
    per = {c["index"]: c for c in status["perClient"]}
    for d in docs:
        mine = per[d["client"]["index"]]
        seconds = (epoch_us(d["window"]["end"]) - epoch_us(d["window"]["start"])) / 1e6
        assert mine["windowSeconds"] == pytest.approx(seconds)
        assert mine["throughput"] == round(d["operationsTotal"] / seconds, 3)
        skew = (epoch_us(d["window"]["start"]) - min(starts)) / 1e6
        assert mine["startSkewSeconds"] == pytest.approx(skew)

    busy_us = 0.0
    for name in ("READ", "UPDATE"):
        values: dict[int, int] = {}
        hist = None
        for d in docs:
            h = HdrHistogram.decode(d["operations"][name]["hdr"])
            hist = h
            for i in range(h.counts_len):
                n = h.get_count_at_index(i)
                if n:
                    v = int(h.get_value_from_index(i))
                    values[v] = values.get(v, 0) + n
        pairs = list(values.items())
        op = status["operations"][name]
        assert op["count"] == sum(d["operations"][name]["count"] for d in docs)
        for key, p in (("p50", 50), ("p95", 95), ("p99", 99), ("p999", 99.9)):
            assert op[key] == _java_percentile(pairs, p, hist), key
        assert op["min"] == int(hist.get_lowest_equivalent_value(min(values)))
        assert op["max"] == int(hist.get_highest_equivalent_value(max(values)))
        mean = sum(
            n * (hist.get_lowest_equivalent_value(v) + hist.get_highest_equivalent_value(v)) / 2
            for v, n in pairs
        ) / sum(values.values())
        assert op["avg"] == pytest.approx(mean, abs=1.0)
        busy_us += op["count"] * op["avg"]

    # Little's law on the same window: threads weighted by each client's share of it.
    expected = (
        sum(
            d["client"]["threads"] * (epoch_us(d["window"]["end"]) - epoch_us(d["window"]["start"]))
            for d in docs
        )
        / 1e6
        / window_s
    )
    law = status["littlesLaw"]
    assert law["expected"] == pytest.approx(expected, abs=1e-3)
    assert law["observed"] == pytest.approx(busy_us / 1e6 / window_s, rel=1e-3)
    assert law["ratio"] == pytest.approx(law["observed"] / law["expected"], abs=1e-3)
    assert "over the 20.000 s window" in law["diagnosis"]


def test_status_keeps_every_warning_or_says_how_many_are_elsewhere() -> None:

    doc = merge(_client_documents())
    doc["sanity"]["warnings"] = [f"w{i}" for i in range(25)]
    kept = step_result(doc)["warnings"]
    assert len(kept) == STATUS_WARNINGS
    assert kept[-1] == "16 more warnings in the step's result documents"
    assert step_result(doc, per_client=False)["perClient"].startswith("in the result documents")


def test_loads_are_summarised_first_as_workload_load_with_time_to_load() -> None:
    """Unit tier: the run's summary in status carries the measured loads, and every workload
    its run time (a timed query's result)."""
    run = benchmark_run("loaded", loads=3, load_throughput=2000, sd=10, workloads=("a",))
    steps = run.run["status"]["steps"]
    out = summarise(steps)
    assert [e["workload"] for e in out] == ["load", "a"]
    load = out[0]
    assert load["n"] == 3 and load["seconds"]["n"] == 3
    assert 0.4 < load["seconds"]["mean"] < 0.6  # 1000 records at ~2000/s
    assert "INSERT" in load["operations"]
    assert out[1]["seconds"]["n"] == 3 and out[1]["seconds"]["mean"] > 0
    cell = workload_summary([run.run])
    assert cell["load"]["n"] == 3 and 0.4 < cell["load"]["seconds"] < 0.6
    assert cell["a"]["seconds"] > 0


def test_summarise_reads_steps_given_as_a_generator() -> None:
    """The operator passes a generator (steps a re-run replaced left out): loads and workloads
    both come out of it."""
    from mongobench_results import summary as summary_module

    def result() -> dict[str, object]:
        return {"throughput": 10.0, "operations": {}}

    steps = [
        {"kind": "load", "phase": "Succeeded", "result": result()},
        {"kind": "run", "workload": "a", "phase": "Succeeded", "result": result()},
    ]
    out = summary_module.summarise(s for s in steps)
    assert [e["workload"] for e in out] == ["load", "a"]
