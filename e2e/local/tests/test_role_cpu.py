"""Cluster tier: a sharded BenchmarkRun's status has the CPU of its mongos, per pod and per role,
and `mongobench compare --metric cpu:mongos` prints it.

What is real: the apiserver, the operator process and its PromQL, Prometheus scraping
cAdvisor-named container CPU, YCSB with the project's binding executed by the harness kubelet
(localplane.executor) inside CPU cgroups, the `mongobench` CLI. What stands in: the wire model
for the sharded cluster's state, and FerretDB for the router: the clients' mongos URI is
rewritten to FerretDB, so the process that serves the routed traffic is FerretDB. It runs in a
cgroup labelled as the mongos pod's `mongos` container, as a kubelet would label it, so the CPU
the status shows is the CPU the router's work really took. Memory is not served by the harness
kubelet: the status lists it as missing, not as zero.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_benchmarkexperiment import register_sharded
from test_cli import cli

from localplane import cgroups
from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.prometheus import Prometheus, set_cadvisor_targets
from mongobench.mongocluster import labels

pytestmark = pytest.mark.cluster

ferretdb, model = bmr.ferretdb, bmr.model
CLUSTER = "rc"


@pytest.fixture
def executor(plane: Plane, namespace: str, ferretdb: FerretDB) -> Iterator[PodExecutor]:
    if cgroups.available() is None:
        pytest.fail("this user cannot create CPU cgroups: container CPU cannot be accounted")
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


def test_sharded_run_status_has_mongos_cpu_and_compare_prints_it(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    prometheus_server: Prometheus,
    prometheus: str,
    tmp_path: Path,
) -> None:
    register_sharded(model, namespace, CLUSTER, 2)
    core = k8s.CoreV1Api(kube_api)
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    server = None
    try:
        sharded_cluster(plane, namespace, kube_api)
        selector = f"{labels.CLUSTER}={CLUSTER},{labels.COMPONENT}=mongos"
        routers = core.list_namespaced_pod(namespace, label_selector=selector).items
        assert len(routers) == 1, [p.metadata.name for p in routers]
        router = routers[0]
        version = cgroups.available()
        assert version is not None
        group = cgroups.ContainerCgroup(f"{router.metadata.uid}-mongos", None, version)
        group.create()
        group.add(ferretdb.process.pid)  # the router's stand-in serves the clients from now on
        key = (namespace, router.metadata.name, "mongos", router.spec.node_name or "")
        server = cgroups.serve(lambda: cgroups.cadvisor_text([(key, group)]))
        set_cadvisor_targets(
            prometheus_server, [executor.serve_cadvisor(), int(server.server_address[1])]
        )
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
        set_cadvisor_targets(prometheus_server, [])
        if server is not None:
            server.shutdown()
        operator.stop()
    status = run["status"]
    assert status["phase"] == "Succeeded", status.get("conditions")
    step = next(s for s in status["steps"] if s["kind"] == "run")
    mongos = step["roles"]["mongos"]
    assert [p["pod"] for p in mongos["pods"]] == [router.metadata.name]
    assert mongos["pods"][0]["cpuCores"] > 0, step["roles"]
    assert mongos["sum"]["pods"] == 1 and mongos["sum"]["cpuCores"] > 0
    assert mongos["sum"]["cpuCoresMax"] >= mongos["sum"]["cpuCores"]
    # The YCSB client ran in its own cgroup: the clients' role has its CPU too.
    assert step["roles"]["clients"]["sum"]["cpuCores"] > 0, step["roles"]
    # Pods nobody runs here (KWOK's mongod pods) and memory are missing, never zero.
    missing = step["roles"]["missing"]
    assert "memory of every role (no cAdvisor series)" in missing
    assert any(m.startswith("cpu of mongod pod ") for m in missing), missing
    assert all("cpuCores" not in p for p in step["roles"]["mongod"]["pods"])
    # On this shared machine the trial may be judged client-bound: compare it all the same.
    shown = cli(
        plane, "compare", "routed", "-n", namespace, "--metric", "cpu:mongos", "--include-invalid"
    )
    assert shown.returncode == 0, shown.stderr
    rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    assert any(r.startswith("a cpu:mongos (cores) routed 1") for r in rows), shown.stdout
    # The load's row is not asserted: its window (200 records) can end before Prometheus
    # scraped the router's cgroup once on a busy machine, and a missing series is never a zero.
