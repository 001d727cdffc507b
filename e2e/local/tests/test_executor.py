"""Cluster tier: benchmark Job pods run for real (PodExecutor, the harness kubelet).

Proves, with a real apiserver, Job controller and scheduler (KWOK nodes): an Indexed Job's pods
get their env resolved like a kubelet does (Secret, downward API, `$(VAR)`), run
`mongobench-runner` + YCSB against FerretDB on loopback, store their result documents in
ConfigMaps through the API as their ServiceAccount (RBAC applies: without the Role the write is
refused), and their exit codes and termination messages drive the Job to Complete or Failed.
The unit tests at the end cover the pure helpers.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pymongo
import pytest
from kubernetes import client as k8s

from localplane.executor import (
    REDACTED_URI,
    PodExecutor,
    expand,
    field_value,
    pod_executor,
    remount,
    rewrite_hosts,
)
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.monitoring import RELEASE_LABELS, Monitoring
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.tools import REPO

RUNNER_SA = "bench-runner"
RECORDS = 200
SCHEMA = json.loads((REPO / "results" / "schema" / "v2.json").read_text())
PASSWORD = "s3cr3t-pw"


@pytest.fixture(scope="module")
def ferretdb() -> Iterator[FerretDB]:
    with running_ferretdb() as server:
        yield server


@pytest.fixture
def executor(plane: Plane, namespace: str, ferretdb: FerretDB) -> Iterator[PodExecutor]:
    with pod_executor(
        plane, namespace, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
    ) as ex:
        yield ex
    assert not ex.errors


def _create(api: k8s.ApiClient, namespace: str, *objs: dict[str, Any]) -> None:
    from kubernetes.utils import create_from_dict

    for obj in objs:
        create_from_dict(api, obj, namespace=namespace)  # type: ignore[no-untyped-call]


def _setup_identity(api: k8s.ApiClient, namespace: str, db: str) -> None:
    """What the operator's chart/handlers would create: the URI Secret and the runner's RBAC."""
    # The cluster's Service DNS name: nothing resolves it here; the executor rewrites it.
    uri = (
        f"mongodb://bench:{PASSWORD}@bench-mongos.{namespace}.svc.cluster.local:27017/{db}"
        "?replicaSet=rs0&authSource=admin"
    )
    _create(
        api,
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "bench-connection"},
            "stringData": {"uri": uri},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": RUNNER_SA}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "bench-results"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["create", "get", "update", "patch"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "bench-results"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "bench-results",
            },
            "subjects": [{"kind": "ServiceAccount", "name": RUNNER_SA, "namespace": namespace}],
        },
    )


def _restricted_pod_spec(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """Pod Security `restricted` (the test namespaces enforce it)."""
    container = {
        **container,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        **spec,
    }


def _ycsb_job(
    namespace: str, name: str, *, completions: int, step: str, account: str = RUNNER_SA
) -> dict[str, Any]:
    labels = {
        "mongobench.io/component": "benchmark-client",
        "mongobench.io/run": "exec-test",
        "mongobench.io/step": step,
    }
    container = {
        "name": "runner",
        "image": "ghcr.io/mongobench/ycsb:dev",
        "command": ["mongobench-runner"],
        # The operator's shape: Job-injected index, downward API, Secret URI, `$(VAR)` refs.
        "args": shlex.split(
            "ycsb --phase load --workload a --uri $(MONGODB_URI) --threads 2"
            f" -p recordcount={RECORDS} --timeout 120 --clients {completions}"
            " --client-index $(JOB_COMPLETION_INDEX) --label step=$(STEP)"
            " --label pod=$(POD_NAME) --label index=$(INDEX_FROM_ANNOTATION)"
            f" --output configmap:{namespace}/{name}-$(JOB_COMPLETION_INDEX)"
        ),
        "env": [
            {
                "name": "MONGODB_URI",
                "valueFrom": {"secretKeyRef": {"name": "bench-connection", "key": "uri"}},
            },
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "STEP",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['mongobench.io/step']"}},
            },
            {
                "name": "INDEX_FROM_ANNOTATION",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": (
                            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                        )
                    }
                },
            },
            {"name": "JAVA_OPTS", "value": "-Xmx256m -XX:+UseSerialGC"},
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": completions,
            "parallelism": completions,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": _restricted_pod_spec(container, serviceAccountName=account),
            },
        },
    }


def _read(api: k8s.ApiClient, kind: str, name: str, namespace: str) -> Any:
    """The object as plain JSON (camelCase dict), as kubectl would show it."""
    read = {
        "job": k8s.BatchV1Api(api).read_namespaced_job,
        "pod": k8s.CoreV1Api(api).read_namespaced_pod,
        "configmap": k8s.CoreV1Api(api).read_namespaced_config_map,
    }[kind]
    return api.sanitize_for_serialization(read(name, namespace))  # type: ignore[no-untyped-call]


def _job_condition(api: k8s.ApiClient, namespace: str, name: str) -> str | None:
    job = _read(api, "job", name, namespace)
    for cond in job.get("status", {}).get("conditions") or []:
        if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
            return f"{cond['type']}/{cond.get('reason', '')}"
    return None


def _pods(api: k8s.ApiClient, namespace: str, job: str) -> list[Any]:
    pods = k8s.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=f"job-name={job}")
    return list(api.sanitize_for_serialization(pods)["items"])  # type: ignore[no-untyped-call]


def _terminated(pod: Any) -> Any:
    return pod["status"]["containerStatuses"][0]["state"]["terminated"]


@pytest.mark.cluster
def test_indexed_job_runs_ycsb_and_stores_results_through_the_api(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    ferretdb: FerretDB,
    executor: PodExecutor,
) -> None:
    db = f"exec_{uuid.uuid4().hex[:8]}"
    _setup_identity(kube_api, namespace, db)
    t0 = time.monotonic()
    _create(kube_api, namespace, _ycsb_job(namespace, "load-a", completions=2, step="load-a"))

    outcome = wait_until(
        lambda: _job_condition(kube_api, namespace, "load-a"), timeout=180, what="Job load-a"
    )
    runs = executor.runs
    assert outcome.startswith("Complete"), [r.output_tail for r in runs]
    print(f"Indexed Job of 2 YCSB loads completed in {time.monotonic() - t0:.1f}s")

    # The processes: the local runner, the Secret's URI rewritten and redacted in the record.
    assert len(runs) == 2
    for run in runs:
        assert run.exit_code == 0 and run.reason == "Completed"
        assert run.argv[0].endswith("/mongobench-runner") and run.argv[0] != "mongobench-runner"
        assert REDACTED_URI in run.argv
        assert PASSWORD not in " ".join(run.argv) + run.output_tail
        assert run.message  # the runner's summary line

    # Results: one ConfigMap per completion index, written by the pod's ServiceAccount.
    validator = jsonschema.Draft202012Validator(SCHEMA)
    index_key = "batch.kubernetes.io/job-completion-index"
    pods = {
        p["metadata"]["annotations"][index_key]: p for p in _pods(kube_api, namespace, "load-a")
    }
    inserted = 0
    for index in ("0", "1"):
        cm = _read(kube_api, "configmap", f"load-a-{index}-p0", namespace)
        assert cm["metadata"]["labels"]["mongobench.io/result-of"] == f"load-a-{index}"
        doc = json.loads(cm["data"]["result.json"])
        validator.validate(doc)
        assert doc["status"] == "Succeeded", doc.get("error")
        assert doc["phase"] == "load"
        assert doc["client"]["index"] == int(index) and doc["client"]["count"] == 2
        pod_name = pods[index]["metadata"]["name"]
        assert doc["labels"] == {"step": "load-a", "pod": pod_name, "index": index}
        assert PASSWORD not in cm["data"]["result.json"]
        inserted += doc["operationsTotal"]

        # The pod as a kubelet leaves it: Succeeded, terminated with the summary as message.
        pod = _read(kube_api, "pod", pod_name, namespace)
        assert pod["status"]["phase"] == "Succeeded"
        terminated = _terminated(pod)
        assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
        assert "load" in terminated["message"]
        assert terminated["startedAt"] <= terminated["finishedAt"]
    assert inserted == RECORDS
    assert pymongo.MongoClient(ferretdb.uri)[db]["usertable"].count_documents({}) == RECORDS

    job = _read(kube_api, "job", "load-a", namespace)
    assert job["status"]["succeeded"] == 2
    assert job["status"]["completedIndexes"] == "0,1"


@pytest.mark.cluster
def test_failing_pod_fails_the_job_with_backoff_limit_zero(
    namespace: str, kube_api: k8s.ApiClient, executor: PodExecutor
) -> None:
    _setup_identity(kube_api, namespace, "unused")
    executor.fail_pods(
        lambda pod: pod["metadata"]["labels"].get("mongobench.io/step") == "doomed",
        exit_code=2,
        message="boom (injected)",
    )
    _create(kube_api, namespace, _ycsb_job(namespace, "doomed", completions=1, step="doomed"))

    outcome = wait_until(
        lambda: _job_condition(kube_api, namespace, "doomed"), timeout=60, what="Job doomed"
    )
    assert outcome == "Failed/BackoffLimitExceeded"
    (run,) = executor.runs
    assert run.injected and run.exit_code == 2 and run.reason == "Error"
    # The Job controller may delete the failed pod (finalizer removed); if it is still there,
    # its status is what a kubelet writes.
    for pod in _pods(kube_api, namespace, "doomed"):
        assert pod["status"]["phase"] == "Failed"
        terminated = _terminated(pod)
        assert terminated["exitCode"] == 2 and terminated["message"] == "boom (injected)"
    job = _read(kube_api, "job", "doomed", namespace)
    assert job["status"]["failed"] == 1 and not job["status"].get("succeeded")


@pytest.mark.cluster
def test_rbac_applies_to_the_runner_identity(
    namespace: str, kube_api: k8s.ApiClient, executor: PodExecutor
) -> None:
    # The namespace's `default` ServiceAccount has no Role: the runner's write is refused.
    _setup_identity(kube_api, namespace, f"rbac_{uuid.uuid4().hex[:6]}")
    job = _ycsb_job(namespace, "no-rbac", completions=1, step="no-rbac", account="default")
    _create(kube_api, namespace, job)

    outcome = wait_until(
        lambda: _job_condition(kube_api, namespace, "no-rbac"), timeout=120, what="Job no-rbac"
    )
    (run,) = executor.runs
    assert outcome == "Failed/BackoffLimitExceeded", run.output_tail
    assert run.exit_code == 3  # the runner's "document could not be stored"
    assert "403" in run.message and "NOT stored" in run.message
    assert "system:serviceaccount:" + namespace + ":default" in run.message


@pytest.mark.cluster
def test_missing_secret_waits_like_a_kubelet_then_runs(
    namespace: str, kube_api: k8s.ApiClient, executor: PodExecutor
) -> None:
    container = {
        "name": "main",
        "image": "ghcr.io/mongobench/ycsb:dev",  # no command: the image's entrypoint
        "args": ["$(SUBCOMMAND)", "--help", "$$(NOT_EXPANDED)"],
        "env": [
            {
                "name": "SUBCOMMAND",
                "valueFrom": {"secretKeyRef": {"name": "late", "key": "cmd"}},
            }
        ],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "late", "labels": {"mongobench.io/component": "benchmark-client"}},
        "spec": _restricted_pod_spec(container, automountServiceAccountToken=False),
    }
    _create(kube_api, namespace, pod)

    def waiting_reason() -> str | None:
        status = _read(kube_api, "pod", "late", namespace).get("status", {})
        statuses = status.get("containerStatuses") or [{}]
        reason = statuses[0].get("state", {}).get("waiting", {}).get("reason")
        return None if reason == "ContainerCreating" else reason

    assert wait_until(waiting_reason, what="waiting reason") == "CreateContainerConfigError"
    _create(
        kube_api,
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "late"},
            "stringData": {"cmd": "ycsb"},
        },
    )
    (run,) = executor.wait_runs(1, timeout=60)
    assert run.argv[1:] == ("ycsb", "--help", "$(NOT_EXPANDED)")
    assert run.exit_code == 0, run.output_tail
    assert wait_until(
        lambda: _read(kube_api, "pod", "late", namespace)["status"]["phase"] == "Succeeded",
        what="pod late Succeeded",
    )


def _sleeper(name: str) -> dict[str, Any]:
    """A client pod whose process sleeps until it is killed."""
    container = {"name": "main", "image": "busybox", "command": ["sleep", "300"]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"mongobench.io/component": "benchmark-client"}},
        "spec": _restricted_pod_spec(container, terminationGracePeriodSeconds=1),
    }


@pytest.mark.cluster
def test_deleted_pod_and_stop_kill_their_processes(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient
) -> None:
    with pod_executor(plane, namespace, uri_rewrite=rewrite_hosts("127.0.0.1:1")) as ex:
        _create(kube_api, namespace, _sleeper("doomed"), _sleeper("kept"))
        pids = wait_until(lambda: len(ex.running()) == 2 and ex.running(), what="2 sleepers")
        k8s.CoreV1Api(kube_api).delete_namespaced_pod("doomed", namespace)
        (run,) = ex.wait_runs(1, timeout=30)
        assert (run.pod, run.exit_code) == ("doomed", 128 + 15)  # SIGTERM, as a runtime reports
        assert not _alive(pids["doomed"])
        assert _alive(pids["kept"])
    assert not _alive(pids["kept"])  # stop() ended it
    assert not ex.errors


@pytest.mark.cluster
def test_max_processes_queues_pods_past_the_cap_until_a_slot_frees(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient
) -> None:
    """As a full node would: with max_processes=1 the second Running pod's process starts only
    after the first one's ended (make bench-scale caps its hundreds of clients this way)."""
    core = k8s.CoreV1Api(kube_api)
    with pod_executor(
        plane, namespace, uri_rewrite=rewrite_hosts("127.0.0.1:1"), max_processes=1
    ) as ex:
        _create(kube_api, namespace, _sleeper("first"), _sleeper("second"))
        running = wait_until(ex.running, what="one sleeper")
        wait_until(lambda: ex.taken() == {"first", "second"}, what="both pods taken on")
        # Both pods are Running and the executor's; the cap holds the other one's process back.
        assert len(ex.running()) == 1, ex.running()
        (held,) = {"first", "second"} - set(running)
        core.delete_namespaced_pod(next(iter(running)), namespace)
        started = wait_until(lambda: held in ex.running() and ex.running(), what="the queued one")
        assert set(started) == {held}
        assert ex.peak_processes == 1
    assert not ex.errors


# A client process serving one metric on its --metrics-port, as the runner does.
_METRICS_SERVER = """
import http.server, sys
port = int(sys.argv[sys.argv.index("--metrics-port") + 1])
class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")  # Prometheus 3 wants it
        self.end_headers()
        self.wfile.write(b"harness_served 1\\n")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Metrics).serve_forever()
"""


@pytest.mark.cluster
def test_a_client_pods_metrics_port_is_scraped_where_the_harness_serves_it(
    plane: Plane, namespace: str, kube_api: k8s.ApiClient, monitoring: Monitoring
) -> None:
    # Cluster tier: the harness kubelet moves the pod's --metrics-port to a free loopback port
    # and annotates the pod; the real Prometheus Operator's Prometheus finds the pod through a
    # PodMonitor (the chart's clients monitor, in short) and scrapes it there.
    container = {
        "name": "main",
        "image": "ghcr.io/mongobench/ycsb:dev",
        "command": [sys.executable, "-c", _METRICS_SERVER, "--metrics-port", "9100"],
        "ports": [{"name": "metrics", "containerPort": 9100}],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "served", "labels": {"mongobench.io/component": "benchmark-client"}},
        "spec": _restricted_pod_spec(container, terminationGracePeriodSeconds=1),
    }
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "clients", "labels": RELEASE_LABELS},
        "spec": {
            "selector": {"matchLabels": {"mongobench.io/component": "benchmark-client"}},
            "podMetricsEndpoints": [{"port": "metrics", "interval": "1s"}],
        },
    }
    with pod_executor(plane, namespace, uri_rewrite=rewrite_hosts("127.0.0.1:1")) as ex:
        plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(monitor))
        _create(kube_api, namespace, pod)
        pool = f"podMonitor/{namespace}/clients/0"
        (target,) = wait_until(
            lambda: [
                t for t in monitoring.targets() if t["scrapePool"] == pool and t["health"] == "up"
            ],
            60,
            what="the served pod's target up",
        )
        served = k8s.CoreV1Api(kube_api).read_namespaced_pod("served", namespace)
        assert target["labels"]["instance"] == f"{served.status.pod_ip}:9100"  # as on a cluster
        assert not target["scrapeUrl"].endswith(":9100/metrics")  # the harness's own port
        found = monitoring.query(f'harness_served{{job="{namespace}/clients", pod="served"}}')
        assert [r["value"][1] for r in found] == ["1"]
    assert not ex.errors


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- pure helpers --------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)-$(B)", "1-$(B)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$(A", "$(A"),
        ("a$", "a$"),
        ("$x$(A)", "$x1"),
        ("$()", "$()"),
    ],
)
def test_expand_follows_kubernetes_rules(text: str, expected: str) -> None:
    assert expand(text, {"A": "1"}.get) == expected


@pytest.mark.unit
def test_rewrite_hosts_keeps_database_and_options() -> None:
    uri = "mongodb://u:p@a.ns.svc:27017,b.ns.svc:27017/db?replicaSet=rs0&authSource=admin&w=1"
    with_auth = rewrite_hosts("127.0.0.1:2701", credentials=True)
    assert with_auth(uri) == "mongodb://u:p@127.0.0.1:2701/db?authSource=admin&w=1"
    assert rewrite_hosts("127.0.0.1:2701")(uri) == "mongodb://127.0.0.1:2701/db?w=1"
    assert with_auth("mongodb+srv://c.ns.svc") == "mongodb://127.0.0.1:2701/"


@pytest.mark.unit
def test_field_value_downward_api() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "n",
            "uid": "u",
            "labels": {"a": "1", "b": "2"},
            "annotations": {"batch.kubernetes.io/job-completion-index": "3"},
        },
        "spec": {"nodeName": "node-1", "serviceAccountName": "sa"},
        "status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]},
    }
    assert (
        field_value(pod, "metadata.annotations['batch.kubernetes.io/job-completion-index']") == "3"
    )
    assert field_value(pod, "metadata.labels") == 'a="1"\nb="2"'
    assert field_value(pod, "spec.nodeName") == "node-1"
    assert field_value(pod, "status.podIPs") == "10.0.0.1,fd00::1"


@pytest.mark.unit
def test_remount_points_paths_under_a_configmap_mount_at_its_local_folder() -> None:
    mounts = {"/etc/mongobench/scenario": "/tmp/pod/volumes/scenario"}
    assert remount(
        ["--scenario", "/etc/mongobench/scenario/find.py", "X=/etc/mongobench/scenario/a.py",
         "/etc/mongobench/scenarios/other.py", "/etc/mongobench/scenario"],
        mounts,
    ) == [
        "--scenario", "/tmp/pod/volumes/scenario/find.py", "X=/tmp/pod/volumes/scenario/a.py",
        "/etc/mongobench/scenarios/other.py", "/tmp/pod/volumes/scenario",
    ]  # fmt: skip
