"""The cloud write-concern study's client: single inserts of small documents, then reads of them.

Load phase: `recordcount` documents, each written alone with insertOne (the study's client did
not batch), under the run's write concern (`spec.mongo.writeConcern`: unacknowledged,
acknowledged or journaled), so the load's time is the study's completion time for inserts.
Run phase: each operation (READ) fetches one loaded document by `_id`, chosen by the run's
`requestdistribution`: uniform unless set; `permutation` (`spec.run.requestDistribution`) reads
each loaded document once over all client pods, in a seeded shuffled order, as the study's
client did, when operationcount = recordcount. A
document is `_id` (YCSB's key name), `n` (its key number) and `text` (`fieldlength` printable
characters, default 100): small, as the study's were. Processes are client pods
(`clients.parallelism`) of one thread each; `clients.connectionPerThread` gives each its own
connection, as each of the study's processes had.
"""

from __future__ import annotations

from typing import Any

from mongobench_runner.ycsbgen import field_value
from mongobench_scenario import MongoScenario


class SmallDocuments(MongoScenario):
    def document(self, keynum: int) -> dict[str, Any]:
        return {
            "_id": self.key(keynum),
            "n": keynum,
            "text": field_value(self.rnd, self.fieldlength).decode(),
        }

    def load_operation(self) -> None:
        self.insert(self.document(self.next_key()))

    def run_operation(self) -> None:
        key = self.key(self.existing_key())
        self.timed("READ", lambda: self.collection.find_one({"_id": key}) is not None)
