"""The MongoDB side of a BenchmarkRun: drop, create and shard the benchmark collection.

Through mongobench.mongo (nothing else talks to mongod), with the cluster's administrator
credentials. For an external database (uriSecretRef) the operator holds no administrator
credentials: the collection is left as the user prepared it, and the status says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, KeyValues, Sharding
from mongobench.benchmarkrun.act.orchestrate import DataOps
from mongobench.k8s.api import KubeApi
from mongobench.mongo import chunks
from mongobench.mongo.model import (
    Bound,
    IndexSpec,
    KeyField,
    Mongos,
    ReplicaSetSpec,
    Role,
    ShardingSpec,
    SlowOperation,
    Zone,
)
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.interface import Cluster


class ClusterData(DataOps):
    def __init__(self, kube: KubeApi, admins: AdminPool) -> None:
        self.kube = kube  # the cluster's Secrets are read through it
        self.admins = admins  # the operator's, shared with the MongoCluster reconciler

    def prepare(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        if cluster is None:
            return "external database: the collection is used as it is"
        c = Cluster.of(self.kube, cluster)
        indexes = index_specs(spec)
        with c.administration(self.admins) as admin:
            if c.layout.sharded:
                mongos = Mongos((c.layout.mongos_host,))
                sharding = sharding_spec(spec)
                admin.check_sharding(mongos, sharding)  # a layout MongoDB refuses: nothing done
                admin.drop_collection(mongos, spec.database, spec.collection)
                done = admin.shard_collection(mongos, sharding)
                if indexes:  # after sharding: a unique index must start with the shard key
                    admin.ensure_collection(mongos, spec.database, spec.collection, indexes)
                moved = done.partition(", ")[2]  # "N chunk(s) moved" after a pre-split
                return (
                    f"{spec.database}.{spec.collection} recreated, sharded on "
                    f"{sharding.description}{', ' + moved if moved else ''}{_indexes_note(indexes)}"
                )
            (rs,) = c.layout.replica_sets
            admin.drop_collection(rs.to_spec(), spec.database, spec.collection)
            admin.ensure_collection(rs.to_spec(), spec.database, spec.collection, indexes)
            return f"{spec.database}.{spec.collection} recreated{_indexes_note(indexes)}"

    def distribution(
        self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        if cluster is None:
            return None
        c = Cluster.of(self.kube, cluster)
        if not c.layout.sharded:
            return None
        with c.administration(self.admins) as admin:
            mongos = Mongos((c.layout.mongos_host,))
            return admin.distribution(mongos, spec.database, spec.collection).as_status()

    def set_profiler(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        level: int,
        slow_ms: int | Mapping[str, int] | None,
    ) -> dict[str, int]:
        c = Cluster.of(self.kube, cluster)
        with c.administration(self.admins) as admin:
            return admin.set_profiler(data_sets(c.layout), spec.database, level, slow_ms)

    def slow_operations(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        since: datetime,
        until: datetime | None,
        top: int,
    ) -> tuple[SlowOperation, ...]:
        c = Cluster.of(self.kube, cluster)
        with c.administration(self.admins) as admin:
            return admin.slow_operations(
                data_sets(c.layout), spec.database, since, until, top, sharded=c.layout.sharded
            )

    def disk_use(
        self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        if cluster is None:  # no administrator credentials for an external database
            return None
        c = Cluster.of(self.kube, cluster)
        with c.administration(self.admins) as admin:
            use = admin.disk_use(_writes_to(c.layout), spec.database, spec.collection)
        return {"collections": [use.as_status()]}

    def drop(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        if cluster is None:
            return "external database: nothing dropped (no administrator credentials)"
        c = Cluster.of(self.kube, cluster)
        target = _writes_to(c.layout)
        with c.administration(self.admins) as admin:
            dropped = admin.drop_collection(target, spec.database, spec.collection)
        return f"{spec.database}.{spec.collection} {'dropped' if dropped else 'was already gone'}"


def _writes_to(layout: ClusterLayout) -> Mongos | ReplicaSetSpec:
    """Where the collection is reached: a router, or the replica set's primary."""
    if layout.sharded:
        return Mongos((layout.mongos_host,))
    return layout.replica_sets[0].to_spec()


def data_sets(layout: ClusterLayout) -> tuple[ReplicaSetSpec, ...]:
    """The replica sets that hold the data (the shards; not the config servers): the profiler
    runs on each one's primary, as mongos profiles nothing."""
    return tuple(rs.to_spec() for rs in layout.replica_sets if rs.role is not Role.CONFIG)


_INDEX_ORDER: dict[str, int | str] = {
    "Ascending": 1,
    "Descending": -1,
    "Hashed": "hashed",
    "Text": "text",
}


def _key_value(sharding: Sharding, values: KeyValues) -> tuple[Any, ...]:
    """A split point or zone bound in key order, up to the last field given."""
    fields = [f.field for f in sharding.key_fields]
    given = [i for i, f in enumerate(fields) if f in values]
    last = max(given, default=-1)
    return tuple(values.get(f, Bound.MIN) for f in fields[: last + 1])


def sharding_spec(spec: BenchmarkRunSpec) -> ShardingSpec:
    """The run's sharding (single-field or compound form) as the mongo module's spec."""
    s = spec.sharding
    return ShardingSpec(
        spec.database,
        spec.collection,
        key=s.key,
        hashed=s.hashed,
        initial_chunks=s.pre_split_chunks,
        split_points=tuple(_key_value(s, p) for p in s.split_points),
        fields=tuple(KeyField(f.field, f.type == "Hashed") for f in s.fields),
        zones=tuple(
            Zone(
                z.name,
                z.shards,
                _key_value(s, z.min) or (Bound.MIN,),
                _key_value(s, z.max) or (Bound.MAX,),
            )
            for z in s.zones
        ),
        ycsb_hashed_keys=spec.load.insert_order == "hashed",
        ycsb_records=spec.load.record_count,
    )


def sharding_layout_problem(spec: BenchmarkRunSpec) -> str | None:
    """What every MongoDB release refuses in the run's sharding (zone layouts presplitHashedZones
    does not take, string bounds of a hashed field), told when the run starts; what depends on
    the release (preSplitChunks from 7.2) waits for prepare, which asks the routers."""
    return chunks.sharding_problem(sharding_spec(spec), None)


def index_specs(spec: BenchmarkRunSpec) -> tuple[IndexSpec, ...]:
    return tuple(
        IndexSpec(ix.name, tuple((k.field, _INDEX_ORDER[k.type]) for k in ix.keys), ix.unique)
        for ix in spec.indexes
    )


def _indexes_note(indexes: tuple[IndexSpec, ...]) -> str:
    return f", indexes {', '.join(ix.name for ix in indexes)}" if indexes else ""
