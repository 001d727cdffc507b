"""Cluster tier: a BenchmarkExperiment judged against the history it names (spec.history) ends
with condition Regressed naming the series where its runs are a change point for the worse; the
CI gate (`mongobench history --fail-on regression`, the installed executable) then exits 3 on the
same archive, and 0 once the change is acknowledged in the archive's history/acks.yaml; the
apiserver refuses bad acknowledgements in spec.history (schema pattern, CEL).

Real: the apiserver (the CRD's spec.history schema), the operator process (with the history
extra the development environment installs), the experiment's runs (runner and YCSB against
FerretDB, executed by the harness kubelet), and the history: 40 earlier runs archived by the
archive writer into the loopback S3 server, read by the operator through the archive reader
with its own credentials (the default archive's bucket). The earlier runs claim a throughput
no run on this plane reaches, so the experiment's runs are a drop wherever the noise falls.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import test_benchmarkexperiment as bex
import yaml
from kubernetes import client as k8s
from test_archive import BUCKET, archived, operator_env, wait_archived
from test_cli import cli

from localplane.executor import PodExecutor
from localplane.ferretdb import FerretDB
from localplane.mongomodel import MongoModel
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY
from localplane.s3server import ACCESS_KEY, SECRET_KEY, S3Server
from mongobench_results import history

ferretdb, model, executor = bex.ferretdb, bex.model, bex.executor
apply, get, start = bex.apply, bex.get, bex.start

pytestmark = pytest.mark.cluster

HISTORY = f"s3://{BUCKET}/history"
SERIES = "topology=ReplicaSet,workload=c,metric=throughput"


def archive_history(s3: S3Server, namespace: str) -> None:
    """40 nightly runs of workload c, a month before now, at 10^6 ops/s (2% noise)."""
    rng = random.Random(5)
    root = archived(s3, HISTORY)
    t0 = datetime.now(UTC) - timedelta(days=60)
    for i in range(40):
        obj: dict[str, Any] = {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": {"namespace": namespace, "name": f"nightly-{i:02d}", "uid": f"n-{i:02d}"},
            "spec": {"driver": "ycsb"},
            "status": {
                "phase": "Succeeded",
                "startTime": (t0 + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "clusterSnapshot": {
                    "topology": {"type": "ReplicaSet", "replicaSet": {"members": 1}}
                },
                "steps": [
                    {
                        "index": 2,
                        "kind": "run",
                        "workload": "c",
                        "repetition": 1,
                        "phase": "Succeeded",
                        "result": {"throughput": 1e6 * (1 + 0.02 * rng.gauss(0, 1))},
                    }
                ],
            },
        }
        w = root.writer(namespace, obj["metadata"]["name"], obj["metadata"]["uid"])
        w.put_json("provenance.json", {"mongod": {"version": "7.0.14"}})
        w.put_manifest(obj, "Succeeded", True)


def test_an_experiment_slower_than_its_history_ends_regressed(
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
    archive_history(s3server, namespace)
    for g in range(2):
        cluster = f"hist-k{g}"
        model.member(f"{cluster}-rs0-0.{cluster}-rs0-hl.{namespace}.svc.cluster.local:27017")
    manifest = bex.experiment(
        "hist",
        cluster={
            "version": "7.0.14",
            "topology": {"type": "ReplicaSet", "replicaSet": {"members": 1}},
        },
        run=bex.RUN | {"workloads": [{"name": "c"}], "validity": LENIENT_VALIDITY},
        calibration=True,
        repetitions=2,
        # Its runs join the history (as a nightly CI experiment's do), for the gate below.
        archive={"prefix": "history"},
        history={"archive": {"prefix": "history"}, "metrics": ["throughput"]},
    )
    refused_acknowledgements(plane, namespace, manifest)
    with bex.Watch(kube_api, namespace, ferretdb.uri, model):
        operator = start(
            plane,
            namespace,
            model,
            tmp_path / "operator.log",
            prometheus,
            kube_api,
            **operator_env(s3server.endpoint),
        )
        try:
            apply(plane, namespace, manifest)
            body = bex.wait_ended(kube_api, namespace, "hist", timeout=1200)
        finally:
            operator.stop()
    status = body["status"]
    assert status["phase"] == "Succeeded", status.get("cells")
    regressed = next(c for c in status["conditions"] if c["type"] == "Regressed")
    assert (regressed["status"], regressed["reason"]) == ("True", "ChangePoint"), regressed
    assert SERIES in regressed["message"]
    [change] = status["history"]["regressed"]
    assert change["series"] == SERIES and change["magnitude"] < -0.5
    assert change["runBefore"] == f"{namespace}/nightly-39"
    assert change["runAfter"].startswith(f"{namespace}/hist-")
    # The experiment's runs are archived into the history too: the diff names what changed
    # there (the clients' image), or none is recorded when the judge ran before their upload.
    assert change["provenance"] == "none recorded" or "containers[0].image" in change["provenance"]
    assert status["history"]["archive"] == HISTORY
    # Read only: the operator wrote no cache into the history.
    assert not [k for k in s3server.keys(BUCKET) if k.startswith("history/history/")]
    gate_fails_then_passes_once_acknowledged(plane, kube_api, namespace, status, s3server)


def refused_acknowledgements(plane: Plane, namespace: str, manifest: dict[str, Any]) -> None:
    """Admission refuses an acknowledgement whose series is no series id, and one given twice."""
    entry = {"series": SERIES, "run": "n-39", "reason": "accepted", "by": "ci"}
    for acks, message in (
        ([{**entry, "series": "workload=c"}], "spec.history.acknowledgements[0].series"),
        ([entry, entry], "acknowledge each change (series and run) once"),
    ):
        bad = yaml.safe_load(yaml.safe_dump(manifest))
        bad["metadata"]["name"] = "hist-refused"
        bad["spec"]["history"]["acknowledgements"] = acks
        proc = plane.kubectl(
            "apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(bad), check=False
        )
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def gate_fails_then_passes_once_acknowledged(
    plane: Plane,
    kube_api: k8s.ApiClient,
    namespace: str,
    status: dict[str, Any],
    s3server: S3Server,
) -> None:
    for name in status["order"]:
        wait_archived(kube_api, namespace, name)
    env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }
    args = (HISTORY, "--s3-endpoint", s3server.endpoint, "--read-only", "--fail-on", "regression")
    failed = cli(plane, "history", *args, "-o", "json", env=env)
    assert failed.returncode == 3, (failed.stdout, failed.stderr)
    [regression] = json.loads(failed.stdout)["regressions"]
    assert regression["series"] == SERIES and regression["after"]["run"].startswith(
        f"{namespace}/hist-"
    )
    assert f"REGRESSION: {SERIES}" in failed.stderr
    # Acknowledged in the archive, as the gate printed the entry: the gate passes, says so.
    ack = {"series": SERIES, "run": regression["after"]["run"], "reason": "no real mongod here"}
    archived(s3server, HISTORY).store.put(
        history.ACKS, yaml.safe_dump({"acknowledgements": [ack | {"by": "ci"}]}).encode()
    )
    passed = cli(plane, "history", *args, env=env)
    assert passed.returncode == 0, (passed.stdout, passed.stderr)
    assert "acknowledged: no real mongod here (ci)" in passed.stdout
    assert "no regression (1 acknowledged) at the newest runs" in passed.stdout
