"""Shape 3 of the sharded-deployment study: an aggregation pipeline.

Run phase: each operation (AGGREGATE) takes the orders of one random status and sums orders,
revenue and items per region, largest revenue first. The $match and the first half of the $group
run on every shard over its whole part of the collection (no index on `status`); mongos (or a
shard) merges the partial groups. An answer without any group counts as NOT_FOUND (an error):
the data set was not loaded. Load phase: the orders data set (orders_dataset.py).
"""

from __future__ import annotations

from typing import Any

from orders_dataset import STATUSES, OrdersScenario


class Aggregation(OrdersScenario):
    def run_operation(self) -> None:
        pipeline: list[dict[str, Any]] = [
            {"$match": {"status": self.rnd.choice(STATUSES)}},
            {
                "$group": {
                    "_id": "$region",
                    "orders": {"$sum": 1},
                    "revenue": {"$sum": "$amount"},
                    "items": {"$sum": "$quantity"},
                }
            },
            {"$sort": {"revenue": -1}},
        ]
        with self.measure("AGGREGATE") as outcome:
            if not list(self.collection.aggregate(pipeline)):
                outcome.code = "NOT_FOUND"
