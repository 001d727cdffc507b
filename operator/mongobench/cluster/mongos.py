"""The mongos Deployment of a sharded cluster (stateless routers)."""

from __future__ import annotations

from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.cluster import labels as lbl
from mongobench.cluster.layout import ClusterLayout
from mongobench.cluster.platform import Preset, spread_across_zones
from mongobench.cluster.podspec import common_args, mongo_container, object_meta, pod_template

TERMINATION_GRACE_SECONDS = 30


def mongos_args(layout: ClusterLayout) -> list[str]:
    cfg = layout.config_server
    if cfg is None:
        raise ValueError("mongos needs a config server replica set (topology.type Sharded)")
    return [*common_args(), "--configdb", cfg.seed_list]


def build_mongos_deployment(
    spec: MongoClusterSpec, layout: ClusterLayout, preset: Preset
) -> dict[str, Any]:
    labels = lbl.component_labels(layout.name, "mongos")
    main = mongo_container("mongos", spec, "mongos", mongos_args(layout), [])
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(layout.mongos, layout.namespace, labels),
        "spec": {
            "replicas": layout.mongos_replicas,
            "selector": {"matchLabels": dict(labels)},
            # Never fewer routers than asked while rolling: benchmarks may be running.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": pod_template(
                spec,
                layout,
                labels,
                main,
                zone_spread=spread_across_zones(spec, preset),
                termination_grace_seconds=TERMINATION_GRACE_SECONDS,
            ),
        },
    }
