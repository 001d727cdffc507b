"""mongobench's Locust driver: YCSB workloads A-F on pymongo, headless, standalone or distributed.

Started by `mongobench-runner locust` (never import this next to pymongo in another process:
Locust monkey-patches the interpreter with gevent). The budget, measurements, live status lines
and the final report are the scenario base's (mongobench_scenario.py), which user scenarios
share; this file is the YCSB workload itself, one MongoScenario.

Each user is one YCSB client thread: per operation ticket it picks the operation by the workload
mix and the key by `requestdistribution` (uniform, zipfian, latest, and mongobench's permutation),
as YCSB's CoreWorkload does, with the same key names. `deleteproportion` adds DELETE (deleteOne
of a chosen existing key; NOT_FOUND when it is already gone), as go-ycsb names it: YCSB's
CoreWorkload has none.
Loading is the base's: YCSB records, and with `batchsize` > 1 inserts buffered per user into
insertMany, BATCHED_OK as the binding answers.
"""

from __future__ import annotations

from typing import Any

from mongobench_runner.ycsbgen import OperationChooser
from mongobench_scenario import BUDGET, PROPS, MongoScenario


class MongoUser(MongoScenario):
    def setup(self) -> None:
        self.ops = OperationChooser(PROPS, self.rnd)
        self.readall = PROPS.get("readallfields", "true") == "true"
        self.writeall = PROPS.get("writeallfields", "false") == "true"
        self.maxscan = int(PROPS.get("maxscanlength", "1000"))

    def _read(self, key: str) -> bool:
        proj = None if self.readall else dict.fromkeys(self.ycsb_fields(False), 1)
        return self.collection.find_one({"_id": key}, proj) is not None

    def _update(self, key: str) -> bool:
        values = self.ycsb_values(self.writeall)
        return self.collection.update_one({"_id": key}, {"$set": values}).matched_count > 0

    def _delete(self, key: str) -> bool:
        # NOT_FOUND when the key is gone (deleted before), as the binding's delete answers
        return self.collection.delete_one({"_id": key}).deleted_count > 0

    def _scan(self, key: str, n: int) -> bool:
        found: list[Any] = list(
            self.collection.find({"_id": {"$gte": key}}).sort("_id", 1).limit(n)
        )
        return len(found) > 0

    def run_operation(self) -> None:
        op = self.ops.next()
        if op == "INSERT":
            keynum = self.next_key()
            if self.insert(self.document(keynum)):
                BUDGET.acknowledge(keynum)
            return
        key = self.key(self.existing_key())
        if op == "READ":
            self.timed("READ", lambda: self._read(key))
        elif op == "UPDATE":
            self.timed("UPDATE", lambda: self._update(key))
        elif op == "DELETE":
            self.timed("DELETE", lambda: self._delete(key))
        elif op == "SCAN":
            n = self.rnd.randint(1, self.maxscan)
            self.timed("SCAN", lambda: self._scan(key, n))
        elif op == "READ-MODIFY-WRITE":
            with self.measure("READ-MODIFY-WRITE") as both:
                ok = self.timed("READ", lambda: self._read(key))
                ok = self.timed("UPDATE", lambda: self._update(key)) and ok
                if not ok:
                    both.code = "ERROR"
