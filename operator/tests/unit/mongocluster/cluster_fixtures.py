"""Shared inputs of the cluster-builder tests: fixed specs and fixed (fake) secret values."""

from __future__ import annotations

from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build.generate import GeneratedSecrets
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS, Preset
from mongobench.mongocluster.build.secrets import build_secrets

# Distinctive values so a leak into any non-Secret object is easy to spot.
FAKE = GeneratedSecrets(
    keyfile="S2V5ZmlsZUZvclRlc3RzT25seUtleWZpbGVGb3JUZXN0c09ubHk=",
    admin_password="admin-pw-Zq8LQ",
    benchmark_password="bench-pw-Xy3/+@:",
    exporter_password="exporter-pw-Kp2",
    operator_password="operator-pw-Zq7",
)

REPLICA_SET: dict[str, Any] = {
    "version": "7.0.14",
    "topology": {"type": "ReplicaSet", "replicaSet": {"members": 3}},
    "storage": {"size": "20Gi", "wiredTigerCacheSizeGB": 1.5},
    "resources": {
        "mongod": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "exporter": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    },
    "networkPolicy": {"enabled": True},
}

# Study 2's shape: one mongod without a replica set (no oplog), its cache set, monitored.
STANDALONE: dict[str, Any] = {
    "version": "7.0.14",
    "topology": {"type": "Standalone"},
    "storage": {"size": "20Gi", "wiredTigerCacheSizeGB": 1.5},
    "resources": {
        "mongod": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
    },
    "networkPolicy": {"enabled": True},
}

SHARDED: dict[str, Any] = {
    "version": "8.0.4",
    "topology": {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 3, "configServers": 3, "mongos": 2},
    },
    "storage": {"size": "50Gi", "storageClassName": "fast-ssd", "wiredTigerCacheSizeGB": 2},
    "resources": {
        "mongod": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
        "configServer": {"requests": {"cpu": "500m", "memory": "1Gi"}},
        "mongos": {"requests": {"cpu": "1", "memory": "1Gi"}},
    },
    "placement": {
        "antiAffinity": "Required",
        "spreadAcrossZones": True,
        "nodeSelector": {"workload": "mongodb"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "mongodb", "effect": "NoSchedule"}
        ],
    },
    "monitoring": {"podMonitorLabels": {"release": "kube-prometheus-stack"}},
    "networkPolicy": {"enabled": True, "scraperNamespaceLabels": {"team": "observability"}},
    "deletionPolicy": "Delete",
}

# The first study's 3-node cluster: each node runs a shard mongod, a config server and a mongos.
COLOCATED: dict[str, Any] = {
    "version": "7.0.14",
    "topology": {
        "type": "Sharded",
        "sharded": {"shards": 3, "membersPerShard": 1, "configServers": 3, "mongos": 3},
    },
    "resources": {
        "mongod": {"requests": {"cpu": "500m", "memory": "1Gi"}},
        "configServer": {"requests": {"cpu": "250m", "memory": "512Mi"}},
        "mongos": {"requests": {"cpu": "250m", "memory": "256Mi"}},
    },
    "placement": {"preset": "CoLocated", "nodeSelector": {"mongobench.io/pool": "database"}},
}

ROUTERS_POOL = {"key": "mongobench.io/pool", "operator": "In", "values": ["routers"]}
# Every process on its own node, each role on its own pool, one shard bigger than the other.
DEDICATED: dict[str, Any] = {
    "version": "8.0.4",
    "topology": {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 3, "configServers": 3, "mongos": 2},
    },
    "resources": {"mongod": {"requests": {"cpu": "2", "memory": "4Gi"}}},
    "placement": {
        "preset": "Dedicated",
        "tolerations": [{"key": "mongobench.io/dedicated", "operator": "Exists"}],
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "mongobench.io/pool", "operator": "In", "values": ["db"]}
                        ]
                    }
                ]
            }
        },
        "configServer": {"nodeSelector": {"node.kubernetes.io/instance-type": "m5.large"}},
        "mongos": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [ROUTERS_POOL]}]
                }
            }
        },
        "shards": {
            "1": {
                "nodeSelector": {"node.kubernetes.io/instance-type": "m5.4xlarge"},
                "resources": {"requests": {"cpu": "8", "memory": "16Gi"}},
            }
        },
    },
}


def build(
    spec_dict: dict[str, Any],
    preset: Preset = PRESETS["kind"],
    name: str = "demo",
    namespace: str = "bench",
    *,
    with_secrets: bool = True,
) -> list[dict[str, Any]]:
    spec = MongoClusterSpec.parse(spec_dict)
    layout = cluster_layout(name, namespace, spec)
    secrets = build_secrets(spec, layout, FAKE) if with_secrets else []
    return secrets + build_workload_objects(spec, layout, preset)


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("StatefulSet", "Deployment")
    ]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]
