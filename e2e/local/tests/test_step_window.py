"""Cluster tier: parallel clients start together, and a step's throughput has one denominator.

What is real: the apiserver, controller-manager (Indexed Jobs), the operator process, the client
pods' commands (the runner and YCSB with the project's binding, executed by the harness kubelet
with the pods' own ServiceAccount tokens, so the barrier ConfigMap is reached under the client
Role), FerretDB as the database (an external URI: `uriSecretRef`). What stands in: a pod that
starts late is the harness delaying its process by a known time (as a slow image pull would).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"
INDEX = "batch.kubernetes.io/job-completion-index"
# Client 1's late start. Without the barrier its window starts about this much later; how much
# exactly also depends on each JVM's start-up, which differed by 2.2 s on a loaded CI machine.
DELAY_S = 7.0


@pytest.fixture
def ferretdb() -> Iterator[FerretDB]:
    with running_ferretdb() as server:
        yield server


@pytest.fixture
def executor(plane: Plane, namespace: str, ferretdb: FerretDB) -> Iterator[PodExecutor]:
    with pod_executor(
        plane, namespace, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
    ) as ex:
        # Client 1 of every step starts DELAY_S late.
        ex.delay_pods(
            lambda pod: (pod["metadata"].get("annotations") or {}).get(INDEX) == "1", DELAY_S
        )
        yield ex


def manifest(name: str, barrier: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if not barrier:
        meta["annotations"] = {"mongobench.io/start-barrier": "disabled"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkRun",
        "metadata": meta,
        "spec": {
            "uriSecretRef": {"name": "ferretdb", "key": "uri"},
            "database": f"ycsb_{name.replace('-', '_')}",
            "workloads": [{"name": "c"}],
            "load": {"recordCount": 400, "threads": 2},
            "run": {"operationCount": 600, "threads": 2, "statusIntervalSeconds": 1},
            "repetitions": 1,
            "clients": {"parallelism": 2, "startTimeoutSeconds": 60},
        },
    }


def finished(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    def phase() -> dict[str, Any] | None:
        run = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "benchmarkruns", name
        )
        return run if run.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    return dict(wait_until(phase, timeout=240, interval=0.5, what=f"run {name} finished"))


def measured_steps(run: dict[str, Any]) -> list[dict[str, Any]]:
    steps = [s for s in run["status"]["steps"] if s["kind"] in ("load", "run")]
    assert all(s["phase"] == "Succeeded" for s in steps), steps
    return steps


def test_a_late_client_starts_with_the_others_and_throughput_has_one_denominator(
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
    operator = start_operator(plane.kubeconfig, [namespace], tmp_path / "operator.log")
    try:
        for name, barrier in (("together", True), ("apart", False)):
            plane.kubectl(
                "apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(manifest(name, barrier))
            )
        runs = {name: finished(kube_api, namespace, name) for name in ("together", "apart")}
    finally:
        operator.stop()
    report = []
    for name, run in runs.items():
        assert run["status"]["phase"] == "Succeeded", (
            run["status"].get("conditions"),
            [r.output_tail for r in executor.runs if r.exit_code],
        )
        for step in measured_steps(run):
            result = step["result"]
            ops, window = result["operationsTotal"], result["window"]["seconds"]
            # One denominator, whatever the clients did.
            assert result["runtimeSeconds"] == window
            assert result["throughput"] == pytest.approx(ops / window, rel=1e-3)
            clients = result["perClient"]
            assert [c["index"] for c in clients] == [0, 1]
            sum_of_rates = sum(c["throughput"] for c in clients)
            report.append(
                f"{name:8} {step['label']:8} skew {result['startSkewSeconds']:6.3f} s  "
                f"ops/window {ops / window:8.1f}  reported {result['throughput']:8.1f}  "
                f"v1 sum of client rates {sum_of_rates:8.1f} "
                f"({100 * (sum_of_rates / result['throughput'] - 1):+.1f}%)"
            )
            if name == "together":
                # Client 1 started DELAY_S late, yet both measured windows start together.
                assert result["startSkewSeconds"] < 0.5, clients
                assert result["startAt"]
            else:
                assert result["startSkewSeconds"] > DELAY_S / 2, clients
                # What v1 reported, the sum of each client's own rate, overstates the step.
                assert sum_of_rates > 1.2 * result["throughput"]
    print("\n" + "\n".join(report))
    # The barrier evidence stays with the run: every client's ready instant.
    barriers = [
        cm
        for cm in k8s.CoreV1Api(kube_api).list_namespaced_config_map(namespace).items
        if cm.metadata.name.endswith("-barrier")
    ]
    assert barriers and all(set(cm.data) == {"c0", "c1"} for cm in barriers)
    assert all(cm.metadata.name.startswith("together-") for cm in barriers)
