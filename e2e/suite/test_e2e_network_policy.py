"""E2E scenario, NetworkPolicy: a MongoCluster with `networkPolicy.enabled` still serves its
BenchmarkRun, and, where the CNI enforces policies, refuses a pod that is not one of its peers.

What each backend proves: on `local`, the policy the operator creates, owned by the cluster,
and a run whose client pods carry the labels the policy admits, with no failed operation (the
local plane has no CNI: nothing is enforced there, and the refusal half is skipped); on `kind`
(Calico, `e2e/kind/e2e.sh`; only where Docker exists), the same under enforcement: the
operator (itself behind its own policy, `networkPolicy.operator.enabled`) wires the replica
set and the clients run against real mongod, a pod of the same namespace without the client
label cannot open a TCP connection to a member, and the same probe labelled as a client of
the cluster can (so the refusal is the policy's, not the probe's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from backends.base import Backend, Env
from backends.manifests import DATABASE_NODES, OLD_VERSION, benchmarkrun, mongocluster, replica_set
from localplane.policies import LENIENT_VALIDITY

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

CLUSTER = "guarded"


@pytest.fixture(scope="module")
def guarded(backend: Backend) -> Iterator[tuple[Env, dict[str, Any]]]:
    """A one-member replica set behind its NetworkPolicy, Ready, and one finished run on it."""
    cluster = mongocluster(CLUSTER, replica_set(1), networkPolicy={"enabled": True})
    run = benchmarkrun(
        "np",
        CLUSTER,
        workloads=[{"name": "a"}],
        repetitions=1,
        clients={"parallelism": 1, "nodeSelector": {"mongobench.io/role": "clients"}},
        validity=LENIENT_VALIDITY,
    )
    with backend.env("network-policy", clusters=[cluster], clients=True) as env:
        env.apply(cluster)
        env.wait_phase(CLUSTER, "Ready", timeout=90)
        env.apply(run)
        yield env, env.wait_run("np", timeout=240)


def test_a_guarded_cluster_serves_its_run_with_no_failed_operation(
    guarded: tuple[Env, dict[str, Any]],
) -> None:
    env, run = guarded
    status = run["status"]
    steps = [(s["label"], s.get("message")) for s in status["steps"]]
    assert status["phase"] == "Succeeded", (steps, env.client_failures())
    for step in (s for s in status["steps"] if s["kind"] in ("load", "run")):
        for name, op in step["result"]["operations"].items():
            assert op["count"] > 0 and op["errors"] == 0, (step["label"], name, op)
    policy = k8s.NetworkingV1Api(env.api).read_namespaced_network_policy(
        f"{CLUSTER}-mongod", env.namespace
    )
    owner = env.get("mongoclusters", CLUSTER)
    assert [r.uid for r in policy.metadata.owner_references] == [owner["metadata"]["uid"]]


def probe_pod(name: str, labels: dict[str, str], host: str) -> dict[str, Any]:
    """A pod that exits 0 if it opens a TCP connection to `host`:27017 within 10 s, else
    non-zero. The mongo image (loaded on the database nodes, never pulled) has bash and
    coreutils' timeout; Pod Security `restricted` as the suite's namespaces enforce."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": DATABASE_NODES,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 999,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "probe",
                    "image": f"mongo:{OLD_VERSION}",
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["bash", "-c", 'timeout 10 bash -c "</dev/tcp/$0/27017"', host],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }


def probe(env: Env, name: str, labels: dict[str, str]) -> str:
    host = env.mongo.layout(CLUSTER).replica_sets[0].member_host(0).rsplit(":", 1)[0]
    env.apply(probe_pod(name, labels, host))
    core = k8s.CoreV1Api(env.api)

    def ended() -> str | None:
        phase = core.read_namespaced_pod(name, env.namespace).status.phase
        return phase if phase in ("Succeeded", "Failed") else None

    return str(env.wait(ended, 20, f"probe pod {name} ended"))


def test_a_pod_that_is_not_a_peer_is_refused_and_a_client_of_the_cluster_is_not(
    guarded: tuple[Env, dict[str, Any]],
) -> None:
    env, _ = guarded
    if not env.enforces_network_policy:
        pytest.skip(f"{env.backend}: no CNI enforces NetworkPolicy here (kind with Calico does)")
    assert probe(env, "outsider", {"app": "outsider"}) == "Failed"
    client = {"mongobench.io/component": "benchmark-client", "mongobench.io/client-of": CLUSTER}
    assert probe(env, "insider", client) == "Succeeded"
