"""Study 3's timed find: one unindexed scatter-gather query over the pitches (pitches_dataset.py).

Run phase: each operation (FIND) fetches every pitch thrown at `find.minSpeed` mph or faster
(default 100: about 3% of the set). `start_speed` is neither indexed nor the shard key, so mongos
asks every shard and each scans its whole part of the collection. Run it as the study did, one
operation from one thread (`operationCount: 1`, `threads: 1`): the step's run time
(`mongobench compare --metric seconds`) is the query's. An answer without any pitch counts as
NOT_FOUND (an error): the data set was not loaded. Load phase: the pitches (the import).
"""

from __future__ import annotations

from pitches_dataset import PitchesScenario


class PitchesFind(PitchesScenario):
    def setup(self) -> None:
        self.min_speed = self.param("find.minSpeed", 100.0)

    def run_operation(self) -> None:
        with self.measure("FIND") as outcome:
            if not list(self.collection.find({"start_speed": {"$gte": self.min_speed}})):
                outcome.code = "NOT_FOUND"
