"""Unit tier: mongos is upgraded after every replica set, and spec member priorities reach the
replica-set documents the operator sends (replSetInitiate, replSetReconfig)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cluster_fixtures import REPLICA_SET, SHARDED, build, by_kind

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.api.schema import SpecError
from mongobench.mongo.model import ReplicaSetStatus, Role
from mongobench.mongo.plan import initiate_document, next_reconfig
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.mongos import container_image, mongos_upgrade, set_image
from mongobench.mongocluster.decide.status import WorkloadState

pytestmark = pytest.mark.unit

OLD, NEW = "mongo:7.0.14", "mongo:8.0.4"


def deployment(
    image: str, *, observed: int = 3, updated: int = 2, total: int = 2
) -> dict[str, Any]:
    """The built mongos Deployment as read back at generation 3, with the given rollout status."""
    (dep,) = by_kind(build(SHARDED, with_secrets=False), "Deployment")
    set_image(dep, image)
    dep["metadata"]["generation"] = 3
    dep["status"] = {"observedGeneration": observed, "updatedReplicas": updated, "replicas": total}
    return dep


# --- mongos last ---------------------------------------------------------------------------


def test_a_new_deployment_starts_on_the_spec_image() -> None:
    assert mongos_upgrade(NEW, None, sets_upgraded=False) == mongos_upgrade(NEW, None, True)
    step = mongos_upgrade(NEW, None, sets_upgraded=False)
    assert (step.image, step.changes, step.waiting) == (NEW, False, None)


def test_mongos_keeps_its_image_while_a_replica_set_runs_the_old_one() -> None:
    step = mongos_upgrade(NEW, deployment(OLD), sets_upgraded=False)
    assert step.image == OLD and not step.changes
    assert step.waiting == "mongos waits for the shards to be upgraded"


def test_mongos_switches_once_every_replica_set_runs_the_new_image() -> None:
    step = mongos_upgrade(NEW, deployment(OLD), sets_upgraded=True)
    assert step.image == NEW and step.changes
    assert step.waiting and NEW in step.waiting  # Updated stays False until routers rolled


@pytest.mark.parametrize(
    ("observed", "updated", "total"),
    [(2, 2, 2), (3, 1, 3), (3, 2, 3)],
    ids=["not-observed-yet", "surged", "old-pod-left"],
)
def test_updated_waits_for_the_deployment_rollout(observed: int, updated: int, total: int) -> None:
    step = mongos_upgrade(
        NEW, deployment(NEW, observed=observed, updated=updated, total=total), True
    )
    assert step.image == NEW and not step.changes
    assert step.waiting and "rolling out" in step.waiting


def test_mongos_is_current_when_every_router_runs_the_new_template() -> None:
    assert mongos_upgrade(NEW, deployment(NEW), sets_upgraded=True).waiting is None


def test_the_pinned_image_touches_only_the_mongos_container() -> None:
    dep = deployment(OLD)
    containers = dep["spec"]["template"]["spec"]["containers"]
    assert container_image(dep["spec"]["template"]["spec"], "mongos") == OLD
    others = [c["image"] for c in containers if c["name"] != "mongos"]
    assert others and OLD not in others  # the exporter sidecar keeps its own image


# --- member priorities ---------------------------------------------------------------------


def with_priorities(base: dict[str, Any], shape: str, priorities: dict[str, Any]) -> Any:
    spec = copy.deepcopy(base)
    spec["topology"][shape]["memberPriorities"] = priorities
    return MongoClusterSpec.parse(spec)


def test_replica_set_priorities_reach_the_initiate_document() -> None:
    spec = with_priorities(REPLICA_SET, "replicaSet", {"0": 2, "2": 0})
    (rs,) = cluster_layout("demo", "bench", spec).replica_sets
    members = initiate_document(rs.to_spec())["members"]
    assert [m.get("priority", 1) for m in members] == [2, 1, 0]
    assert members[0]["host"].startswith("demo-rs0-0.")


def test_shard_priorities_apply_to_every_shard_not_the_config_servers() -> None:
    spec = with_priorities(SHARDED, "sharded", {"1": 5.5})
    layout = cluster_layout("demo", "bench", spec)
    for rs in layout.replica_sets:
        wanted = 5.5 if rs.role is Role.SHARD else 1.0
        assert rs.to_spec().priority(rs.member_host(1)) == wanted, rs.name
        assert rs.to_spec().priority(rs.member_host(0)) == 1.0


def test_a_changed_priority_is_one_reconfig_step_on_the_running_set() -> None:
    spec = with_priorities(REPLICA_SET, "replicaSet", {"1": 0})
    (rs,) = cluster_layout("demo", "bench", spec).replica_sets
    config = {
        "_id": rs.name,
        "version": 4,
        "members": [{"_id": i, "host": h} for i, h in enumerate(rs.hosts)],
    }
    status = ReplicaSetStatus(rs.name, Role.REPLICA, True, primary=rs.hosts[0])
    step = next_reconfig(rs.to_spec(), config, status)
    assert step is not None and step.kind == "priority" and step.config is not None
    assert [m.get("priority") for m in step.config["members"]] == [None, 0, None]


@pytest.mark.parametrize(
    ("priorities", "field"),
    [({"first": 2}, "'first' is not a member ordinal"), ({"0": 1001}, "memberPriorities.0")],
)
def test_unusable_priorities_name_the_field(priorities: dict[str, Any], field: str) -> None:
    spec = with_priorities(REPLICA_SET, "replicaSet", priorities)
    with pytest.raises(SpecError, match=field) as exc:
        cluster_layout("demo", "bench", spec)
    assert str(exc.value).startswith("spec.topology.replicaSet.memberPriorities")


# --- rolling restarts: when the pods need no look -------------------------------------------


def statefulset(generation: int, observed: int, replicas: int, current: int, updated: int) -> Any:
    return {
        "metadata": {"name": "c-rs0", "generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "replicas": current,
            "readyReplicas": current,
            "updatedReplicas": updated,
        },
    }


@pytest.mark.parametrize(
    ("sts", "settled"),
    [
        (statefulset(2, 2, 3, 3, 3), True),  # every pod on the latest revision
        (statefulset(3, 2, 3, 3, 3), False),  # a new template the controller has not seen yet
        (statefulset(3, 3, 3, 3, 1), False),  # two pods still on the old revision: roll them
        (statefulset(3, 3, 3, 4, 3), False),  # a fourth pod still runs (scale-down under way)
        ({"metadata": {"name": "c-rs0"}, "spec": {"replicas": 1}}, False),  # no status yet
    ],
)
def test_a_statefulset_is_settled_only_when_every_pod_runs_the_seen_template(
    sts: Any, settled: bool
) -> None:
    assert WorkloadState.of_statefulset(sts).settled is settled


def test_a_settled_replica_set_rolls_nothing_and_reads_no_pods() -> None:
    from fake_kube import FakeKube

    from mongobench.mongocluster.act import rolling

    kube = FakeKube()
    for verb in ("get", "list"):
        kube.refuse(verb, "StatefulSet", 500, "a settled StatefulSet needs no API call")
        kube.refuse(verb, "Pod", 500, "a settled StatefulSet needs no API call")
    (rs,) = cluster_layout(
        "c", "ns", MongoClusterSpec.parse(copy.deepcopy(REPLICA_SET))
    ).replica_sets
    observed = WorkloadState.of_statefulset(statefulset(2, 2, 3, 3, 3))
    assert rolling.roll(kube, admin=None, rs=rs, observed=observed) is None  # type: ignore[arg-type]
