"""Unit tier: cost per million operations from node prices and node-hours, per step and in
compare when the steps carry a cost."""

from __future__ import annotations

import pytest
from finished_runs import benchmark_run

from mongobench_results import compare, cost, records

pytestmark = pytest.mark.unit

PRICES = cost.Prices.parse({"m5.large": "0.096", "c5.xlarge": 0.17, "currency": "EUR"})


def test_a_step_costs_its_nodes_hours_at_their_prices() -> None:
    step = cost.step_cost(PRICES, ["m5.large", "m5.large", "c5.xlarge"], 1800, 3_000_000)
    assert step.currency == "EUR"
    assert step.node_hours == pytest.approx(1.5)
    assert step.cost == pytest.approx((2 * 0.096 + 0.17) / 2)
    assert step.per_million == pytest.approx(step.cost / 3)
    assert step.to_dict()["nodes"] == {"c5.xlarge": 1, "m5.large": 2}


def test_a_node_without_a_price_makes_the_cost_unknown_and_says_which_type() -> None:
    step = cost.step_cost(PRICES, ["m5.large", "r6g.large", None], 60, 1000)
    assert step.cost is None and step.per_million is None
    assert step.to_dict()["missingPrices"] == ["r6g.large", cost.UNKNOWN_TYPE]


def test_prices_that_are_not_numbers_are_refused() -> None:
    with pytest.raises(ValueError, match=r"m5\.large"):
        cost.Prices.parse({"m5.large": "cheap"})
    with pytest.raises(ValueError, match="negative"):
        cost.Prices.parse({"m5.large": -1})


def test_a_configuration_costs_its_total_over_its_total_operations() -> None:
    entries = [{"cost": 1.0, "operations": 1_000_000}, {"cost": 3.0, "operations": 1_000_000}]
    assert cost.per_million(entries) == pytest.approx(2.0)
    assert cost.per_million([{"cost": 1.0, "operations": 10}, {"operations": 10}]) is None


def priced(run: dict, price: float) -> dict:
    """The run with a cost on each measured step, as the operator writes it."""
    prices = cost.Prices.parse({"m5.large": price})
    for entry in run["status"]["steps"]:
        view = next((s for s in records.steps(run) if s.index == entry["index"]), None)
        if entry.get("kind") != "run" or view is None or not view.seconds or not view.result:
            continue
        ops = float(view.result.get("operationsTotal") or 0)
        entry["cost"] = cost.step_cost(prices, ["m5.large"] * 3, view.seconds, ops).to_dict()
    return run


def test_compare_shows_cost_per_million_operations_when_the_steps_carry_prices() -> None:
    cheap = benchmark_run("cheap", throughput=1000, seed=1)
    dear = benchmark_run("dear", throughput=1000, seed=2)
    runs = [
        compare.RunInput(cheap.key, priced(cheap.run, 0.10)),
        compare.RunInput(dear.key, priced(dear.run, 0.20)),
    ]
    result = compare.compare(runs, metrics=("throughput", "cost"))
    row = next(r for r in result.rows if r.metric.id == "cost" and r.configuration == "dear")
    assert row.verdict.startswith("+") and row.verdict.endswith("worse")
    assert row.difference is not None and row.difference.relative == pytest.approx(1.0, abs=0.1)


def test_compare_has_no_cost_row_without_prices() -> None:
    a = benchmark_run("a", seed=1)
    b = benchmark_run("b", seed=2)
    result = compare.compare([compare.RunInput(a.key, a.run), compare.RunInput(b.key, b.run)])
    assert not [r for r in result.rows if r.metric.id == "cost"]
