"""Unit tier: where a BenchmarkRun's client pods run (spec.clients: nodeSelector, nodeAffinity,
tolerations, resources, separateFromDatabase, besideDatabase) as the step Job's pod template
carries it. The study-2 shaped Job (clients beside the mongod, permutation reads) is kept byte
for byte in golden/; regenerate after an intended change with
    UPDATE_GOLDEN=1 .venv/bin/pytest operator/tests/unit/benchmarkrun/test_client_placement.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from rendered import to_yaml

from mongobench.api import BenchmarkRunSpec, SpecError
from mongobench.benchmarkrun.build.jobs import (
    CLUSTER_LABEL,
    RUN_LABEL,
    STEP_LABEL,
    RunRef,
    build_job,
)
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.mongocluster.build.labels import client_labels, component_labels

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


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels; matchExpressions In, NotIn, Exists) on labels."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        value = labels.get(e["key"])
        ok = {
            "In": value in e.get("values", []),
            "NotIn": value not in e.get("values", []),
            "Exists": value is not None,
            "DoesNotExist": value is None,
        }[e["operator"]]
        if not ok:
            return False
    return True


def test_clients_beside_the_database_must_share_a_data_bearing_mongods_node() -> None:
    pod = client_pod({"besideDatabase": True, "parallelism": 4})
    # Beside, not also apart: no anti-affinity to the database remains.
    assert set(pod["affinity"]) == {"podAffinity"}
    (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"  # the same node, not the same zone
    selector = term["labelSelector"]
    # The pods of cluster c that hold data: a replica set's or a shard's members ...
    assert selects(selector, component_labels("c", "replicaset", "c"))
    assert selects(selector, component_labels("c", "shard", "c-shard-0"))
    # ... never its config servers or mongos, another cluster's members, or other clients.
    assert not selects(selector, component_labels("c", "configsvr", "c-cfg"))
    assert not selects(selector, component_labels("c", "mongos"))
    assert not selects(selector, component_labels("other", "replicaset", "other"))
    assert not selects(selector, client_labels("c"))
    # Kept with a node pool and the clients' own anti-affinity.
    both = client_pod({"besideDatabase": True, "nodeAffinity": POOL, "antiAffinity": "Preferred"})
    assert set(both["affinity"]) == {"podAffinity", "nodeAffinity", "podAntiAffinity"}


def test_beside_and_apart_from_the_database_together_are_refused_naming_both() -> None:
    with pytest.raises(SpecError, match="besideDatabase and separateFromDatabase"):
        client_pod({"besideDatabase": True, "separateFromDatabase": True})
    # separateFromDatabase: false beside it says the same thing twice: accepted.
    pod = client_pod({"besideDatabase": True, "separateFromDatabase": False})
    assert set(pod["affinity"]) == {"podAffinity"}
    with pytest.raises(SpecError, match=r"besideDatabase needs spec\.clusterRef"):
        BenchmarkRunSpec.parse(
            {
                "uriSecretRef": {"name": "external"},
                "workloads": [{"name": "a"}],
                "clients": {"besideDatabase": True},
            }
        )


STUDY_2 = {
    "clusterRef": {"name": "c"},
    "driver": "locust",
    "repetitions": 1,
    "load": {
        "recordCount": 100000,
        "threads": 1,
        "scenario": {"configMapRef": {"name": "study-scenarios", "key": "small_documents.py"}},
    },
    "workloads": [
        {
            "name": "read",
            "scenario": {"configMapRef": {"name": "study-scenarios", "key": "small_documents.py"}},
        }
    ],
    "run": {"operationCount": 100000, "threads": 1, "requestDistribution": "permutation"},
    "mongo": {"writeConcern": "journaled"},
    "clients": {"parallelism": 8, "connectionPerThread": True, "besideDatabase": True},
}


def test_study_2_jobs_match_golden() -> None:
    """Study 2's shape: 8 one-thread client pods beside the mongod, reading a permutation."""
    spec = BenchmarkRunSpec.parse(STUDY_2)
    jobs = [build_job(spec, st, REF) for st in make_plan(spec) if st.runs_job]
    read = jobs[-1]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "requestdistribution=permutation" in read
    rendered = to_yaml(jobs)
    path = Path(__file__).parent / "golden" / "jobs-study-2.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered)
    assert path.read_text() == rendered, "jobs changed; see the module docstring to regenerate"
