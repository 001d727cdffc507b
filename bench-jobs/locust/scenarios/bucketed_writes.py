"""The monitoring study's bucketed write test: measurements written one document each, or pushed
into per-sensor-per-hour bucket documents (MongoDB's time-series bucket pattern).

Load phase: `recordcount` measurements, one document each (measurements.py). Run phase: each
operation (WRITE) writes the next measurement of the series (`operationcount` of them, after
the loaded ones). With `bucketsize` 0 (the default) it is one insertOne; with `bucketsize` N it
is one updateOne with upsert that `$push`es `{ts, value}` into the bucket of its
sensor and hour holding fewer than N measurements, creating one when there is none (so a bucket
never grows past N, and an hour of a sensor takes ceil(samples / N) buckets). Two threads writing
one sensor's hour at once may each create a bucket: buckets hold at most N, not always N.

A bucket: `sensor`, `hour` (the hour's start), `count`, `measurements` [{ts, value}], with `host`
and `metric` set when it is created. The filter holds `sensor` and `hour` by equality, so a
shard key on `sensor` (hashed or ranged), or on `sensor` and `hour`, routes every upsert to one
shard, as MongoDB requires of an upsert on a sharded collection.
"""

from __future__ import annotations

from typing import Any

from measurements import MeasurementsScenario

# One name for both shapes, so a comparison pairs their latencies: one measurement written.
WRITE = "WRITE"


def bucket_write(doc: dict[str, Any], size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The filter and update that push measurement `doc` into a bucket of at most `size`."""
    hour = doc["ts"].replace(minute=0, second=0, microsecond=0)
    where = {"sensor": doc["sensor"], "hour": hour, "count": {"$lt": size}}
    update = {
        "$push": {"measurements": {"ts": doc["ts"], "value": doc["value"]}},
        "$inc": {"count": 1},
        "$setOnInsert": {"host": doc["host"], "metric": doc["metric"]},
    }
    return where, update


class BucketedWrites(MeasurementsScenario):
    def setup(self) -> None:
        super().setup()
        self.bucket_size = self.param("bucketsize", 0)

    def run_operation(self) -> None:
        if self.bucket_size < 0:  # an operation that raises fails the run with the message
            raise ValueError(f"bucketsize must be 0 or more, not {self.bucket_size}")
        doc = self.document(self.next_key())
        if self.bucket_size == 0:
            self.insert(doc, op=WRITE)
            return
        where, update = bucket_write(doc, self.bucket_size)
        self.timed(WRITE, lambda: self.collection.update_one(where, update, upsert=True))
