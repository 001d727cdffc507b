"""Cluster tier: a Standalone MongoCluster (one mongod, no replica set) on the local plane
becomes Ready, a YCSB BenchmarkRun against it Succeeds with results, and it is deleted.

What is real: the apiserver with the CRDs, controller-manager, the operator process, the
runner and YCSB with the project's binding (executed by the harness kubelet), Prometheus, the
`mongobench` command. What stands in: the wire model's standalone mongod (localplane.mongomodel:
hello without setName, replica-set commands refused with NoReplicationEnabled 76, as MongoDB
answers them) for the operator's wiring and prepare step; FerretDB for the clients' data path.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_cli import cli

from localplane.executor import PodExecutor
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY

pytestmark = pytest.mark.cluster

model = bmr.model
ferretdb = bmr.ferretdb
executor = bmr.executor
CLUSTER = "sa"


def register_standalone(model: MongoModel, namespace: str, cluster: str) -> str:
    """The model's standalone mongod under the name the operator gives the cluster's pod."""
    host = f"{cluster}-mongod-0.{cluster}-mongod-hl.{namespace}.svc.cluster.local:27017"
    model.standalone(host)
    return host


def test_standalone_is_ready_runs_ycsb_with_results_and_is_deleted(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    host = register_standalone(model, namespace, CLUSTER)
    custom = k8s.CustomObjectsApi(kube_api)
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.apply(
            plane,
            namespace,
            {
                "apiVersion": f"{bmr.GROUP}/{bmr.VERSION}",
                "kind": "MongoCluster",
                "metadata": {"name": CLUSTER},
                "spec": {"version": "7.0.14", "topology": {"type": "Standalone"}},
            },
        )
        cluster = wait_until(
            lambda: (
                (c := bmr.get(kube_api, namespace, "mongoclusters", CLUSTER))
                .get("status", {})
                .get("phase")
                == "Ready"
                and c
            ),
            timeout=90,
            what="standalone Ready",
        )
        shown = plane.kubectl("get", "mongocluster", CLUSTER, "-n", namespace).stdout
        core, apps = k8s.CoreV1Api(kube_api), k8s.AppsV1Api(kube_api)
        secret = core.read_namespaced_secret(f"{CLUSTER}-connection", namespace)
        uri = base64.b64decode(secret.data["uri"]).decode()
        (sts,) = apps.list_namespaced_stateful_set(namespace).items
        pdbs = k8s.PolicyV1Api(kube_api).list_namespaced_pod_disruption_budget(namespace).items
        bmr.apply(
            plane,
            namespace,
            bmr.run_manifest(
                "sa-run",
                clusterRef={"name": CLUSTER},
                workloads=[{"name": "a"}],
                repetitions=1,
                clients={"parallelism": 1},
                validity=LENIENT_VALIDITY,
            ),
        )
        run = bmr.wait_run(kube_api, namespace, "sa-run", ("Succeeded", "Failed"), timeout=300)
        described = cli(plane, "describe", "sa-run", "-n", namespace)
        custom.delete_namespaced_custom_object(
            bmr.GROUP, bmr.VERSION, namespace, "mongoclusters", CLUSTER
        )
        wait_until(
            lambda: (
                not [
                    c
                    for c in custom.list_namespaced_custom_object(
                        bmr.GROUP, bmr.VERSION, namespace, "mongoclusters"
                    )["items"]
                    if c["metadata"]["name"] == CLUSTER
                ]
            ),
            timeout=60,
            what="standalone deleted",
        )
    finally:
        operator.stop()

    # Ready: one member, STANDALONE, users created on it; never a replica-set command sent.
    status = cluster["status"]
    assert (status["members"], status["readyMembers"]) == (1, 1)
    (entry,) = status["replicaSets"]
    assert (entry["name"], entry["role"]) == ("sa-mongod", "standalone")
    assert entry["memberStates"] == [{"host": host, "state": "STANDALONE", "health": 1}]
    assert entry["server"]["process"] == "mongod"
    assert ("benchmark", "admin") in model.standalones[host].users
    assert model.no_replication == []
    assert "Standalone" in shown and "Ready" in shown, shown
    # Its pod runs mongod without --replSet, and clients get its one host with no replicaSet.
    (mongod, _exporter) = sts.spec.template.spec.containers
    assert (sts.metadata.name, sts.spec.replicas) == ("sa-mongod", 1)
    assert "--replSet" not in mongod.args and "--keyFile" in mongod.args
    assert f"@{host}/ycsb?" in uri and "replicaSet" not in uri
    assert pdbs == []

    # The run: prepared on the mongod (drop, create), loaded and run by YCSB, with results.
    assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
    assert "ycsb.usertable" in model.dropped
    step = next(s for s in run["status"]["steps"] if s["kind"] == "run")
    assert step["result"]["throughput"] > 0
    assert [p["pod"] for p in step["roles"]["mongod"]["pods"]] == ["sa-mongod-0"]
    assert run["status"]["clusterSnapshot"]["topology"]["type"] == "Standalone"
    assert described.returncode == 0, described.stderr
    assert "standalone mongod" in described.stdout
    # Deleted: its workload and Secrets went with it (owned, garbage-collected).
    wait_until(
        lambda: not apps.list_namespaced_stateful_set(namespace).items,
        timeout=60,
        what="StatefulSet garbage-collected",
    )
