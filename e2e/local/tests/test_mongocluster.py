"""Cluster tier: the MongoCluster lifecycle on a real kube-apiserver with KWOK nodes.

What is real: the apiserver, etcd, controller-manager (StatefulSet, GC, PVC binding), scheduler,
the operator process (kopf) and its pymongo administration over TCP. What stands in for mongod:
the in-memory wire model (localplane.mongomodel), one loopback peer per member DNS name, reached
through the operator's documented host map (MONGOBENCH_HOST_MAP). Elections, catch-up timing and
auth of a real mongod are left to the kind suite.

The lifecycle a user goes through (Ready with its wiring, scaling, adding and draining a shard,
the 7.0 -> 8.0 upgrade, deletion policies) is the e2e suite's (e2e/suite), run here on its local
backend and on kind against real mongod; what stays here needs the model's hooks (a write held
to kill the operator between steps, a member already in another set, ...) or another plane.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel, SetState
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"


def member_hosts(namespace: str, rs: str, n: int) -> list[str]:
    return [f"{rs}-{i}.{rs}-hl.{namespace}.svc.cluster.local:27017" for i in range(n)]


@pytest.fixture
def model(kube_api: k8s.ApiClient) -> Iterator[MongoModel]:
    # Members authenticate the operator's keyfile login against the Secret their pod mounts.
    with MongoModel(keyfile=keyfile_from_pods(kube_api), catch_up_seconds=0.2, drain_calls=2) as m:
        yield m


def serve(
    model: MongoModel, namespace: str, sets: dict[str, int], mongos: str | None = None
) -> str:
    """Start model peers for every member name the cluster may use; returns the host map."""
    for rs, most in sets.items():
        for host in member_hosts(namespace, rs, most):
            model.member(host)
    if mongos:
        model.mongos(f"{mongos}.{namespace}.svc.cluster.local:27017")
    return ",".join(f"{k}={v}" for k, v in model.host_map.items())


def run_operator(plane: Plane, namespace: str, host_map: str, log: Path) -> OperatorProcess:
    return start_operator(plane.kubeconfig, [namespace], log, MONGOBENCH_HOST_MAP=host_map)


def cluster_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": name},
        "spec": {"version": "7.0.14", **spec},
    }


def apply(plane: Plane, namespace: str, obj: dict[str, Any]) -> None:
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def get_cluster(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return dict(
        k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "mongoclusters", name
        )
    )


def wait_phase(
    api: k8s.ApiClient, namespace: str, name: str, phase: str, timeout: float = 60
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        obj = get_cluster(api, namespace, name)
        status = obj.get("status") or {}
        ok = status.get("phase") == phase and status.get("observedGeneration") == obj[
            "metadata"
        ].get("generation")
        return obj if ok else None

    return dict(wait_until(check, timeout=timeout, interval=0.2, what=f"{name} {phase}"))


def test_deletion_waits_for_a_running_benchmark(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    host_map = serve(model, namespace, {"busy-rs0": 1})
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    custom = k8s.CustomObjectsApi(kube_api)
    try:
        apply(plane, namespace, cluster_manifest("busy", topology={"replicaSet": {"members": 1}}))
        wait_phase(kube_api, namespace, "busy", "Ready")
        run = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchmarkRun",
            "metadata": {"name": "uses-busy"},
            "spec": {"clusterRef": {"name": "busy"}, "workloads": [{"name": "a"}]},
        }
        apply(plane, namespace, run)
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "mongoclusters", "busy")
        events = wait_until(
            lambda: [
                e
                for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
                if e.reason == "InUse"
            ],
            what="InUse event",
        )
        assert "uses-busy" in events[0].message
        assert get_cluster(kube_api, namespace, "busy")["metadata"]["deletionTimestamp"]
        custom.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "benchmarkruns", "uses-busy"
        )
        wait_until(
            lambda: (
                not custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "mongoclusters"
                )["items"]
            ),
            timeout=40,
            what="deletion proceeds once the run is gone",
        )
    finally:
        operator.stop()


def test_operator_killed_mid_creation_converges_without_duplicates(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    sets = {"kc-cfg": 1, "kc-shard0": 1, "kc-shard1": 1}
    host_map = serve(model, namespace, sets, mongos="kc-mongos")
    topology = {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 1, "configServers": 1, "mongos": 1},
    }
    apps, core = k8s.AppsV1Api(kube_api), k8s.CoreV1Api(kube_api)
    first = run_operator(plane, namespace, host_map, tmp_path / "first.log")
    try:
        apply(plane, namespace, cluster_manifest("kc", topology=topology))
        wait_until(lambda: apps.list_namespaced_stateful_set(namespace).items, what="first child")
    finally:
        first.kill()  # SIGKILL: no graceful shutdown, mid-creation
    admin_before = core.read_namespaced_secret("kc-admin", namespace)
    second = run_operator(plane, namespace, host_map, tmp_path / "second.log")
    try:
        wait_phase(kube_api, namespace, "kc", "Ready", timeout=90)
    finally:
        second.stop()
    names = sorted(s.metadata.name for s in apps.list_namespaced_stateful_set(namespace).items)
    assert names == ["kc-cfg", "kc-shard0", "kc-shard1"]
    assert [d.metadata.name for d in apps.list_namespaced_deployment(namespace).items] == [
        "kc-mongos"
    ]
    admin_after = core.read_namespaced_secret("kc-admin", namespace)
    assert admin_after.metadata.uid == admin_before.metadata.uid
    assert admin_after.data == admin_before.data  # generated once, never overwritten
    assert sorted(model.sharded.shards) == ["kc-shard0", "kc-shard1"]


def test_operator_killed_after_every_mongodb_write_still_converges(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    # The model admits one write (initiate, createUser, addShard, ...) and holds the rest until
    # the writer is gone: each operator process takes exactly one step, then dies by SIGKILL.
    sets = {"kw-cfg": 1, "kw-shard0": 2}
    host_map = serve(model, namespace, sets, mongos="kw-mongos")
    topology = {
        "type": "Sharded",
        "sharded": {"shards": 1, "membersPerShard": 2, "configServers": 1, "mongos": 1},
    }
    model.hold_after_write = True
    apply(plane, namespace, cluster_manifest("kw", topology=topology))

    def ready() -> bool:
        obj = get_cluster(kube_api, namespace, "kw")
        return (obj.get("status") or {}).get("phase") == "Ready"

    processes = 0
    while processes < 30:
        processes += 1
        operator = run_operator(plane, namespace, host_map, tmp_path / f"op{processes}.log")
        try:
            wait_until(lambda: model.held or ready(), timeout=60, what="one write or Ready")
        finally:
            operator.kill()
        if not model.held:
            break
        model.held = False
    assert ready(), model.writes
    steps = [w.split(" ")[0] for w in model.writes]
    # Every step ran exactly once, by a different process: none was repeated after a restart.
    assert len(model.writes) == len(set(model.writes)), model.writes
    assert processes == len(model.writes) + 1
    assert steps.count("replsetinitiate") == 2 and steps.count("addshard") == 1, steps
    assert sorted(model.sharded.shards) == ["kw-shard0"]
    assert not model.unauthorized  # every privileged command was authenticated (keyfile, user)


def test_a_member_holding_another_replica_set_is_a_failure_with_the_servers_words(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    # A volume reused from another cluster: its mongod already belongs to replica set "stale".
    # Initiating over it would be wrong; the user gets a condition and an Event instead.
    host_map = serve(model, namespace, {"pe-rs0": 2})
    stale = member_hosts(namespace, "pe-rs0", 2)[1]
    model.sets["stale"] = SetState(
        {"_id": "stale", "version": 3, "members": [{"_id": 0, "host": stale}]}, stale
    )
    model.node_set[stale] = "stale"
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    try:
        apply(plane, namespace, cluster_manifest("pe", topology={"replicaSet": {"members": 2}}))
        obj = wait_phase(kube_api, namespace, "pe", "Failed")
        configured = next(c for c in obj["status"]["conditions"] if c["type"] == "Configured")
        assert configured["status"] == "False"
        assert "belongs to replica set 'stale', not 'pe-rs0'" in configured["message"]
        warnings = wait_until(
            lambda: [
                e
                for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
                if e.reason == "MongoDBError" and e.type == "Warning"
            ],
            what="a MongoDBError Event",
        )
        assert "stale" in warnings[0].message and stale in warnings[0].message
        assert "pe-rs0" not in model.sets  # nothing was initiated over it

        with model._lock:  # the user wipes that volume: the member comes back empty
            del model.sets["stale"], model.node_set[stale]
        wait_phase(kube_api, namespace, "pe", "Ready")
    finally:
        operator.stop()
    assert len(warnings) == 1  # one Event for the failure, not one per retry


def test_sharded_version_upgrade_rolls_mongos_after_every_replica_set(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    # Two members per set: a one-member set has nobody to hand its primary to.
    sets = {"vu-cfg": 2, "vu-shard0": 2, "vu-shard1": 2}
    host_map = serve(model, namespace, sets, mongos="vu-mongos")
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    apps, core = k8s.AppsV1Api(kube_api), k8s.CoreV1Api(kube_api)
    topology = {
        "type": "Sharded",
        "sharded": {"shards": 2, "membersPerShard": 2, "configServers": 2, "mongos": 2},
    }
    old, new = "mongo:7.0.14", "mongo:8.0.4"
    samples: list[dict[str, Any]] = []

    def images(pods: list[Any], container: str) -> set[str]:
        return {c.image for p in pods for c in p.spec.containers if c.name == container}

    def sample() -> bool:
        # Read in this order: what mongos and status say first, the pods they depend on after
        # (a set that runs the new image keeps running it), so a sample never looks too early.
        obj = get_cluster(kube_api, namespace, "vu")
        generation = obj["metadata"]["generation"]
        updated = next(
            (
                c
                for c in obj.get("status", {}).get("conditions", [])
                if c["type"] == "Updated" and c.get("observedGeneration") == generation
            ),
            {},
        )
        fcv = model.fcv
        dep = apps.read_namespaced_deployment("vu-mongos", namespace)
        template = {c.image for c in dep.spec.template.spec.containers if c.name == "mongos"}
        pods = core.list_namespaced_pod(namespace, label_selector="mongobench.io/cluster=vu").items
        got = {
            "deployment": template,
            "mongod": images(pods, "mongod"),
            "mongos": images(pods, "mongos"),
            "updated": updated.get("status"),
            "message": updated.get("message", ""),
            "fcv": fcv,
        }
        samples.append(got)
        return (
            got["deployment"] == got["mongod"] == got["mongos"] == {new}
            and got["updated"] == "True"
            and fcv == "8.0"
        )

    try:
        apply(plane, namespace, cluster_manifest("vu", topology=topology))
        wait_phase(kube_api, namespace, "vu", "Ready", timeout=90)
        manifest = cluster_manifest("vu", topology=topology, featureCompatibilityVersion="8.0")
        manifest["spec"]["version"] = "8.0.4"
        apply(plane, namespace, manifest)
        wait_until(sample, timeout=180, interval=0.05, what="mongod and mongos on mongo:8.0.4")
    finally:
        operator.stop()
    # mongos kept the old image as long as any replica set's pod ran it ...
    early = [s for s in samples if s["deployment"] != {old}]
    assert all(s["mongod"] == {new} for s in early), early[:3]
    # ... while some sets already ran the new one (the wait was real, not the order of applies).
    assert any(s["deployment"] == {old} and new in s["mongod"] for s in samples)
    assert any("mongos waits for the shards to be upgraded" in s["message"] for s in samples)
    # Updated stayed False, and the featureCompatibilityVersion untouched, until the routers
    # themselves ran the new image.
    behind = [s for s in samples if old in s["mongos"]]
    assert behind and all(s["updated"] != "True" and s["fcv"] == "7.0" for s in behind)
    assert model.fcv_history == ["8.0"]


def test_an_fcv_left_behind_is_raised_on_the_old_binaries_before_the_next_major_upgrade(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    """An earlier 6.0 -> 7.0 upgrade with featureCompatibilityVersion unset left the FCV at 6.0
    (MongoDB keeps it); 8.0 binaries refuse to start with it. Moving `version` to 8.0 with the
    FCV still unset: the operator raises it to 7.0 through the 7.0 binaries (their command form:
    `confirm`) before any member is restarted, then rolls, and leaves it at 7.0 (unset: a
    downgrade stays possible). The model answers as 7.0 binaries (server_version)."""
    host_map = serve(model, namespace, {"fb-rs0": 2})
    model.server_version, model.fcv = "7.0.14", "6.0"
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    core = k8s.CoreV1Api(kube_api)
    old, new = "mongo:7.0.14", "mongo:8.0.4"
    samples: list[tuple[str, set[str]]] = []

    def rolled() -> bool:
        fcv = model.fcv  # before the pods: a pod seen on the new image was restarted after
        pods = core.list_namespaced_pod(namespace, label_selector="mongobench.io/cluster=fb").items
        running = {c.image for p in pods for c in p.spec.containers if c.name == "mongod"}
        samples.append((fcv, running))
        obj = get_cluster(kube_api, namespace, "fb")
        updated = next(
            (c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Updated"),
            {},
        )
        return (
            running == {new}
            and updated.get("status") == "True"
            and updated.get("observedGeneration") == obj["metadata"]["generation"]
        )

    try:
        rs = {"replicaSet": {"members": 2}}
        apply(plane, namespace, cluster_manifest("fb", topology=rs))
        wait_phase(kube_api, namespace, "fb", "Ready", timeout=90)
        assert model.fcv_history == []  # unset: never touched while nothing moves
        apply(plane, namespace, cluster_manifest("fb", topology=rs, version="8.0.4"))
        wait_until(rolled, timeout=180, interval=0.05, what="both members on mongo:8.0.4")
    finally:
        operator.stop()
    assert model.fcv_history == ["7.0"]  # once, to the running series; not on to 8.0
    # No member ran the 8.0 binaries while the FCV was still 6.0.
    assert all(fcv == "7.0" for fcv, running in samples if new in running), samples[:5]
    assert any(old in running for _, running in samples)  # the roll was watched, not missed
    events = core.list_namespaced_event(namespace).items
    assert any(
        e.reason == "FeatureCompatibilityVersionSet" and "7.0" in (e.message or "") for e in events
    )


def test_member_priorities_reach_the_running_replica_set(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    host_map = serve(model, namespace, {"pr-rs0": 3})
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    hosts = member_hosts(namespace, "pr-rs0", 3)

    def priorities() -> list[float]:
        return [m.get("priority", 1) for m in model.sets["pr-rs0"].config["members"]]

    try:
        # Set at creation: replSetInitiate carries it.
        rs = {"members": 3, "memberPriorities": {"0": 2}}
        apply(plane, namespace, cluster_manifest("pr", topology={"replicaSet": rs}))
        wait_phase(kube_api, namespace, "pr", "Ready")
        assert priorities() == [2, 1, 1]
        version = model.sets["pr-rs0"].config["version"]

        # Changed on the running set: one replSetReconfig per member, then Ready again.
        rs["memberPriorities"] = {"0": 2, "1": 0.5, "2": 0}
        apply(plane, namespace, cluster_manifest("pr", topology={"replicaSet": rs}))
        wait_until(
            lambda: (
                priorities() == [2, 0.5, 0]
                and get_cluster(kube_api, namespace, "pr")["status"]["phase"] == "Ready"
            ),
            timeout=60,
            what="priorities 2, 0.5, 0 in the replica set config",
        )
    finally:
        operator.stop()
    config = model.sets["pr-rs0"].config
    assert [m["host"] for m in config["members"]] == hosts  # same members, only priorities
    assert config["version"] == version + 2  # one member per reconfig


@pytest.mark.parametrize(
    ("storage_class", "grows"), [("standard", True), ("standard-fixed", False)]
)
def test_storage_grows_where_the_class_allows_it(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    tmp_path: Path,
    storage_class: str,
    grows: bool,
) -> None:
    host_map = serve(model, namespace, {"disk-rs0": 1})
    operator = run_operator(plane, namespace, host_map, tmp_path / "operator.log")
    core = k8s.CoreV1Api(kube_api)
    spec: dict[str, Any] = {
        "topology": {"replicaSet": {"members": 1}},
        "storage": {"size": "1Gi", "storageClassName": storage_class},
    }
    try:
        apply(plane, namespace, cluster_manifest("disk", **spec))
        wait_phase(kube_api, namespace, "disk", "Ready")
        spec["storage"]["size"] = "2Gi"
        apply(plane, namespace, cluster_manifest("disk", **spec))

        def resized() -> dict[str, Any] | None:
            obj = get_cluster(kube_api, namespace, "disk")
            cond = {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}
            got = cond.get("StorageResized")
            return (
                got
                if got and got.get("observedGeneration") == obj["metadata"]["generation"]
                else None
            )

        condition = wait_until(resized, timeout=30, what="StorageResized condition")
    finally:
        operator.stop()
    claim = core.read_namespaced_persistent_volume_claim("data-disk-rs0-0", namespace)
    if grows:
        assert condition["status"] == "True"
        assert claim.spec.resources.requests["storage"] == "2Gi"
    else:
        assert condition["status"] == "False" and condition["reason"] == "NotExpandable"
        assert "standard-fixed" in condition["message"]
        assert claim.spec.resources.requests["storage"] == "1Gi"  # untouched, nothing lost
    # The StatefulSet keeps its immutable claim template either way.
    sts = k8s.AppsV1Api(kube_api).read_namespaced_stateful_set("disk-rs0", namespace)
    assert sts.spec.volume_claim_templates[0].spec.resources.requests["storage"] == "1Gi"


def test_podmonitor_created_only_when_the_prometheus_operator_crds_exist(
    make_plane: Any, model: MongoModel, tmp_path: Path
) -> None:
    # ... and kube-prometheus-stack's Prometheus (the real Prometheus Operator's) scrapes it only
    # once it carries the labels that Prometheus selects (spec.monitoring.podMonitorLabels).
    from localplane.monitoring import RELEASE_LABELS, running_monitoring
    from localplane.tools import prometheus_operator_crds

    private = make_plane()  # no Prometheus Operator CRDs yet
    model.keyfile = keyfile_from_pods(private.api_client())  # its members' pods live there
    private.apply(private_crds := Path(__file__).resolve().parents[3] / "crds")
    ns = "mon"
    private.kubectl("create", "namespace", ns)
    host_map = serve(model, ns, {"mon-rs0": 1, "mon2-rs0": 1})
    operator = run_operator(private, ns, host_map, tmp_path / "operator.log")
    api = private.api_client()
    try:
        apply(private, ns, cluster_manifest("mon", topology={"replicaSet": {"members": 1}}))
        wait_phase(api, ns, "mon", "Ready")
        private.apply(prometheus_operator_crds())
        apply(private, ns, cluster_manifest("mon2", topology={"replicaSet": {"members": 1}}))
        wait_phase(api, ns, "mon2", "Ready")
        monitors = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
            "monitoring.coreos.com", "v1", ns, "podmonitors"
        )["items"]
        pool = f"podMonitor/{ns}/mon2/0"
        with running_monitoring(private, tmp_path / "monitoring") as monitoring:
            # Unlabelled (this operator has no MONGOBENCH_MONITOR_LABELS): not selected.
            assert pool not in monitoring.scrape_pools()
            labels = {"monitoring": {"podMonitorLabels": RELEASE_LABELS}}
            private.kubectl(
                "patch", "-n", ns, "mongocluster/mon2", "--type=merge",
                "-p", json.dumps({"spec": labels}),
            )  # fmt: skip
            targets = wait_until(
                lambda: [t for t in monitoring.targets() if t["scrapePool"] == pool],
                60, what="mon2's member as a target",
            )  # fmt: skip
    finally:
        operator.stop()
    # Its one member, with the labels the dashboards group by (its exporter is KWOK's: down).
    (target,) = targets
    assert target["labels"]["mongobench_io_cluster"] == "mon2"
    assert target["labels"]["pod"] == "mon2-rs0-0"
    assert private_crds.is_dir()
    assert [m["metadata"]["name"] for m in monitors] == ["mon2"]
    selector = monitors[0]["spec"]["selector"]["matchLabels"]
    assert selector["mongobench.io/cluster"] == "mon2"
    # The exporter sidecar is there, with its credentials from the Secret only.
    sts = k8s.AppsV1Api(api).read_namespaced_stateful_set("mon2-rs0", ns)
    exporter = next(c for c in sts.spec.template.spec.containers if c.name != "mongod")
    assert all(e.value is None for e in exporter.env or [] if "PASSWORD" in e.name)


def test_platform_detected_from_eks_nodes(
    make_plane: Any, model: MongoModel, tmp_path: Path
) -> None:
    from localplane.nodes import NodeSet

    eks = make_plane(nodes=NodeSet(profile="eks", count=3))
    model.keyfile = keyfile_from_pods(eks.api_client())
    eks.apply(Path(__file__).resolve().parents[3] / "crds")
    ns = "plat"
    eks.kubectl("create", "namespace", ns)
    operator = run_operator(eks, ns, serve(model, ns, {"p-rs0": 1}), tmp_path / "operator.log")
    api = eks.api_client()
    try:
        apply(eks, ns, cluster_manifest("p", topology={"replicaSet": {"members": 1}}))
        obj = wait_until(
            lambda: (o := get_cluster(api, ns, "p")).get("status", {}).get("platform") and o,
            what="platform in status",
        )
    finally:
        operator.stop()
    platform = obj["status"]["platform"]
    assert platform["provider"] == "eks"
    assert platform["storageClass"] == "gp3"
    assert platform["instanceTypes"] and platform["zones"]
    sts = k8s.AppsV1Api(api).read_namespaced_stateful_set("p-rs0", ns)
    assert sts.spec.volume_claim_templates[0].spec.storage_class_name == "gp3"
    # The EKS preset spreads members across zones.
    spread = sts.spec.template.spec.topology_spread_constraints or []
    assert [c.topology_key for c in spread] == ["topology.kubernetes.io/zone"]
