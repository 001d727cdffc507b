"""The monitoring study's queries over its measurements, one per workload, each run and timed.

Load phase: `recordcount` measurements (measurements.py). Run phase: each operation is the query
the workload's `query` property names, over the loaded measurements, timed as one operation of
the same name in capitals:

- `by-sensor` (BY_SENSOR): every measurement of one random sensor;
- `time-range` (TIME_RANGE): every measurement of one random hour, all sensors;
- `aggregation` (AGGREGATION): per metric, the count and the total of the values of one random
  day, largest total first (their mean is total / count: FerretDB, the local tiers' data path,
  has no `$avg` accumulator);
- `count` (COUNT): the measurements of one random host.

Each picks a sensor, hour, day or host that holds loaded measurements, so an empty answer counts
as NOT_FOUND (an error: the data set was not loaded). With a run of one operation on one thread,
a step's latency is the query's run time, and `repetitions` gives its interval.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from measurements import START, MeasurementsScenario


class SensorQueries(MeasurementsScenario):
    def setup(self) -> None:
        super().setup()
        self.query = self.param("query", "")
        self.queries: dict[str, Callable[[], int]] = {
            "by-sensor": self.by_sensor,
            "time-range": self.time_range,
            "aggregation": self.aggregation,
            "count": self.count,
        }

    def moment(self) -> Any:
        """A random instant that a loaded measurement has."""
        samples = self.loaded_seconds() // self.interval
        return START + timedelta(seconds=self.rnd.randrange(samples) * self.interval)

    def by_sensor(self) -> int:
        sensor = f"s{self.rnd.randrange(min(self.sensors, max(self.records, 1))):04d}"
        return len(list(self.collection.find({"sensor": sensor})))

    def time_range(self) -> int:
        hour = self.moment().replace(minute=0, second=0)
        where = {"ts": {"$gte": hour, "$lt": hour + timedelta(hours=1)}}
        return len(list(self.collection.find(where)))

    def aggregation(self) -> int:
        day = self.moment().replace(hour=0, minute=0, second=0)
        pipeline: list[dict[str, Any]] = [
            {"$match": {"ts": {"$gte": day, "$lt": day + timedelta(days=1)}}},
            {
                "$group": {
                    "_id": "$metric",
                    "count": {"$sum": 1},
                    "total": {"$sum": "$value"},
                }
            },
            {"$sort": {"total": -1}},
        ]
        return len(list(self.collection.aggregate(pipeline)))

    def count(self) -> int:
        hosts = min(self.hosts, self.sensors, max(self.records, 1))
        return self.collection.count_documents({"host": f"h{self.rnd.randrange(hosts):03d}"})

    def run_operation(self) -> None:
        # Checked here, not in setup(): the load phase has no query, and an operation that
        # raises fails the run with the message (an exception in setup() would stall it).
        ask = self.queries.get(self.query)
        if ask is None:
            raise ValueError(f"query must be one of {', '.join(self.queries)}, not {self.query!r}")
        with self.measure(self.query.upper().replace("-", "_")) as outcome:
            if not ask():
                outcome.code = "NOT_FOUND"
