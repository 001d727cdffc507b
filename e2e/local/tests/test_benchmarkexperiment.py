"""Cluster tier: BenchmarkExperiments end to end on a real kube-apiserver with KWOK nodes.

Real: the apiserver (CRD schema, CEL, server-side dry runs of every cell, garbage collection
of what the experiment owns), controller-manager, the operator process (killed and restarted
mid-experiment), the runs' Jobs executed by the harness kubelet (runner and YCSB for real),
FerretDB as the data path, Prometheus for CPU. The wire model stands in for mongod's
replica-set/sharding state of every cell's cluster (their members are registered up front
under the names the experiment gives them: <experiment>-k<group>).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pymongo
import pytest

# The BenchmarkRun suite's fixtures and helpers: one way to drive real runs.
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from scipy import stats as scipy_stats
from test_archive import BUCKET, archived, operator_env
from test_cli import cli  # the `mongobench` executable, run as a user runs it

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.s3server import ACCESS_KEY, SECRET_KEY, S3Server

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
GROUP, VERSION, apply, get, start = bmr.GROUP, bmr.VERSION, bmr.apply, bmr.get, bmr.start

pytestmark = pytest.mark.cluster

SHARDED = {
    "type": "Sharded",
    "sharded": {"shards": 1, "membersPerShard": 1, "configServers": 1, "mongos": 1},
}
RUN = {
    "workloads": [{"name": "a"}, {"name": "c"}],
    "load": {"recordCount": 200, "threads": 2},
    "run": {"operationCount": 200, "threads": 2, "statusIntervalSeconds": 1},
    "clients": {"parallelism": 1},
}


def experiment(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkExperiment",
        "metadata": {"name": name},
        "spec": {"cluster": {"version": "7.0.14", "topology": SHARDED}, "run": RUN} | spec,
    }


def comparison_rows(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What `mongobench compare -o json` concluded, row by row."""
    return sorted(
        (r["configuration"], r["workload"], r["metric"], r["n"], round(r["mean"], 6), r["verdict"])
        for r in doc["rows"]
    )


def register_sharded(model: MongoModel, namespace: str, cluster: str, shards: int) -> None:
    for rs in (f"{cluster}-cfg", *(f"{cluster}-shard{i}" for i in range(shards))):
        model.member(f"{rs}-0.{rs}-hl.{namespace}.svc.cluster.local:27017")
    model.mongos(f"{cluster}-mongos.{namespace}.svc.cluster.local:27017")


def forget_cluster(model: MongoModel, cluster: str) -> None:
    """A deleted cluster's MongoDB state goes with its volumes: the model forgets its replica
    sets, shards and sessions, so the cluster created again under the same name starts empty
    (as a real one would) rather than meeting the old users and keys."""
    prefix = f"{cluster}-"
    with model._lock:
        for rs in [n for n in model.sets if n.startswith(prefix)]:
            del model.sets[rs]
        for host in [h for h, rs in model.node_set.items() if rs.startswith(prefix)]:
            del model.node_set[host]
        for shard in [s for s in model.sharded.shards if s.startswith(prefix)]:
            del model.sharded.shards[shard]
        # One cluster at a time (maxClusters 1): the router-wide state is this cluster's.
        model.sharded.users.clear()
        model.sharded.primaries.clear()
        model.sharded.collections.clear()
        for key in [k for k in model._authed if k[0].startswith(prefix)]:
            del model._authed[key]


class Watch:
    """Every MongoCluster and BenchmarkRun the experiment created, seen by uid, with when it
    was first seen and when a run ended: creations counted, no duplicate ever missed.

    Every cell's cluster is new, so its runs load into an empty database; here all of them
    share one FerretDB (the data path), so a new run's collection is dropped there when the
    run appears (before its load Job: the prepare step comes first)."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        ferretdb_uri: str,
        model: MongoModel | None = None,
    ) -> None:
        self.api, self.namespace, self.model = api, namespace, model
        self.data = pymongo.MongoClient(ferretdb_uri)["ycsb"]["usertable"]
        self.clusters: dict[str, tuple[str, float]] = {}  # uid -> (name, first seen)
        self.runs: dict[str, str] = {}  # uid -> name
        self.ended: dict[str, float] = {}  # run name -> first seen terminal
        self.gone: set[str] = set()  # cluster uids seen deleted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.data.database.client.close()

    def _loop(self) -> None:
        api = k8s.CustomObjectsApi(self.api)
        while not self._stop.is_set():
            try:
                listed = api.list_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, "mongoclusters"
                )["items"]
                for c in listed:
                    self.clusters.setdefault(
                        c["metadata"]["uid"], (c["metadata"]["name"], time.time())
                    )
                present = {c["metadata"]["uid"] for c in listed}
                for uid, (name, _) in self.clusters.items():
                    if uid not in present and uid not in self.gone:
                        self.gone.add(uid)
                        if self.model is not None:
                            forget_cluster(self.model, name)
                for r in api.list_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, "benchmarkruns"
                )["items"]:
                    if r["metadata"]["uid"] not in self.runs:
                        self.data.drop()
                    self.runs.setdefault(r["metadata"]["uid"], r["metadata"]["name"])
                    if (r.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                        self.ended.setdefault(r["metadata"]["name"], time.time())
            except Exception:
                pass
            time.sleep(0.2)


def wait_ended(api: k8s.ApiClient, namespace: str, name: str, timeout: float) -> dict[str, Any]:
    """The experiment once it has ended (Succeeded or Failed)."""
    return dict(
        wait_until(
            lambda: (
                (o := get(api, namespace, "benchmarkexperiments", name))
                .get("status", {})
                .get("phase")
                in ("Succeeded", "Failed")
                and o
            ),
            timeout=timeout,
            interval=1,
            what=f"experiment {name} ended",
        )
    )


def why(status: dict[str, Any], runs: dict[str, dict[str, Any]]) -> str:
    """What failed: every unsuccessful run's conditions and step messages, and the cells."""
    lines = [f"{c['label']}: {c['phase']} {c['runs']}" for c in status.get("cells") or ()]
    for name, r in runs.items():
        st = r.get("status") or {}
        if st.get("phase") != "Succeeded":
            lines.append(f"{name}: {st.get('phase')} {st.get('conditions')}")
            lines += [f"  {x.get('label')}: {x.get('message')}" for x in st.get("steps") or ()]
    return "\n".join(lines)


# 8 runs on 8 cluster deployments: about 3.5 minutes on an idle machine, far more on a busy one.
# One workload: what is proven is the matrix (its order, resumption, comparison, clean-up); a
# second workload per run only added 8 client JVMs (its summary and figures are per workload
# alike, as the e2e suite's A-F run shows).
@pytest.mark.timeout(1800)
def test_two_by_two_matrix_interleaved_resumes_and_compares(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    prometheus: str,
    s3server: S3Server,
    tmp_path: Path,
) -> None:
    for g in range(4):
        register_sharded(model, namespace, f"mx-k{g}", 2)
    model.sharded.documents["ycsb.usertable"] = 200
    manifest = experiment(
        "mx",
        dimensions=[
            {
                "name": "shards",
                "target": "cluster",
                "field": "topology.sharded.shards",
                "values": [1, 2],
            },
            {
                "name": "version",
                "target": "cluster",
                "field": "version",
                "values": ["7.0.14", "8.0.4"],
            },
        ],
        # What is proven is the matrix, not the trials' validity: on this plane every fake
        # node's CPU is this one host's, busy under load, so the default policy may judge a
        # cell's clients bound and fail it (LENIENT_VALIDITY still makes and shows each check).
        run=RUN | {"workloads": [{"name": "c"}], "validity": LENIENT_VALIDITY},
        repetitions=2,
        baseline={"shards": 1, "version": "7.0.14"},
        archive={"bucket": BUCKET, "prefix": "lab"},
    )
    env = operator_env(s3server.endpoint)
    began = time.time()
    with Watch(kube_api, namespace, ferretdb.uri, model) as watch:
        first = start(plane, namespace, model, tmp_path / "first.log", prometheus, kube_api, **env)
        try:
            apply(plane, namespace, manifest)
            # Kill the operator once the third run exists (mid-experiment, second cluster gone).
            wait_until(lambda: len(watch.runs) >= 3, timeout=600, interval=0.2, what="3 runs")
        finally:
            first.kill()
        second = start(
            plane, namespace, model, tmp_path / "second.log", prometheus, kube_api, **env
        )
        try:
            body = wait_ended(kube_api, namespace, "mx", timeout=1500)
            wall = time.time() - began
            runs = {
                r["metadata"]["name"]: r
                for r in k8s.CustomObjectsApi(kube_api).list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "benchmarkruns"
                )["items"]
            }
            # The CLI on the finished experiment, as a user runs it (before it is deleted).
            shown = {
                args[0]: cli(plane, *args, "-n", namespace)
                for args in (
                    ("describe", "experiment/mx"),
                    ("watch", "experiment/mx", "--timeout", "30"),
                    ("compare", "experiment/mx", "-o", "json"),
                    ("report", "experiment/mx", "-o", str(tmp_path / "report")),
                )
            }
            # Deleting the experiment deletes what it created (garbage collection).
            k8s.CustomObjectsApi(kube_api).delete_namespaced_custom_object(
                GROUP, VERSION, namespace, "benchmarkexperiments", "mx"
            )
            wait_until(
                lambda: (
                    not k8s.CustomObjectsApi(kube_api).list_namespaced_custom_object(
                        GROUP, VERSION, namespace, "benchmarkruns"
                    )["items"]
                ),
                timeout=120,
                what="runs deleted with the experiment",
            )
        finally:
            second.stop()
    status = body["status"]
    assert status["phase"] == "Succeeded", why(status, runs)
    assert status["progress"] == {"done": 4, "total": 4, "summary": "4/4", "current": ""}
    # One cluster per (cell, repetition): maxClusters 1 and clusters that differ between cells;
    # the restart created none twice, nor any run.
    assert sorted(n for n, _ in watch.clusters.values()) == sorted(
        f"mx-k{g}" for g in range(4) for _ in range(2)
    )
    assert sorted(watch.runs.values()) == sorted(f"mx-c{c}-r{r}" for c in range(4) for r in (1, 2))
    # Interleaved (ABAB): the runs started in the order round 1 of every cell, then round 2.
    starts = {n: r["status"]["startTime"] for n, r in runs.items()}
    assert (
        sorted(starts, key=lambda n: starts[n])
        == status["order"]
        == [f"mx-c{c}-r{r}" for r in (1, 2) for c in range(4)]
    )
    cells = {c["label"]: c for c in status["cells"]}
    assert set(cells) == {f"shards={s},version={v}" for s in (1, 2) for v in ("7.0.14", "8.0.4")}
    for cell in cells.values():
        assert cell["phase"] == "Succeeded"
        assert [r["phase"] for r in cell["runs"]] == ["Succeeded", "Succeeded"]
        assert len(cell["deployments"]) == 2
        assert all(d["readySeconds"] >= d["provisionedSeconds"] > 0 for d in cell["deployments"])
        # The deploy-time table's x: one config server, the shards' members, one mongos.
        pods = int(cell["values"]["shards"]) + 2
        assert [d["pods"] for d in cell["deployments"]] == [pods, pods]
        assert set(cell["summary"]) == {"load", "c"}  # the load is a result too
        assert all(w["n"] == 2 and w["throughput"] > 0 for w in cell["summary"].values())
    comparison = status["comparison"]
    assert comparison["baseline"] == "shards=1,version=7.0.14"
    compared = {(r["configuration"], r["workload"], r["metric"]) for r in comparison["rows"]}
    assert {(c, "c", "throughput") for c in cells} <= compared
    assert all("verdict" in r and "mean" in r for r in comparison["rows"])
    # The operator's overhead per cell: a run's end to the next cluster's creation.
    created = sorted(t for _, t in watch.clusters.values())
    ended = sorted(watch.ended.values())
    gaps = [
        next(c for c in created if c > e) - e for e in ended[:-1] if any(c > e for c in created)
    ]
    print(
        f"\nexperiment wall time {wall:.0f}s; overhead per cell (run end -> next cluster) "
        f"median {sorted(gaps)[len(gaps) // 2]:.1f}s, max {max(gaps):.1f}s over {len(gaps)}"
    )
    events = [
        e.reason
        for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
        if e.involved_object.kind == "BenchmarkExperiment"
    ]
    assert "CellClusterCreated" in events and "ExperimentFinished" in events
    assert all(r.returncode == 0 for r in shown.values()), {
        k: r.stderr[-500:] for k, r in shown.items()
    }
    assert "shards=1,version=7.0.14 *" in shown["describe"].stdout
    assert "3 pods" in shown["describe"].stdout and "4 pods" in shown["describe"].stdout
    assert "mx: Succeeded, cells 4/4" in shown["watch"].stdout
    compared = json.loads(shown["compare"].stdout)
    assert compared["baseline"] == "shards=1,version=7.0.14"
    figures = {p.name for p in (tmp_path / "report" / "figures").iterdir()}
    # shards is the one numeric dimension (versions are not numbers); 3 and 4 pods deployed.
    assert {"scaling-shards-c.png", "deploy-times.png"} <= figures
    assert "<h2>Deploy times</h2>" in (tmp_path / "report" / "report.html").read_text()
    # Every run of the experiment under one prefix, kept after the experiment was deleted;
    # compared from there as from the cluster (the way two platforms' studies meet).
    archived_runs = archived(s3server, f"s3://{BUCKET}/lab/experiments/mx").runs()
    assert sorted(r.name for r in archived_runs) == sorted(runs)
    assert all(r.complete for r in archived_runs)
    from_archive = cli(
        plane,
        "compare",
        f"s3://{BUCKET}/lab/experiments/mx",
        "--group-by",
        "experiment.cell",
        "--baseline",
        "shards=1,version=7.0.14",
        "--s3-endpoint",
        s3server.endpoint,
        "--s3-region",
        "us-east-1",
        "-o",
        "json",
        env={"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY},
    )
    assert from_archive.returncode == 0, from_archive.stderr[-500:]
    assert comparison_rows(json.loads(from_archive.stdout)) == comparison_rows(compared)


def test_a_cell_whose_cluster_fails_goes_as_the_policy_says(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    ferretdb: FerretDB,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    # The 2-shard cell's second shard never answers (not registered in the model): its cluster
    # fails (addShard cannot reach it) and the policy (Continue, KeepOnFailure) says what
    # happens; a cluster still not Ready after clusterReadyTimeoutSeconds would fail the same.
    register_sharded(model, namespace, "fx-k0", 1)
    register_sharded(model, namespace, "fx-k1", 1)
    model.sharded.documents["ycsb.usertable"] = 200
    manifest = experiment(
        "fx",
        run=RUN | {"workloads": [{"name": "c"}]},
        dimensions=[
            {
                "name": "shards",
                "target": "cluster",
                "field": "topology.sharded.shards",
                "values": [1, 2],
            },
        ],
        repetitions=1,
        onCellFailure="Continue",
        clusterPolicy="KeepOnFailure",
        clusterReadyTimeoutSeconds=30,
    )
    with Watch(kube_api, namespace, ferretdb.uri):
        operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
        try:
            apply(plane, namespace, manifest)
            body = wait_ended(kube_api, namespace, "fx", timeout=600)
            clusters = [
                c["metadata"]["name"]
                for c in k8s.CustomObjectsApi(kube_api).list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "mongoclusters"
                )["items"]
            ]
        finally:
            operator.stop()
    status = body["status"]
    assert status["phase"] == "Succeeded"  # Continue: the experiment went on and ended
    cells = {c["label"]: c for c in status["cells"]}
    assert cells["shards=1"]["phase"] == "Succeeded"
    failed = cells["shards=2"]
    assert failed["phase"] == "Failed"
    assert failed["runs"] == [
        {"name": "fx-c1-r1", "repetition": 1, "phase": "Failed", "message": "its cluster failed"}
    ]
    assert clusters == ["fx-k1"]  # the failed cell's cluster kept, the good one deleted
    events = {
        e.reason: e.message
        for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
        if e.involved_object.kind == "BenchmarkExperiment"
    }
    assert "shards=2: its cluster failed" in events["CellFailed"]
    assert "fx-k1" in events["CellClusterKept"]


# An A/A pair (two clusters from one template) in randomized rounds with a loose adaptive
# target: 3 rounds at least, 6 at most. 6 runs and as many deployments (maxClusters 1: the
# cells share one FerretDB, so no two runs at once): about a minute, as the operator looks at
# the experiment every 0.5 s (TICK): each cell switch (run ended, cluster deleted, the next one
# Ready) waits a tick, and 2 s ones made half of this test's time. Not the harness's default:
# test_studies.py's four experiments at once took 193 s at 0.5 s, 55 s at 2 s.
TICK = {"MONGOBENCH_EXPERIMENT_TICK_SECONDS": "0.5"}


def t_met(values: list[float], relative_half_width: float) -> bool:
    """Whether the 95% t interval of the mean lies within +-relative_half_width of it (scipy,
    not the results library the operator decides with)."""
    mean = statistics.fmean(values)
    half = scipy_stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return half <= relative_half_width * abs(mean)


@pytest.mark.timeout(1500)
def test_an_aa_calibration_in_randomized_rounds_stops_when_the_target_is_met(
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
        cluster = f"aa-k{g}"
        model.member(f"{cluster}-rs0-0.{cluster}-rs0-hl.{namespace}.svc.cluster.local:27017")
    manifest = experiment(
        "aa",
        cluster={
            "version": "7.0.14",
            "topology": {"type": "ReplicaSet", "replicaSet": {"members": 1}},
        },
        # The target is what this test is about: a lenient validity policy (this plane's
        # trials are client-bound by the default one, test_trial_validity.py).
        run=RUN | {"workloads": [{"name": "c"}], "validity": LENIENT_VALIDITY},
        calibration=True,
        repetitions=3,
        # Loose on purpose (the interval within +-100% of the mean: a CV under ~40% at n = 3).
        repeatUntil={"metric": "throughput", "relativeHalfWidth": 1.0, "maxRepetitions": 6},
        order="RandomizedRounds",
        seed=11,
    )
    with Watch(kube_api, namespace, ferretdb.uri, model) as watch:
        operator = start(
            plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api, **TICK
        )
        try:
            apply(plane, namespace, manifest)
            body = wait_ended(kube_api, namespace, "aa", timeout=1200)
            runs = {
                r["metadata"]["name"]: r
                for r in k8s.CustomObjectsApi(kube_api).list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "benchmarkruns"
                )["items"]
            }
            calibrated = cli(plane, "calibrate", "experiment/aa", "-n", namespace, "-o", "json")
            table = cli(plane, "calibrate", "experiment/aa", "-n", namespace)
            described = cli(plane, "describe", "experiment/aa", "-n", namespace)
        finally:
            operator.stop()
    status = body["status"]
    assert status["phase"] == "Succeeded", why(status, runs)
    # Stopped at the first round from the minimum (3) on where every cell's interval met the
    # target, by an independent t interval over the runs' throughputs (how many rounds that takes
    # is this machine's noise: CI once needed all 6), and not one round before.
    rounds = status["rounds"]
    throughput = {
        c: [s["result"]["throughput"] for r in range(1, rounds + 1)
            for s in runs[f"aa-c{c}-r{r}"]["status"]["steps"] if s["kind"] == "run"]
        for c in range(2)
    }  # fmt: skip
    assert all(len(v) == rounds for v in throughput.values()), throughput
    met_at = [
        k for k in range(3, rounds + 1) if all(t_met(v[:k], 1.0) for v in throughput.values())
    ]
    assert rounds == (met_at[0] if met_at else 6), (throughput, status["repetitions"])
    assert status["seed"] == 11
    target = next(c for c in status["conditions"] if c["type"] == "TargetMet")
    said = ("True", "Reached") if met_at else ("False", "NotReached")
    assert (target["status"], target["reason"]) == said, target
    cells = status["repetitions"]["cells"]
    assert [c["name"] for c in cells] == ["calibration=a", "calibration=b"]
    # Every trial counts (LENIENT_VALIDITY accepts what this plane's trials are judged): one
    # valid trial per round run.
    assert not met_at or all(c["met"] for c in cells), cells
    assert all(c["valid"] == rounds for c in cells), cells
    # Randomized rounds: every round ran each cell once, round after round.
    assert sorted(watch.runs.values()) == sorted(
        f"aa-c{c}-r{r}" for c in range(2) for r in range(1, rounds + 1)
    )
    starts = {n: r["status"]["startTime"] for n, r in runs.items()}
    started = sorted(starts, key=lambda n: (starts[n], status["order"].index(n)))
    assert [int(n.rsplit("-r", 1)[1]) for n in started] == sorted(
        int(n.rsplit("-r", 1)[1]) for n in started
    )
    assert started == status["order"]
    # Two clusters from one template: the same spec under two names.
    assert {n for n, _ in watch.clusters.values()} == {"aa-k0", "aa-k1"}
    # mongobench calibrate: the false-positive rate and the detectable effect, from the runs.
    assert calibrated.returncode == 0, calibrated.stderr[-500:]
    report = json.loads(calibrated.stdout)
    assert report["rounds"] == rounds and report["window"] == 3
    rows = {(r["workload"], r["metric"]): r for r in report["rows"]}
    throughput = rows[("c", "throughput")]
    assert throughput["rounds"] == rounds and throughput["windows"] == rounds - 2
    assert throughput["falsePositiveRate"] is not None and throughput["mde"] > 0
    assert ("c", "READ p99") in rows
    assert table.returncode == 0 and "A/A calibration experiment/aa" in table.stdout
    assert "until throughput +-100%" in described.stdout
