"""Cost per operation (pure): node prices per instance type, given by the user (a ConfigMap or
the run's spec; nothing is looked up outside), times the node-hours a step used.

- A step uses every node its pods ran on (the database's and its clients'), each counted once
  whatever it ran: a node is paid for whole. Its hours are the step's window (start to end).
- Cost per million operations is the step's cost over its operations, times a million; a
  configuration's is its steps' total cost over their total operations (not a mean of ratios:
  a long step weighs what it cost).
- A node whose instance type has no price makes the step's cost unknown, said with the type:
  a partial sum would look cheaper than it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MILLION = 1_000_000.0
UNKNOWN_TYPE = "unknown"  # a node without the node.kubernetes.io/instance-type label


@dataclass(frozen=True)
class Prices:
    per_hour: Mapping[str, float]  # instance type -> price of one node-hour
    currency: str = "USD"

    @classmethod
    def parse(cls, data: Mapping[str, Any], currency: str = "USD") -> Prices:
        """From a ConfigMap's data or the spec's map: instance type -> price (strings or
        numbers); a `currency` key names the currency. Raises ValueError on a price that is
        not a non-negative number."""
        out: dict[str, float] = {}
        for key, value in data.items():
            if key == "currency":
                currency = str(value)
                continue
            try:
                price = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"price of {key}: {value!r} is not a number") from None
            if price < 0:
                raise ValueError(f"price of {key}: {price} is negative")
            out[key] = price
        return cls(out, currency)


@dataclass(frozen=True)
class StepCost:
    nodes: Mapping[str, int]  # instance type -> nodes used
    hours: float  # the step's window
    operations: float
    cost: float | None  # None: a type without a price (`missing`)
    missing: tuple[str, ...] = ()
    currency: str = "USD"

    @property
    def node_hours(self) -> float:
        return sum(self.nodes.values()) * self.hours

    @property
    def per_million(self) -> float | None:
        if self.cost is None or self.operations <= 0:
            return None
        return self.cost / self.operations * MILLION

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "currency": self.currency,
            "nodes": dict(sorted(self.nodes.items())),
            "nodeHours": round(self.node_hours, 6),
            "operations": int(self.operations),
        }
        if self.cost is not None:
            out["cost"] = round(self.cost, 6)
        if (per := self.per_million) is not None:
            out["perMillionOperations"] = round(per, 6)
        if self.missing:
            out["missingPrices"] = list(self.missing)
        return out


def step_cost(
    prices: Prices, instance_types: Iterable[str | None], seconds: float, operations: float
) -> StepCost:
    """The cost of one step: `instance_types` has one entry per node the step used."""
    nodes = Counter(t or UNKNOWN_TYPE for t in instance_types)
    hours = max(seconds, 0.0) / 3600.0
    missing = tuple(sorted(t for t in nodes if t not in prices.per_hour)) or (
        () if nodes else ("no node seen",)
    )
    cost = None if missing else sum(prices.per_hour[t] * n * hours for t, n in nodes.items())
    return StepCost(dict(nodes), hours, operations, cost, missing, prices.currency)


def per_million(steps: Iterable[Mapping[str, Any]]) -> float | None:
    """Cost per million operations over steps' `cost` entries (status): total cost over total
    operations; None when any step's cost is unknown or there are no operations."""
    total, operations, seen = 0.0, 0.0, False
    for entry in steps:
        if entry.get("cost") is None:
            return None
        total += float(entry["cost"])
        operations += float(entry.get("operations") or 0)
        seen = True
    if not seen or operations <= 0:
        return None
    return total / operations * MILLION
