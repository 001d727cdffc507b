"""Unit tier (local files only): provenance in the CLI. Runs made by builders.py are exported to
archive folders, each with a provenance.json as the operator writes it (one run's FCV and
instance type changed, as if run on another cluster); then `compare` names the differences and
flags those that change results, `describe` shows what ran, and `rerun` writes the manifests
that recreate a run (new names, images pinned by the digests the kubelets reported)."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_archive import layout, open_root
from mongobench_cli import export
from mongobench_cli.app import app
from mongobench_cli.rerun import RERUN_OF, manifests, pinned
from mongobench_results.provenance import API_VERSION

pytestmark = pytest.mark.unit

PROVENANCE: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "specs": {
        "benchmarkRun": {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": {"name": "bench", "labels": {"study": "s"}},
            "spec": {
                "clusterRef": {"name": "bc"},
                "workloads": [{"name": "a", "properties": {"seed": "42"}}],
                "repetitions": 3,
            },
        },
        "mongoCluster": {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "MongoCluster",
            "metadata": {"name": "bc"},
            "spec": {
                "version": "7.0.14",
                "monitoring": {"exporterImage": "percona/mongodb_exporter:0.43.1"},
            },
        },
    },
    "containers": [
        {
            "role": "database",
            "pod": "bc-rs0-0",
            "container": "mongod",
            "image": "mongo:7.0.14",
            "imageID": "docker.io/library/mongo@sha256:aa",
        },
        {
            "role": "database",
            "pod": "bc-rs0-0",
            "container": "exporter",
            "image": "percona/mongodb_exporter:0.43.1",
            "imageID": "x@sha256:ee",
        },
        {
            "role": "client",
            "pod": "bench-run-0",
            "container": "client",
            "image": "ghcr.io/mongobench/ycsb:0.1.0",
            "imageID": "ghcr.io/mongobench/ycsb@sha256:cc",
        },
    ],
    "servers": [{"buildInfo": {"version": "7.0.14", "gitVersion": "ce59"}}],
    "featureCompatibilityVersion": "7.0",
    "storage": {"engine": "wiredTiger", "cacheBytesInEffect": 268435456},
    "nodes": [{"name": "n1", "instanceType": "m5.xlarge", "kernelVersion": "6.1"}],
    "kubernetes": {"gitVersion": "v1.32.2"},
    "seeds": {"ycsb": {"a": {"seed": "42"}}, "locust": None},
}


def with_provenance(folder: Path, doc: dict[str, Any]) -> None:
    """Add provenance.json to the one run exported into `folder`, manifest rewritten last."""
    root = open_root(str(folder))
    (archived,) = root.runs()
    writer = root.writer(archived.namespace, archived.name, archived.uid)
    writer.put_json(layout.PROVENANCE, doc)
    writer.put_manifest(archived.run, archived.phase, archived.complete)


@pytest.fixture(scope="module")
def planes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("archives")
    old, new = root / "old", root / "new"
    export.export([benchmark_run("bench", shards=3, seed=1, clients=2)], str(old))
    export.export([benchmark_run("bench", shards=3, seed=2, clients=2)], str(new))
    with_provenance(old, PROVENANCE)
    changed = copy.deepcopy(PROVENANCE)
    changed["featureCompatibilityVersion"] = "6.0"
    changed["nodes"][0]["instanceType"] = "m6i.xlarge"
    changed["nodes"][0]["kernelVersion"] = "6.8"
    with_provenance(new, changed)
    return old, new


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_compare_names_provenance_differences_and_flags_fcv_and_instance_type(
    planes: tuple[Path, Path],
) -> None:
    old, new = planes
    doc = json.loads(invoke("compare", str(old), str(new), "-o", "json", "--allow-incomparable"))
    got = {
        (d["field"], tuple(d["other"]), d["changesResults"]) for d in doc["provenanceDifferences"]
    }
    assert got == {
        ("featureCompatibilityVersion", ("6.0",), True),
        ("instanceTypes", ("m6i.xlarge",), True),
        ("kernels", ("6.8",), False),
    }
    table = invoke("compare", str(old), str(new), "--allow-incomparable")
    assert "feature compatibility version 6.0 vs 7.0" in table
    assert "node instance types m6i.xlarge vs m5.xlarge" in table
    assert table.count("(changes results)") == 2
    markdown = invoke("compare", str(old), str(new), "-o", "markdown", "--allow-incomparable")
    assert "**Provenance against" in markdown
    assert markdown.count("(changes results)") == 2
    same = json.loads(invoke("compare", str(old), str(old), "-o", "json", "--allow-incomparable"))
    assert same["provenanceDifferences"] == []


def test_compare_csv_carries_the_provenance_notes_as_comment_lines(
    planes: tuple[Path, Path],
) -> None:
    """What the table and markdown say around their rows, as `# ` lines before the header:
    what pandas.read_csv(comment="#") skips and a spreadsheet shows above the table."""
    old, new = planes
    text = invoke("compare", str(old), str(new), "-o", "csv", "--allow-incomparable")
    lines = text.splitlines()
    notes = [line for line in lines if line.startswith("# ")]
    assert lines[: len(notes)] == notes  # all before the header
    assert notes[0].startswith("# baseline bench/bench@")
    assert any(n.startswith("# provenance against bench/bench@") for n in notes)
    assert any("feature compatibility version 6.0 vs 7.0" in n for n in notes)
    assert any("node instance types m6i.xlarge vs m5.xlarge" in n for n in notes)
    assert sum("(changes results)" in n for n in notes) == 2
    # The rows read as before once the comments are skipped; no cell holds the comment mark.
    rows = list(csv.DictReader(lines[len(notes) :]))
    assert rows and {"workload", "metric", "configuration", "verdict"} <= set(rows[0])
    assert not any("#" in line for line in lines[len(notes) :])
    same = invoke("compare", str(old), str(old), "-o", "csv", "--allow-incomparable")
    assert "# - no difference in what ran (where both sides know it)" in same.splitlines()


def test_describe_shows_what_ran(planes: tuple[Path, Path]) -> None:
    out = invoke("describe", str(planes[0]))
    assert "Provenance" in out
    assert "feature compatibility version" in out and "m5.xlarge" in out
    assert "mongo:7.0.14@sha256:aa" in out  # the database image by digest


def test_rerun_writes_manifests_with_new_names_pinned_images_and_kept_seeds(
    planes: tuple[Path, Path], tmp_path: Path
) -> None:
    (cluster, run) = list(yaml.safe_load_all(invoke("rerun", str(planes[0]), "--name", "again")))
    assert (cluster["kind"], cluster["metadata"]["name"]) == ("MongoCluster", "again-cluster")
    assert cluster["spec"]["image"] == "mongo@sha256:aa"
    assert cluster["spec"]["monitoring"]["exporterImage"] == "percona/mongodb_exporter@sha256:ee"
    assert (run["kind"], run["metadata"]["name"]) == ("BenchmarkRun", "again")
    assert run["metadata"]["labels"] == {"study": "s"}
    assert RERUN_OF in run["metadata"]["annotations"]
    original = PROVENANCE["specs"]["benchmarkRun"]["spec"]
    assert run["spec"] == {
        **original,
        "clusterRef": {"name": "again-cluster"},
        "image": "ghcr.io/mongobench/ycsb@sha256:cc",
    }  # seeds (workload properties) kept
    invoke("rerun", str(planes[0]), "--output-dir", str(tmp_path / "out"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "benchmarkrun.yaml",
        "mongocluster.yaml",
    ]


def test_rerun_without_provenance_uses_the_archived_specs_and_says_images_are_not_pinned() -> None:
    made = manifests(
        {"metadata": {"name": "r", "uid": "u"}, "spec": {"clusterRef": {"name": "c"}}},
        None,
        {"mongoCluster": {"spec": {"version": "6.0.9"}}},
    )
    assert [o["metadata"]["name"] for o in made.objects] == ["r-rerun-cluster", "r-rerun"]
    assert "image" not in made.objects[0]["spec"]
    assert made.notes == ["no provenance.json in the archive: images are not pinned by digest"]


@pytest.mark.parametrize(
    ("image", "image_id", "expected"),
    [
        ("mongo:7.0.14", "docker.io/library/mongo@sha256:aa", "mongo@sha256:aa"),
        ("registry:5000/mongo", "registry:5000/mongo@sha256:bb", "registry:5000/mongo@sha256:bb"),
        ("mongo:7.0.14", "", None),
    ],
)
def test_pinned(image: str, image_id: str, expected: str | None) -> None:
    assert pinned(image, image_id) == expected
