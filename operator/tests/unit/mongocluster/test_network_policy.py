"""Unit tier: who a MongoCluster's NetworkPolicies let in, judged by Kubernetes' own rules.

`admits` evaluates the built policies as a CNI does (a pod selected by any policy accepts only
what some rule of one of them allows; peers are matched by namespace and pod labels), so each
test states what a user would see on an enforcing cluster: a client of this cluster connects,
a pod of another namespace does not. The pods are the ones the builders make (StatefulSet and
Deployment templates, the benchmark Job's template), not labels written again here. The bytes
of the policies are in the golden files (test_golden.py); the apiserver admits them at cluster
tier (e2e/local/tests/test_cluster_network_policy.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from cluster_fixtures import REPLICA_SET, SHARDED, build

from mongobench.api import BenchmarkRunSpec
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.benchmarkrun.build.jobs import RunRef, build_job
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.config import Peers
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS

pytestmark = pytest.mark.unit

NS = "bench"


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: Mapping[str, str]
    namespace_labels: Mapping[str, str] | None = None

    @property
    def ns_labels(self) -> Mapping[str, str]:
        return self.namespace_labels or {"kubernetes.io/metadata.name": self.namespace}


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and value in expr["values"]:
            return False
    return True


def peer_matches(peer: Mapping[str, Any], source: Pod, policy_ns: str) -> bool:
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], source.ns_labels):
            return False
    elif source.namespace != policy_ns:
        return False
    return selects(peer.get("podSelector") or {}, source.labels)


def admits(policies: list[dict[str, Any]], source: Pod, target: Pod, port: int) -> bool:
    applying = [
        p
        for p in policies
        if p["metadata"]["namespace"] == target.namespace
        and selects(p["spec"]["podSelector"], target.labels)
    ]
    if not applying:
        return True  # no policy selects the pod: everything reaches it
    return any(
        any(port_rule["port"] == port for port_rule in rule["ports"])
        and any(peer_matches(peer, source, p["metadata"]["namespace"]) for peer in rule["from"])
        for p in applying
        for rule in p["spec"]["ingress"]
    )


def pods_of(objects: list[dict[str, Any]]) -> dict[str, Pod]:
    """Each workload's pod, by the workload's name."""
    return {
        o["metadata"]["name"]: Pod(NS, o["spec"]["template"]["metadata"]["labels"])
        for o in objects
        if o["kind"] in ("StatefulSet", "Deployment")
    }


def policies(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "NetworkPolicy"]


def client_of(cluster: str | None, namespace: str = NS) -> Pod:
    spec = BenchmarkRunSpec.parse(
        {"clusterRef": {"name": cluster or "x"}, "workloads": [{"name": "a"}]}
    )
    ref = RunRef("r1", namespace, "uid-1", "c-connection", "uri", cluster, "ycsb:0.1.0")
    job = build_job(spec, next(s for s in make_plan(spec) if s.kind == "run"), ref)
    return Pod(namespace, job["spec"]["template"]["metadata"]["labels"])


OPERATOR = Pod("mongobench", dict(Peers().operator_pod_labels))
PROMETHEUS = Pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
STRANGER = Pod(NS, {"app": "curl"})


def test_replica_set_members_admit_their_cluster_its_clients_and_the_operator_only() -> None:
    objects = build(REPLICA_SET)
    pods = pods_of(objects)
    member = pods["demo-rs0"]
    allowed = policies(objects)
    assert admits(allowed, pods["demo-rs0"], member, 27017)  # replication between members
    assert admits(allowed, client_of("demo"), member, 27017)
    assert admits(allowed, OPERATOR, member, 27017)
    assert not admits(allowed, STRANGER, member, 27017)
    assert not admits(allowed, client_of("other"), member, 27017)  # another cluster's client
    assert not admits(allowed, client_of("demo", "elsewhere"), member, 27017)
    assert not admits(allowed, Pod("elsewhere", OPERATOR.labels), member, 27017)
    # The scraper reaches the exporter, and only the exporter.
    assert admits(allowed, PROMETHEUS, member, 9216)
    assert not admits(allowed, PROMETHEUS, member, 27017)
    assert not admits(allowed, client_of("demo"), member, 9216)


def test_sharded_clients_reach_mongos_only_and_members_reach_each_other() -> None:
    objects = build(SHARDED)
    pods = pods_of(objects)
    allowed = policies(objects)
    mongos, shard, config = pods["demo-mongos"], pods["demo-shard0"], pods["demo-cfg"]
    assert admits(allowed, client_of("demo"), mongos, 27017)
    assert admits(allowed, OPERATOR, mongos, 27017)
    assert not admits(allowed, STRANGER, mongos, 27017)
    assert not admits(allowed, client_of("demo"), shard, 27017)
    for target in (shard, config):
        assert admits(allowed, mongos, target, 27017)
        assert admits(allowed, OPERATOR, target, 27017)
    assert admits(allowed, shard, config, 27017)
    assert admits(allowed, config, shard, 27017)
    # The spec's own scraper namespaces replace the operator's default.
    scraper = Pod("obs", {}, {"team": "observability"})
    assert admits(allowed, scraper, shard, 9216)
    assert not admits(allowed, PROMETHEUS, shard, 9216)


def test_peers_follow_the_operator_config() -> None:
    peers = Peers("ops", (("app", "mongobench-operator"),), (("monitoring", "yes"),))
    spec = MongoClusterSpec.parse(REPLICA_SET)
    layout = cluster_layout("demo", NS, spec)
    objects = build_workload_objects(spec, layout, PRESETS["kind"], peers=peers)
    member = pods_of(objects)["demo-rs0"]
    assert admits(policies(objects), Pod("ops", {"app": "mongobench-operator"}), member, 27017)
    assert not admits(policies(objects), OPERATOR, member, 27017)
    assert admits(policies(objects), Pod("m", {}, {"monitoring": "yes"}), member, 9216)


def test_without_the_switch_or_the_exporter() -> None:
    off = {k: v for k, v in REPLICA_SET.items() if k != "networkPolicy"}
    assert policies(build(off)) == []
    no_exporter = {**REPLICA_SET, "monitoring": {"exporter": False}}
    (policy,) = policies(build(no_exporter))
    assert [r["ports"][0]["port"] for r in policy["spec"]["ingress"]] == [27017]


def test_policies_come_before_the_pods_they_protect() -> None:
    kinds = [o["kind"] for o in build(SHARDED, with_secrets=False)]
    assert kinds[:2] == ["NetworkPolicy", "NetworkPolicy"]


def test_the_evaluator_refuses_what_no_rule_allows() -> None:
    """The judge is not vacuous: with a policy that has no rule, nothing gets in."""
    target = Pod(NS, {"a": "b"})
    deny_all = [{"metadata": {"namespace": NS}, "spec": {"podSelector": {}, "ingress": []}}]
    assert not admits(deny_all, OPERATOR, target, 27017)
    assert admits([], STRANGER, target, 27017)
