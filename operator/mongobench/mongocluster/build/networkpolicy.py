"""NetworkPolicies: who may reach a MongoCluster's pods (spec.networkPolicy.enabled).

mongod members (shards, config servers, or the replica set) admit on the MongoDB port only
the cluster's own pods (members replicate and heartbeat, mongos routes), the operator (it
administers every member) and, for a replica set, the benchmark clients that target the
cluster; with a sharded topology the clients reach mongos only. mongos admits the clients and
the operator. The exporter's port admits the scraper's namespaces. Every peer is chosen by
label, never by pod name, so scaling the cluster or its clients needs no policy change.

Only ingress is restricted: members reach each other, DNS and nothing else matters to them,
and an egress rule would have to name the apiserver's address, which a pure builder cannot know.
"""

from __future__ import annotations

from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import NAMESPACE_NAME_LABEL, Peers
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import PORT, ClusterLayout
from mongobench.mongocluster.build.podspec import EXPORTER_PORT, object_meta


def _operator(peers: Peers) -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: peers.operator_namespace}},
        "podSelector": {"matchLabels": dict(peers.operator_pod_labels)},
    }


def _metrics_rule(spec: MongoClusterSpec, peers: Peers) -> list[dict[str, Any]]:
    if not spec.monitoring.exporter:
        return []
    scraper = dict(sorted(spec.network_policy.scraper_namespace_labels.items()))
    return [
        {
            "from": [
                {
                    "namespaceSelector": {
                        "matchLabels": scraper or dict(peers.scraper_namespace_labels)
                    }
                }
            ],
            "ports": [{"protocol": "TCP", "port": EXPORTER_PORT}],
        }
    ]


def _policy(
    name: str,
    layout: ClusterLayout,
    pods: dict[str, Any],
    sources: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(name, layout.namespace, lbl.cluster_labels(layout.name)),
        "spec": {
            "podSelector": pods,
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": sources, "ports": [{"protocol": "TCP", "port": PORT}]},
                *metrics,
            ],
        },
    }


def build_network_policies(
    spec: MongoClusterSpec, layout: ClusterLayout, peers: Peers
) -> list[dict[str, Any]]:
    """The cluster's policies; none when spec.networkPolicy.enabled is false."""
    if not spec.network_policy.enabled:
        return []
    clients = {"podSelector": {"matchLabels": lbl.client_labels(layout.name)}}
    own_pods = {"podSelector": {"matchLabels": lbl.cluster_labels(layout.name)}}
    metrics = _metrics_rule(spec, peers)
    member_components = sorted({rs.component for rs in layout.replica_sets})
    members = {
        "matchLabels": lbl.cluster_labels(layout.name),
        "matchExpressions": [{"key": lbl.COMPONENT, "operator": "In", "values": member_components}],
    }
    member_sources = [own_pods, _operator(peers)]
    if not layout.sharded:
        member_sources.append(clients)
    out = [_policy(layout.members_network_policy, layout, members, member_sources, metrics)]
    if layout.sharded:
        mongos = {"matchLabels": lbl.component_labels(layout.name, "mongos")}
        out.append(
            _policy(
                layout.mongos_network_policy, layout, mongos, [clients, _operator(peers)], metrics
            )
        )
    return out
