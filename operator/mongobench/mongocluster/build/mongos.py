"""The mongos Deployment of a sharded cluster (stateless routers), and when it takes a new image."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.build.placement import preset as placement_preset
from mongobench.mongocluster.build.placement import role_resources, scheduling
from mongobench.mongocluster.build.platform import Preset, spread_across_zones
from mongobench.mongocluster.build.podspec import (
    common_args,
    mongo_container,
    object_meta,
    pod_template,
)
from mongobench.mongocluster.build.tls import mongos_secret

TERMINATION_GRACE_SECONDS = 30
CONTAINER = "mongos"


def mongos_args(spec: MongoClusterSpec, layout: ClusterLayout) -> list[str]:
    cfg = layout.config_server
    if cfg is None:
        raise ValueError("mongos needs a config server replica set (topology.type Sharded)")
    return [*common_args(spec), "--configdb", cfg.seed_list]


def build_mongos_deployment(
    spec: MongoClusterSpec, layout: ClusterLayout, preset: Preset
) -> dict[str, Any]:
    labels = lbl.component_labels(layout.name, "mongos")
    sched = scheduling(spec, "mongos")
    requirements = role_resources(spec, "mongos")
    main = mongo_container(CONTAINER, spec, requirements, mongos_args(spec, layout), [])
    # Never fewer routers than asked while rolling: benchmarks may be running. Under a preset
    # a surge router would need a node no router holds (Dedicated: a free node), which the
    # cluster may not have: the rollout would stall, so one router is replaced at a time.
    surge, unavailable = (1, 0) if placement_preset(spec) == "None" else (0, 1)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(layout.mongos, layout.namespace, labels),
        "spec": {
            "replicas": layout.mongos_replicas,
            "selector": {"matchLabels": dict(labels)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
            },
            "template": pod_template(
                spec,
                layout,
                labels,
                main,
                component="mongos",
                scheduling=sched,
                zone_spread=spread_across_zones(sched, preset),
                termination_grace_seconds=TERMINATION_GRACE_SECONDS,
                tls_secret=mongos_secret(layout),
            ),
        },
    }


def container_image(pod_spec: Mapping[str, Any], container: str) -> str | None:
    """The image of one container of a pod spec (a Pod's, or a workload's template's)."""
    for c in pod_spec.get("containers") or []:
        if c.get("name") == container:
            return str(c["image"])
    return None


def set_image(deployment: dict[str, Any], image: str) -> None:
    """Give the mongos container of a built Deployment `image` (see mongos_upgrade)."""
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        if c["name"] == CONTAINER:
            c["image"] = image


@dataclass(frozen=True)
class MongosUpgrade:
    image: str  # what the Deployment's mongos container gets now
    changes: bool  # `image` differs from the Deployment's template: apply it
    waiting: str | None  # why mongos is not current yet (the Updated condition); None: it is


def mongos_upgrade(
    wanted: str, deployment: Mapping[str, Any] | None, sets_upgraded: bool
) -> MongosUpgrade:
    """MongoDB's upgrade order ends with mongos: config servers, then the shards, then routers.

    `deployment` is the existing Deployment as read (None: not created yet, it starts on
    `wanted`); `sets_upgraded` whether every replica set's members all run `wanted`. Until then
    the routers keep the image they run; after, the Deployment's own rolling update (surge one,
    none unavailable) replaces them, and mongos is current once no old pod is left.
    """
    if deployment is None:
        return MongosUpgrade(wanted, False, None)
    running = container_image(deployment["spec"]["template"]["spec"], CONTAINER)
    if running is not None and running != wanted:
        if not sets_upgraded:
            return MongosUpgrade(running, False, "mongos waits for the shards to be upgraded")
        return MongosUpgrade(wanted, True, f"mongos: rolling to {wanted}")
    status = deployment.get("status") or {}
    generation = int(deployment["metadata"].get("generation") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    if (
        int(status.get("observedGeneration") or 0) < generation
        or int(status.get("replicas") or 0) > updated
    ):
        wanted_replicas = int(deployment["spec"].get("replicas") or 0)
        return MongosUpgrade(
            wanted, False, f"mongos: rolling out ({updated}/{wanted_replicas} routers updated)"
        )
    return MongosUpgrade(wanted, False, None)
