"""Cluster tier: bulk loads as results, and one experiment compared across two kube contexts.

What is real: the apiserver, controller-manager, two operator processes (one per context, each
watching its own namespace, as two installations would), the benchmark clients (runner + YCSB
against FerretDB, one FerretDB per context, executed by the harness kubelet), the S3-compatible
store both operators archive to (moto over HTTP on loopback), and the `mongobench` command.
What stands in: the wire model for mongod's replica-set state; and the two "clusters" are two
namespaces of one apiserver reached through two kubeconfig contexts (two apiservers would prove
nothing more about the flow and double the plane's cost on a 2-core machine;
test_cli.test_compare_across_two_planes_through_s3_archives exports from two real planes).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
import yaml
from kubernetes import client as k8s
from test_archive import operator_env, wait_archived

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.plane import Plane, kubectl_path
from localplane.pytest_plugin import RESTRICTED_LABELS
from localplane.s3server import S3Server

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[3]
MONGOBENCH = REPO / ".venv" / "bin" / "mongobench"
SITES = ("east", "west")


def experiment(site: str) -> dict[str, Any]:
    """The same run in every context; only its `site` label says where it ran."""
    return bmr.run_manifest(
        "bulk",
        workloads=[{"name": "c"}],
        repetitions=1,
        load={"recordCount": 200, "threads": 2, "repetitions": 3},
        clients={"parallelism": 1},
        # The wire model takes the drop before each reload, FerretDB (the data path) does not
        # see it: upserts let a reload land on the records of the previous one.
        mongo={"upsert": True},
        labels={"study": "bulk-import", "site": site},
    )


@pytest.fixture
def second_namespace(kube_api: k8s.ApiClient, namespace: str) -> Iterator[str]:
    name = f"{namespace[:50]}-w"
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED_LABELS}})
    try:
        yield name
    finally:
        core.delete_namespace(name, propagation_policy="Background", _request_timeout=10)


def contexts(plane: Plane, namespaces: dict[str, str], path: Path) -> Path:
    """A kubeconfig with one context per site, each defaulting to that site's namespace."""
    config = yaml.safe_load(Path(plane.kubeconfig).read_text())
    base = config["contexts"][0]["context"]
    config["contexts"] = [
        {"name": site, "context": {**base, "namespace": ns}} for site, ns in namespaces.items()
    ]
    config["current-context"] = SITES[0]
    path.write_text(yaml.safe_dump(config))
    return path


def mongobench(*args: str, kubeconfig: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(MONGOBENCH), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "KUBECONFIG": str(kubeconfig),
            "COLUMNS": "250",
            **env,
        },
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def test_one_experiment_in_two_contexts_archived_to_one_bucket_compared_in_one_command(
    plane: Plane,
    namespace: str,
    second_namespace: str,
    kube_api: k8s.ApiClient,
    prometheus: str,
    s3server: S3Server,
    tmp_path: Path,
) -> None:
    namespaces = dict(zip(SITES, (namespace, second_namespace), strict=True))
    kubeconfig = contexts(plane, namespaces, tmp_path / "kubeconfig")
    runs: dict[str, dict[str, Any]] = {}
    models: dict[str, MongoModel] = {}
    with ExitStack() as stack:
        operators = []
        for site, ns in namespaces.items():
            ferret = stack.enter_context(running_ferretdb())
            stack.enter_context(
                pod_executor(plane, ns, uri_rewrite=rewrite_hosts(f"{ferret.host}:{ferret.port}"))
            )
            model = models[site] = stack.enter_context(
                MongoModel(keyfile=keyfile_from_pods(kube_api), catch_up_seconds=0.1)
            )
            env = operator_env(s3server.endpoint, url=f"s3://mongobench/{site}")
            operators.append(
                bmr.start(plane, ns, model, tmp_path / f"{site}.log", prometheus, kube_api, **env)
            )
            stack.callback(operators[-1].stop)
        for site, ns in namespaces.items():
            bmr.cluster(plane, ns, kube_api)
            # The same manifest, applied through each site's context (its default namespace).
            subprocess.run(
                [kubectl_path(), "--kubeconfig", str(kubeconfig), "--context", site,
                 "apply", "-f", "-"],
                input=yaml.safe_dump(experiment(site)),
                text=True,
                check=True,
                capture_output=True,
            )  # fmt: skip
        for site, ns in namespaces.items():
            run = bmr.wait_run(kube_api, ns, "bulk", ("Succeeded", "Failed"), timeout=360)
            assert run["status"]["phase"] == "Succeeded", run["status"].get("conditions")
            runs[site] = wait_archived(kube_api, ns, "bulk")

    # Three loads, each a result in status, each from empty: prepare's drop, then one more
    # before each later load (the wire model records the drops it is asked for).
    for site, run in runs.items():
        assert models[site].dropped.count("ycsb.usertable") == 3, models[site].dropped
        steps = run["status"]["steps"]
        loads = [s for s in steps if s["kind"] == "load"]
        assert [s["label"] for s in loads] == ["load #1", "load #2", "load #3"]
        assert all(
            s["phase"] == "Succeeded" and s["result"]["operationsTotal"] == 200 for s in loads
        )
        load = run["status"]["summary"][0]
        assert load["workload"] == "load" and load["n"] == 3 and load["seconds"]["n"] == 3

    # One command over the one bucket: grouped by site and topology, the loads are rows.
    s3 = s3server.env()
    doc = json.loads(
        mongobench(
            "compare", "s3://mongobench/east", "s3://mongobench/west",
            "--group-by", "site,topology", "--metric", "throughput", "-o", "json",
            kubeconfig=kubeconfig, env=s3,
        )
    )  # fmt: skip
    assert doc["groupBy"] == ["site", "topology"]
    assert [c["name"] for c in doc["configurations"]] == [
        "site=east,topology=ReplicaSet",
        "site=west,topology=ReplicaSet",
    ]
    rows = {(r["workload"], r["metric"], r["configuration"]): r for r in doc["rows"]}
    west = rows[("load", "time to load", "site=west,topology=ReplicaSet")]
    assert west["n"] == 3 and west["unit"] == "s" and west["group"]["site"] == "west"
    assert ("c", "throughput", "site=west,topology=ReplicaSet") in rows
    # The live run, read through its context (that site's namespace), shows its loads too.
    live = mongobench("describe", "bulk", "--context", "west", kubeconfig=kubeconfig, env={})
    assert "load #3" in live and "time to load (s)" in live
