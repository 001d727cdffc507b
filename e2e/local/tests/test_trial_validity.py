"""Cluster tier: every measured step judged a valid trial or not, and an invalid one re-run.

What is real: the apiserver, the operator process, YCSB with the project's binding against
FerretDB, executed by the harness kubelet (localplane.executor) inside CPU cgroups whose CFS
quota is the container's CPU limit (the kernel enforces it, as under a kubelet), the client's
own reading of its cgroup's throttling, the session's kube-prometheus-stack monitoring
scraping each node's node-exporter and, through its kubelet ServiceMonitor, the harness
kubelet's containers in cAdvisor's names (localplane.monitoring). What stands in: the wire
model for mongod's state.

- A client starved of CPU (limit 100m) is ClientBound: its CPU time fills its limit and its
  cgroup throttled it.
- A CPU hog beside the database (a busy pod on the database's node during the steps) is a
  NoisyNode: cAdvisor's CPU of a pod that is neither the run's client nor the cluster's.
Each is re-run once (validity.rerunInvalid: 1): the invalid attempt stays in status.
- The starved client again, with ClientBound accepted (validity.accept): judged and shown
  ("accepted: ClientBound" in status, `describe` and `compare`), the trial counts, no re-run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_cli import cli, ok

from localplane import cgroups
from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.monitoring import Monitoring
from localplane.plane import Plane
from localplane.stages import BENCHMARK_CLIENT_LABEL
from mongobench.benchmarkrun.build.jobs import CLUSTER_LABEL
from mongobench_results.validity import advice

pytestmark = pytest.mark.cluster
HOG = "while :; do :; done & while :; do :; done"

ferretdb = bmr.ferretdb
model = bmr.model


@pytest.fixture
def executor(
    plane: Plane, namespace: str, ferretdb: FerretDB, monitoring: Monitoring
) -> Iterator[PodExecutor]:
    if cgroups.available() is None:
        pytest.fail("this user cannot create CPU cgroups: CPU limits cannot be enforced here")
    rewrite = rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
    with ExitStack() as stack:
        ex = stack.enter_context(pod_executor(plane, namespace, uri_rewrite=rewrite))
        # Its containers in their nodes' kubelet cAdvisor series (job `kubelet`).
        stack.enter_context(monitoring.kubelet_containers(ex.running_containers))
        yield ex


def judged_run(name: str, operations: int = 1500, **spec: Any) -> dict[str, Any]:
    return bmr.run_manifest(
        name,
        workloads=[{"name": "c"}],
        repetitions=1,
        load={"recordCount": 100, "threads": 2},
        run={"operationCount": operations, "threads": 2, "statusIntervalSeconds": 1},
        clients={"parallelism": 1, **spec.pop("clients", {})},
        **{"validity": {"rerunInvalid": 1}, **spec},
    )


def run_steps(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["label"]: s for s in run["status"]["steps"] if s["kind"] == "run"}


def reason_names(step: dict[str, Any]) -> list[str]:
    return [r["reason"] for r in step["validity"]["reasons"]]


def events(api: k8s.ApiClient, namespace: str, reason: str) -> list[str]:
    items = k8s.CoreV1Api(api).list_namespaced_event(namespace).items
    return [e.message for e in items if e.reason == reason]


def test_a_client_starved_of_cpu_is_client_bound_and_re_run(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.cluster(plane, namespace, kube_api)
        # A tenth of a core: less than YCSB's JVM needs (its JIT and GC threads alone). 200m
        # was not always starved on this busy machine (FerretDB was the slower one); 50m took
        # minutes per step.
        starved = {"resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}}}
        # Few operations: at 100m the JVM alone fills the limit (ClientBound from the first
        # second), and each of the 2 attempts at 1500 took over a minute here.
        bmr.apply(plane, namespace, judged_run("starved", operations=300, clients=starved))
        run = bmr.wait_run(kube_api, namespace, "starved", ("Succeeded", "Failed"), timeout=600)
    finally:
        operator.stop()
    assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
    steps = run_steps(run)
    assert list(steps) == ["run c #1", "run c #1 (attempt 2)"]
    first, again = steps["run c #1"], steps["run c #1 (attempt 2)"]
    for step, attempt in ((first, 1), (again, 2)):
        assert step["validity"]["valid"] is False
        assert "ClientBound" in reason_names(step), (step["validity"], step.get("cpu"))
        assert step["validity"]["attempt"] == attempt == step.get("attempt", 1)
    messages = [r["message"] for r in first["validity"]["reasons"]]
    assert any("of its limit" in m or "throttled" in m for m in messages), messages
    trials = {c["type"]: c for c in run["status"]["conditions"]}["TrialsValid"]
    assert trials["status"] == "False"
    assert trials["message"].startswith("2 of 2 trials invalid (ClientBound 2: raise ")
    assert trials["message"].endswith("; 1 re-run")
    invalid = events(kube_api, namespace, "TrialInvalid")
    assert any("re-running (attempt 2 of 2)" in m for m in invalid), invalid


def test_an_accepted_reason_is_shown_and_the_trial_counts(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.cluster(plane, namespace, kube_api)
        starved = {"resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}}}
        # What else this busy host may cause (noise, a level shift) is accepted too: the test
        # is about ClientBound, which the starved client always is.
        accept = ["ClientBound", "NoisyNode", "NotSteady"]
        policy = {"rerunInvalid": 1, "accept": accept}
        # As few operations as the starved test's: ClientBound from the JVM's first second.
        accepted = judged_run("accepted", operations=300, clients=starved, validity=policy)
        bmr.apply(plane, namespace, accepted)
        run = bmr.wait_run(kube_api, namespace, "accepted", ("Succeeded", "Failed"), timeout=600)
        described = ok(cli(plane, "describe", "accepted", "-n", namespace))
        compared = ok(cli(plane, "compare", "accepted", "-n", namespace, "--wide"))
    finally:
        operator.stop()
    assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
    steps = run_steps(run)
    assert list(steps) == ["run c #1"]  # valid: not re-run
    verdict = steps["run c #1"]["validity"]
    assert verdict["valid"] is True, verdict
    bound = [r for r in verdict["reasons"] if r["reason"] == "ClientBound"]
    assert bound and all(r["accepted"] is True for r in bound), verdict
    trials = {c["type"]: c for c in run["status"]["conditions"]}["TrialsValid"]
    assert trials["status"] == "True"
    assert trials["message"].startswith("all 1 trials valid; accepted: "), trials
    assert "ClientBound" in trials["message"]
    assert not events(kube_api, namespace, "TrialInvalid")
    assert "accepted: ClientBound" in " ".join(described.split()), described
    assert "run c #1: ClientBound (accepted):" in described, described
    assert "1/1 valid (accepted: ClientBound 1" in " ".join(compared.split()), compared


def test_a_cpu_hog_beside_the_database_is_a_noisy_node_and_re_run(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    core = k8s.CoreV1Api(kube_api)
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.cluster(plane, namespace, kube_api)
        pods = core.list_namespaced_pod(namespace, label_selector=f"{CLUSTER_LABEL}=bc").items
        database_node = next(p.spec.node_name for p in pods if p.spec.node_name)
        # A busy neighbour on the database's node: a pod of someone else's (the executor runs
        # it because of the label; it is not this run's client nor the cluster's pod).
        hog: Any = {
            "metadata": {
                "name": "hog",
                "labels": {BENCHMARK_CLIENT_LABEL[0]: BENCHMARK_CLIENT_LABEL[1]},
            },
            "spec": {
                "nodeName": database_node,
                "restartPolicy": "Never",
                # The namespace enforces the restricted Pod Security Standard.
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 65534,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [
                    {
                        "name": "burn",
                        "image": "busybox",
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        # Two busy loops: on this shared 2-core machine one gets little.
                        "command": ["sh", "-c", HOG],
                    }
                ],
            },
        }
        core.create_namespaced_pod(namespace, hog)
        # The machine's load decides how much CPU the hog gets (a share of a busy host);
        # any other pod's CPU counts here, where nothing else runs on the node.
        bmr.apply(
            plane,
            namespace,
            judged_run("neighbour", validity={"rerunInvalid": 1, "neighbourCpuFraction": 0.02}),
        )
        run = bmr.wait_run(kube_api, namespace, "neighbour", ("Succeeded", "Failed"), timeout=600)
    finally:
        operator.stop()
    assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
    steps = run_steps(run)
    assert list(steps) == ["run c #1", "run c #1 (attempt 2)"]
    for step in steps.values():
        assert step["validity"]["valid"] is False
        assert "NoisyNode" in reason_names(step)
        # (ClientBound may be there too, and rightly: every node of the local plane is this
        # one busy host, so the client's node is at capacity whatever runs beside it.)
        noisy = [r for r in step["validity"]["reasons"] if r["reason"] == "NoisyNode"]
        assert any(
            f"node {database_node}" in r["message"] and "/hog" in r["message"] for r in noisy
        )
        assert step["neighbours"]["cadvisor"] is True
    trials = {c["type"]: c for c in run["status"]["conditions"]}["TrialsValid"]
    # Each reason with what to change (ClientBound may be among them, see above).
    assert f"NoisyNode 2: {advice('NoisyNode')}" in trials["message"]
    assert trials["message"].endswith("; 1 re-run")
