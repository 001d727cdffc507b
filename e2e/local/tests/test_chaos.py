"""Cluster tier, chaos: the operator SIGKILLed at points chosen at random (seeded; the seed is
printed) across a MongoCluster's life (create, scale up and down, upgrade, add and remove a
shard, delete) and a BenchmarkRun's (prepare, load, each step, collection, cleanup), plus the
kube-apiserver crashed and restarted mid-run. After each restart everything converges: no Job
created twice, every result counted once, nothing left behind once the resources are deleted.

What is real: the apiserver (killed and restarted for real), etcd, controller-manager, the
operator process (killed with SIGKILL and started again), the Jobs' commands (the runner and
YCSB, run by localplane.executor) against FerretDB. What stands in for mongod: the wire model
(localplane.mongomodel), as in test_mongocluster.py.

MONGOBENCH_CHAOS_KILLS sets the number of kills (default 30, at least one per stage; about a
minute here); MONGOBENCH_CHAOS_SEED replays a failed draw.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
import yaml
from kubernetes import client as k8s

from localplane.executor import PodExecutor
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"
SEED = int(os.environ.get("MONGOBENCH_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
STAGES = (
    "create",
    "scale up",
    "scale down",
    "upgrade",
    "run prepare+load",
    "run steps",
    "run collection+cleanup",
    "sharded create",
    "add shard",
    "remove shard",
    "delete",
)
# At least one kill per stage.
KILLS = max(len(STAGES), int(os.environ.get("MONGOBENCH_CHAOS_KILLS", "30")))


class Chaos:
    """The operator under test, and the hand that kills it: `kills` SIGKILLs spread over the
    stages by a seeded draw (every stage gets at least one), each at a random delay."""

    def __init__(
        self,
        start: Callable[[int], OperatorProcess],
        kills: int,
        seed: int,
        describe: Callable[[], str] = lambda: "",
    ) -> None:
        self.start = start
        self.describe = describe
        self.rng = random.Random(seed)
        share = [1] * len(STAGES)
        for _ in range(max(0, kills - len(STAGES))):
            share[self.rng.randrange(len(STAGES))] += 1
        self.plan = dict(zip(STAGES, share, strict=True))
        self.restarts = 0
        self.done: list[str] = []
        self.operator = start(0)

    def kill(self, stage: str) -> None:
        self.operator.kill()
        self.restarts += 1
        self.done.append(stage)
        self.operator = self.start(self.restarts)

    def during(self, stage: str, converged: Callable[[], Any], timeout: float = 120) -> Any:
        """Kill the operator the stage's share of times at random delays, then wait for it."""
        for _ in range(self.plan[stage]):
            time.sleep(self.rng.uniform(0.0, 1.5))
            self.kill(stage)
        try:
            return wait_until(converged, timeout=timeout, interval=0.2, what=stage)
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{self.describe()}") from None


class JobWatch:
    """Every Job uid seen per name while the run lasts: a name with two uids was created twice."""

    def __init__(self, batch: k8s.BatchV1Api, namespace: str) -> None:
        self.uids: dict[str, set[str]] = defaultdict(set)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, args=(batch, namespace), daemon=True)
        self.thread.start()

    def loop(self, batch: k8s.BatchV1Api, namespace: str) -> None:
        while not self.stop.is_set():
            try:
                for job in batch.list_namespaced_job(namespace, _request_timeout=5).items:
                    self.uids[job.metadata.name].add(job.metadata.uid)
            except Exception:  # the apiserver is restarted on purpose
                pass
            time.sleep(0.1)

    def close(self) -> dict[str, set[str]]:
        self.stop.set()
        self.thread.join()
        return dict(self.uids)


# The BenchmarkRun suite's fixtures (found by name in the module): FerretDB and the kubelet.
ferretdb, executor = bmr.ferretdb, bmr.executor


@pytest.fixture
def model(kube_api: k8s.ApiClient) -> Iterator[MongoModel]:
    with MongoModel(keyfile=keyfile_from_pods(kube_api), catch_up_seconds=0.1, drain_calls=2) as m:
        yield m


def apply(plane: Plane, namespace: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    obj = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}}
    obj["spec"] = spec
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def get(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(
            k8s.CustomObjectsApi(api).get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name
            )
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    except Exception:  # apiserver restarting: not converged yet
        return {}


def cluster_ready(api: k8s.ApiClient, namespace: str, name: str) -> Callable[[], bool]:
    def check() -> bool:
        obj = get(api, namespace, "mongoclusters", name) or {}
        status = obj.get("status") or {}
        return status.get("phase") == "Ready" and status.get("observedGeneration") == (
            obj.get("metadata") or {}
        ).get("generation")

    return check


def test_operator_killed_at_random_points_converges_every_time(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    tmp_path: Path,
) -> None:
    print(f"chaos: seed {SEED} (MONGOBENCH_CHAOS_SEED={SEED} replays it), {KILLS} kills")
    svc = f"{namespace}.svc.cluster.local:27017"
    for i in range(3):
        model.member(f"ch-rs0-{i}.ch-rs0-hl.{svc}")
    for rs in ("cs-cfg", "cs-shard0", "cs-shard1"):
        model.member(f"{rs}-0.{rs}-hl.{svc}")
    model.mongos(f"cs-mongos.{svc}")
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())

    def start(n: int) -> OperatorProcess:
        return start_operator(
            plane.kubeconfig,
            [namespace],
            tmp_path / f"operator-{n}.log",
            MONGOBENCH_HOST_MAP=host_map,
        )

    apps, core = k8s.AppsV1Api(kube_api), k8s.CoreV1Api(kube_api)
    batch = k8s.BatchV1Api(kube_api)
    custom = k8s.CustomObjectsApi(kube_api)

    def describe() -> str:
        """What a person would look at when a stage does not converge."""
        lines = [f"executor errors: {executor.errors[-10:]}"]
        try:
            run = get(kube_api, namespace, "benchmarkruns", "cr") or {}
            status = run.get("status") or {}
            lines.append(f"run phase {status.get('phase')}")
            for s in status.get("steps") or []:
                lines.append(f"  step {s.get('name')} {s.get('kind')} {s.get('phase')}")
            for job in batch.list_namespaced_job(namespace).items:
                lines.append(f"  job {job.metadata.name} {job.status.to_dict()}")
            for pod in core.list_namespaced_pod(namespace).items:
                lines.append(f"  pod {pod.metadata.name} {pod.status.phase}")
        except Exception as e:  # the plane itself may be what is broken
            lines.append(f"(could not read the plane: {e})")
        return "\n".join(lines)

    chaos = Chaos(start, KILLS, SEED, describe)
    t0 = time.monotonic()
    apiserver_down = 0.0
    try:
        # -- a replica set's life ------------------------------------------------------------
        rs: dict[str, Any] = {
            "version": "7.0.14",
            "topology": {"replicaSet": {"members": 1}},
            "deletionPolicy": "Delete",
        }
        apply(plane, namespace, "MongoCluster", "ch", rs)
        chaos.during("create", cluster_ready(kube_api, namespace, "ch"))
        rs["topology"]["replicaSet"]["members"] = 3
        apply(plane, namespace, "MongoCluster", "ch", rs)
        chaos.during("scale up", cluster_ready(kube_api, namespace, "ch"))
        assert len(model.sets["ch-rs0"].config["members"]) == 3
        rs["topology"]["replicaSet"]["members"] = 1
        apply(plane, namespace, "MongoCluster", "ch", rs)
        chaos.during("scale down", cluster_ready(kube_api, namespace, "ch"))
        assert len(model.sets["ch-rs0"].config["members"]) == 1
        assert apps.read_namespaced_stateful_set("ch-rs0", namespace).spec.replicas == 1
        rs["version"] = "8.0.4"
        apply(plane, namespace, "MongoCluster", "ch", rs)
        chaos.during("upgrade", cluster_ready(kube_api, namespace, "ch"))

        # -- a BenchmarkRun on it ------------------------------------------------------------
        watch = JobWatch(batch, namespace)
        run_spec = {
            "clusterRef": {"name": "ch"},
            "workloads": [{"name": "a"}, {"name": "c"}],
            "load": {"recordCount": 100, "threads": 1},
            "run": {"operationCount": 100, "threads": 1, "statusIntervalSeconds": 1},
            "repetitions": 1,
            "clients": {"parallelism": 2},
            "cleanup": {"jobs": "Always", "data": "Always"},
        }
        apply(plane, namespace, "BenchmarkRun", "cr", run_spec)

        def step_running(kind: str) -> Callable[[], bool]:
            def check() -> bool:
                run = get(kube_api, namespace, "benchmarkruns", "cr") or {}
                status = run.get("status") or {}
                steps = status.get("steps") or []
                return status.get("phase") in ("Succeeded", "Failed") or any(
                    s.get("kind") == kind and s.get("phase") != "Pending" for s in steps
                )

            return check

        chaos.during("run prepare+load", step_running("load"))
        chaos.during("run steps", step_running("run"))
        apiserver_down = plane.restart_apiserver(down=1.0)  # mid-run: the operator reconnects
        chaos.during("run collection+cleanup", step_running("cleanup"), timeout=240)
        run = wait_until(
            lambda: (
                (r := get(kube_api, namespace, "benchmarkruns", "cr") or {})
                .get("status", {})
                .get("phase")
                in ("Succeeded", "Failed")
                and r
            ),
            timeout=240,
            interval=0.5,
            what="run cr finished",
        )
        job_uids = watch.close()

        # -- a sharded cluster: add and remove a shard ---------------------------------------
        sharded: dict[str, Any] = {
            "version": "7.0.14",
            "topology": {
                "type": "Sharded",
                "sharded": {"shards": 1, "membersPerShard": 1, "configServers": 1, "mongos": 1},
            },
            "deletionPolicy": "Delete",
        }
        apply(plane, namespace, "MongoCluster", "cs", sharded)
        chaos.during("sharded create", cluster_ready(kube_api, namespace, "cs"))
        sharded["topology"]["sharded"]["shards"] = 2
        apply(plane, namespace, "MongoCluster", "cs", sharded)
        chaos.during("add shard", cluster_ready(kube_api, namespace, "cs"))
        assert sorted(model.sharded.shards) == ["cs-shard0", "cs-shard1"]
        sharded["topology"]["sharded"]["shards"] = 1
        apply(plane, namespace, "MongoCluster", "cs", sharded)

        def removed() -> bool:
            names = {s.metadata.name for s in apps.list_namespaced_stateful_set(namespace).items}
            return cluster_ready(kube_api, namespace, "cs")() and "cs-shard1" not in names

        chaos.during("remove shard", removed)
        assert sorted(model.sharded.shards) == ["cs-shard0"]

        # -- delete everything ---------------------------------------------------------------
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "benchmarkruns", "cr")
        for name in ("ch", "cs"):
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "mongoclusters", name)

        def nothing_left() -> bool:
            kinds = [
                apps.list_namespaced_stateful_set(namespace).items,
                apps.list_namespaced_deployment(namespace).items,
                batch.list_namespaced_job(namespace).items,
                core.list_namespaced_persistent_volume_claim(namespace).items,
                [s for s in core.list_namespaced_service(namespace).items],
                [
                    c
                    for c in core.list_namespaced_config_map(namespace).items
                    if c.metadata.name != "kube-root-ca.crt"
                ],
                [
                    s
                    for s in core.list_namespaced_secret(namespace).items
                    if s.type != "kubernetes.io/service-account-token"
                ],
                custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "mongoclusters")[
                    "items"
                ],
            ]
            return not any(kinds)

        chaos.during("delete", nothing_left)
    finally:
        chaos.operator.stop()
    elapsed = time.monotonic() - t0
    print(
        f"chaos: {chaos.restarts} kills ({dict(chaos.plan)}), apiserver down "
        f"{apiserver_down:.1f} s, {elapsed:.0f} s in all"
    )
    assert chaos.restarts == KILLS
    # The run converged to success with every step counted once, every client once.
    status = run["status"]
    # As text, not a tuple: pytest cuts a long repr in the middle, where the step's message
    # says why (CI once showed only "run a #1: Job ...").
    said = [f"{s['kind']} {s['phase']}: {s.get('message')}" for s in status.get("steps") or []]
    failed = [f"{r.pod} exit {r.exit_code}: {r.output_tail[-1500:]}" for r in executor.runs
              if r.exit_code != 0]  # fmt: skip
    assert status["phase"] == "Succeeded", "\n".join(said + failed)
    steps = status["steps"]
    assert [s["index"] for s in steps] == list(range(len(steps)))
    assert all(s["phase"] == "Succeeded" for s in steps), steps
    measured = [s for s in steps if s["kind"] in ("load", "run")]
    assert [s["clientsReported"] for s in measured] == [2] * len(measured), measured
    for s in measured:  # each client ran its share once: no double-counted operations
        assert s["result"]["operationsTotal"] == 100, s
    # No Job was created twice (a second uid under the same name) while the operator died.
    assert job_uids and all(len(u) == 1 for u in job_uids.values()), job_uids
    assert len(job_uids) == len(measured)
