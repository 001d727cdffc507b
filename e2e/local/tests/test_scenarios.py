"""Cluster tier: BenchmarkRuns with user Locust scenarios from a ConfigMap.

What is real: the apiserver (the CRD's schema and CEL rules), controller-manager (Indexed Jobs),
the operator process, the client pods' commands (the runner and Locust running the shipped
scenarios of bench-jobs/locust/scenarios from the pod's ConfigMap volume, executed by the harness
kubelet, which writes the volume's keys into the pod's folder), FerretDB as the database (an
external URI: `uriSecretRef`). The ConfigMaps are made the two ways the study's sample says:
`kubectl apply -k bench-jobs/locust/scenarios` and `kubectl create configmap --from-file`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymongo
import pytest
import test_benchmarkrun as bmr
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"
SCENARIOS = REPO / "bench-jobs" / "locust" / "scenarios"
FILES = ("orders_dataset.py", "bulk_insert.py", "scatter_gather_find.py", "aggregation.py")


# The BenchmarkRun suite's fixtures (found by name in the module): FerretDB and the kubelet.
ferretdb, executor = bmr.ferretdb, bmr.executor


def ref(configmap: str, key: str) -> dict[str, Any]:
    return {"configMapRef": {"name": configmap, "key": key}}


def manifest(name: str, configmap: str, workloads: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": {
            "uriSecretRef": {"name": "ferretdb", "key": "uri"},
            "driver": "locust",
            "database": f"scn_{name.replace('-', '_')}",
            "load": {
                "recordCount": 200,
                "threads": 2,
                "batchSize": 20,
                "scenario": ref(configmap, "bulk_insert.py"),
            },
            "workloads": workloads,
            "run": {"operationCount": 40, "threads": 2, "statusIntervalSeconds": 1},
            "repetitions": 1,
            "clients": {"parallelism": 2, "startTimeoutSeconds": 60},
        },
    }


def create_configmap(plane: Plane, namespace: str, name: str) -> None:
    """`kubectl create configmap NAME --from-file=...` of the study's files."""
    files = [f"--from-file={SCENARIOS / f}" for f in FILES]
    plane.kubectl("create", "configmap", name, "-n", namespace, *files)


def get_run(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return dict(
        k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "benchmarkruns", name
        )
    )


def finished(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    def phase() -> dict[str, Any] | None:
        run = get_run(api, namespace, name)
        return run if run.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    return dict(wait_until(phase, timeout=300, interval=0.5, what=f"run {name} finished"))


def condition(run: dict[str, Any], type_: str) -> dict[str, Any]:
    conditions = (run.get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in conditions}.get(type_, {})


def test_the_study_scenarios_run_from_a_configmap_and_a_late_configmap_is_waited_for(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    executor: PodExecutor,
    ferretdb: FerretDB,
    tmp_path: Path,
) -> None:
    plane.kubectl(
        "create", "secret", "generic", "ferretdb", "-n", namespace,
        f"--from-literal=uri={ferretdb.uri}",
    )  # fmt: skip
    plane.kubectl("apply", "-n", namespace, "-k", str(SCENARIOS))  # ConfigMap study-scenarios
    cm = "study-scenarios"
    study = manifest(
        "study",
        cm,
        [
            {"name": "find", "scenario": ref(cm, "scatter_gather_find.py")},
            {"name": "agg", "scenario": ref(cm, "aggregation.py")},
            {
                "name": "bulk",
                "scenario": ref(cm, "bulk_insert.py"),
                "properties": {"batchsize": "5"},
            },
        ],
    )
    # Its ConfigMap comes after it (apply order is not the user's to choose in GitOps).
    late = manifest("late", "late", [{"name": "agg", "scenario": ref("late", "aggregation.py")}])
    operator = start_operator(plane.kubeconfig, [namespace], tmp_path / "operator.log")
    try:
        for run in (study, late):
            plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(run))
        waiting = wait_until(
            lambda: condition(get_run(kube_api, namespace, "late"), "ScenarioReady") or None,
            timeout=30,
            what="late run's ScenarioReady",
        )
        assert waiting["status"] == "False" and waiting["reason"] == "ConfigMapNotFound"
        assert "ConfigMap" in waiting["message"] and "late" in waiting["message"]
        assert get_run(kube_api, namespace, "late")["status"]["phase"] == "Pending"
        create_configmap(plane, namespace, "late")
        runs = {name: finished(kube_api, namespace, name) for name in ("study", "late")}
    finally:
        operator.stop()
    for name, run in runs.items():
        assert run["status"]["phase"] == "Succeeded", (
            name,
            run["status"].get("conditions"),
            [r.output_tail for r in executor.runs if r.exit_code],
        )
        assert condition(run, "ScenarioReady")["reason"] == "Found"
    steps = {s["label"]: s for s in runs["study"]["status"]["steps"]}
    assert steps["load"]["result"]["operationsTotal"] == 200
    for label, op in (
        ("run find #1", "FIND"),
        ("run agg #1", "AGGREGATE"),
        ("run bulk #1", "INSERT"),
    ):
        result = steps[label]["result"]
        assert result["operationsTotal"] == 40, (label, result)
        assert set(result["operations"]) == {op}, (label, result["operations"])
        assert [c["index"] for c in result["perClient"]] == [0, 1]
    orders = pymongo.MongoClient(ferretdb.uri)["scn_study"]["usertable"]
    assert orders.count_documents({}) == 200 + 40  # the load, then the bulk insert's own keys
    assert orders.count_documents({"region": {"$exists": True}}) == 240
