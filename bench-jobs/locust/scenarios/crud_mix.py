"""The monitoring study's traffic: reads, updates, inserts and deletes, so that every opcounter
its agents watched (insert, query, update, delete) moves.

Load phase: `recordcount` YCSB records (the base's). Run phase: each operation is READ or
UPDATE of a loaded record chosen uniformly, INSERT of a new record, or DELETE, by the workload's
`readproportion`, `updateproportion`, `insertproportion` and `deleteproportion` (YCSB's and
go-ycsb's names). A DELETE removes a record this user inserted in the run and has not deleted
yet (an INSERT when there is none), so the loaded records stay and no read, update or delete
misses: a miss (NOT_FOUND) would be an error, as in YCSB, and fail the run. The Locust driver's
own DELETE (`deleteproportion` on a YCSB workload) deletes loaded records, which later reads
miss.
"""

from __future__ import annotations

from mongobench_runner.ycsbgen import OperationChooser
from mongobench_scenario import MongoScenario


class CrudMix(MongoScenario):
    def setup(self) -> None:
        self.records = self.param("recordcount", 1)
        self.ops = OperationChooser(self.props, self.rnd)
        self.inserted: list[int] = []  # this user's run inserts, not deleted yet

    def loaded_key(self) -> str:
        return self.key(self.rnd.randrange(self.records))

    def run_operation(self) -> None:
        op = self.ops.next()
        if op == "DELETE" and self.inserted:
            key = self.key(self.inserted.pop(self.rnd.randrange(len(self.inserted))))
            self.timed("DELETE", lambda: self.collection.delete_one({"_id": key}).deleted_count > 0)
        elif op in ("INSERT", "DELETE"):
            keynum = self.next_key()
            if self.insert(self.document(keynum)):
                self.inserted.append(keynum)
        elif op == "UPDATE":
            key, values = self.loaded_key(), {"$set": self.ycsb_values(False)}
            self.timed(
                "UPDATE", lambda: self.collection.update_one({"_id": key}, values).matched_count > 0
            )
        else:
            key = self.loaded_key()
            self.timed("READ", lambda: self.collection.find_one({"_id": key}) is not None)
