"""The label set on every object of a MongoCluster (recommended app.kubernetes.io labels)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Component = Literal["shard", "configsvr", "mongos", "replicaset", "standalone"]

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
MANAGED_BY = "app.kubernetes.io/managed-by"
COMPONENT = "app.kubernetes.io/component"
CLUSTER = "mongobench.io/cluster"
REPLSET = "mongobench.io/replset"

# The Secrets whose changes the operator acts on carry this label, and it watches only those
# (a label selector, handlers.mongocluster): the certificate Secrets it issues or has cert-manager
# issue, and a CA Secret the user names once they label it. Its other Secrets (keyfile, users,
# connection) are read when needed, never watched: at 200 clusters they were ~1,000 bodies for
# kopf to list and hold, and their changes wake nothing.
WATCH = "mongobench.io/watch"
WATCHED = {WATCH: "true"}
WATCH_SELECTOR = f"{WATCH}=true"


def watched(obj: Mapping[str, Any]) -> bool:
    """Whether the object carries the watch label."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(WATCH) == "true"


def cluster_labels(cluster: str) -> dict[str, str]:
    """Labels shared by every object of the cluster; also the PodMonitor's pod selector."""
    return {
        NAME: "mongodb",
        INSTANCE: cluster,
        MANAGED_BY: "mongobench",
        CLUSTER: cluster,
    }


def component_labels(
    cluster: str, component: Component, replset: str | None = None
) -> dict[str, str]:
    """Labels of one component's objects and pods.

    Every value is derived from names that never change, so the same dict doubles as the
    (immutable) selector of StatefulSets and Deployments.
    """
    out = cluster_labels(cluster)
    out[COMPONENT] = component
    if replset is not None:
        out[REPLSET] = replset
    return out


# A duet's pods (placement.duet; the clients' spec.duet): the pair's name, and for a database
# pod its place in the cluster (its replica set's role and shard, or mongos) without the
# cluster's name, so each pod finds its counterpart on the other side.
DUET = "mongobench.io/duet"
DUET_PLACE = "mongobench.io/duet-place"
POD_INDEX = "apps.kubernetes.io/pod-index"


# Benchmark client pods (BenchmarkRun Jobs): never the cluster's own labels, which select the
# database pods (PodMonitor, CPU per role). CLIENT_OF names the MongoCluster a client targets,
# so the cluster's NetworkPolicy can admit it (networkpolicy.py).
CLIENT_COMPONENT_LABEL = "mongobench.io/component"
CLIENT_COMPONENT = "benchmark-client"
CLIENT_OF = "mongobench.io/client-of"


def client_labels(cluster: str) -> dict[str, str]:
    """The labels of the benchmark clients that target `cluster` (a NetworkPolicy peer)."""
    return {CLIENT_COMPONENT_LABEL: CLIENT_COMPONENT, CLIENT_OF: cluster}
