"""Study 3's timed aggregation over the pitches (pitches_dataset.py): its completion time.

Run phase: each operation (AGGREGATE) groups every pitch by its type: how many, and their start
speeds and spin rates summed (means are sum / pitches: $avg is not in FerretDB, the tests' data
path), most thrown first. The $group's first half runs on every shard over its
whole part of the collection; mongos (or a shard) merges the partial groups. Run it as the study
did, one operation from one thread: the step's run time (`--metric seconds`) is the aggregation's
completion time. An answer without any group counts as NOT_FOUND (an error): the data set was not
loaded. Load phase: the pitches (the import).
"""

from __future__ import annotations

from typing import Any

from pitches_dataset import PitchesScenario


class PitchesAggregation(PitchesScenario):
    def run_operation(self) -> None:
        pipeline: list[dict[str, Any]] = [
            {
                "$group": {
                    "_id": "$pitch_type",
                    "pitches": {"$sum": 1},
                    "speed": {"$sum": "$start_speed"},
                    "spin": {"$sum": "$spin_rate"},
                }
            },
            {"$sort": {"pitches": -1}},
        ]
        with self.measure("AGGREGATE") as outcome:
            if not list(self.collection.aggregate(pipeline)):
                outcome.code = "NOT_FOUND"
