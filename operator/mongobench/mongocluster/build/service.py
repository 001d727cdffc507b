"""Services: a headless one per replica set (member DNS names), a ClusterIP one for mongos."""

from __future__ import annotations

from typing import Any

from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import PORT, ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.build.podspec import object_meta

_PORTS = [{"name": "mongodb", "port": PORT, "targetPort": PORT, "protocol": "TCP"}]


def build_headless_service(layout: ClusterLayout, rs: ReplicaSetLayout) -> dict[str, Any]:
    labels = lbl.component_labels(layout.name, rs.component, rs.name)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(rs.headless_service, layout.namespace, labels),
        "spec": {
            "clusterIP": "None",
            # Members must resolve each other before they are ready: replSetInitiate and
            # initial sync happen while readiness is still false.
            "publishNotReadyAddresses": True,
            "selector": dict(labels),
            "ports": [dict(p) for p in _PORTS],
        },
    }


def build_mongos_service(layout: ClusterLayout) -> dict[str, Any]:
    labels = lbl.component_labels(layout.name, "mongos")
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(layout.mongos, layout.namespace, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(labels),
            "ports": [dict(p) for p in _PORTS],
        },
    }
