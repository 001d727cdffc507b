"""Shape 2 of the sharded-deployment study: an unindexed scatter-gather find.

Run phase: each operation (FIND) fetches every order of one random customer. `customer` is
neither indexed nor the shard key, so mongos asks every shard and each scans its whole part of
the collection: the time grows with the data per shard and the slowest shard. About
recordcount / `orders.customers` documents come back (`find.limit` caps them; 0, the default,
returns all). Load phase: the orders data set (orders_dataset.py).
"""

from __future__ import annotations

from orders_dataset import OrdersScenario


class ScatterGatherFind(OrdersScenario):
    def setup(self) -> None:
        super().setup()
        self.limit = self.param("find.limit", 0)

    def run_operation(self) -> None:
        customer = self.rnd.randrange(self.customers)
        with self.measure("FIND"):
            list(self.collection.find({"customer": customer}, limit=self.limit))
