"""Cluster tier: a sharded BenchmarkRun's status has the CPU and memory of its mongos and its
clients, per pod and per role, and `mongobench compare --metric cpu:mongos` and `--metric
memory:mongos` print them.

What is real: the apiserver, the operator process and its PromQL, Prometheus scraping
cAdvisor-named container CPU and memory working set, YCSB with the project's binding executed
by the harness kubelet (localplane.executor) inside CPU and memory cgroups, the `mongobench`
CLI. What stands in: the wire model for the sharded cluster's state, and FerretDB for the
router: the clients' mongos URI is rewritten to FerretDB, so the process that serves the routed
traffic is FerretDB. It is started in its own cgroup, which the harness's cAdvisor labels as the
mongos pod's `mongos` container, as a kubelet would label it, so the CPU and memory the status
shows are what the router's work really took. Prometheus scrapes them as
kube-prometheus-stack's kubelet ServiceMonitor does (localplane.monitoring).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_benchmarkexperiment import register_sharded
from test_cli import cli

from localplane import cgroups
from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.mongomodel import MongoModel
from localplane.monitoring import Monitoring
from localplane.operator import wait_until
from localplane.plane import Plane
from mongobench.mongocluster.build import labels

pytestmark = pytest.mark.cluster

model = bmr.model
CLUSTER = "rc"


@pytest.fixture
def router_cgroup() -> Iterator[cgroups.ContainerCgroup]:
    """The cgroup the router's stand-in runs in from its start (its memory is charged there)."""
    version = cgroups.available()
    if version is None:
        pytest.fail("this user cannot create cgroups: container CPU cannot be accounted")
    group = cgroups.ContainerCgroup(f"router-{uuid.uuid4().hex[:8]}", None, version)
    group.create()
    yield group
    group.remove()  # after the server stopped (fixtures tear down in reverse)


@pytest.fixture
def ferretdb(router_cgroup: cgroups.ContainerCgroup) -> Iterator[FerretDB]:
    with running_ferretdb(cgroup=router_cgroup) as server:
        yield server


@pytest.fixture
def executor(plane: Plane, namespace: str, ferretdb: FerretDB) -> Iterator[PodExecutor]:
    with pod_executor(
        plane, namespace, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
    ) as ex:
        yield ex


def sharded_cluster(plane: Plane, namespace: str, kube_api: k8s.ApiClient) -> None:
    bmr.apply(
        plane,
        namespace,
        {
            "apiVersion": f"{bmr.GROUP}/{bmr.VERSION}",
            "kind": "MongoCluster",
            "metadata": {"name": CLUSTER},
            "spec": {
                "version": "7.0.14",
                "topology": {
                    "type": "Sharded",
                    "sharded": {
                        "shards": 2,
                        "membersPerShard": 1,
                        "configServers": 1,
                        "mongos": 1,
                    },
                },
            },
        },
    )
    wait_until(
        lambda: (
            bmr.get(kube_api, namespace, "mongoclusters", CLUSTER).get("status", {}).get("phase")
            == "Ready"
        ),
        timeout=120,
        what="sharded cluster Ready",
    )


def test_sharded_run_status_has_mongos_cpu_and_memory_and_compare_prints_them(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    router_cgroup: cgroups.ContainerCgroup,
    monitoring: Monitoring,
    prometheus: str,
    tmp_path: Path,
) -> None:
    register_sharded(model, namespace, CLUSTER, 2)
    core = k8s.CoreV1Api(kube_api)
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    stack = ExitStack()
    try:
        sharded_cluster(plane, namespace, kube_api)
        selector = f"{labels.CLUSTER}={CLUSTER},{labels.COMPONENT}=mongos"
        routers = core.list_namespaced_pod(namespace, label_selector=selector).items
        assert len(routers) == 1, [p.metadata.name for p in routers]
        router = routers[0]
        # The stand-in's cgroup, labelled as the router's container (it serves the clients),
        # in its node's kubelet cAdvisor series beside the clients' containers.
        key = (namespace, router.metadata.name, "mongos", router.spec.node_name or "")
        stack.enter_context(monitoring.kubelet_containers(lambda: [(key, router_cgroup)]))
        stack.enter_context(monitoring.kubelet_containers(executor.running_containers))
        bmr.apply(
            plane,
            namespace,
            bmr.run_manifest(
                "routed",
                clusterRef={"name": CLUSTER},
                workloads=[{"name": "a"}],
                repetitions=1,
                load={"recordCount": 200, "threads": 2},
                run={"operationCount": 3000, "threads": 2, "statusIntervalSeconds": 1},
                clients={"parallelism": 1},
            ),
        )
        run = bmr.wait_run(kube_api, namespace, "routed", ("Succeeded", "Failed"), timeout=300)
    finally:
        stack.close()
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Succeeded", status.get("conditions")
    step = next(s for s in status["steps"] if s["kind"] == "run")
    mongos = step["roles"]["mongos"]
    assert [p["pod"] for p in mongos["pods"]] == [router.metadata.name]
    assert mongos["pods"][0]["cpuCores"] > 0, step["roles"]
    assert mongos["sum"]["pods"] == 1 and mongos["sum"]["cpuCores"] > 0
    assert mongos["sum"]["cpuCoresMax"] >= mongos["sum"]["cpuCores"]
    # Memory working set (usage less inactive page cache): FerretDB holds megabytes at least.
    assert mongos["pods"][0]["memoryWorkingSetBytes"] > 1 << 20, step["roles"]
    assert mongos["sum"]["memoryWorkingSetBytes"] == mongos["pods"][0]["memoryWorkingSetBytes"]
    assert mongos["sum"]["memoryWorkingSetBytesMax"] >= mongos["sum"]["memoryWorkingSetBytes"]
    # The YCSB client ran in its own cgroups: the clients' role has its CPU and its JVM's memory.
    clients = step["roles"]["clients"]["sum"]
    assert clients["cpuCores"] > 0 and clients["memoryWorkingSetBytes"] > 1 << 20, clients
    # Pods nobody runs here (KWOK's mongod pods) are missing, never zero.
    missing = step["roles"]["missing"]
    assert not any("of every role" in m for m in missing), missing
    assert not any("mongos" in m or "clients" in m for m in missing), missing
    assert any(m.startswith("cpu of mongod pod ") for m in missing), missing
    assert any(m.startswith("memory of mongod pod ") for m in missing), missing
    assert all("cpuCores" not in p for p in step["roles"]["mongod"]["pods"])
    assert all("memoryWorkingSetBytes" not in p for p in step["roles"]["mongod"]["pods"])
    # On this shared machine the trial may be judged client-bound: compare it all the same.
    shown = cli(
        plane, "compare", "routed", "-n", namespace, "--metric", "cpu:mongos", "--include-invalid",
        "--wide",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    assert any(r.startswith("a cpu:mongos (cores) routed 1") for r in rows), shown.stdout
    shown = cli(
        plane, "compare", "routed", "-n", namespace, "--metric", "memory:mongos",
        "--include-invalid", "--wide",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    row = next((r for r in rows if r.startswith("a memory:mongos (bytes) routed 1")), None)
    assert row is not None, shown.stdout
    # The figure printed is the status's, not a zero or a blank.
    printed = row.split()[5]
    assert printed not in ("0", "-", ""), row
    # The load's row is not asserted: its window (200 records) can end before Prometheus
    # scraped the router's cgroup once on a busy machine, and a missing series is never a zero.
