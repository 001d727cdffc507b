"""Unit tier: the archive layout (pure) and the writer/reader on a local folder (tmp_path)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mongobench_archive import ArchiveError, layout, open_root

pytestmark = pytest.mark.unit

RUN: dict[str, Any] = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "BenchmarkRun",
    "metadata": {
        "name": "ycsb-a",
        "namespace": "bench",
        "uid": "0b7c-11",
        "labels": {"team": "db"},
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{...}",
            "kopf.zalando.org/last-handled-configuration": "{...}",
            "note": "baseline",
        },
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "resourceVersion": "42",
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {"driver": "ycsb", "workloads": ["a"]},
    "status": {"phase": "Running", "kopf": {"progress": {}}, "steps": [{"index": 0}]},
}


def client_doc(i: int) -> dict[str, Any]:
    return {"apiVersion": "mongobench.io/result/v1", "client": i, "ops": {"READ": {"count": 10}}}


def test_keys_are_deterministic_and_parse_back() -> None:
    assert layout.client_key(3, 1) == "steps/003/client-1.json"
    assert layout.merged_key(12) == "steps/012/merged.json"
    assert layout.resources_key(0) == "steps/000/resources.json"
    assert layout.parse_step_key("steps/003/client-1.json") == layout.StepKey(3, "client", 1)
    assert layout.parse_step_key("steps/1000/merged.json") == layout.StepKey(1000, "merged")
    assert layout.parse_step_key("run.json") is None
    assert layout.parse_step_key("steps/3/client-1.json") is None


@pytest.mark.parametrize("key", ["../x.json", "/abs.json", "a//b.json", "a/./b", "a b.json", ""])
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(ArchiveError, match="invalid archive key"):
        layout.check_key(key)


def test_encoding_is_canonical() -> None:
    a = layout.encode({"b": 1, "a": {"y": [1, 2], "x": "é"}})
    b = layout.encode({"a": {"x": "é", "y": [1, 2]}, "b": 1})
    assert a == b
    assert layout.object_entry("k", a) == layout.object_entry("k", b)


def test_run_document_drops_copies_and_bookkeeping() -> None:
    doc = layout.run_document(RUN)
    assert doc["metadata"] == {
        "name": "ycsb-a",
        "namespace": "bench",
        "uid": "0b7c-11",
        "labels": {"team": "db"},
        "annotations": {"note": "baseline"},
        "creationTimestamp": "2026-01-02T03:04:05Z",
    }
    assert doc["status"] == {"phase": "Running", "steps": [{"index": 0}]}
    assert doc["spec"] == RUN["spec"]


def test_manifest_round_trip_and_checks() -> None:
    entries = [layout.object_entry("run.json", b"{}\n"), layout.object_entry("a.json", b"[]\n")]
    m = layout.build_manifest(
        "ns",
        "r",
        "u",
        phase="Running",
        complete=False,
        updated=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        objects=entries,
    )
    assert [o["key"] for o in m["objects"]] == ["a.json", "run.json"]
    assert m["updated"] == "2026-01-02T03:04:05Z"
    assert layout.parse_manifest(layout.encode(m), "x") == m

    with pytest.raises(ArchiveError, match="not a JSON manifest"):
        layout.parse_manifest(b"{oops", "s3://b/m.json")
    with pytest.raises(ArchiveError, match="apiVersion"):
        layout.parse_manifest(layout.encode({**m, "apiVersion": "v0"}), "x")
    bad = {**m, "objects": [{"key": "../../etc/passwd", "sha256": "0", "bytes": 1}]}
    with pytest.raises(ArchiveError, match="invalid archive key"):
        layout.parse_manifest(layout.encode(bad), "x")


@pytest.mark.parametrize(
    ("url", "scheme", "bucket", "prefix", "path"),
    [
        ("s3://runs", "s3", "runs", "", ""),
        ("s3://runs/lab/2026/", "s3", "runs", "lab/2026", ""),
        ("file:///tmp/a", "file", "", "", "/tmp/a"),
        ("./copy", "file", "", "", "./copy"),
    ],
)
def test_locations(url: str, scheme: str, bucket: str, prefix: str, path: str) -> None:
    loc = layout.parse_location(url)
    assert (loc.scheme, loc.bucket, loc.prefix, loc.path) == (scheme, bucket, prefix, path)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("gs://bucket/x", "unsupported archive URL"),
        ("s3:///prefix", "no bucket"),
        ("", "empty archive location"),
        ("file://host/x", "names no host"),
    ],
)
def test_bad_locations_are_one_line_errors(url: str, message: str) -> None:
    with pytest.raises(ArchiveError, match=message) as e:
        open_root(url)
    assert "\n" not in str(e.value)


def write_run(root_url: str, steps: int = 2, clients: int = 2) -> None:
    w = open_root(root_url).writer("bench", "ycsb-a", "0b7c-11")
    w.put_json(layout.CLUSTER, {"snapshot": {"members": 3}})
    for s in range(steps):
        for c in range(clients):
            w.put_json(layout.client_key(s, c), client_doc(c))
        w.put_json(layout.merged_key(s), {"merged": s})
        w.put_json(layout.resources_key(s), {"cpu": {"avg": 0.5}})
    w.put_manifest(RUN, "Succeeded", complete=True)


def test_local_folder_round_trip(tmp_path: Path) -> None:
    write_run(str(tmp_path))
    [run] = open_root(str(tmp_path)).runs()
    assert (run.namespace, run.name, run.uid, run.phase, run.complete) == (
        "bench",
        "ycsb-a",
        "0b7c-11",
        "Succeeded",
        True,
    )
    assert run.run["metadata"]["name"] == "ycsb-a"
    assert run.cluster == {"snapshot": {"members": 3}}
    assert run.step_indices() == [0, 1]
    assert run.step_documents(1) == [client_doc(0), client_doc(1)]
    assert run.merged(0) == {"merged": 0}
    assert run.resources(1) == {"cpu": {"avg": 0.5}}
    assert run.step_documents(7) == [] and run.merged(7) is None
    # The same run through a URL that points at its namespace, or at the run folder itself.
    [via_ns] = open_root(f"file://{tmp_path}/bench").runs()
    [via_run] = open_root(str(tmp_path / "bench" / "ycsb-a" / "0b7c-11")).runs()
    assert via_ns.merged(1) == via_run.merged(1) == {"merged": 1}
    assert open_root(str(tmp_path)).run("bench", "ycsb-a", "0b7c-11").uid == "0b7c-11"


def test_client_documents_in_client_order_past_ten(tmp_path: Path) -> None:
    write_run(str(tmp_path), steps=1, clients=12)
    [run] = open_root(str(tmp_path)).runs()
    assert [d["client"] for d in run.step_documents(0)] == list(range(12))


def test_objects_without_manifest_are_not_a_run(tmp_path: Path) -> None:
    w = open_root(str(tmp_path)).writer("bench", "half", "u1")
    w.put_json(layout.client_key(0, 0), client_doc(0))
    with pytest.raises(ArchiveError, match=r"no manifest\.json") as e:
        open_root(str(tmp_path)).runs()
    assert "\n" not in str(e.value)
    # A complete run next to it is found; the half-written one stays invisible.
    write_run(str(tmp_path))
    assert [r.name for r in open_root(str(tmp_path)).runs()] == ["ycsb-a"]
    with pytest.raises(ArchiveError, match="no such run"):
        open_root(str(tmp_path)).run("bench", "half", "u1")


def test_unreadable_archives_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="no such folder"):
        open_root(str(tmp_path / "missing")).runs()
    with pytest.raises(ArchiveError, match="empty"):
        open_root(str(tmp_path)).runs()
    write_run(str(tmp_path))
    folder = tmp_path / "bench" / "ycsb-a" / "0b7c-11"
    # A changed object is refused when read, not silently used.
    (folder / "steps" / "000" / "merged.json").write_text('{"merged": 99}\n')
    [run] = open_root(str(tmp_path)).runs()
    with pytest.raises(ArchiveError, match="differs from its manifest"):
        run.merged(0)
    # A listed object that is gone.
    (folder / "steps" / "001" / "merged.json").unlink()
    with pytest.raises(ArchiveError, match="listed in the manifest but missing"):
        run.merged(1)
    # A manifest that is not one.
    (folder / "manifest.json").write_text("not json")
    with pytest.raises(ArchiveError, match="not a JSON manifest") as e:
        open_root(str(tmp_path)).runs()
    assert "\n" not in str(e.value) and str(folder) in str(e.value)


def test_rewriting_skips_unchanged_objects_and_keeps_earlier_ones(tmp_path: Path) -> None:
    root = open_root(str(tmp_path))
    w1 = root.writer("bench", "ycsb-a", "0b7c-11")
    w1.put_json(layout.client_key(0, 0), client_doc(0))
    w1.put_manifest(RUN, "Running", complete=False)
    # A restarted writer (new process): knows step 0 from the manifest, uploads step 1 only.
    w2 = root.writer("bench", "ycsb-a", "0b7c-11")
    w2.put_json(layout.client_key(0, 0), client_doc(0))
    w2.put_json(layout.client_key(1, 0), client_doc(0))
    m = w2.put_manifest({**RUN, "status": {"phase": "Succeeded"}}, "Succeeded", complete=True)
    assert w2.written == [layout.client_key(1, 0), layout.RUN]
    assert [o["key"] for o in m["objects"]] == [
        "run.json",
        "steps/000/client-0.json",
        "steps/001/client-0.json",
    ]
    [run] = root.runs()
    assert run.complete and run.run["status"] == {"phase": "Succeeded"}


def test_secret_values_are_refused(tmp_path: Path) -> None:
    w = open_root(str(tmp_path)).writer("bench", "r", "u", secrets=["s3cr3t-key"])
    with pytest.raises(ArchiveError, match="contains a secret value"):
        w.put_json("cluster.json", {"uri": "mongodb://u:s3cr3t-key@h/"})
    assert not list(tmp_path.rglob("cluster.json"))


def test_manifest_is_plain_json_for_other_tools(tmp_path: Path) -> None:
    write_run(str(tmp_path), steps=1, clients=1)
    m = json.loads((tmp_path / "bench/ycsb-a/0b7c-11/manifest.json").read_text())
    assert m["apiVersion"] == "mongobench.io/archive/v1"
    assert m["run"] == {"namespace": "bench", "name": "ycsb-a", "uid": "0b7c-11"}
    listed = {o["key"] for o in m["objects"]}
    on_disk = {
        p.relative_to(tmp_path / "bench/ycsb-a/0b7c-11").as_posix()
        for p in (tmp_path / "bench/ycsb-a/0b7c-11").rglob("*.json")
    }
    assert on_disk - listed == {"manifest.json"}


EXPERIMENT: dict[str, Any] = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "BenchmarkExperiment",
    "metadata": {"name": "sharded", "namespace": "bench", "uid": "e-1", "resourceVersion": "7"},
    "spec": {"design": "OneFactorAtATime", "baseline": {"shards": 1}},
    "status": {
        "phase": "Succeeded",
        "cells": [
            {"label": "shards=1", "deployments": [{"pods": 3, "readySeconds": 41.0}]},
        ],
        "kopf": {"progress": {}},
    },
}


def test_an_experiments_summary_is_archived_beside_its_runs_manifest_last(tmp_path: Path) -> None:
    """The live object's deploy timings outlive it: experiment.json, then a manifest of its own
    name, which a reader of runs does not take for a run."""
    root = open_root(str(tmp_path))
    w = root.writer("bench", "sharded-c0-r1", "r-1")
    w.put_manifest(RUN, "Succeeded", True)
    manifest = root.write_experiment(EXPERIMENT)
    folder = tmp_path / "bench" / "sharded" / "e-1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "experiment-manifest.json", "experiment.json"
    ]  # fmt: skip
    assert manifest["complete"] and manifest["phase"] == "Succeeded"
    assert [o["key"] for o in manifest["objects"]] == ["experiment.json"]
    (doc,) = root.experiments()
    assert doc["status"]["cells"][0]["deployments"] == [{"pods": 3, "readySeconds": 41.0}]
    assert "kopf" not in doc["status"] and "resourceVersion" not in doc["metadata"]
    assert [r.name for r in root.runs()] == ["sharded-c0-r1"]  # the summary is no run
    # A changed summary no longer matches its manifest: refused, not read.
    (folder / "experiment.json").write_text("{}\n")
    with pytest.raises(ArchiveError, match="differs from its manifest"):
        root.experiments()
    with pytest.raises(ArchiveError, match="contains a secret value"):
        root.write_experiment(EXPERIMENT, secrets=["sharded"])
    assert open_root(str(tmp_path / "bench" / "sharded-c0-r1")).experiments() == []
