"""Unit tier: where a BenchmarkRun's client pods run (spec.clients: nodeSelector, nodeAffinity,
tolerations, resources, separateFromDatabase) as the step Job's pod template carries it."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.api import BenchmarkRunSpec
from mongobench.benchmarkrun.jobs import CLUSTER_LABEL, RUN_LABEL, STEP_LABEL, RunRef, build_job
from mongobench.benchmarkrun.plan import make_plan

pytestmark = pytest.mark.unit

REF = RunRef("r1", "ns", "uid-1", "c-connection", "uri", "c", "mongobench/ycsb:test")
POOL = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["clients"]}]}
        ]
    }
}


def client_job(clients: dict[str, Any], ref: RunRef = REF) -> dict[str, Any]:
    spec = BenchmarkRunSpec.parse(
        {"clusterRef": {"name": "c"}, "workloads": [{"name": "a"}], "clients": clients}
    )
    step = next(s for s in make_plan(spec) if s.kind == "run")
    return build_job(spec, step, ref)


def client_pod(clients: dict[str, Any], ref: RunRef = REF) -> dict[str, Any]:
    return dict(client_job(clients, ref)["spec"]["template"]["spec"])


def test_clients_go_to_their_own_tainted_pool_and_stay_off_the_database_nodes() -> None:
    pod = client_pod(
        {
            "nodeSelector": {"topology.kubernetes.io/zone": "a"},
            "nodeAffinity": POOL,
            "tolerations": [
                {"key": "clients", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
            ],
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}},
        }
    )
    assert pod["nodeSelector"] == {"topology.kubernetes.io/zone": "a"}
    assert pod["tolerations"] == [
        {"key": "clients", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    ]
    assert pod["affinity"]["nodeAffinity"] == POOL
    (away,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert away["podAffinityTerm"]["labelSelector"]["matchLabels"] == {CLUSTER_LABEL: "c"}
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}


def test_no_placement_asked_means_only_the_separation_from_the_database() -> None:
    pod = client_pod({})
    assert "tolerations" not in pod and "nodeSelector" not in pod
    assert set(pod["affinity"]) == {"podAntiAffinity"}
    # Not separated, and no node affinity: no affinity at all.
    assert "affinity" not in client_pod({"separateFromDatabase": False})
    assert client_pod({"separateFromDatabase": False, "nodeAffinity": POOL})["affinity"] == {
        "nodeAffinity": POOL
    }


def test_parallel_clients_can_be_kept_on_nodes_of_their_own() -> None:
    spec = {"parallelism": 4, "separateFromDatabase": False}
    template = client_job({**spec, "antiAffinity": "Required"})["spec"]["template"]
    required = template["spec"]["affinity"]["podAntiAffinity"]
    (term,) = required["requiredDuringSchedulingIgnoredDuringExecution"]
    # The step's own pods only: its run and step, as the Job's pods are labelled.
    step = template["metadata"]["labels"][STEP_LABEL]
    assert term == {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {RUN_LABEL: "r1", STEP_LABEL: step}},
    }
    # Preferred sits beside the separation from the database.
    preferred = client_pod({"antiAffinity": "Preferred"})["affinity"]["podAntiAffinity"]
    terms = preferred["preferredDuringSchedulingIgnoredDuringExecution"]
    assert [t["podAffinityTerm"]["labelSelector"]["matchLabels"] for t in terms] == [
        {CLUSTER_LABEL: "c"},
        {RUN_LABEL: "r1", STEP_LABEL: step},
    ]
    assert "affinity" not in client_pod({**spec, "antiAffinity": "None"})
