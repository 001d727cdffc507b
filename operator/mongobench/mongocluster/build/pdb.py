"""PodDisruptionBudgets: at most one member of a replica set (or one mongos) down by eviction."""

from __future__ import annotations

from typing import Any

from mongobench.mongo.model import Role
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.labels import Component
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.build.podspec import object_meta


def build_pdb(
    layout: ClusterLayout, workload: str, component: Component, replset: str | None = None
) -> dict[str, Any]:
    """maxUnavailable 1 keeps a majority of any set of 3+ members. It is 1 even for a single
    member set, where 0 would block every node drain forever."""
    labels = lbl.component_labels(layout.name, component, replset)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": object_meta(layout.pdb_name(workload), layout.namespace, labels),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(labels)}},
    }


def build_pdbs(layout: ClusterLayout) -> list[dict[str, Any]]:
    """One per replica set and one for the routers; none for a standalone mongod: its only pod
    is its whole availability, so a budget could only block node drains (0) or allow what
    eviction does anyway (1)."""
    out = [
        build_pdb(layout, rs.name, rs.component, rs.name)
        for rs in layout.replica_sets
        if rs.role is not Role.STANDALONE
    ]
    if layout.sharded:
        out.append(build_pdb(layout, layout.mongos, "mongos"))
    return out
