"""Pure: where each role's pods run, and whether the Nodes can hold what the hard rules ask.

Resolution (`scheduling`, `role_resources`): spec.placement's own fields are the defaults of every
role; placement.mongod / configServer / mongos replace them field by field, and for a shard's
members placement.shards["<i>"] replaces them once more (its `resources` replace
resources.mongod for that shard).

Presets (`affinity`), as the real kube-scheduler applies them (required rules, on
kubernetes.io/hostname):

- CoLocated: shard members (of every shard) repel each other, config servers repel each other
  and mongos routers repel each other; config servers and mongos must land on a node holding a
  shard member (pod affinity). So the shards x membersPerShard shard members take that many
  nodes, one each, and every config server and mongos joins one of those nodes, at most one of
  each kind per node: with configServers = mongos = shards x membersPerShard every node holds
  one member of every role, the layout of a cluster of N VMs each running a shard mongod, a
  config server and a mongos. A shard member scheduled later (a rolling restart, a lost node)
  prefers a node holding a config server or a mongos, so it returns beside them rather than to
  a spare node of the pool.
- Dedicated: every database pod of the cluster repels every other (its cluster label): one
  process per node.

Why pod (anti-)affinity and not a node-index label scheme (node i labelled i, member i selecting
it): a StatefulSet's pods share one template, so member i cannot select node i without a
StatefulSet per member; someone would have to label the nodes, and relabel a replaced one.
Affinity needs no labels, holds for the mongos Deployment's pods as well, and holds again when a
pod is rescheduled. What it does not choose is which config server joins which shard member:
any pairing is the same layout.

Feasibility (`feasibility`, the PlacementFeasible condition): what CEL cannot check at
admission, because it needs the Nodes: how many nodes the hard rules need, and how many qualify
(not cordoned, matching nodeSelector and required nodeAffinity, every NoSchedule/NoExecute taint
tolerated). Capacity (requests against allocatable) is left to the scheduler, whose
FailedScheduling events on the pods say the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import combinations
from typing import Any, Literal

from mongobench.api.mongocluster import (
    AntiAffinity,
    MongoClusterSpec,
    NodeAffinity,
    NodeSelectorRequirement,
    PlacementPreset,
    ResourceComponent,
    ResourceRequirements,
    RolePlacement,
    Toleration,
)
from mongobench.k8s import conditions as c
from mongobench.k8s.conditions import ConditionStatus
from mongobench.mongo.model import Role
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.labels import Component
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout

HOSTNAME_KEY = "kubernetes.io/hostname"
PlacementRole = Literal["mongod", "configServer", "mongos"]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Scheduling:
    """One role's placement, resolved (no field left to inherit)."""

    node_selector: Mapping[str, str]
    node_affinity: NodeAffinity | None
    tolerations: tuple[Toleration, ...]
    anti_affinity: AntiAffinity
    spread_across_zones: bool | None  # None: the platform preset decides


def preset(spec: MongoClusterSpec) -> PlacementPreset:
    return spec.placement.preset or "None"


def role_of(rs: ReplicaSetLayout) -> PlacementRole:
    return "configServer" if rs.role is Role.CONFIG else "mongod"


def _role_block(spec: MongoClusterSpec, role: PlacementRole) -> RolePlacement | None:
    p = spec.placement
    return {"mongod": p.mongod, "configServer": p.config_server, "mongos": p.mongos}[role]


def scheduling(
    spec: MongoClusterSpec, role: PlacementRole, shard_index: int | None = None
) -> Scheduling:
    """The defaults, replaced by the role's block, then (shard members) by the shard's: a
    block's fields are named as Scheduling's, and each one set replaces the value whole."""
    p = spec.placement
    out = Scheduling(
        p.node_selector, p.node_affinity, p.tolerations, p.anti_affinity, p.spread_across_zones
    )
    layers = [_role_block(spec, role)]
    if role == "mongod" and shard_index is not None:
        layers.append(p.shards.get(str(shard_index)))
    for layer in layers:
        if layer is None:
            continue
        changes = {
            f.name: getattr(layer, f.name)
            for f in fields(RolePlacement)
            if getattr(layer, f.name) is not None
        }
        out = replace(out, **changes)
    return out


def role_resources(
    spec: MongoClusterSpec, component: ResourceComponent, shard_index: int | None = None
) -> ResourceRequirements:
    """resources.<component>, or for a shard's mongod its placement.shards block's resources."""
    if component == "mongod" and shard_index is not None:
        block = spec.placement.shards.get(str(shard_index))
        if block is not None and block.resources is not None:
            return block.resources
    return spec.resources_for(component)


# --- the pod template's affinity ---------------------------------------------------------------


def _on_host(selector: Mapping[str, str]) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": HOSTNAME_KEY}


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}


def affinity(
    spec: MongoClusterSpec,
    cluster: str,
    component: Component,
    own: Mapping[str, str],
    sched: Scheduling,
) -> dict[str, Any]:
    """The pod's `affinity` (empty: none). `own`: the labels of the pod's replica set (or the
    mongos routers), what antiAffinity keeps apart without a preset."""
    out: dict[str, Any] = {}
    if sched.node_affinity is not None and (node := sched.node_affinity.to_k8s()):
        out["nodeAffinity"] = node
    chosen = preset(spec)
    if chosen == "Dedicated":
        out["podAntiAffinity"] = _required(_on_host({lbl.CLUSTER: cluster}))
    elif chosen == "CoLocated":
        same_role = {lbl.CLUSTER: cluster, lbl.COMPONENT: component}
        out["podAntiAffinity"] = _required(_on_host(same_role))
        if component in ("configsvr", "mongos"):
            shard_members = {lbl.CLUSTER: cluster, lbl.COMPONENT: "shard"}
            out["podAffinity"] = _required(_on_host(shard_members))
        else:
            # A shard member rescheduled later (a rolling restart, a lost node) prefers the
            # node its config server and mongos stayed on over a spare node of the pool. The
            # scheduler's symmetric weight for their required terms pulls the same way, but a
            # scheduler may set it to 0 (hardPodAffinityWeight).
            out["podAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": _on_host({lbl.CLUSTER: cluster, lbl.COMPONENT: c}),
                    }
                    for c in ("configsvr", "mongos")
                ]
            }
    elif sched.anti_affinity == "Required":
        out["podAntiAffinity"] = _required(_on_host(own))
    elif sched.anti_affinity == "Preferred":
        preferred = [{"weight": 100, "podAffinityTerm": _on_host(own)}]
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
    return out


def duet_place(cluster: str, own: Mapping[str, str], component: Component) -> str:
    """A pod's place, the same on both sides of a duet: `shard0`, `cfg`, `rs0`, `mongos`."""
    replset = own.get(lbl.REPLSET)
    return replset.removeprefix(f"{cluster}-") if replset else component


def duet_labels(duet: str | None, place: str) -> dict[str, str]:
    """The pod labels a duet pairs by (none without a duet)."""
    return {lbl.DUET: duet, lbl.DUET_PLACE: place} if duet else {}


def with_duet(pod_affinity: dict[str, Any], duet: str | None, place: str) -> dict[str, Any]:
    """`pod_affinity` plus, in a duet, a required term: on the node of the other side's pod
    of the same place and ordinal (a StatefulSet's pod-index; a mongos, any of the other's
    mongos). Whichever side is scheduled first goes where it fits: a pod matching its own
    term may, when no other pod matches."""
    if not duet:
        return pod_affinity
    term = {
        "labelSelector": {"matchLabels": duet_labels(duet, place)},
        "matchLabelKeys": [lbl.POD_INDEX],
        "topologyKey": HOSTNAME_KEY,
    }
    out = dict(pod_affinity)
    pod = dict(out.get("podAffinity") or {})
    pod["requiredDuringSchedulingIgnoredDuringExecution"] = [
        *pod.get("requiredDuringSchedulingIgnoredDuringExecution", ()),
        term,
    ]
    out["podAffinity"] = pod
    return out


# --- feasibility against the Nodes ---------------------------------------------------------------


def _tolerated(tolerations: Sequence[Toleration], taint: Mapping[str, Any]) -> bool:
    """As the scheduler's TaintToleration filter: only NoSchedule and NoExecute taints bar."""
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.effect and t.effect != taint.get("effect"):
            continue
        if t.key and t.key != taint.get("key"):
            continue
        if t.operator == "Exists" or (t.value or "") == (taint.get("value") or ""):
            return True
    return False


def _meets(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    try:  # Gt, Lt: integers on both sides, else no match
        have, bound = int(value or ""), int(req.values[0])
    except (ValueError, IndexError):
        return False
    return have > bound if req.operator == "Gt" else have < bound


def qualifies(node: Mapping[str, Any], sched: Scheduling) -> bool:
    """Whether the scheduler's node filters (not resources) let `sched`'s pods onto `node`."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = node.get("spec") or {}
    taints = list(spec.get("taints") or [])
    if spec.get("unschedulable"):
        taints.append(UNSCHEDULABLE_TAINT)
    if any(labels.get(k) != v for k, v in sched.node_selector.items()):
        return False
    if not all(_tolerated(sched.tolerations, t) for t in taints):
        return False
    required = (
        sched.node_affinity.required_during_scheduling_ignored_during_execution
        if sched.node_affinity
        else None
    )
    if required is not None:
        terms = required.node_selector_terms
        return any(all(_meets(r, labels) for r in t.match_expressions) for t in terms)
    return True


@dataclass(frozen=True)
class Demand:
    """Pods that each need a node of their own, and the nodes they may take."""

    what: str
    component: Component
    pods: int
    nodes: frozenset[str]


def _demands(
    spec: MongoClusterSpec, layout: ClusterLayout, nodes: Sequence[Mapping[str, Any]]
) -> list[tuple[Demand, Scheduling]]:
    def eligible(sched: Scheduling) -> frozenset[str]:
        return frozenset(n["metadata"]["name"] for n in nodes if qualifies(n, sched))

    out = []
    for rs in layout.replica_sets:
        sched = scheduling(spec, role_of(rs), rs.shard_index)
        out.append((Demand(rs.name, rs.component, rs.members, eligible(sched)), sched))
    if layout.sharded:
        sched = scheduling(spec, "mongos")
        demand = Demand(layout.mongos, "mongos", layout.mongos_replicas, eligible(sched))
        out.append((demand, sched))
    return out


def _hall(demands: Sequence[Demand]) -> tuple[int, int, str] | None:
    """The first set of demands whose pods outnumber the nodes they may share (Hall's
    condition: each pod its own node): (pods, nodes, what); None when every set fits. Demands
    with the same nodes count as one; there are at most 7 distinct sets (the defaults, three
    roles, four shard blocks), so every combination is checked."""
    by_nodes: dict[frozenset[str], list[Demand]] = {}
    for d in demands:
        by_nodes.setdefault(d.nodes, []).append(d)
    groups = list(by_nodes.items())
    for size in range(1, len(groups) + 1):
        for combo in combinations(groups, size):
            pods = sum(d.pods for _, ds in combo for d in ds)
            union = frozenset().union(*(n for n, _ in combo))
            if pods > len(union):
                names = ", ".join(d.what for _, ds in combo for d in ds)
                return pods, len(union), names
    return None


Feasibility = tuple[ConditionStatus, str, str]


def has_hard_rules(spec: MongoClusterSpec, layout: ClusterLayout) -> bool:
    """A preset, or a role whose antiAffinity is Required: pods that may stay Pending."""
    if preset(spec) != "None":
        return True
    roles = [scheduling(spec, role_of(rs), rs.shard_index) for rs in layout.replica_sets]
    if layout.sharded:
        roles.append(scheduling(spec, "mongos"))
    return any(s.anti_affinity == "Required" for s in roles)


def feasibility(
    spec: MongoClusterSpec, layout: ClusterLayout, nodes: Sequence[Mapping[str, Any]]
) -> Feasibility:
    """The PlacementFeasible condition (status, reason, message) for the hard rules, by the
    Nodes' labels, taints and cordons."""
    demands = _demands(spec, layout, nodes)
    chosen = preset(spec)
    if chosen == "Dedicated":
        rule = "placement.preset Dedicated (one database pod per node)"
        short = _hall([d for d, _ in demands])
    elif chosen == "CoLocated":
        rule = "placement.preset CoLocated (one shard member per node)"
        shards = [d for d, _ in demands if d.component == "shard"]
        short = _hall(shards)
        if short is None:
            # Config servers and routers join nodes of shard members, one of each per node.
            shard_nodes = frozenset().union(*(d.nodes for d in shards))
            for d in (d for d, _ in demands if d.component != "shard"):
                if d.pods > len(d.nodes & shard_nodes):
                    rule = "placement.preset CoLocated (beside a shard member, one per node)"
                    short = (d.pods, len(d.nodes & shard_nodes), d.what)
                    break
    else:
        rule = "antiAffinity Required (one member per node)"
        short = next(
            (
                (d.pods, len(d.nodes), d.what)
                for d, s in demands
                if s.anti_affinity == "Required" and d.pods > len(d.nodes)
            ),
            None,
        )
    if short is not None:
        pods, qualified, what = short
        return (
            c.FALSE,
            c.NOT_ENOUGH_NODES,
            f"{rule}: {what} need {pods} nodes, {qualified} qualify (not cordoned, matching "
            "nodeSelector and nodeAffinity, taints tolerated); the pods stay Pending",
        )
    counted = frozenset().union(*(d.nodes for d, _ in demands))
    return (c.TRUE, c.ENOUGH_NODES, f"{rule}: {len(counted)} nodes qualify")


PLACED: Feasibility = (c.TRUE, c.PODS_PLACED, "every database pod is running where the rules say")
