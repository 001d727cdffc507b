"""Unit tier: placement and sizing per role (mongocluster.build.placement and the builders using
it),
the CoLocated and Dedicated presets' scheduling terms, and the PlacementFeasible judgement of
the Nodes. That the real kube-scheduler lays the presets out as intended is proven at cluster
tier (e2e/local/tests/test_placement_presets.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cluster_fixtures import build, by_kind
from fake_kube import FakeKube, unit_clock

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.benchmarkrun.build.jobs import CLUSTER_LABEL
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.placement import feasibility, has_hard_rules, scheduling
from mongobench.mongocluster.decide.sync_plan import placement_warning
from mongobench.runtime.locks import ResourceLocks

pytestmark = pytest.mark.unit

HOST = "kubernetes.io/hostname"


def sharded(shards: int = 3, members: int = 1, cfg: int = 3, mongos: int = 3) -> dict[str, Any]:
    return {
        "version": "7.0.14",
        "topology": {
            "type": "Sharded",
            "sharded": {
                "shards": shards,
                "membersPerShard": members,
                "configServers": cfg,
                "mongos": mongos,
            },
        },
    }


def with_placement(spec: dict[str, Any], **placement: Any) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    out["placement"] = placement
    return out


def workloads(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] in ("StatefulSet", "Deployment")}


def pod(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"])


def selector_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    wanted = term["labelSelector"]["matchLabels"]
    return all(labels.get(k) == v for k, v in wanted.items())


def node(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name, **(labels or {})}},
        "spec": spec,
    }


# --- resolution per role -------------------------------------------------------------------


def test_role_blocks_replace_the_defaults_field_by_field() -> None:
    spec = MongoClusterSpec.parse(
        with_placement(
            sharded(),
            nodeSelector={"pool": "db"},
            tolerations=[{"key": "db", "operator": "Exists"}],
            antiAffinity="Required",
            mongos={"nodeSelector": {"pool": "routers"}},
            configServer={"tolerations": [], "antiAffinity": "Preferred"},
        )
    )
    mongos, cfg, shard = (
        scheduling(spec, "mongos"),
        scheduling(spec, "configServer"),
        scheduling(spec, "mongod", 0),
    )
    # mongos: its own node selector, the default tolerations and anti-affinity.
    assert dict(mongos.node_selector) == {"pool": "routers"}
    assert [t.key for t in mongos.tolerations] == ["db"]
    assert mongos.anti_affinity == "Required"
    # configServer: an empty list set explicitly replaces the default (tolerates nothing).
    assert cfg.tolerations == () and cfg.anti_affinity == "Preferred"
    assert dict(cfg.node_selector) == {"pool": "db"}
    assert dict(shard.node_selector) == {"pool": "db"} and shard.anti_affinity == "Required"


def test_a_shard_block_places_and_sizes_that_shard_only() -> None:
    spec = with_placement(
        sharded(shards=2, members=3),
        mongod={"nodeSelector": {"pool": "db"}},
        shards={"1": {"nodeSelector": {"pool": "big"}, "resources": {"limits": {"cpu": "8"}}}},
    )
    spec["resources"] = {"mongod": {"limits": {"cpu": "2"}}}
    sets = workloads(build(spec, with_secrets=False))
    shard0, shard1 = pod(sets["demo-shard0"]), pod(sets["demo-shard1"])
    assert shard0["nodeSelector"] == {"pool": "db"}
    assert shard1["nodeSelector"] == {"pool": "big"}
    assert shard0["containers"][0]["resources"] == {"limits": {"cpu": "2"}}
    assert shard1["containers"][0]["resources"] == {"limits": {"cpu": "8"}}
    # Config servers and routers keep the defaults (none here).
    assert "nodeSelector" not in pod(sets["demo-cfg"])
    assert "nodeSelector" not in pod(sets["demo-mongos"])


def test_node_affinity_and_tolerations_reach_the_pods_as_kubernetes_writes_them() -> None:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cpu-gen", "operator": "Gt", "values": ["3"]}]}
        ]
    }
    spec = with_placement(
        sharded(),
        nodeAffinity={"requiredDuringSchedulingIgnoredDuringExecution": required},
        mongos={
            "tolerations": [
                {"key": "routers", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
            ],
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {"matchExpressions": [{"key": "pool", "operator": "Exists"}]},
                    }
                ]
            },
        },
    )
    sets = workloads(build(spec, with_secrets=False))
    cfg, mongos = pod(sets["demo-cfg"]), pod(sets["demo-mongos"])
    assert cfg["affinity"]["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": required
    }
    exists = {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}
    assert mongos["affinity"]["nodeAffinity"] == {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": exists}]
    }
    assert mongos["tolerations"] == [
        {"key": "routers", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in cfg


# --- presets ---------------------------------------------------------------------------------


def test_colocated_keeps_each_role_apart_and_joins_config_and_mongos_to_shard_members() -> None:
    objects = build(with_placement(sharded(), preset="CoLocated"), with_secrets=False)
    sets = workloads(objects)
    labels = {n: o["spec"]["template"]["metadata"]["labels"] for n, o in sets.items()}
    for name, obj in sets.items():
        aff = pod(obj)["affinity"]
        (anti,) = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert anti["topologyKey"] == HOST
        # Repels exactly the pods of its own role, of every shard for a shard member.
        repelled = {n for n, lab in labels.items() if selector_matches(anti, lab)}
        role = labels[name]["app.kubernetes.io/component"]
        same_role = {n for n, lab in labels.items() if lab["app.kubernetes.io/component"] == role}
        assert repelled == same_role
        if role == "shard":  # only a preference: the first shard members start anywhere
            assert set(aff["podAffinity"]) == {"preferredDuringSchedulingIgnoredDuringExecution"}
            terms = aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            near = {
                n for t in terms for n, lab in labels.items()
                if selector_matches(t["podAffinityTerm"], lab)
            }  # fmt: skip
            assert near == {"demo-cfg", "demo-mongos"}
        else:
            (join,) = aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            joined = {n for n, lab in labels.items() if selector_matches(join, lab)}
            assert joined == {"demo-shard0", "demo-shard1", "demo-shard2"}
            assert join["topologyKey"] == HOST


def test_dedicated_keeps_every_database_pod_of_the_cluster_apart_and_clients_out_of_it() -> None:
    objects = build(with_placement(sharded(shards=2, members=3), preset="Dedicated"))
    sets = workloads(objects)
    assert set(sets) == {"demo-cfg", "demo-shard0", "demo-shard1", "demo-mongos"}
    for obj in sets.values():
        (anti,) = pod(obj)["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert anti["topologyKey"] == HOST
        assert all(
            selector_matches(anti, o["spec"]["template"]["metadata"]["labels"])
            for o in sets.values()
        )
        # Benchmark clients are kept off by their own (preferred) rule, not counted here.
        assert CLUSTER_LABEL in anti["labelSelector"]["matchLabels"]


def test_presets_replace_routers_one_at_a_time_instead_of_surging() -> None:
    def strategy(spec: dict[str, Any]) -> dict[str, Any]:
        (dep,) = by_kind(build(spec, with_secrets=False), "Deployment")
        return dict(dep["spec"]["strategy"]["rollingUpdate"])

    assert strategy(sharded()) == {"maxSurge": 1, "maxUnavailable": 0}
    for preset in ("CoLocated", "Dedicated"):
        assert strategy(with_placement(sharded(), preset=preset)) == {
            "maxSurge": 0,
            "maxUnavailable": 1,
        }


def test_preset_none_is_the_anti_affinity_of_before() -> None:
    plain = build(sharded(), with_secrets=False)
    explicit = build(with_placement(sharded(), preset="None"), with_secrets=False)
    assert plain == explicit


# --- feasibility against the Nodes -----------------------------------------------------------


def judge(spec_dict: dict[str, Any], nodes: list[dict[str, Any]]) -> tuple[str, str, str]:
    spec = MongoClusterSpec.parse(spec_dict)
    return feasibility(spec, cluster_layout("demo", "bench", spec), nodes)


def test_dedicated_counts_one_node_per_database_pod() -> None:
    spec = with_placement(sharded(shards=2, members=3, cfg=3, mongos=2), preset="Dedicated")
    eleven = [node(f"n{i}") for i in range(11)]
    status, reason, message = judge(spec, eleven[:10])
    assert (status, reason) == (cond.FALSE, cond.NOT_ENOUGH_NODES)
    assert "need 11 nodes, 10 qualify" in message
    assert judge(spec, eleven)[:2] == (cond.TRUE, cond.ENOUGH_NODES)


def test_taints_cordons_and_selectors_decide_which_nodes_qualify() -> None:
    spec = with_placement(
        sharded(shards=1, members=1, cfg=1, mongos=1),
        preset="Dedicated",
        nodeSelector={"pool": "db"},
        mongos={"tolerations": [{"key": "routers", "operator": "Exists"}]},
    )
    db = {"pool": "db"}
    nodes = [
        node("a", db),
        node("b", db, unschedulable=True),  # cordoned
        node("c", db, taints=[{"key": "routers", "effect": "NoSchedule"}]),  # routers only
        node("d", {"pool": "other"}),
        node("e", db, taints=[{"key": "x", "effect": "PreferNoSchedule"}]),  # soft: counts
    ]
    assert judge(spec, nodes)[0] == cond.TRUE  # shard a|e, config a|e, mongos a|c|e
    # Without the tainted node the three pods share a and e.
    status, _, message = judge(spec, [n for n in nodes if n["metadata"]["name"] != "c"])
    assert status == cond.FALSE and "need 3 nodes, 2 qualify" in message


def test_pods_of_different_roles_competing_for_the_same_nodes_are_counted_together() -> None:
    # Each role fits its own two nodes; the shard and config servers cannot share them.
    spec = with_placement(
        sharded(shards=1, members=1, cfg=1, mongos=1),
        preset="Dedicated",
        nodeSelector={"pool": "small"},
        mongos={"nodeSelector": {"pool": "routers"}},
    )
    nodes = [node("s1", {"pool": "small"}), node("r1", {"pool": "routers"})]
    status, _, message = judge(spec, nodes)
    assert status == cond.FALSE
    assert "demo-cfg, demo-shard0 need 2 nodes, 1 qualify" in message


def test_colocated_needs_one_node_per_shard_member_and_config_servers_beside_them() -> None:
    spec = with_placement(
        sharded(shards=3, members=1, cfg=3, mongos=3),
        preset="CoLocated",
        configServer={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                    ]
                }
            }
        },
    )
    ssd = {"disk": "ssd"}
    status, _, message = judge(spec, [node("a", ssd), node("b", ssd)])
    assert status == cond.FALSE and "need 3 nodes, 2 qualify" in message  # the shard members
    status, _, message = judge(spec, [node("a", ssd), node("b", ssd), node("c")])
    assert status == cond.FALSE  # config servers may use only two of the shard nodes
    assert "beside a shard member" in message and "demo-cfg need 3 nodes, 2 qualify" in message
    assert judge(spec, [node(n, ssd) for n in "abc"])[0] == cond.TRUE


def test_gt_and_lt_compare_integers_and_never_match_other_values() -> None:
    spec = with_placement(
        {"version": "7.0.14", "topology": {"replicaSet": {"members": 2}}},
        antiAffinity="Required",
        nodeAffinity={
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]},
                    {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["-1"]}]},
                ]
            }
        },
    )
    nodes = [node("a", {"gen": "4"}), node("b", {"gen": "3"}), node("c", {"gen": "x"})]
    status, _, message = judge(spec, nodes)
    assert status == cond.FALSE and "antiAffinity Required" in message
    assert "need 2 nodes, 1 qualify" in message
    assert judge(spec, [*nodes, node("d", {"gen": "-2"})])[0] == cond.TRUE


def test_only_hard_rules_call_for_the_judgement() -> None:
    def hard(spec_dict: dict[str, Any]) -> bool:
        spec = MongoClusterSpec.parse(spec_dict)
        return has_hard_rules(spec, cluster_layout("demo", "bench", spec))

    assert not hard(sharded())  # Preferred by default
    assert hard(with_placement(sharded(), preset="Dedicated"))
    assert hard(with_placement(sharded(), mongos={"antiAffinity": "Required"}))
    assert not hard(with_placement(sharded(), preset="None"))


def test_the_warning_is_posted_when_the_condition_turns_false_only() -> None:
    short = (cond.FALSE, cond.NOT_ENOUGH_NODES, "need 3 nodes, 2 qualify")
    assert placement_warning({}, short) == "need 3 nodes, 2 qualify"
    was_false = {"conditions": [{"type": cond.PLACEMENT_FEASIBLE, "status": cond.FALSE}]}
    assert placement_warning(was_false, short) is None
    assert placement_warning({}, (cond.TRUE, cond.ENOUGH_NODES, "ok")) is None
    assert placement_warning({}, None) is None


# --- the controller: condition and Event ---------------------------------------------------


def test_the_sync_says_when_the_nodes_cannot_hold_the_preset_and_when_they_did() -> None:
    cluster = {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "MongoCluster",
        "metadata": {"namespace": "ns", "name": "c"},
        "spec": with_placement(sharded(shards=1, members=3, cfg=1, mongos=1), preset="Dedicated"),
    }
    kube = FakeKube(cluster, *(node(f"n{i}") for i in range(3)))
    admins = AdminPool()

    def sync() -> dict[str, Any]:
        reconcile.sync(
            kube, "ns", "c", ResourceLocks(), admins, clock=unit_clock, config=OperatorConfig()
        )
        found = kube.get("MongoCluster", "ns", "c")
        assert found is not None
        return found

    try:
        stored = kube.get("MongoCluster", "ns", "c")
        assert stored is not None
        reconcile.provision(kube, stored, unit_clock(), OperatorConfig())
        status = sync()["status"]
        feasible = get_condition(status["conditions"], cond.PLACEMENT_FEASIBLE)
        assert feasible is not None and feasible["status"] == cond.FALSE
        assert "need 5 nodes, 3 qualify" in feasible["message"]
        assert kube.reasons().count(cond.EVENT_NOT_ENOUGH_NODES) == 1
        sync()
        assert kube.reasons().count(cond.EVENT_NOT_ENOUGH_NODES) == 1  # not again

        for i in range(3, 5):
            kube.put(node(f"n{i}"))
        feasible = get_condition(sync()["status"]["conditions"], cond.PLACEMENT_FEASIBLE)
        assert feasible is not None and feasible["reason"] == cond.ENOUGH_NODES

        # The preset dropped: nothing left to judge, the condition goes.
        kube.objects[("MongoCluster", "ns", "c")]["spec"]["placement"] = {}
        assert get_condition(sync()["status"]["conditions"], cond.PLACEMENT_FEASIBLE) is None
    finally:
        admins.close()


def test_a_duets_pods_pair_with_the_other_sides_pod_of_the_same_place_and_ordinal() -> None:
    # Two clusters of one Duet (the experiment sets placement.duet on both): each pod carries
    # the pair and its place without the cluster's name, and requires the node of the other
    # side's pod of that place and ordinal; the preset's own terms stay.
    sides = [
        build(with_placement(sharded(2, 1, 1, 1), duet="x", preset="CoLocated"), name=n)
        for n in ("x-k0", "x-k1")
    ]
    places = []
    for objects in sides:
        mine = {}
        for o in objects:
            if o["kind"] not in ("StatefulSet", "Deployment"):
                continue
            template = o["spec"]["template"]
            labels = template["metadata"]["labels"]
            assert labels["mongobench.io/duet"] == "x"
            assert "mongobench.io/duet" not in o["spec"]["selector"]["matchLabels"]
            required = template["spec"]["affinity"]["podAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]
            assert required[-1] == {
                "labelSelector": {
                    "matchLabels": {
                        "mongobench.io/duet": "x",
                        "mongobench.io/duet-place": labels["mongobench.io/duet-place"],
                    }
                },
                "matchLabelKeys": ["apps.kubernetes.io/pod-index"],
                "topologyKey": HOST,
            }
            mine[o["metadata"]["name"].removeprefix(o["metadata"]["labels"][CLUSTER_LABEL])] = (
                labels["mongobench.io/duet-place"]
            )
        places.append(mine)
    assert places[0] == places[1]  # the same places on both sides
    assert sorted(places[0].values()) == ["cfg", "mongos", "shard0", "shard1"]
    alone = build(sharded(2, 1, 1, 1), with_secrets=False)
    assert not any(
        "mongobench.io/duet" in o["spec"]["template"]["metadata"]["labels"]
        for o in alone
        if o["kind"] in ("StatefulSet", "Deployment")
    )
