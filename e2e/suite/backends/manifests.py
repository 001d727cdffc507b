"""The custom resources the scenarios create: the same documents on every backend.

Sized for a laptop or a CI runner running kind (every mongod with a 0.25 GB WiredTiger cache and
small requests), placed as the kind recipe labels its workers: MongoDB on `database` nodes, the
benchmark clients on the `clients` node (the local backend labels its fake nodes the same way).
"""

from __future__ import annotations

import copy
from typing import Any

from localplane.tools import versions

Manifest = dict[str, Any]

GROUP, VERSION = "mongobench.io", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
# The MongoDB releases the suite runs (images mongo:<version>, pinned in hack/versions.env): one
# per supported release series, oldest first, and the pair the upgrade scenario goes between.
SUPPORTED_VERSIONS = tuple(versions()[f"MONGO_{s}_0_VERSION"] for s in (5, 6, 7, 8))
OLD_VERSION, NEW_VERSION = versions()["MONGO_OLD_VERSION"], versions()["MONGO_NEW_VERSION"]
ROLE_LABEL = "mongobench.io/role"
DATABASE_NODES = {ROLE_LABEL: "database"}
CLIENT_NODES = {ROLE_LABEL: "clients"}
CACHE_GB = 0.25  # mongod's smallest WiredTiger cache: many members fit on one runner
# The operator's MONGOBENCH_RESULT_PART_BYTES on both backends (e2e/kind/values/mongobench.yaml):
# client result documents split into parts this small span several ConfigMaps.
RESULT_PART_BYTES = "2048"

_SMALL = {"requests": {"cpu": "50m", "memory": "192Mi"}}
_COMMON: Manifest = {
    "platform": "kind",
    "storage": {"size": "1Gi", "wiredTigerCacheSizeGB": CACHE_GB},
    "resources": {c: _SMALL for c in ("mongod", "configServer", "mongos")},
    "placement": {"nodeSelector": DATABASE_NODES},
}


def replica_set(members: int, **extra: Any) -> Manifest:
    return {"type": "ReplicaSet", "replicaSet": {"members": members, **extra}}


def standalone() -> Manifest:
    return {"type": "Standalone"}


def sharded(
    shards: int, members_per_shard: int = 1, config_servers: int = 1, mongos: int = 1
) -> Manifest:
    return {
        "type": "Sharded",
        "sharded": {
            "shards": shards,
            "membersPerShard": members_per_shard,
            "configServers": config_servers,
            "mongos": mongos,
        },
    }


def mongocluster(
    name: str, topology: Manifest, version: str = OLD_VERSION, **spec: Any
) -> Manifest:
    body = copy.deepcopy(_COMMON) | {"version": version, "topology": topology} | spec
    return {
        "apiVersion": API_VERSION,
        "kind": "MongoCluster",
        "metadata": {"name": name},
        "spec": body,
    }


def benchmarkrun(name: str, cluster: str, **spec: Any) -> Manifest:
    """Small numbers: FerretDB (the local data path) slows down past ~1,000 records."""
    body: Manifest = {
        "clusterRef": {"name": cluster},
        "workloads": [{"name": w} for w in "abcdef"],
        "load": {"recordCount": 200, "threads": 2},
        "run": {"operationCount": 200, "threads": 2, "statusIntervalSeconds": 1},
        "repetitions": 2,
        "clients": {"parallelism": 2, "nodeSelector": CLIENT_NODES},
        "labels": {"suite": "e2e"},
    }
    body.update(spec)
    return {
        "apiVersion": API_VERSION,
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": body,
    }
