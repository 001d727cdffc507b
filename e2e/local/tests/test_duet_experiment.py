"""Cluster tier: a BenchmarkExperiment of order Duet end to end on a real kube-apiserver with
three KWOK nodes: the real kube-scheduler pairs each pod of A with its pod of B on one node, both
runs' clients meet at one start barrier per step (real ConfigMap, real runner and YCSB against
FerretDB), and the experiment ends with the paired comparison in status and in `mongobench
compare`.

The two cells differ only in their collection (one FerretDB is both clusters' data path here,
and each run's prepare step recreates its collection): an A/A duet in all but that name.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from test_benchmarkexperiment import TICK, Watch, experiment, wait_ended, why
from test_cli import cli

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
GROUP, VERSION, apply, start = bmr.GROUP, bmr.VERSION, bmr.apply, bmr.start

pytestmark = pytest.mark.cluster


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class Collections:
    """What Watch drops when a run appears, for both sides: the data path (FerretDB) outlives
    the runs (the wire model takes the prepare step's drop), so a round's load would meet the
    last round's keys."""

    def __init__(self, database: Any, names: tuple[str, ...]) -> None:
        self.database, self.names = database, names

    def drop(self) -> None:
        for name in self.names:
            self.database[name].drop()


def failed_pods(pods: list[Any]) -> str:
    """The failed client pods' last words (terminationMessagePolicy FallbackToLogsOnError)."""
    lines = []
    for p in pods:
        for c in p.status.container_statuses or ():
            done = c.state.terminated
            if done is not None and done.exit_code:
                lines.append(f"\n{p.metadata.name} on {p.spec.node_name}: {done.message}")
    return "".join(lines)


@pytest.mark.timeout(900)
def test_a_duet_pairs_its_pods_starts_both_sides_at_once_and_compares_them_paired(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    for g in range(2):
        cluster = f"duet-k{g}"
        model.member(f"{cluster}-rs0-0.{cluster}-rs0-hl.{namespace}.svc.cluster.local:27017")
    manifest = experiment(
        "duet",
        cluster={
            "version": "7.0.14",
            "topology": {"type": "ReplicaSet", "replicaSet": {"members": 1}},
        },
        run={
            "workloads": [{"name": "c"}],
            "load": {"recordCount": 200, "threads": 2},
            # Long enough for per-second pairs (the status lines' series).
            "run": {"durationSeconds": 12, "threads": 2, "statusIntervalSeconds": 1},
            "clients": {"parallelism": 1},
            "cleanup": {"jobs": "Never"},  # the client pods stay, to see where they ran
            "validity": LENIENT_VALIDITY,
        },
        dimensions=[
            {
                "name": "collection",
                "target": "run",
                "field": "collection",
                "values": ["usertable", "usertable2"],
            }
        ],
        order="Duet",
        repetitions=2,
        clusterPolicy="Keep",  # the database pods stay, to see where they ran
    )
    with Watch(kube_api, namespace, ferretdb.uri, model) as watch:
        watch.data = Collections(watch.data.database, ("usertable", "usertable2"))
        operator = start(
            plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api, **TICK
        )
        try:
            apply(plane, namespace, manifest)
            body = wait_ended(kube_api, namespace, "duet", timeout=600)
            runs = {
                r["metadata"]["name"]: r
                for r in k8s.CustomObjectsApi(kube_api).list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "benchmarkruns"
                )["items"]
            }
            pods = k8s.CoreV1Api(kube_api).list_namespaced_pod(namespace).items
            compared = cli(plane, "compare", "experiment/duet", "-n", namespace, "-o", "json")
            table = cli(plane, "compare", "experiment/duet", "-n", namespace)
        finally:
            operator.stop()
    status = body["status"]
    assert status["phase"] == "Succeeded", why(status, runs) + failed_pods(pods)
    assert sorted(runs) == [f"duet-c{c}-r{r}" for c in range(2) for r in (1, 2)]

    # Pairing: the scheduler put each database pod beside its counterpart, and each step's
    # client of A beside its client of B (three nodes: by chance, a third of the time each).
    mongod = {p.metadata.labels.get("mongobench.io/cluster"): p.spec.node_name for p in pods
              if p.metadata.labels.get("mongobench.io/duet") == "duet"}  # fmt: skip
    assert set(mongod) == {"duet-k0", "duet-k1"} and mongod["duet-k0"] == mongod["duet-k1"], mongod
    clients: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    sides: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for p in pods:
        labels = p.metadata.labels or {}
        if labels.get("mongobench.io/duet", "").startswith("duet-r"):
            key = (
                labels["mongobench.io/duet"],
                labels["mongobench.io/step"],
                labels["batch.kubernetes.io/job-completion-index"],
            )
            clients[key].add(p.spec.node_name)
            sides[key].add(labels["mongobench.io/run"])
    assert len(clients) >= 4, clients  # load and run of both rounds at least
    assert all(len(s) == 2 for s in sides.values()), sides  # both sides of every step
    assert all(len(n) == 1 for n in clients.values()), clients  # one node per pair

    # Barrier: both sides' measured windows opened within a second of each other, at the one
    # instant their clients agreed on.
    for r in (1, 2):
        steps = [
            next(s for s in runs[f"duet-c{c}-r{r}"]["status"]["steps"] if s["kind"] == "run")
            for c in range(2)
        ]
        starts = [s["result"]["startAt"] for s in steps]
        assert starts[0] == starts[1], starts
        opened = [_instant(s["result"]["window"]["start"]) for s in steps]
        assert abs((opened[0] - opened[1]).total_seconds()) < 1.0, opened
        assert all(len(s["result"]["series"]["throughput"]) >= 8 for s in steps), steps

    # The paired comparison: status, condition and the CLI.
    paired = status["comparison"]["duet"]
    assert (paired["baseline"], paired["other"]) == (
        "collection=usertable",
        "collection=usertable2",
    )
    assert len(paired["pairs"]) == 2
    apart = [
        r["reason"]
        for p in paired["pairs"]
        for r in p.get("reasons") or ()
        if r["reason"] in ("NotTogether", "ShortSide")
    ]
    assert not apart, paired["pairs"]
    throughput = next(r for r in paired["rows"] if r["metric"] == "throughput")
    assert throughput["intervals"] >= 16 and throughput["verdict"] in (
        "no difference",
        "faster",
        "slower",
    ), throughput
    valid = next(c for c in status["conditions"] if c["type"] == "DuetValid")
    assert valid["status"] in ("True", "False") and valid["reason"] in (
        "AllPaired",
        "Starved",
    ), valid
    assert compared.returncode == 0, compared.stderr[-500:]
    assert json.loads(compared.stdout)["duet"]["rows"] == paired["rows"]
    assert "Duet: collection=usertable2 against collection=usertable" in table.stdout
