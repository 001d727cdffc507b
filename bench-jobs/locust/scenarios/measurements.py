"""The generated data set of the monitoring study's scenarios: measurements of sensors over time.

Measurement `k` (a key number) is a function of `k` alone, so every run, client and cell of the
study writes the same data set: sensor `k % sensors` (`measurements.sensors`, default 1000)
takes its sample number `k // sensors`, one every `measurements.intervalseconds` (default 60)
from 2024-01-01, so key numbers in order are time in order. Fields: `_id` (YCSB's key name, so a
hashed `_id` spreads it), `sensor` ("s0042"), `host` (the sensor's host, one of
`measurements.hosts`, default 50), `metric` (by sensor, one of METRICS), `ts` (a date) and
`value`. Only `_id` is indexed, and the shard key's fields when the run shards on them.

A run phase's new measurements continue the series after the loaded ones, at the same times in
every step (the operator numbers each step's inserts from its own offset): see `sample()`.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from mongobench_scenario import MongoScenario

METRICS = ("cpu", "memory", "disk", "network", "connections", "opcounters")
START = datetime(2024, 1, 1, tzinfo=UTC)
# The operator gives every inserting step its own key offset (step index x 2^40).
STEP_KEYS = 1 << 40


def sample(keynum: int, records: int) -> int:
    """Measurement `keynum`'s place in the series: loaded ones their own number, a run phase's
    the loaded count plus its place within its step (offsets dropped: the dates stay bounded)."""
    return keynum if keynum < records else records + (keynum - records) % STEP_KEYS


def measurement(
    keynum: int, key: str, records: int, *, sensors: int, hosts: int, interval: int
) -> dict[str, Any]:
    """Measurement number `keynum` under the key name `key`."""
    n = sample(keynum, records)
    sensor = n % sensors
    return {
        "_id": key,
        "sensor": f"s{sensor:04d}",
        "host": f"h{sensor % hosts:03d}",
        "metric": METRICS[sensor % len(METRICS)],
        "ts": START + timedelta(seconds=(n // sensors) * interval),
        "value": round(random.Random(keynum).uniform(0, 100), 3),
    }


class MeasurementsScenario(MongoScenario):
    """A scenario over the measurements data set (not run by itself)."""

    abstract = True

    def setup(self) -> None:
        self.records = self.param("recordcount", 0)
        self.sensors = self.param("measurements.sensors", 1000)
        self.hosts = self.param("measurements.hosts", 50)
        self.interval = self.param("measurements.intervalseconds", 60)

    def document(self, keynum: int) -> dict[str, Any]:
        return measurement(
            keynum,
            self.key(keynum),
            self.records,
            sensors=self.sensors,
            hosts=self.hosts,
            interval=self.interval,
        )

    def loaded_seconds(self) -> int:
        """The time the loaded measurements span (one interval at least)."""
        return max(self.records // self.sensors, 1) * self.interval
