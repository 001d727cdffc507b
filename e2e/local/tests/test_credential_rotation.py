"""Cluster tier: `mongobench.io/rotate=users` while a BenchmarkRun runs; `keyfile` through
MongoDB's two-key transition and two rolling restarts.

What is real: the apiserver (the annotation, status.rotation as the CRD keeps it, the Secrets,
Events), the operator process, the run's client pods executed by the harness kubelet (runner and
YCSB against FerretDB, reading the connection URI from the Secret at start as on a cluster).
What stands in: the wire model for mongod (SCRAM-SHA-256 enforced, updateUser's new password
replacing the credentials as mongod does, the internal user by the keyfile the pods mount, read
once per pod as mongod reads it at start, one key or a YAML list of keys).

The data path here is FerretDB, not the model: that a client with a stale password would fail is
the model's to show (old password refused), and that none ran across the change is shown by the
run's own timeline: the rotation waited for the step in progress and the next step started after
it, with no failed operation in the run. The exporter's password rotates with the users: its
sidecar reads it from the Secret at start, so the member's pod is replaced (a new uid; no
exporter process runs on the plane: the pod's restart from a template carrying the new password's
digest is what a sidecar needs to read it).
"""

from __future__ import annotations

import base64
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from localplane.executor import PodExecutor
from localplane.keyfiles import keyfile_keys
from localplane.mongomodel import MongoModel
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
ROTATED = ("bc-operator", "bc-admin", "bc-benchmark", "bc-exporter")


def secret_values(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, str]:
    data = k8s.CoreV1Api(api).read_namespaced_secret(name, namespace).data or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def authenticates(model: MongoModel, namespace: str, username: str, password: str) -> bool:
    address = model.host_map[f"bc-rs0-0.bc-rs0-hl.{namespace}.svc.cluster.local:27017"]
    client: MongoClient[dict[str, Any]] = MongoClient(
        f"mongodb://{address}/?directConnection=true",
        username=username,
        password=password,
        authSource="admin",
        authMechanism="SCRAM-SHA-256",
        serverSelectionTimeoutMS=5000,
    )
    try:
        client.admin.command("ping")
        return True
    except OperationFailure as exc:
        assert exc.code == 18, exc  # AuthenticationFailed, nothing else
        return False
    finally:
        client.close()


def second(stamp: str) -> float:
    """An RFC 3339 time in whole seconds (steps record whole seconds)."""
    return float(int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()))


def test_users_rotate_between_steps_of_a_running_benchmark_with_no_failed_operation(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "operator.log"
    operator = bmr.start(plane, namespace, model, log, prometheus, kube_api)
    try:
        bmr.cluster(plane, namespace, kube_api)
        old = {name: secret_values(kube_api, namespace, name) for name in ROTATED}
        run = bmr.run_manifest(
            "spans",
            workloads=[{"name": "a"}, {"name": "b"}, {"name": "c"}],
            repetitions=1,
            clients={"parallelism": 1},
            validity=LENIENT_VALIDITY,
        )
        bmr.apply(plane, namespace, run)

        def load_running() -> bool:
            status = bmr.get(kube_api, namespace, "benchmarkruns", "spans").get("status") or {}
            steps = {s["kind"]: s for s in status.get("steps") or []}
            return steps.get("load", {}).get("phase") == "Running"

        wait_until(load_running, timeout=120, interval=0.2, what="the load step running")
        member_pod = k8s.CoreV1Api(kube_api).read_namespaced_pod("bc-rs0-0", namespace)
        plane.kubectl(
            "annotate", "-n", namespace, "mongocluster", "bc", "mongobench.io/rotate=users"
        )
        rotation = wait_until(
            lambda: (
                (
                    r := (
                        bmr.get(kube_api, namespace, "mongoclusters", "bc").get("status") or {}
                    ).get("rotation", {})
                ).get("phase")
                == "Completed"
                and r
            ),
            timeout=180,
            interval=0.5,
            what="rotation Completed",
        )
        done = bmr.wait_run(kube_api, namespace, "spans", ("Succeeded", "Failed"))
        cluster = bmr.get(kube_api, namespace, "mongoclusters", "bc")
        new = {name: secret_values(kube_api, namespace, name) for name in ROTATED}
        events = [
            e
            for e in k8s.CoreV1Api(kube_api).list_namespaced_event(namespace).items
            if e.involved_object.name == "bc"
        ]
        users = {name: old[name]["username"] for name in ROTATED}
        # The old passwords, refused; the new ones (from the Secrets) authenticate.
        old_accepted = {
            n: authenticates(model, namespace, users[n], old[n]["password"]) for n in ROTATED
        }
        new_accepted = {
            n: authenticates(model, namespace, users[n], new[n]["password"]) for n in ROTATED
        }
        connection = secret_values(kube_api, namespace, "bc-connection")["uri"]
        member_after = k8s.CoreV1Api(kube_api).read_namespaced_pod("bc-rs0-0", namespace)
        template = k8s.AppsV1Api(kube_api).read_namespaced_stateful_set("bc-rs0", namespace)
    finally:
        operator.stop()

    status = done["status"]
    assert status["phase"] == "Succeeded", status.get("conditions")
    for step in (s for s in status["steps"] if s["kind"] in ("load", "run")):
        for name, op in step["result"]["operations"].items():
            assert op["errors"] == 0, (step["label"], name, op)
    # The run spans the rotation, which came between two of its steps: after the load it was
    # asked during, before a later step, and never while one ran.
    rotated_at = second(rotation["completedAt"])
    assert second(status["startTime"]) <= rotated_at <= second(status["completionTime"])
    jobs = [s for s in status["steps"] if s["kind"] in ("load", "run")]
    load = jobs[0]
    assert second(load["completionTime"]) <= rotated_at
    assert any(second(s["startTime"]) >= rotated_at for s in jobs[1:])
    for s in jobs:
        assert not second(s["startTime"]) < rotated_at < second(s["completionTime"]), s

    assert sorted(rotation["rotated"]) == sorted(users.values())
    assert rotation["requested"] == ["users"]
    assert "mongobench.io/rotate" not in (cluster["metadata"].get("annotations") or {})
    assert old_accepted == dict.fromkeys(ROTATED, False)
    assert new_accepted == dict.fromkeys(ROTATED, True)
    assert all(new[n]["password"] != old[n]["password"] for n in ROTATED)
    assert all("nextPassword" not in new[n] for n in ROTATED)
    assert new["bc-benchmark"]["password"] in connection
    reasons = [e.reason for e in events]
    for reason in ("RotationRequested", "RotationStarted", "ExporterRestarting",
                   "CredentialsRotated"):  # fmt: skip
        assert reasons.count(reason) == 1, reasons
    # The member restarted (its exporter sidecar then reads the new password from the Secret),
    # from a template carrying a digest of that password, never the password.
    assert member_after.metadata.uid != member_pod.metadata.uid
    said_on_pods = template.spec.template.metadata.annotations or {}
    assert "mongobench.io/exporter-password" in said_on_pods
    assert new["bc-exporter"]["password"] not in str(said_on_pods)
    exporter = next(c for c in template.spec.template.spec.containers if c.name == "exporter")
    assert {e.name: e.value_from.secret_key_ref.name for e in exporter.env} == {
        "MONGODB_USER": "bc-exporter",
        "MONGODB_PASSWORD": "bc-exporter",
    }
    # No password, old or new, in status, Events or the operator's log.
    said = "\n".join(
        [str(cluster.get("status")), log.read_text(), *(e.message or "" for e in events)]
    )
    for n in ROTATED:
        assert old[n]["password"] not in said and new[n]["password"] not in said


KR_MEMBERS = 3


def internal_login(model: MongoModel, host: str, key: str) -> bool:
    """Whether the member accepts __system@local with `key` (what members say to each other)."""
    client: MongoClient[dict[str, Any]] = MongoClient(
        f"mongodb://{model.host_map[host]}/?directConnection=true",
        username="__system",
        password=key,
        authSource="local",
        authMechanism="SCRAM-SHA-256",
        serverSelectionTimeoutMS=5000,
    )
    try:
        client.admin.command("hello")  # answered by a secondary too; the login comes first
        return True
    except OperationFailure as exc:
        assert exc.code == 18, exc
        return False
    finally:
        client.close()


def test_the_keyfile_rotates_through_both_keys_and_the_old_key_is_refused_after(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, model: MongoModel, tmp_path: Path
) -> None:
    hosts = [f"kr-rs0-{i}.kr-rs0-hl.{namespace}.svc.cluster.local:27017" for i in range(3)]
    for host in hosts:
        model.member(host)
    log = tmp_path / "operator.log"
    host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
    operator = start_operator(plane.kubeconfig, [namespace], log, MONGOBENCH_HOST_MAP=host_map)
    core = k8s.CoreV1Api(kube_api)
    seen: list[tuple[str, str | None, tuple[str, ...]]] = []  # (cluster phase, rotation, keys)

    def pods() -> dict[str, str]:
        listed = core.list_namespaced_pod(namespace, label_selector="mongobench.io/cluster=kr")
        return {p.metadata.name: p.metadata.uid for p in listed.items}

    def completed() -> dict[str, Any] | None:
        status = bmr.get(kube_api, namespace, "mongoclusters", "kr").get("status") or {}
        rotation = status.get("rotation") or {}
        keys = keyfile_keys(secret_values(kube_api, namespace, "kr-keyfile")["keyfile"])
        seen.append((status.get("phase"), rotation.get("phase"), keys))
        return status if rotation.get("phase") == "Completed" else None

    try:
        bmr.apply(plane, namespace, {
            "apiVersion": "mongobench.io/v1alpha1", "kind": "MongoCluster",
            "metadata": {"name": "kr"},
            "spec": {"version": "7.0.14", "topology": {"replicaSet": {"members": KR_MEMBERS}}},
        })  # fmt: skip
        wait_until(
            lambda: (
                (bmr.get(kube_api, namespace, "mongoclusters", "kr").get("status") or {}).get(
                    "phase"
                )
                == "Ready"
            ),
            timeout=90,
            what="kr Ready",
        )
        (old,) = keyfile_keys(secret_values(kube_api, namespace, "kr-keyfile")["keyfile"])
        before = pods()
        assert all(internal_login(model, h, old) for h in hosts)
        plane.kubectl(
            "annotate", "-n", namespace, "mongocluster", "kr", "mongobench.io/rotate=keyfile"
        )
        status = wait_until(completed, timeout=300, interval=0.5, what="keyfile rotation Completed")
        wait_until(lambda: completed() and seen[-1][0] == "Ready", timeout=60, what="kr Ready")
        values = secret_values(kube_api, namespace, "kr-keyfile")
        (new,) = keyfile_keys(values["keyfile"])
        old_accepted = [internal_login(model, h, old) for h in hosts]
        new_accepted = [internal_login(model, h, new) for h in hosts]
        after = pods()
        cluster = bmr.get(kube_api, namespace, "mongoclusters", "kr")
        events = [
            e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == "kr"
        ]
    finally:
        operator.stop()

    assert new != old and values == {"keyfile": new}  # nextKeyfile dropped at the end
    # The transition as MongoDB documents it: both keys while members restarted, then the new.
    transitions = [keys for _, _, keys in seen]
    assert (new, old) in transitions, transitions
    assert old_accepted == [False] * KR_MEMBERS and new_accepted == [True] * KR_MEMBERS
    # Every member restarted (a new pod: the model's member reads its keyfile at start).
    assert set(after) == set(before) and all(after[p] != before[p] for p in before)
    rotation = status["rotation"]
    assert rotation["rotated"] == ["keyfile"] and rotation["requested"] == ["keyfile"]
    assert "mongobench.io/rotate" not in (cluster["metadata"].get("annotations") or {})
    reasons = [e.reason for e in events]
    assert reasons.count("KeyfileRolling") == 2, reasons
    for reason in ("RotationRequested", "RotationStarted", "CredentialsRotated"):
        assert reasons.count(reason) == 1, reasons
    # Never Failed nor re-initialized across the restarts; Ready again at the end. (While a
    # member's pod restarts the phase is Degraded, as in any rolling restart: no pod stays up.)
    phases = {phase for phase, _, _ in seen}
    assert phases <= {"Ready", "Degraded"}, phases
    assert cluster["status"]["phase"] == "Ready"
    said = "\n".join(
        [str(cluster.get("status")), log.read_text(), *(e.message or "" for e in events)]
    )
    assert old not in said and new not in said
