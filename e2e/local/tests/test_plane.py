"""Cluster tier: the local control plane itself (real apiserver/etcd/controller-manager/scheduler,
KWOK as kubelet). What these prove: the Kubernetes behaviour the operator's cluster tests rely on
is real (scheduling, StatefulSet/PVC binding, Jobs, GC, Pod Security admission); what they don't:
anything about containers, which KWOK only pretends to run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from localplane import monitoring as monitoring_mod
from localplane import net, procs
from localplane import plane as plane_mod
from localplane.monitoring import Monitoring
from localplane.nodes import NodeSet
from localplane.plane import HOSTPATH_ROOT, SHM_ROOT, STATE_FILE, Plane, cleanup_stale
from localplane.stages import BENCHMARK_CLIENT_LABEL

pytestmark = pytest.mark.cluster

# The client's typed models make every field Optional; tests read them as the API returns them.
CoreV1Api: Any = k8s.CoreV1Api
AppsV1Api: Any = k8s.AppsV1Api
BatchV1Api: Any = k8s.BatchV1Api
StorageV1Api: Any = k8s.StorageV1Api
ApiextensionsV1Api: Any = k8s.ApiextensionsV1Api
VersionApi: Any = k8s.VersionApi


def wait_for(pred: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not met after {timeout}s")
        time.sleep(0.1)


def restricted_pod_spec(command: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A pod spec that satisfies the Pod Security `restricted` profile."""
    return {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "command": command or ["sleep", "3600"],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        **extra,
    }


def is_ready(obj: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in obj.status.conditions or [])


def test_plane_serves_the_pinned_kubernetes(bare_plane: Plane, kube_api: k8s.ApiClient) -> None:
    version = VersionApi(kube_api).get_code()
    assert version.git_version == "v1.32.2"
    assert bare_plane.server.startswith("https://127.0.0.1:")
    assert bare_plane.kubeconfig.is_file()
    assert bare_plane.alive()
    sc = StorageV1Api(kube_api).list_storage_class().items
    by_name = {s.metadata.name: s for s in sc}
    default = by_name["standard"]
    assert default.metadata.annotations["storageclass.kubernetes.io/is-default-class"] == "true"
    assert default.allow_volume_expansion is True
    assert by_name["standard-fixed"].allow_volume_expansion is False


def test_kind_nodes_are_ready_with_platform_identity(kube_api: k8s.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in CoreV1Api(kube_api).list_node().items}
    assert set(nodes) == {"kind-worker", "kind-worker2", "kind-worker3"}
    node = nodes["kind-worker2"]
    assert is_ready(node)
    assert node.spec.provider_id == "kind://docker/kind/kind-worker2"
    assert node.metadata.labels["kubernetes.io/hostname"] == "kind-worker2"
    assert "topology.kubernetes.io/zone" not in node.metadata.labels
    assert node.status.capacity["cpu"] == "4"
    assert node.status.capacity["memory"] == "16Gi"
    assert node.status.capacity["pods"] == "110"
    assert node.status.node_info.kubelet_version == "v1.32.2"


def test_eks_and_magnum_nodes_in_a_second_plane_running_alongside(
    bare_plane: Plane, make_plane: Callable[..., Plane]
) -> None:
    eks = NodeSet(profile="eks", count=3)
    other = make_plane(nodes=[eks, NodeSet(profile="magnum", count=2)])
    # Two planes at once: distinct ports and tmpfs, both serving.
    assert other.server != bare_plane.server
    assert other.shm != bare_plane.shm
    assert set(other.ports.values()).isdisjoint(bare_plane.ports.values())
    assert bare_plane.kubectl("get", "nodes").returncode == 0

    core = CoreV1Api(other.api_client())
    nodes = core.list_node().items
    assert len(nodes) == 5
    assert all(is_ready(n) for n in nodes)
    aws = [n for n in nodes if n.spec.provider_id.startswith("aws:///")]
    assert len(aws) == 3
    zones = {n.metadata.labels["topology.kubernetes.io/zone"] for n in aws}
    assert zones == {"us-east-1a", "us-east-1b", "us-east-1c"}
    for n in aws:
        labels = n.metadata.labels
        zone = labels["topology.kubernetes.io/zone"]
        assert n.spec.provider_id.startswith(f"aws:///{zone}/i-0")
        assert labels["topology.kubernetes.io/region"] == "us-east-1"
        assert labels["node.kubernetes.io/instance-type"] == "m5.xlarge"
        assert labels["eks.amazonaws.com/nodegroup"]
    magnum = [n for n in nodes if n.spec.provider_id.startswith("openstack:///")]
    assert len(magnum) == 2
    assert all(n.metadata.labels["magnum.openstack.org/role"] == "worker" for n in magnum)
    assert all("node.kubernetes.io/instance-type" in n.metadata.labels for n in magnum)

    # Nodes can be added later (e.g. a client node pool) and become Ready.
    added = other.add_nodes(eks.next(1, extra_labels={"mongobench.io/pool": "clients"}))
    node = core.read_node(added[0])
    assert is_ready(node)
    assert node.metadata.labels["mongobench.io/pool"] == "clients"


def test_statefulset_with_volume_claims_goes_ready_and_binds(
    kube_api: k8s.ApiClient, namespace: str
) -> None:
    apps, core = AppsV1Api(kube_api), CoreV1Api(kube_api)
    labels = {"app": "db"}
    apps.create_namespaced_stateful_set(
        namespace,
        {
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "replicas": 3,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": restricted_pod_spec(),
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
    )
    wait_for(
        lambda: (
            (apps.read_namespaced_stateful_set("db", namespace).status.ready_replicas or 0) == 3
        ),
        timeout=60,
        what="StatefulSet 3/3 Ready",
    )
    pvcs = core.list_namespaced_persistent_volume_claim(namespace).items
    assert sorted(p.metadata.name for p in pvcs) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(p.status.phase == "Bound" for p in pvcs)
    assert all(p.spec.storage_class_name == "standard" for p in pvcs)
    pods = core.list_namespaced_pod(namespace).items
    assert all(p.status.pod_ip and is_ready(p) for p in pods)
    for pvc in pvcs:
        pv = core.read_persistent_volume(pvc.spec.volume_name)
        assert Path(pv.spec.host_path.path).parent == HOSTPATH_ROOT
        assert Path(pv.spec.host_path.path).is_dir()


def test_job_completes(kube_api: k8s.ApiClient, namespace: str) -> None:
    batch = BatchV1Api(kube_api)
    batch.create_namespaced_job(
        namespace,
        {
            "metadata": {"name": "once"},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": restricted_pod_spec(["true"], restartPolicy="Never")},
            },
        },
    )
    job = wait_for(
        lambda: (j := batch.read_namespaced_job("once", namespace)).status.succeeded and j,
        timeout=30,
        what="Job succeeded",
    )
    assert any(c.type == "Complete" and c.status == "True" for c in job.status.conditions)


def test_benchmark_client_pods_run_but_kwok_never_completes_them(
    kube_api: k8s.ApiClient, namespace: str
) -> None:
    batch, core = BatchV1Api(kube_api), CoreV1Api(kube_api)
    key, value = BENCHMARK_CLIENT_LABEL
    batch.create_namespaced_job(
        namespace,
        {
            "metadata": {"name": "bench"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": {key: value}},
                    "spec": restricted_pod_spec(["ycsb", "run"], restartPolicy="Never"),
                },
            },
        },
    )

    def running_pod() -> Any:
        pods = core.list_namespaced_pod(namespace, label_selector=f"{key}={value}").items
        return pods and pods[0].status.phase == "Running" and is_ready(pods[0]) and pods[0]

    pod = wait_for(running_pod, timeout=30, what="benchmark client Running/Ready")
    # An ordinary Job pod is completed ~0.5 s after Ready; give KWOK several times that.
    time.sleep(3)
    pod = core.read_namespaced_pod(pod.metadata.name, namespace)
    assert pod.status.phase == "Running"
    assert not batch.read_namespaced_job("bench", namespace).status.succeeded

    # The harness' part: it reports the real outcome; KWOK must leave it alone.
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    core.patch_namespaced_pod_status(
        pod.metadata.name,
        namespace,
        {
            "status": {
                "phase": "Succeeded",
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": 0,
                                "reason": "Completed",
                                "startedAt": now,
                                "finishedAt": now,
                            }
                        },
                    }
                ],
            }
        },
    )
    wait_for(
        lambda: batch.read_namespaced_job("bench", namespace).status.succeeded,
        timeout=30,
        what="Job succeeded after the harness' status patch",
    )
    assert core.read_namespaced_pod(pod.metadata.name, namespace).status.phase == "Succeeded"


def test_restricted_namespace_rejects_noncompliant_pods(
    kube_api: k8s.ApiClient, namespace: str
) -> None:
    core = CoreV1Api(kube_api)
    privileged = {
        "metadata": {"name": "root"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    with pytest.raises(k8s.ApiException) as rejected:
        core.create_namespaced_pod(namespace, privileged)
    assert rejected.value.status == 403
    body = str(rejected.value.body)
    assert "violates PodSecurity" in body
    assert "restricted:latest" in body
    core.create_namespaced_pod(
        namespace, {"metadata": {"name": "ok"}, "spec": restricted_pod_spec()}
    )


def test_garbage_collector_deletes_owned_objects(kube_api: k8s.ApiClient, namespace: str) -> None:
    core = CoreV1Api(kube_api)
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(
        namespace,
        {
            "metadata": {
                "name": "owned",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": owner.metadata.uid,
                    }
                ],
            }
        },
    )
    core.delete_namespaced_config_map("owner", namespace)

    def owned_gone() -> bool:
        try:
            core.read_namespaced_config_map("owned", namespace)
        except k8s.ApiException as e:
            return bool(e.status == 404)
        return False

    wait_for(owned_gone, timeout=30, what="owned ConfigMap collected")


def _bound_pvc(api: k8s.ApiClient, namespace: str, name: str) -> Path:
    core = CoreV1Api(api)
    core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    pvc = wait_for(
        lambda: (
            (c := core.read_namespaced_persistent_volume_claim(name, namespace)).status.phase
            == "Bound"
            and c
        ),
        timeout=30,
        what=f"PVC {name} Bound",
    )
    return Path(core.read_persistent_volume(pvc.spec.volume_name).spec.host_path.path)


def test_stop_leaves_nothing_behind_and_spares_other_planes(
    bare_plane: Plane,
    kube_api: k8s.ApiClient,
    namespace: str,
    make_plane: Callable[..., Plane],
    record_property: Callable[[str, object], None],
) -> None:
    session_pv = _bound_pvc(kube_api, namespace, "keep-me")
    t0 = time.monotonic()
    private = make_plane(nodes=NodeSet(profile="kind", count=1))
    wall = time.monotonic() - t0
    rss = private.rss_bytes()
    record_property("warm_start_seconds", round(private.started_in, 2))
    record_property("rss_mib", rss // 2**20)
    print(f"\nwarm start {private.started_in:.2f}s (wall {wall:.2f}s), RSS {rss / 2**20:.0f} MiB")
    assert private.started_in < 30
    assert rss < 1.5 * 2**30

    CoreV1Api(private.api_client()).create_namespace({"metadata": {"name": "x"}})
    private_pv = _bound_pvc(private.api_client(), "x", "scratch")
    assert private_pv.is_dir()
    components = list(private.procs)
    workdir, shm = private.workdir, private.shm
    assert len(components) == 5

    t0 = time.monotonic()
    private.stop()
    print(f"stop {time.monotonic() - t0:.2f}s")
    assert not any(p.alive() for p in components)
    assert not shm.exists()
    assert not workdir.exists()
    assert not private_pv.exists()
    assert session_pv.is_dir(), "another plane's hostPath PV was removed"
    assert bare_plane.alive()


def test_a_port_taken_between_pick_and_bind_costs_a_retry_not_the_suite(
    make_plane: Callable[..., Plane], monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI once lost a whole session: another program bound kube-apiserver's port after the plane
    # picked it. Here the first port the plane picks is held by a listener until the end.
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    picks: list[int] = []

    def pick(host: str = "127.0.0.1") -> int:
        picks.append(taken if not picks else net.free_port(host))
        return picks[-1]

    monkeypatch.setattr(plane_mod, "free_port", pick)
    try:
        private = make_plane(nodes=NodeSet(profile="kind", count=1))
        assert taken not in private.ports.values()
        assert len(picks) == 10, "the plane should have picked a second set of ports"
        assert VersionApi(private.api_client()).get_code().git_version.startswith("v1.")
    finally:
        squatter.close()


def test_listen_ports_are_drawn_below_the_ephemeral_range() -> None:
    lo, _ = net._ephemeral_range()
    ports = [net.free_port() for _ in range(50)]
    assert len(set(ports)) == 50, "a port was handed out twice"
    assert all(net._LOWEST <= p < lo for p in ports), ports


def test_planes_of_a_killed_session_are_reaped(tmp_path: Path) -> None:
    # A "session" that starts a plane and is then killed -9 before it can stop it.
    script = (
        "import sys; from pathlib import Path; from localplane.plane import Plane\n"
        "p = Plane.start(Path(sys.argv[1]))\n"
        "print(p.shm, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    workdir = tmp_path / "orphan"
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(workdir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert owner.stdout is not None
    shm = Path(owner.stdout.readline().strip())
    assert shm.parent == SHM_ROOT and shm.is_dir()
    state = json.loads((workdir / STATE_FILE).read_text())
    components = [procs.Proc.from_json(p) for p in state["procs"]]
    assert all(p.alive() for p in components)

    owner.kill()
    owner.wait()
    # The kernel ends the components with their owner (PR_SET_PDEATHSIG) ...
    wait_for(lambda: not any(p.alive() for p in components), timeout=10, what="components gone")
    # ... and the next session's cleanup removes what they left on disk.
    assert workdir in cleanup_stale()
    assert not shm.exists()
    assert not workdir.exists()


def test_repo_crds_are_accepted_and_established(plane: Plane, kube_api: k8s.ApiClient) -> None:
    # `plane` applied crds/*.yaml (a real apiserver validates schemas and CEL rule costs).
    names = {
        c.metadata.name
        for c in ApiextensionsV1Api(kube_api).list_custom_resource_definition().items
    }
    assert {"mongoclusters.mongobench.io", "benchmarkruns.mongobench.io"} <= names


def test_prometheus_operator_crds_on_request(prometheus_operator_crds: list[str]) -> None:
    assert "servicemonitors.monitoring.coreos.com" in prometheus_operator_crds
    assert "podmonitors.monitoring.coreos.com" in prometheus_operator_crds
    assert "prometheusrules.monitoring.coreos.com" in prometheus_operator_crds


def test_prometheus_scrapes_a_real_node_exporter_named_after_each_node(
    prometheus: str, kube_api: k8s.ApiClient
) -> None:
    # Cluster tier: kube-prometheus-stack's node-exporter job, one real node-exporter per fake
    # node, each its node's host: node_uname_info{nodename} is the node's name, so the
    # operator's default node mapping (`uname`) needs no alias.
    def query(promql: str) -> list[dict[str, Any]]:
        qs = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{prometheus}/api/v1/query?{qs}", timeout=5) as resp:
            result: list[dict[str, Any]] = json.load(resp)["data"]["result"]
        return result

    nodes = {n.metadata.name for n in CoreV1Api(kube_api).list_node().items}
    names = query('node_uname_info{job="node-exporter"}')
    assert {r["metric"]["nodename"] for r in names} >= nodes
    assert len({r["metric"]["instance"] for r in names}) == len(names)  # one target each
    cpu = query('sum by (mode) (node_cpu_seconds_total{job="node-exporter"})')
    assert {"user", "system", "idle", "iowait", "steal"} <= {r["metric"]["mode"] for r in cpu}


def node_exporter_monitor(name: str, release: str) -> dict[str, Any]:
    """A PodMonitor of kube-prometheus-stack's node-exporter pods, labelled `release`."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "labels": {"release": release}},
        "spec": {
            "namespaceSelector": {"matchNames": [monitoring_mod.NAMESPACE]},
            "selector": {"matchLabels": {"app.kubernetes.io/name": "prometheus-node-exporter"}},
            "podMetricsEndpoints": [{"port": "http-metrics", "interval": "1s"}],
        },
    }


def test_the_real_prometheus_operator_scrapes_only_the_monitors_its_prometheus_selects(
    monitoring: Monitoring, namespace: str, kubectl: Any, kube_api: k8s.ApiClient
) -> None:
    # Cluster tier: the Prometheus Operator's own label selection and configuration, the config
    # reloader and Prometheus 3's Kubernetes discovery, with the real node-exporter behind the
    # KWOK pods of kube-prometheus-stack's node-exporter DaemonSet.
    pods = (
        CoreV1Api(kube_api)
        .list_namespaced_pod(
            monitoring_mod.NAMESPACE,
            label_selector="app.kubernetes.io/name=prometheus-node-exporter",
        )
        .items
    )
    pod_ips = {f"{p.status.pod_ip}:9100" for p in pods}
    assert len(pods) == len(CoreV1Api(kube_api).list_node().items)
    # The stack's own ServiceMonitor: one node-exporter target per node, up, its `instance`
    # the pod's address as on a cluster, scraped on loopback.
    stack_pool = f"serviceMonitor/monitoring/{monitoring_mod.NODE_EXPORTER}/0"
    stack = [t for t in monitoring.targets() if t["scrapePool"] == stack_pool]
    assert {t["labels"]["instance"] for t in stack} == pod_ips
    assert {t["labels"]["job"] for t in stack} == {"node-exporter"}
    assert {t["scrapeUrl"].split("/")[2] for t in stack} == {
        f"127.0.0.1:{port}" for port in monitoring.node_exporters.values()
    }

    for name, release in (("selected", monitoring_mod.RELEASE), ("unselected", "other")):
        manifest = json.dumps(node_exporter_monitor(name, release))
        kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    selected, unselected = (f"podMonitor/{namespace}/{n}/0" for n in ("selected", "unselected"))

    def up(pool: str) -> list[dict[str, Any]]:
        found = [t for t in monitoring.targets() if t["scrapePool"] == pool]
        return found if found and all(t["health"] == "up" for t in found) else []

    targets = wait_for(lambda: up(selected), timeout=60, what="the selected monitor's targets up")
    assert {t["labels"]["instance"] for t in targets} == pod_ips
    # Negative control: applied at the same time, the monitor labelled for another release got
    # no scrape job and no target ...
    assert unselected not in monitoring.scrape_pools()
    assert not [t for t in monitoring.targets() if t["scrapePool"] == unselected]
    # ... until it carries the release label.
    kubectl(
        "label",
        "-n",
        namespace,
        "podmonitor/unselected",
        "--overwrite",
        "release=" + monitoring_mod.RELEASE,
    )
    wait_for(lambda: up(unselected), timeout=60, what="the relabelled monitor's targets up")
    # Real series of the selected monitor's job.
    assert monitoring.query(f'node_cpu_seconds_total{{job="{namespace}/selected", mode="idle"}}')


def test_kubelet_cadvisor_series_reach_prometheus_through_the_kubelet_servicemonitor(
    monitoring: Monitoring, namespace: str, kube_api: k8s.ApiClient
) -> None:
    # Cluster tier: kube-prometheus-stack's kubelet ServiceMonitor over the `kubelet` Service
    # the real Prometheus Operator keeps (one target per Node); a harness kubelet's container
    # is in its node's series, with the `node` label the scrape gives, honorLabels keeping the
    # container's own namespace and pod.
    nodes = {n.metadata.name for n in CoreV1Api(kube_api).list_node().items}
    pool = f"serviceMonitor/{monitoring_mod.NAMESPACE}/{monitoring_mod.KUBELET_MONITOR}/0"

    def up() -> list[dict[str, Any]]:
        found = [t for t in monitoring.targets() if t["scrapePool"] == pool]
        return found if {t["labels"].get("node") for t in found} >= nodes else []

    targets = wait_for(up, timeout=60, what="a kubelet target per node")
    assert {t["labels"]["job"] for t in targets} == {"kubelet"}
    assert {t["labels"]["metrics_path"] for t in targets} == {"/metrics/cadvisor"}
    node = sorted(nodes)[0]

    class Group:  # a container's cgroup as cgroups.cadvisor_text reads it
        def usage_seconds(self) -> float:
            return 12.5

        def periods(self) -> tuple[int, int]:
            return 10, 2

        def working_set_bytes(self) -> int:
            return 4096

    key = (namespace, "client-0", "ycsb", node)
    with monitoring.kubelet_containers(lambda: [(key, Group())]):  # type: ignore[list-item]
        promql = f'container_cpu_usage_seconds_total{{job="kubelet", namespace="{namespace}"}}'
        (series,) = wait_for(lambda: monitoring.query(promql), timeout=60, what="its series")
    assert series["metric"]["node"] == node and series["metric"]["pod"] == "client-0"
    assert float(series["value"][1]) == 12.5
