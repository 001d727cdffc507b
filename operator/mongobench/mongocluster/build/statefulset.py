"""A replica set's StatefulSet: stable pod names, one volume claim per member."""

from __future__ import annotations

from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongo.model import Role
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.build.placement import role_of, role_resources, scheduling
from mongobench.mongocluster.build.platform import Preset, spread_across_zones, storage_class
from mongobench.mongocluster.build.podspec import (
    common_args,
    mongo_container,
    object_meta,
    pod_template,
)
from mongobench.mongocluster.build.tls import member_secret

DATA_DIR = "/data/db"
# mongod flushes and closes WiredTiger on SIGTERM; a kill mid-checkpoint means slow recovery.
TERMINATION_GRACE_SECONDS = 60


def mongod_args(spec: MongoClusterSpec, rs: ReplicaSetLayout) -> list[str]:
    # --dbpath explicitly: with --configsvr mongod would otherwise use /data/configdb.
    args = [*common_args(spec), "--dbpath", DATA_DIR]
    if rs.role is not Role.STANDALONE:  # a standalone keeps no oplog: nothing to replicate
        args += ["--replSet", rs.name]
    if rs.role is Role.CONFIG:
        args.append("--configsvr")
    elif rs.role is Role.SHARD:
        args.append("--shardsvr")
    cache = spec.storage.wired_tiger_cache_size_gb
    # Data-bearing members only: the cache size is validated against resources.mongod, and
    # config servers have their own (usually smaller) resources.
    if cache is not None and rs.role is not Role.CONFIG:
        args += ["--wiredTigerCacheSizeGB", f"{cache:g}"]
    return args


def _volume_claim(spec: MongoClusterSpec, preset: Preset, labels: dict[str, str]) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.storage.size}},
    }
    sc = storage_class(spec, preset)
    if sc is not None:  # omitted: the cluster's default StorageClass
        claim["storageClassName"] = sc
    return {"metadata": {"name": "data", "labels": dict(labels)}, "spec": claim}


def build_statefulset(
    spec: MongoClusterSpec, layout: ClusterLayout, rs: ReplicaSetLayout, preset: Preset
) -> dict[str, Any]:
    labels = lbl.component_labels(layout.name, rs.component, rs.name)
    data_mount = {"name": "data", "mountPath": DATA_DIR}
    sched = scheduling(spec, role_of(rs), rs.shard_index)
    requirements = role_resources(spec, rs.resource_component, rs.shard_index)
    main = mongo_container("mongod", spec, requirements, mongod_args(spec, rs), [data_mount])
    when_deleted = "Delete" if spec.deletion_policy == "Delete" else "Retain"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": object_meta(rs.name, layout.namespace, labels),
        "spec": {
            "serviceName": rs.headless_service,
            "replicas": rs.members,
            # Members start together; replSetInitiate waits for all of them anyway.
            "podManagementPolicy": "Parallel",
            # The operator restarts members itself, primary last (mongo.plan.next_rolling_step).
            "updateStrategy": {"type": "OnDelete"},
            # Scaling down keeps a member's data; deletion follows spec.deletionPolicy.
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": when_deleted,
                "whenScaled": "Retain",
            },
            "selector": {"matchLabels": dict(labels)},
            "template": pod_template(
                spec,
                layout,
                labels,
                main,
                component=rs.component,
                scheduling=sched,
                zone_spread=spread_across_zones(sched, preset),
                termination_grace_seconds=TERMINATION_GRACE_SECONDS,
                tls_secret=member_secret(rs),
            ),
            "volumeClaimTemplates": [_volume_claim(spec, preset, labels)],
        },
    }
