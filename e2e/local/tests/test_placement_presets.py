"""Cluster tier: the placement presets as the real kube-scheduler (v1.32) lays them out.

What is real: the apiserver, the scheduler filtering and scoring KWOK nodes (pod affinity and
anti-affinity, node selectors, taints), the controller-manager, the operator process building
the pods and judging the nodes (the PlacementFeasible condition and its Event). What stands in
for mongod and mongos: the in-memory wire model (localplane.mongomodel), so that the clusters
become Ready once their pods are placed. A private plane with its own nodes, so that labelling
and counting them disturbs no other test.

- CoLocated, the first study's 3-node cluster (3 shards of 1 member, 3 config servers, 3
  mongos) on a plane of 6 nodes: the shard members take 3 nodes, and each of those holds
  exactly one shard member, one config server and one mongos; the other nodes hold nothing.
- Dedicated (1 shard of 3, 1 config server, 1 mongos: 5 pods) restricted to a pool of 3
  labelled nodes: the operator says 5 nodes are needed and 3 qualify (condition and Warning
  Event) while pods wait; with 2 more nodes labelled into the pool every pod is placed, no node
  holds two of them, and the cluster is Ready with PlacementFeasible Placed.
- Benchmark clients with `clients.antiAffinity: Required`: a step's Job, as the operator builds
  it, puts its 6 client pods on the 6 nodes, one each, though their node affinity prefers the
  first node (applied without the operator: the scheduling is the point, not the run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.pytest_plugin import apply_repo_crds
from mongobench.api import BenchmarkRunSpec
from mongobench.benchmarkrun.build.jobs import RUN_LABEL, RunRef, build_client_rbac, build_job
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.k8s import conditions as cond

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"
POOL = "mongobench.io/pool"


@pytest.fixture(scope="module")
def six_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    plane = Plane.start(tmp_path_factory.mktemp("plane"), nodes=NodeSet(profile="kind", count=6))
    try:
        apply_repo_crds(plane)
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def api(six_nodes: Plane) -> Iterator[k8s.ApiClient]:
    client = six_nodes.api_client()
    try:
        yield client
    finally:
        client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def model(api: k8s.ApiClient) -> Iterator[MongoModel]:
    with MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1) as m:
        yield m


def serve(model: MongoModel, ns: str, sets: dict[str, int], mongos: str) -> str:
    for rs, members in sets.items():
        for i in range(members):
            model.member(f"{rs}-{i}.{rs}-hl.{ns}.svc.cluster.local:27017")
    model.mongos(f"{mongos}.{ns}.svc.cluster.local:27017")
    return ",".join(f"{k}={v}" for k, v in model.host_map.items())


def cluster(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": name},
        "spec": {"version": "7.0.14", **spec},
    }


def status_of(api: k8s.ApiClient, ns: str, name: str) -> dict[str, Any]:
    obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, ns, "mongoclusters", name
    )
    return dict(obj.get("status") or {})


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == type_), {})


def roles_by_node(api: k8s.ApiClient, ns: str, name: str) -> dict[str, Counter[str]]:
    """node -> how many pods of each role (shard, configsvr, mongos) of the cluster it holds."""
    pods = (
        k8s.CoreV1Api(api)
        .list_namespaced_pod(ns, label_selector=f"mongobench.io/cluster={name}")
        .items
    )
    out: dict[str, Counter[str]] = {}
    for pod in pods:
        if pod.spec.node_name:
            role = pod.metadata.labels["app.kubernetes.io/component"]
            out.setdefault(pod.spec.node_name, Counter())[role] += 1
    return out


def pending(api: k8s.ApiClient, ns: str, name: str) -> int:
    pods = (
        k8s.CoreV1Api(api)
        .list_namespaced_pod(ns, label_selector=f"mongobench.io/cluster={name}")
        .items
    )
    return sum(1 for p in pods if not p.spec.node_name)


def test_colocated_puts_one_member_of_every_role_on_each_of_n_nodes(
    six_nodes: Plane, api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    ns = "colocated"
    six_nodes.kubectl("create", "namespace", ns)
    sets = {"co-cfg": 3, "co-shard0": 1, "co-shard1": 1, "co-shard2": 1}
    host_map = serve(model, ns, sets, "co-mongos")
    operator = start_operator(
        six_nodes.kubeconfig, [ns], tmp_path / "operator.log", MONGOBENCH_HOST_MAP=host_map
    )
    spec = {
        "topology": {
            "type": "Sharded",
            "sharded": {"shards": 3, "membersPerShard": 1, "configServers": 3, "mongos": 3},
        },
        "placement": {"preset": "CoLocated"},
    }
    try:
        six_nodes.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(cluster("co", spec)))
        status = wait_until(
            lambda: (s := status_of(api, ns, "co")).get("phase") == "Ready" and s,
            timeout=120,
            what="co Ready",
        )
    finally:
        operator.stop()
    layout = roles_by_node(api, ns, "co")
    # Three of the six nodes, each with one shard member, one config server and one mongos.
    assert len(layout) == 3, layout
    for node, roles in layout.items():
        assert roles == Counter({"shard": 1, "configsvr": 1, "mongos": 1}), (node, roles)
    placed = condition(status, cond.PLACEMENT_FEASIBLE)
    assert (placed.get("status"), placed.get("reason")) == (cond.TRUE, cond.PODS_PLACED)

    # A shard member rescheduled (as by a rolling restart) returns beside its config server and
    # mongos, not to one of the three spare nodes: each time, for every shard.
    core = k8s.CoreV1Api(api)
    for shard in ("co-shard0", "co-shard1", "co-shard2"):
        before = core.read_namespaced_pod(f"{shard}-0", ns)
        core.delete_namespaced_pod(f"{shard}-0", ns, grace_period_seconds=0)
        again = wait_until(
            lambda s=shard, uid=before.metadata.uid: (
                (p := _pod(core, ns, f"{s}-0")) is not None
                and p.metadata.uid != uid
                and p.spec.node_name
                and p
            ),
            timeout=60,
            what=f"{shard}-0 rescheduled",
        )
        assert again.spec.node_name == before.spec.node_name
    assert roles_by_node(api, ns, "co") == layout


def _pod(core: k8s.CoreV1Api, ns: str, name: str) -> Any:
    try:
        return core.read_namespaced_pod(name, ns)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_dedicated_waits_for_enough_nodes_says_why_then_gives_each_pod_its_own(
    six_nodes: Plane, api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    ns = "dedicated"
    six_nodes.kubectl("create", "namespace", ns)
    nodes = six_nodes.node_names
    for node in nodes[:3]:
        six_nodes.kubectl("label", "node", node, f"{POOL}=dedicated", "--overwrite")
    host_map = serve(model, ns, {"de-cfg": 1, "de-shard0": 3}, "de-mongos")
    operator = start_operator(
        six_nodes.kubeconfig, [ns], tmp_path / "operator.log", MONGOBENCH_HOST_MAP=host_map
    )
    spec = {
        "topology": {
            "type": "Sharded",
            "sharded": {"shards": 1, "membersPerShard": 3, "configServers": 1, "mongos": 1},
        },
        "placement": {"preset": "Dedicated", "nodeSelector": {POOL: "dedicated"}},
    }
    core = k8s.CoreV1Api(api)
    try:
        six_nodes.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(cluster("de", spec)))
        short = wait_until(
            lambda: (
                (c := condition(status_of(api, ns, "de"), cond.PLACEMENT_FEASIBLE)).get("status")
                == cond.FALSE
                and c
            ),
            timeout=60,
            what="PlacementFeasible False",
        )
        assert short["reason"] == cond.NOT_ENOUGH_NODES
        assert "need 5 nodes, 3 qualify" in short["message"]
        # The scheduler agrees: three pods placed, one per node, two waiting.
        wait_until(lambda: pending(api, ns, "de") == 2, timeout=30, what="2 pods Pending")
        assert all(sum(r.values()) == 1 for r in roles_by_node(api, ns, "de").values())
        events = [
            e
            for e in core.list_namespaced_event(ns).items
            if e.reason == cond.EVENT_NOT_ENOUGH_NODES
        ]
        assert len(events) == 1 and events[0].type == "Warning"

        for node in nodes[3:5]:
            six_nodes.kubectl("label", "node", node, f"{POOL}=dedicated", "--overwrite")
        status = wait_until(
            lambda: (s := status_of(api, ns, "de")).get("phase") == "Ready" and s,
            timeout=120,
            what="de Ready",
        )
    finally:
        operator.stop()
    layout = roles_by_node(api, ns, "de")
    assert len(layout) == 5 and all(sum(r.values()) == 1 for r in layout.values()), layout
    assert set(layout) == set(nodes[:5])  # the pool only: the sixth node holds none
    placed = condition(status, cond.PLACEMENT_FEASIBLE)
    assert (placed.get("status"), placed.get("reason")) == (cond.TRUE, cond.PODS_PLACED)


def test_parallel_clients_asked_apart_take_a_node_each(
    six_nodes: Plane, api: k8s.ApiClient
) -> None:
    ns = "clients"
    six_nodes.kubectl("create", "namespace", ns)
    # Every client would rather run on the first node (preferred node affinity): only the
    # anti-affinity among them spreads them out.
    first = {"key": "kubernetes.io/hostname", "operator": "In", "values": [six_nodes.node_names[0]]}
    pull = [{"weight": 100, "preference": {"matchExpressions": [first]}}]
    spec = BenchmarkRunSpec.parse(
        {
            "uriSecretRef": {"name": "external"},
            "workloads": [{"name": "a"}],
            "clients": {
                "parallelism": 6,
                "antiAffinity": "Required",
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pull},
            },
        }
    )
    run = RunRef("apart", ns, "uid-apart", "external", "uri", None, "mongobench/ycsb:test")
    step = next(s for s in make_plan(spec) if s.kind == "run")
    # No BenchmarkRun owns them here: without owner references the collector leaves them be.
    objects = [*build_client_rbac(run, [step]), build_job(spec, step, run)]
    for obj in objects:
        obj["metadata"].pop("ownerReferences", None)
        six_nodes.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(obj))
    core = k8s.CoreV1Api(api)

    def nodes() -> list[str] | None:
        pods = core.list_namespaced_pod(ns, label_selector=f"{RUN_LABEL}=apart").items
        placed = [p.spec.node_name for p in pods if p.spec.node_name]
        return placed if len(placed) == 6 else None

    placed = wait_until(nodes, timeout=60, what="6 client pods placed")
    assert sorted(placed) == sorted(six_nodes.node_names)  # one on each node
