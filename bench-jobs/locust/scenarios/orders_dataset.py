"""The generated dataset of the sharded-deployment study's scenarios: orders.

Document `k` (a key number) is a function of `k` alone, so every run, client and cell of a study
writes the same data set: `_id` (YCSB's key name, so a hashed `_id` shard key spreads it),
`customer` (one of `orders.customers`, default 10000), `region`, `status`, `amount`,
`quantity`, `created` (a date in 2024), `tags` and `padding` (`fieldlength` printable characters,
default 100: the document-size knob, as in YCSB). Only `_id` is indexed: finds and aggregations
on the other fields scan every shard.

The three scenarios subclass OrdersScenario; its `load_operation()` (the base's) inserts
`recordcount` orders, so any of them can be a BenchmarkRun's `load.scenario`.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from mongobench_runner.ycsbgen import field_value
from mongobench_scenario import MongoScenario

REGIONS = ("af", "ap-east", "ap-south", "eu-central", "eu-west", "me", "na-east", "na-west", "sa")
STATUSES = ("new", "paid", "shipped", "delivered", "returned")
TAGS = ("gift", "express", "bulk", "fragile", "promo", "repeat")
YEAR_START = datetime(2024, 1, 1, tzinfo=UTC)
YEAR_SECONDS = 366 * 86400


def order(keynum: int, key: str, customers: int, padding: int) -> dict[str, Any]:
    """Order number `keynum` under the key name `key`."""
    rnd = random.Random(keynum)
    return {
        "_id": key,
        "customer": rnd.randrange(customers),
        "region": rnd.choice(REGIONS),
        "status": rnd.choice(STATUSES),
        "amount": round(rnd.uniform(1, 1000), 2),
        "quantity": rnd.randint(1, 20),
        "created": YEAR_START + timedelta(seconds=rnd.randrange(YEAR_SECONDS)),
        "tags": rnd.sample(TAGS, k=rnd.randint(0, 3)),
        "padding": field_value(rnd, padding).decode(),
    }


class OrdersScenario(MongoScenario):
    """A scenario over the orders data set (not run by itself)."""

    abstract = True

    def setup(self) -> None:
        self.customers = self.param("orders.customers", 10000)

    def document(self, keynum: int) -> dict[str, Any]:
        return order(keynum, self.key(keynum), self.customers, self.fieldlength)
