"""Shape 1 of the sharded-deployment study: a parallel bulk insert of a generated data set.

Load phase: `recordcount` orders (orders_dataset.py), as every scenario of the study loads them.
Run phase: `operationcount` more orders, with key numbers past the loaded ones that no other user,
client or step takes, written in unordered insertMany batches of `batchsize` documents (default
1000). Every document is one operation named INSERT, as in the YCSB binding's batching: BATCHED_OK
while queued, the batch's insertMany latency on the document that fills it. Throughput is
documents per second; keep `batchsize` well below the documents per user (operationcount /
clients / threads), or most of them wait for the final partial batch.
"""

from __future__ import annotations

from orders_dataset import OrdersScenario


class BulkInsert(OrdersScenario):
    default_batch_size = 1000

    def run_operation(self) -> None:
        self.insert_batched(self.document(self.next_key()))
