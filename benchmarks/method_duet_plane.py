"""make bench-method's Duet figure measured on this plane: an A/A Duet and an A/A
RandomizedRounds experiment of the same rounds, back to back in one session.

    PYTHONPATH=e2e/local:benchmarks .venv/bin/python benchmarks/method_duet_plane.py

What is real, as in the cluster tier (e2e/local/tests/test_duet_experiment.py): the apiserver,
scheduler and three KWOK nodes, the operator process, the runs' Jobs executed by the harness
kubelet (runner and YCSB C against FerretDB). The wire model stands in for mongod's replica-set
state. Each of the duet's two clusters has a FerretDB of its own (both on this machine, as a
duet's sides share their nodes); the RandomizedRounds cells differ only in a label, so both run
on one cluster, one run at a time, each round in a fresh random order.

From the trials (method_duet.detectable): the duet's per-round paired log ratios against the
RandomizedRounds trials' log throughputs a side, and the smallest change each design detects
with 80% power at that number of trials. BENCH_DUET_ROUNDS (default 6) rounds of
BENCH_DUET_SECONDS (default 10) s steps: about 6 minutes on a busy 2-core machine.
BENCH_DUET_SAVE=FILE keeps the runs (JSON) the figure rests on.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import method_duet
import pymongo
import yaml
from kubernetes import client as k8s

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.tools import REPO

NS = "bench"
ROUNDS = int(os.environ.get("BENCH_DUET_ROUNDS", "6"))
STEP_SECONDS = int(os.environ.get("BENCH_DUET_SECONDS", "10"))
DUET, ROUNDS_NAME = "duet", "rounds"
CLUSTER = {"version": "7.0.14", "topology": {"type": "ReplicaSet", "replicaSet": {"members": 1}}}
# As the cluster tier's duet: 200 records, two threads, per-second series for the pairs.
RUN = {
    "workloads": [{"name": "c"}],
    "load": {"recordCount": 200, "threads": 2},
    "run": {"durationSeconds": STEP_SECONDS, "threads": 2, "statusIntervalSeconds": 1},
    "clients": {"parallelism": 1},
    "validity": LENIENT_VALIDITY,
}
Run = dict[str, Any]


def experiments(rounds: int) -> list[dict[str, Any]]:
    """The two A/A experiments: a Duet calibration, and RandomizedRounds over two cells that
    differ only in a label (one cluster: its runs one at a time)."""

    def experiment(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkExperiment",
            "metadata": {"name": name},
            "spec": {"cluster": CLUSTER, "run": RUN, "repetitions": rounds, **spec},
        }

    side = {"name": "side", "target": "run", "field": "labels.side", "values": ["a", "b"]}
    return [
        experiment(DUET, order="Duet", calibration=True),
        experiment(ROUNDS_NAME, order="RandomizedRounds", seed=37, dimensions=[side]),
    ]


def _host(cluster: str) -> str:
    return f"{cluster}-rs0-0.{cluster}-rs0-hl.{NS}.svc.cluster.local:27017"


class Drops(threading.Thread):
    """Drops a new run's collection on its cluster's FerretDB when the run appears: the data
    path outlives the runs (the run's prepare step drops it on the wire model), so a round's
    load would meet the last round's keys."""

    def __init__(self, plane: Plane, data: Callable[[str], pymongo.MongoClient[Any]]) -> None:
        super().__init__(daemon=True)
        self.plane, self.data, self.seen = plane, data, set[str]()
        self.done = threading.Event()

    def run(self) -> None:
        objects = k8s.CustomObjectsApi(self.plane.api_client())
        while not self.done.is_set():
            try:
                got = objects.list_namespaced_custom_object(
                    "mongobench.io", "v1alpha1", NS, "benchmarkruns"
                )
                for r in cast(dict[str, list[Run]], got)["items"]:
                    if r["metadata"]["uid"] not in self.seen:
                        cluster = r["spec"]["clusterRef"]["name"]
                        self.data(cluster)["ycsb"]["usertable"].drop()
                        self.seen.add(r["metadata"]["uid"])
            except Exception:  # a busy apiserver: the next poll
                pass
            time.sleep(0.2)


def _ended(plane: Plane, name: str) -> Run | None:
    got = json.loads(
        plane.kubectl("get", "benchmarkexperiment", name, "-n", NS, "-o", "json").stdout
    )
    return got if got.get("status", {}).get("phase") in ("Succeeded", "Failed") else None


def _experiments(
    plane: Plane, work: Path, host_map: str, rounds: int
) -> tuple[list[Run], dict[str, str]]:
    """Both experiments, one after the other (never on each other), by the operator: every
    run and each experiment's phase."""
    operator = start_operator(
        plane.kubeconfig, [NS], work / "operator.log",
        MONGOBENCH_HOST_MAP=host_map, MONGOBENCH_EXPERIMENT_TICK_SECONDS="0.5",
    )  # fmt: skip
    phases: dict[str, str] = {}
    try:
        for exp in experiments(rounds):
            name = exp["metadata"]["name"]
            plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(exp))
            ended = wait_until(
                lambda name=name: _ended(plane, name),
                timeout=600 + 120 * rounds,
                interval=2.0,
                what=f"experiment {name} ended",
            )
            phases[name] = ended["status"]["phase"]
        got = plane.kubectl("get", "benchmarkrun", "-n", NS, "-o", "json").stdout
        return list(json.loads(got)["items"]), phases
    finally:
        operator.stop()


def measure(rounds: int = ROUNDS) -> tuple[list[Run], list[Run], dict[str, str]]:
    """The duet's runs, the RandomizedRounds experiment's runs and both experiments' phases,
    on a fresh plane."""
    with tempfile.TemporaryDirectory(prefix="bench-duet-") as tmp:
        work = Path(tmp)
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3))
        try:
            plane.apply(REPO / "crds")
            plane.kubectl("create", "namespace", NS)
            model = MongoModel(keyfile=keyfile_from_pods(plane.api_client()), catch_up_seconds=0.1)
            with (
                model,
                running_ferretdb(work / "ferretdb-a") as fa,
                running_ferretdb(work / "ferretdb-b") as fb,
            ):
                for cluster in (f"{DUET}-k0", f"{DUET}-k1", f"{ROUNDS_NAME}-k0"):
                    model.member(_host(cluster))
                host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
                to_a = rewrite_hosts(f"{fa.host}:{fa.port}")
                to_b = rewrite_hosts(f"{fb.host}:{fb.port}")
                clients: dict[str, pymongo.MongoClient[Any]] = {
                    side: pymongo.MongoClient(server.uri) for side, server in (("a", fa), ("b", fb))
                }

                def rewrite(uri: str) -> str:  # the duet's B cluster has FerretDB b
                    return (to_b if f"{DUET}-k1" in uri else to_a)(uri)

                drops = Drops(plane, lambda c: clients["b" if c == f"{DUET}-k1" else "a"])
                try:
                    with pod_executor(plane, NS, uri_rewrite=rewrite):
                        drops.start()
                        runs, phases = _experiments(plane, work, host_map, rounds)
                finally:
                    drops.done.set()
                    for c in clients.values():
                        c.close()
        finally:
            plane.stop()
    mine = [r for r in runs if r["metadata"]["name"].startswith(f"{DUET}-")]
    rest = [r for r in runs if r["metadata"]["name"].startswith(f"{ROUNDS_NAME}-")]
    return mine, rest, phases


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def figure() -> tuple[str, list[str]]:
    """(the short form, the lines printed): measured on a fresh plane, now."""
    before = _load()
    started = time.monotonic()
    duet_runs, rounds_runs, phases = measure()
    if saved := os.environ.get("BENCH_DUET_SAVE"):  # the run objects, to audit the figure
        Path(saved).write_text(json.dumps({"duet": duet_runs, "rounds": rounds_runs}))
    found = method_duet.detectable(
        *method_duet.duet_trials(duet_runs), *method_duet.rounds_trials(rounds_runs)
    )
    short, lines = method_duet.measured_lines(
        found, STEP_SECONDS, f"{before} before, {_load()} after (1/5/15 min)"
    )
    lines.append(
        f"  {len(duet_runs)} duet runs and {len(rounds_runs)} RandomizedRounds runs in "
        f"{time.monotonic() - started:.0f} s; experiments "
        + ", ".join(f"{k} {v}" for k, v in phases.items())
    )
    return short, lines


def main() -> int:
    _, lines = figure()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
