"""Values of the GitOps experiments chart (manifests/gitops/experiments) that tests commit or
render: the smallest experiment a plane runs in seconds."""

from __future__ import annotations

from typing import Any


def small_experiment() -> dict[str, Any]:
    """A one-member replica set `rs1` and a YCSB C run `ycsb-c` of 200 records and operations
    against it (one client, one repetition)."""
    cluster_spec = {"version": "7.0.14", "topology": {"replicaSet": {"members": 1}}}
    run_spec = {
        "clusterRef": {"name": "rs1"},
        "workloads": [{"name": "c"}],
        "load": {"recordCount": 200, "threads": 2},
        "run": {"operationCount": 200, "threads": 2, "statusIntervalSeconds": 1},
        "repetitions": 1,
        "clients": {"parallelism": 1},
    }
    return {
        "clusters": [{"name": "rs1", "spec": cluster_spec}],
        "runs": [{"name": "ycsb-c", "spec": run_spec}],
    }
