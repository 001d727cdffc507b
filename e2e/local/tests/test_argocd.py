"""Cluster tier: the real Argo CD (localplane.argocd: its application controller and repo server,
Redis) syncs the project's experiments Application (manifests/gitops/argocd/
experiments-application.yaml) from a Git repository of this checkout's files, with the project's
health checks merged into `argocd-cm` as users install them, and the test follows what Argo CD
itself reports in the Application's status: sync status, health, each resource's health.

What stands in, as in test_chart.py: KWOK for the pods, the wire model for mongod's replica-set
state, FerretDB as the data path of the client pods the harness kubelet executes. The repository
is a `file://` URL of a throwaway commit of the checkout's files (the Application's repoURL and
destination point at it and at the plane: only those fields differ from the user's file).

Also here: `application.yaml` (the CRDs and the EKS overlay, kustomize sources) synced to
Synced/Healthy. Each test prints the seconds each stage took and Argo CD's start times and RSS
(figures, not bounds).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pymongo
import pytest
import yaml
from kubernetes import client as k8s

from localplane import argocd
from localplane.executor import pod_executor, rewrite_hosts
from localplane.experiments import small_experiment
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO, prometheus_operator_crds

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(argocd.not_built() is not None, reason=argocd.not_built() or ""),
]

APPLICATION = REPO / "manifests" / "gitops" / "argocd" / "experiments-application.yaml"
INSTALL_APPLICATION = REPO / "manifests" / "gitops" / "argocd" / "application.yaml"
# The values file experiments-application.yaml names, in the repository Argo CD reads.
_SOURCE = yaml.safe_load(APPLICATION.read_text())["spec"]["source"]
VALUES = f"{_SOURCE['path']}/{_SOURCE['helm']['valueFiles'][0]}"
BENCH_NS = "bench"
MEMBER = f"rs1-rs0-0.rs1-rs0-hl.{BENCH_NS}.svc.cluster.local:27017"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=mongobench tests", "-c", "user.email=tests@mongobench.io"]
    proc = subprocess.run(
        ["git", "-C", str(repo), *ident, *args],
        capture_output=True, text=True, check=True, timeout=60, env=env,
    )  # fmt: skip
    return proc.stdout.strip()


def repository_of_checkout(dest: Path) -> Path:
    """A Git repository holding the checkout's files as they are on disk (tracked and new,
    not ignored), committed on `main`."""
    listed = git(REPO, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "the checkout")
    return dest


def commit_values(repo: Path, values: dict[str, Any], message: str) -> str:
    (repo / VALUES).write_text(yaml.safe_dump(values))
    git(repo, "commit", "-q", "-am", message)
    return git(repo, "rev-parse", "HEAD")


def application(api: k8s.ApiClient, name: str) -> dict[str, Any]:
    app: dict[str, Any] = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", argocd.NAMESPACE, "applications", name
    )
    return app


def resource_health(app: dict[str, Any], kind: str, name: str) -> dict[str, str] | None:
    for res in (app.get("status") or {}).get("resources") or []:
        if res["kind"] == kind and res["name"] == name:
            health: dict[str, str] | None = res.get("health")
            return health
    return None


def resources_of(app: dict[str, Any], kind: str) -> list[str]:
    listed = (app.get("status") or {}).get("resources") or []
    return [r["name"] for r in listed if r["kind"] == kind]


def live_run(api: k8s.ApiClient, name: str) -> dict[str, Any]:
    run: dict[str, Any] = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "mongobench.io", "v1alpha1", BENCH_NS, "benchmarkruns", name
    )
    return run


def ready_message(api: k8s.ApiClient) -> str:
    """The message of rs1's Ready condition, which its health message carries."""
    cluster = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        "mongobench.io", "v1alpha1", BENCH_NS, "mongoclusters", "rs1"
    )
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready")
    return str(ready["message"])


def set_pod_ready(plane: Plane, pod: str, ready: bool) -> None:
    """A member's readiness as its kubelet would report it (KWOK leaves Running pods alone)."""
    value = "True" if ready else "False"
    conditions = [{"type": t, "status": value} for t in ("Ready", "ContainersReady")]
    plane.kubectl(
        "patch", "pod", pod, "-n", BENCH_NS, "--subresource=status", "--type=strategic",
        "-p", json.dumps({"status": {"conditions": conditions}}),
    )  # fmt: skip


def waited(took: dict[str, float], what: str, predicate: Any, timeout: float) -> None:
    """wait_until, the seconds it took recorded under `what` (printed: a figure, no bound)."""
    began = time.monotonic()
    wait_until(predicate, timeout, 0.5, what=what)
    took[what] = round(time.monotonic() - began, 1)


def report(took: dict[str, float], argo: argocd.ArgoCD) -> None:
    """Figures for the record (`pytest -s` shows them): stages, Argo CD's start and memory."""
    starts = {k: round(v, 2) for k, v in argo.start_seconds.items()}
    rss = {k: round(v / 2**20) for k, v in argo.rss_bytes().items()}
    print(f"seconds per stage: {took}; start seconds: {starts}; RSS MiB: {rss}")


def test_argo_cd_syncs_an_experiment_from_git_to_healthy_and_reports_a_degraded_cluster(
    make_plane: Any, tmp_path: Path
) -> None:
    plane = make_plane(nodes=NodeSet(profile="kind", count=3))
    plane.apply(REPO / "crds")
    plane.restart_controller_manager()  # its garbage collector learns the CRDs (plane.py)
    api = plane.api_client()
    argocd.install(plane)

    repo = repository_of_checkout(tmp_path / "repo")
    values = small_experiment()
    revision = commit_values(repo, values, "an experiment: rs1 and YCSB C")

    app_manifest = yaml.safe_load(APPLICATION.read_text())
    name = app_manifest["metadata"]["name"]
    app_manifest["spec"]["source"]["repoURL"] = f"file://{repo}"
    app_manifest["spec"]["destination"]["server"] = plane.server

    with argocd.running_argocd(plane, tmp_path / "argocd") as argo:
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(app_manifest))

        # No operator yet: Argo CD has applied the commit, and the cluster's health says it
        # waits for the operator.
        def synced_waiting() -> bool:
            app = application(api, name)
            sync = (app.get("status") or {}).get("sync") or {}
            health = resource_health(app, "MongoCluster", "rs1") or {}
            return sync.get("status") == "Synced" and health.get("status") == "Progressing"

        took: dict[str, float] = {}
        waited(took, "Synced, rs1 Progressing", synced_waiting, 120)
        app = application(api, name)
        assert app["status"]["sync"]["revision"] == revision
        assert app["status"]["health"]["status"] == "Progressing"
        assert resource_health(app, "MongoCluster", "rs1") == {
            "status": "Progressing",
            "message": "Waiting for the operator to report a status",
        }
        (run,) = resources_of(app, "BenchmarkRun")
        assert run.startswith("ycsb-c-")
        seen: list[str] = []

        with (
            running_ferretdb() as ferretdb,
            MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1) as model,
            pod_executor(
                plane, BENCH_NS, uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
            ),
        ):
            model.member(MEMBER)
            operator = start_operator(
                plane.kubeconfig, [BENCH_NS], tmp_path / "operator.log",
                MONGOBENCH_HOST_MAP=",".join(f"{k}={v}" for k, v in model.host_map.items()),
            )  # fmt: skip
            try:

                def healthy() -> bool:
                    app = application(api, name)
                    cluster = resource_health(app, "MongoCluster", "rs1") or {}
                    if not seen or seen[-1] != cluster.get("status"):
                        seen.append(str(cluster.get("status")))
                    return (app["status"].get("health") or {}).get("status") == "Healthy"

                waited(took, "the Application Healthy", healthy, 300)
                app = application(api, name)
                assert app["status"]["sync"]["status"] == "Synced"
                assert resource_health(app, "MongoCluster", "rs1") == {
                    "status": "Healthy",
                    "message": f"Ready: {ready_message(api)}",
                }
                run_health = resource_health(app, "BenchmarkRun", run) or {}
                assert run_health["status"] == "Healthy", run_health
                assert live_run(api, run)["status"]["phase"] == "Succeeded"
                assert seen[0] == "Progressing" and seen[-1] == "Healthy", seen

                # A member stops being ready: the operator says Degraded, and so does Argo CD,
                # for the cluster and the Application; ready again, Healthy again.
                set_pod_ready(plane, "rs1-rs0-0", False)

                def cluster_is(status: str) -> bool:
                    app = application(api, name)
                    health = resource_health(app, "MongoCluster", "rs1") or {}
                    return health.get("status") == status and (
                        app["status"]["health"]["status"] == status
                    )

                waited(took, "rs1 Degraded", lambda: cluster_is("Degraded"), 120)
                degraded = resource_health(application(api, name), "MongoCluster", "rs1")
                assert degraded == {
                    "status": "Degraded",
                    "message": f"Degraded: {ready_message(api)}",
                }
                set_pod_ready(plane, "rs1-rs0-0", True)
                waited(took, "rs1 Healthy again", lambda: cluster_is("Healthy"), 120)

                # Git's next revision changes the run: a new run (its name carries the hash of
                # its spec) that Argo CD finds by polling Git and syncs; the old one stays with
                # its results (Prune=false) and leaves the Application Synced (IgnoreExtraneous).
                values["runs"][0]["spec"]["run"]["operationCount"] = 300
                # The prepare step drops the collection through the wire model, not this data
                # path: dropped in FerretDB too, as a real mongod's prepare would (test_chart.py).
                pymongo.MongoClient(ferretdb.uri)["ycsb"].drop_collection("usertable")
                second = commit_values(repo, values, "YCSB C with 300 operations")

                def second_healthy() -> bool:
                    app = application(api, name)
                    sync, health = app["status"]["sync"], app["status"].get("health") or {}
                    return (
                        sync.get("revision") == second
                        and sync["status"] == "Synced"
                        and bool(set(resources_of(app, "BenchmarkRun")) - {run})
                        and health.get("status") == "Healthy"
                    )

                waited(took, "the second revision Healthy", second_healthy, 300)
                (new,) = set(resources_of(application(api, name), "BenchmarkRun")) - {run}
                assert live_run(api, new)["status"]["phase"] == "Succeeded"
                assert live_run(api, run)["status"]["phase"] == "Succeeded"  # kept
            finally:
                operator.stop()
        report(took, argo)


def test_argo_cd_installs_the_operator_from_the_crds_and_the_eks_overlay(
    make_plane: Any, tmp_path: Path
) -> None:
    """manifests/gitops/argocd/application.yaml (two kustomize sources: the CRDs and the EKS
    overlay, server-side applied) synced by the repo server's kustomize (the version Argo CD
    ships) onto a plane with the EKS overlay's `system` nodes and the Prometheus Operator CRDs
    its monitors need (docs/install.md's prerequisite); KWOK runs the operator's pods as fakes,
    so what is proved is Argo CD's part: every object applied, the Application Synced and
    Healthy, the CRDs established and the Deployment's two replicas available."""
    plane = make_plane(
        nodes=NodeSet(profile="eks", count=2, extra_labels={"mongobench.io/role": "system"})
    )
    plane.apply(prometheus_operator_crds())
    plane.kubectl("create", "namespace", "monitoring")
    argocd.install(plane)
    repo = repository_of_checkout(tmp_path / "repo")
    app_manifest = yaml.safe_load(INSTALL_APPLICATION.read_text())
    name = app_manifest["metadata"]["name"]
    for source in app_manifest["spec"]["sources"]:
        source["repoURL"] = f"file://{repo}"
    app_manifest["spec"]["destination"]["server"] = plane.server
    api = plane.api_client()

    with argocd.running_argocd(plane, tmp_path / "argocd") as argo:
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(app_manifest))

        def synced_healthy() -> bool:
            status = application(api, name).get("status") or {}
            return (status.get("sync") or {}).get("status") == "Synced" and (
                status.get("health") or {}
            ).get("status") == "Healthy"

        took: dict[str, float] = {}
        waited(took, "Synced and Healthy", synced_healthy, 300)
        app = application(api, name)
        kinds = {r["kind"] for r in app["status"]["resources"]}
        assert {"CustomResourceDefinition", "Deployment", "ClusterKopfPeering"} <= kinds, kinds
        assert resource_health(app, "Deployment", "mongobench") == {"status": "Healthy"}
        deployment = k8s.AppsV1Api(api).read_namespaced_deployment("mongobench", "mongobench")
        assert deployment.status.available_replicas == 2
        crds = k8s.ApiextensionsV1Api(api).list_custom_resource_definition().items
        assert "mongoclusters.mongobench.io" in {c.metadata.name for c in crds}
        report(took, argo)
