"""Cluster tier: the `mongobench` CLI against a real kube-apiserver (the local plane).

What is real: the apiserver with the repo's CRDs (admission, the status subresource), the
kubeconfig and context handling, the result ConfigMaps the CLI reads the full documents from
(in parts, as the runner writes them), the S3 server (moto) the runs are exported to, and the
`mongobench` executable run as a user runs it. What stands in: the finished runs are created
directly (spec, then status through the status subresource, as the operator writes it) from
cli/tests/builders.py, whose documents and step results come from the runner's and the
operator's own code. `watch` during a live run is proven with tmux (see the report of issue 11).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from test_benchmarkrun import (  # the live-run harness and its fixtures (by name)
    MongoModel,
    PodExecutor,
    apply,
    cluster,
    executor,  # noqa: F401
    ferretdb,  # noqa: F401
    model,  # noqa: F401
    run_manifest,
    start,
    wait_run,
)

from localplane.plane import Plane
from localplane.pytest_plugin import apply_repo_crds
from localplane.s3server import S3Server
from localplane.tools import REPO
from mongobench_cli.sources import LoadedRun
from mongobench_results import configmaps

pytestmark = pytest.mark.cluster


def benchmark_run(name: str, **kw: Any) -> LoadedRun:
    """cli/tests/builders.py: finished runs made by the runner's and the operator's code."""
    if str(REPO / "cli" / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "cli" / "tests"))
    from builders import benchmark_run as build

    return build(name, **kw)


GROUP, VERSION, PLURAL = "mongobench.io", "v1alpha1", "benchmarkruns"
MONGOBENCH = REPO / ".venv" / "bin" / "mongobench"


def put_run(api: k8s.ApiClient, namespace: str, run: LoadedRun, part_bytes: int = 4096) -> None:
    """Create the run, write its status through the status subresource, and its client
    documents as the runner's ConfigMap sink does (parts of `part_bytes`)."""
    custom = k8s.CustomObjectsApi(api)
    obj = run.run
    created = custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        {
            "apiVersion": obj["apiVersion"],
            "kind": "BenchmarkRun",
            "metadata": {
                "name": obj["metadata"]["name"],
                "labels": obj["metadata"].get("labels") or {},
            },
            "spec": obj["spec"],
        },
    )
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, obj["metadata"]["name"], {"status": obj["status"]}
    )
    obj["metadata"]["uid"] = created["metadata"]["uid"]
    core = k8s.CoreV1Api(api)
    for step in obj["status"]["steps"]:
        for doc in run.step_documents(step["index"]):
            owner = f"{step['job']}-c{doc['client']['index']}"
            for cm in configmaps.manifests(doc, namespace, owner, None, part_bytes):
                core.create_namespaced_config_map(namespace, cm)


def cli(
    plane: Plane, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MONGOBENCH), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "KUBECONFIG": str(plane.kubeconfig),
            "COLUMNS": "250",
            **(env or {}),
        },
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def runs(plane: Plane, namespace: str, kube_api: k8s.ApiClient) -> dict[str, LoadedRun]:
    made = {
        "rs": benchmark_run(
            "rs",
            throughput={"a": 1000, "c": 2000},
            seed=1,
            clients=2,
            labels={"layout": "replicaset"},
        ),
        "sharded": benchmark_run(
            "sharded",
            shards=3,
            throughput={"a": 1400, "c": 2000},
            seed=2,
            clients=2,
            labels={"layout": "sharded"},
        ),
        "broken": benchmark_run("broken", seed=3, phase="Failed", workloads=("a",)),
    }
    # The objects' own labels, as an experiment and a user put them (`-l` selects on these).
    made["rs"].run["metadata"]["labels"] = {"mongobench.io/experiment": "study", "platform": "kind"}
    made["sharded"].run["metadata"]["labels"] = {
        "mongobench.io/experiment": "study",
        "platform": "eks",
    }
    for run in made.values():
        put_run(kube_api, namespace, run)
    return made


def test_list_describe_compare_export_against_the_api(
    plane: Plane, namespace: str, runs: dict[str, LoadedRun], tmp_path: Path
) -> None:
    rows = json.loads(ok(cli(plane, "list", "-n", namespace, "-o", "json")))
    assert {(r["name"], r["phase"], r["topology"]) for r in rows} == {
        ("rs", "Succeeded", "replica set x 3"),
        ("sharded", "Succeeded", "3 shards x 3, 2 mongos"),
        ("broken", "Failed", "replica set x 3"),
    }
    everywhere = json.loads(ok(cli(plane, "list", "-A", "-o", "json")))
    assert {r["name"] for r in everywhere if r["namespace"] == namespace} == {
        "rs",
        "sharded",
        "broken",
    }
    table = ok(cli(plane, "list", "-n", namespace, "--spec-label", "layout=sharded"))
    assert "sharded" in table and " rs " not in table

    described = ok(cli(plane, "describe", "sharded", "-n", namespace))
    assert "3 shards x 3, 2 mongos" in described and "Per-workload summary" in described
    failed = ok(cli(plane, "describe", f"{namespace}/broken"))
    assert "Failed" in failed

    doc = json.loads(ok(cli(plane, "compare", "rs", "sharded", "-n", namespace, "-o", "json")))
    a = next(
        r
        for r in doc["rows"]
        if r["workload"] == "a" and r["metric"] == "throughput" and not r["baseline"]
    )
    assert a["significant"] and a["verdict"].endswith("better")
    by_label = ok(cli(plane, "compare", "rs", "sharded", "-n", namespace, "--group-by", "layout"))
    assert "replicaset" in by_label and "sharded" in by_label

    # Export: the full documents come from the result ConfigMaps, reassembled from parts.
    out = ok(cli(plane, "export", "rs", "sharded", "-n", namespace, "-o", str(tmp_path / "x")))
    assert "exported 2 runs, 18 steps, 24 result documents" in out  # 2 x 6 steps x 2 clients
    merged = sorted((tmp_path / "x").glob(f"{namespace}/rs/*/steps/002/merged.json"))
    original = runs["rs"].merged(2)
    assert (
        original is not None
        and json.loads(merged[0].read_text())["operations"] == original["operations"]
    )
    report = ok(cli(plane, "report", "rs", "sharded", "-n", namespace, "-o", str(tmp_path / "r")))
    assert "report.html" in report
    assert (tmp_path / "r" / "figures" / "percentiles-a.png").stat().st_size > 10_000


def test_label_selector_selects_on_the_objects_labels_through_the_api(
    plane: Plane, namespace: str, runs: dict[str, LoadedRun]
) -> None:
    def names(*selector: str) -> set[str]:
        rows = json.loads(ok(cli(plane, "list", "-n", namespace, *selector, "-o", "json")))
        return {r["name"] for r in rows}

    assert names("-l", "mongobench.io/experiment=study") == {"rs", "sharded"}
    assert names("-l", "platform!=kind") == {"sharded", "broken"}
    assert names("-l", "platform in (kind,magnum)") == {"rs"}
    assert names("-l", "platform notin (kind)") == {"sharded", "broken"}
    assert names("-l", "!mongobench.io/experiment") == {"broken"}
    assert names("-l", "mongobench.io/experiment,platform=eks") == {"sharded"}
    everywhere = json.loads(ok(cli(plane, "list", "-A", "-l", "platform=eks", "-o", "json")))
    assert {(r["namespace"], r["name"]) for r in everywhere} >= {(namespace, "sharded")}
    assert all(r["name"] != "rs" for r in everywhere)
    line = one_line_error(cli(plane, "list", "-n", namespace, "-l", "platform in kind"))
    assert "expected '(' after platform in" in line


def test_bad_input_against_the_api_is_one_line(
    plane: Plane, namespace: str, runs: dict[str, LoadedRun]
) -> None:
    line = one_line_error(cli(plane, "describe", "nosuchrun", "-n", namespace))
    assert '"nosuchrun" not found' in line and namespace in line
    one_line_error(cli(plane, "compare", "rs", "nosuchrun", "-n", namespace))
    line = one_line_error(cli(plane, "list", "--context", "nosuchcontext"))
    assert "nosuchcontext" in line


def test_watch_a_finished_run_exits_with_its_outcome(
    plane: Plane, namespace: str, runs: dict[str, LoadedRun]
) -> None:
    done = cli(plane, "watch", "rs", "-n", namespace, "--interval", "0.2")
    assert done.returncode == 0 and "rs: Succeeded" in done.stdout, done.stderr
    failed = cli(plane, "watch", "broken", "-n", namespace, "--interval", "0.2")
    assert failed.returncode == 1 and "broken: Failed" in failed.stdout, failed.stderr
    one_line_error(cli(plane, "watch", "nosuchrun", "-n", namespace))


def test_compare_across_two_planes_through_s3_archives(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    make_plane: Any,
    s3server: S3Server,
) -> None:
    """Two clusters, one run each (same namespace and name), exported to two prefixes of one
    bucket, compared side by side from the archives alone."""
    other = make_plane()
    apply_repo_crds(other)
    other_api = other.api_client()
    try:
        k8s.CoreV1Api(other_api).create_namespace({"metadata": {"name": namespace}})
        put_run(kube_api, namespace, benchmark_run("bench", throughput=1000, seed=5))
        put_run(other_api, namespace, benchmark_run("bench", throughput=1500, shards=5, seed=6))
    finally:
        other_api.close()  # type: ignore[no-untyped-call]
    env = s3server.env()
    ok(cli(plane, "export", "bench", "-n", namespace, "-o", "s3://mongobench/plane-a", env=env))
    ok(cli(other, "export", "bench", "-n", namespace, "-o", "s3://mongobench/plane-b", env=env))
    listed = json.loads(
        ok(
            cli(
                plane,
                "list",
                "s3://mongobench/plane-a",
                "s3://mongobench/plane-b",
                "-o",
                "json",
                env=env,
            )
        )
    )
    assert [r["topology"] for r in listed] == ["replica set x 3", "5 shards x 3, 2 mongos"]
    doc = json.loads(
        ok(
            cli(
                plane,
                "compare",
                "s3://mongobench/plane-a",
                "s3://mongobench/plane-b",
                "--metric",
                "throughput",
                "-o",
                "json",
                env=env,
            )
        )
    )
    assert [c["shape"]["topology"] for c in doc["configurations"]] == ["ReplicaSet", "Sharded"]
    changed = [r for r in doc["rows"] if not r["baseline"]]
    assert changed and all(r["significant"] and r["verdict"].endswith("better") for r in changed)
    # An archive that cannot be read: one line, no traceback.
    line = one_line_error(cli(plane, "list", "s3://no-such-bucket/x", env=env))
    assert "no-such-bucket" in line


def test_watch_follows_a_live_run_in_a_real_terminal(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    tmp_path: Path,
    prometheus: str,
    model: MongoModel,  # noqa: F811 - the fixture imported above
    executor: PodExecutor,  # noqa: F811
) -> None:
    """A real run (operator process, YCSB clients executed by the harness kubelet against
    FerretDB) watched by `mongobench watch` inside tmux: the screen shows progress while it
    runs, and the command exits 0 once the run Succeeded."""
    import time

    operator = start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    session = f"watch-{namespace}"[:40]
    screens: list[str] = []
    try:
        cluster(plane, namespace, kube_api)
        apply(plane, namespace, run_manifest("live", workloads=[{"name": "c"}], repetitions=3))
        command = (
            f"KUBECONFIG={plane.kubeconfig} {MONGOBENCH} watch live -n {namespace} "
            "--interval 0.5; echo EXIT=$?"
        )
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "20", command],
            check=True,
        )
        subprocess.run(["tmux", "set-option", "-t", session, "remain-on-exit", "on"], check=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            if screen.strip() and (not screens or screen != screens[-1]):
                screens.append(screen)
            if "EXIT=" in screen:
                break
            time.sleep(0.5)
        run = wait_run(kube_api, namespace, "live", ("Succeeded", "Failed"), timeout=30)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
        operator.stop()
        (tmp_path / "screens.txt").write_text("\n----\n".join(screens))
    assert run["status"]["phase"] == "Succeeded"
    final = screens[-1]
    assert "live: Succeeded" in final and "EXIT=0" in final, final
    during = [s for s in screens if "EXIT=" not in s]
    # While it ran, the panel showed the step count, the current step and an ETA.
    assert any("steps done" in s and "Current" in s and "ETA" in s for s in during), during
    assert any("run c #" in s for s in during), during[-1:]
    assert len({s for s in during}) >= 3  # the screen changed as the run went on
