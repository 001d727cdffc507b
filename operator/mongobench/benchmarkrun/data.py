"""The MongoDB side of a BenchmarkRun: drop, create and shard the benchmark collection.

Through mongobench.mongo (nothing else talks to mongod), with the cluster's administrator
credentials. For an external database (uriSecretRef) the operator holds no administrator
credentials: the collection is left as the user prepared it, and the status says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.benchmarkrun.orchestrate import DataOps
from mongobench.k8s.api import KubeApi
from mongobench.mongo.model import Mongos, ShardingSpec
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.provision import desired
from mongobench.mongocluster.reconcile import administration


class ClusterData(DataOps):
    def __init__(self, kube: KubeApi, admins: AdminPool) -> None:
        self.kube = kube  # the cluster's Secrets are read through it
        self.admins = admins  # the operator's, shared with the MongoCluster reconciler

    def prepare(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        if cluster is None:
            return "external database: the collection is used as it is"
        d = desired(self.kube, cluster, cluster.get("status") or {})
        with administration(self.kube, d, self.admins) as (admin, _):
            if d.layout.sharded:
                mongos = Mongos((d.layout.mongos_host,))
                admin.drop_collection(mongos, spec.database, spec.collection)
                sharding = spec.sharding
                admin.shard_collection(
                    mongos,
                    ShardingSpec(
                        spec.database,
                        spec.collection,
                        key=sharding.key,
                        hashed=sharding.hashed,
                        initial_chunks=sharding.pre_split_chunks,
                    ),
                )
                kind = "hashed" if sharding.hashed else "ranged"
                return (
                    f"{spec.database}.{spec.collection} recreated, sharded on {kind} {sharding.key}"
                )
            (rs,) = d.layout.replica_sets
            admin.drop_collection(rs.to_spec(), spec.database, spec.collection)
            admin.ensure_collection(rs.to_spec(), spec.database, spec.collection)
            return f"{spec.database}.{spec.collection} recreated"

    def distribution(
        self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        if cluster is None:
            return None
        d = desired(self.kube, cluster, cluster.get("status") or {})
        if not d.layout.sharded:
            return None
        with administration(self.kube, d, self.admins) as (admin, _):
            mongos = Mongos((d.layout.mongos_host,))
            return admin.distribution(mongos, spec.database, spec.collection).as_status()

    def drop(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        if cluster is None:
            return "external database: nothing dropped (no administrator credentials)"
        d = desired(self.kube, cluster, cluster.get("status") or {})
        target = (
            Mongos((d.layout.mongos_host,))
            if d.layout.sharded
            else d.layout.replica_sets[0].to_spec()
        )
        with administration(self.kube, d, self.admins) as (admin, _):
            dropped = admin.drop_collection(target, spec.database, spec.collection)
        return f"{spec.database}.{spec.collection} {'dropped' if dropped else 'was already gone'}"
