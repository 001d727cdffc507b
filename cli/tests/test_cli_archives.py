"""Unit tier (local files only): the `mongobench` command on exported folders.

The runs are made by builders.py (runner documents, operator status code), exported with
`mongobench export`'s code into archive folders, then read back by the real command: as a
subprocess where exit codes and stderr matter, in-process (typer's runner) elsewhere.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import benchmark_run
from typer.testing import CliRunner

from mongobench_cli import export
from mongobench_cli.app import app

pytestmark = pytest.mark.unit
MONGOBENCH = Path(sys.executable).parent / "mongobench"


@pytest.fixture(scope="module")
def planes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two archive folders, as if exported from two clusters: 3 shards on one, 5 on the other."""
    root = tmp_path_factory.mktemp("archives")
    three, five = root / "plane-3", root / "plane-5"
    export.export(
        [benchmark_run("bench", shards=3, throughput={"a": 1000, "c": 2000}, seed=1, clients=2)],
        str(three),
    )
    export.export(
        [benchmark_run("bench", shards=5, throughput={"a": 1300, "c": 2000}, seed=2, clients=2)],
        str(five),
    )
    return three, five


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MONGOBENCH), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "250", "KUBECONFIG": "/nonexistent/kubeconfig"},
    )


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_list_reads_runs_from_two_archive_folders(planes: tuple[Path, Path]) -> None:
    rows = json.loads(invoke("list", str(planes[0]), str(planes[1]), "-o", "json"))
    assert [(r["name"], r["topology"], r["phase"]) for r in rows] == [
        ("bench", "3 shards x 3, 2 mongos", "Succeeded"),
        ("bench", "5 shards x 3, 2 mongos", "Succeeded"),
    ]
    table = invoke("list", str(planes[0]), str(planes[1]))
    assert "3 shards x 3, 2 mongos" in table and str(planes[1]) in table  # origin column


def test_compare_across_two_archives_shows_the_difference_and_no_difference(
    planes: tuple[Path, Path],
) -> None:
    out = invoke("compare", str(planes[0]), str(planes[1]), "--metric", "throughput", "-o", "json")
    doc = json.loads(out)
    # Both runs are called bench/bench: the keys say which archive each came from.
    names = [c["name"] for c in doc["configurations"]]
    assert len(set(names)) == 2 and all(n.startswith("bench/bench@") for n in names)
    rows = {(r["workload"], r["baseline"]): r for r in doc["rows"]}
    assert rows[("a", False)]["significant"] and rows[("a", False)]["verdict"].endswith("better")
    assert rows[("c", False)]["verdict"] == "~"
    assert doc["configurations"][1]["shape"]["shards"] == 5
    md = invoke("compare", str(planes[0]), str(planes[1]), "-o", "markdown")
    assert md.startswith("Baseline **bench/bench@") and "| ~ |" in md
    table = invoke("compare", str(planes[0]), str(planes[1]), "--group-by", "shards")
    # The compact table: the headline against the baseline says which way and what differs.
    assert "shards=5 vs shards=3 (shards 5 vs 3" in table and "throughput faster on a" in table
    shown = invoke("compare", str(planes[0]), str(planes[1]), "-o", "csv")
    # The notes are comment lines before the header (pandas: read_csv(comment="#")).
    rows_csv = list(csv.DictReader(ln for ln in shown.splitlines() if not ln.startswith("#")))
    assert {"welchP", "rankP", "hedgesG", "deltaCiLow"} <= set(rows_csv[-1])
    # Every cell reads as a spreadsheet shows it: validity as the table says it, no reprs.
    assert all(r["validity"] == "unjudged" and r["trials"] == r["validTrials"] for r in rows_csv)
    assert not any(c.startswith(("{", "[")) for r in rows_csv for c in r.values()), rows_csv


def test_describe_an_archived_run(planes: tuple[Path, Path]) -> None:
    run_folder = next(planes[1].glob("bench/bench/*"))
    out = invoke("describe", str(run_folder))
    for section in (
        "Plan and per-step results",
        "Per-workload summary",
        "CPU per node group",
        "Cluster snapshot",
        "Conditions",
        "Warnings",
        "5 shards x 3",
    ):
        assert section in out, section


def test_export_again_from_an_archive_keeps_every_document(
    planes: tuple[Path, Path], tmp_path: Path
) -> None:
    out = invoke("export", str(planes[1]), "-o", str(tmp_path / "again"))
    assert "exported 1 runs, 9 steps, 12 result documents" in out  # 6 steps x 2 clients
    rows = list(csv.DictReader((tmp_path / "again" / "steps.csv").open()))
    measured = [r for r in rows if r["kind"] == "run"]
    assert len(measured) == 6
    first = measured[0]
    assert (first["shards"], first["run.threads"], first["workload"]) == ("5", "4", "a")
    assert float(first["throughput"]) > 0 and float(first["READ.p99"]) > 0
    docs = sorted((tmp_path / "again").glob("bench/bench/*/steps/002/client-*.json"))
    assert len(docs) == 2 and json.loads(docs[0].read_text())["operations"]["READ"]["hdr"]


def test_report_is_one_self_contained_html_with_figures(
    planes: tuple[Path, Path], tmp_path: Path
) -> None:
    out = invoke("report", str(planes[0]), str(planes[1]), "-o", str(tmp_path / "report"))
    assert "report.html" in out
    page = (tmp_path / "report" / "report.html").read_text()
    pngs = sorted(p.name for p in (tmp_path / "report" / "figures").glob("*.png"))
    assert {
        "throughput.png",
        "latency-avg.png",
        "latency-p99.png",
        "percentiles-a.png",
        "scaling-shards.png",
        "cpu-overlay.png",  # the two configurations' database nodes over time, overlaid
    } <= set(pngs)
    assert "cpu-roles.png" not in pngs  # these runs have no status.roles: nothing to plot
    assert page.count("data:image/png;base64,") == len(pngs)
    assert "http://" not in page and "https://" not in page  # nothing fetched when opened
    assert "differ only in <b>shards</b>" in page


def test_compare_and_report_show_each_runs_shard_distribution(tmp_path: Path) -> None:
    """Two candidate shard keys: compare's table and the report name each run's key and the
    documents and chunks per shard after its last load."""
    keys = {
        "hashed-id": ({"key": "_id", "hashed": True}, [50.0, 50.0], [2, 2]),
        "field0-id": (
            {"fields": [{"field": "field0", "type": "Ranged"}, {"field": "_id", "type": "Ranged"}]},
            [66.7, 33.3],
            [2, 1],
        ),
    }
    folders = []
    for i, (name, (sharding, percents, chunks)) in enumerate(keys.items()):
        loaded = benchmark_run(name, shards=2, seed=i + 1, spec={"sharding": sharding})
        load = next(s for s in loaded.run["status"]["steps"] if s["kind"] == "load")
        load["distribution"] = {
            "collection": "ycsb.usertable",
            "sharded": True,
            "documents": 3000,
            "shards": [
                {"shard": f"c-shard{j}", "documents": int(30 * p), "percent": p, "chunks": c}
                for j, (p, c) in enumerate(zip(percents, chunks, strict=True))
            ],
        }
        export.export([loaded], str(tmp_path / name))
        folders.append(str(tmp_path / name))
    table = invoke("compare", *folders, "--allow-incomparable")
    assert "Shard distribution after the last load" in table
    lines = [" ".join(line.split()) for line in table.splitlines()]
    assert any("{_id: hashed} 3000 c-shard0 50.0% (2), c-shard1 50.0% (2)" in x for x in lines)
    assert any(
        "{field0: 1, _id: 1} 3000 c-shard0 66.7% (2), c-shard1 33.3% (1)" in x for x in lines
    )
    invoke("report", *folders, "--allow-incomparable", "-o", str(tmp_path / "report"))
    page = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Shard distribution</h2>" in page
    assert "{field0: 1, _id: 1}" in page and "c-shard1 33.3% (1)" in page


def test_compare_shards_is_the_shard_key_tables_rows_per_cell_within_100_columns(
    tmp_path: Path,
) -> None:
    """Study 4's shard-key test: `compare --shards` over an experiment's runs, a row per cell
    (its label) with the key, and each shard's documents and chunks in a column of its own."""
    keys = {
        "hashed-id": ({"key": "_id", "hashed": True}, [1500, 1500], [2, 2]),
        # One chunk: the other shard is not in its distribution, and holds none of it.
        "sensor-ts": ({"fields": [{"field": "sensor"}, {"field": "ts"}]}, [3000], [1]),
    }
    loaded = []
    for i, (name, (sharding, documents, chunks)) in enumerate(keys.items()):
        trial = benchmark_run(
            f"keys-c{i}-r1",
            shards=2,
            seed=i + 1,
            spec={"sharding": sharding},
            labels={"experiment.cell": f"shardKey={name}"},
        )
        load = next(s for s in trial.run["status"]["steps"] if s["kind"] == "load")
        load["distribution"] = {
            "documents": 3000,
            "shards": [
                {"shard": f"keys-k0-shard{j}", "documents": d, "percent": d / 30, "chunks": c}
                for j, (d, c) in enumerate(zip(documents, chunks, strict=True))
            ],
        }
        loaded.append(trial)
    export.export(loaded, str(tmp_path / "keys"))
    done = run("compare", str(tmp_path / "keys"), "--shards")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert lines[0].strip() == "Documents (chunks) per shard after the last load"
    rows = [x.split() for x in lines if x.strip().startswith(("configuration", "shardKey="))]
    assert rows == [
        ["configuration", "shard", "key", "documents", "shard0", "shard1"],
        ["shardKey=hashed-id", "{_id:", "hashed}", "3000", "1500", "(2)", "1500", "(2)"],
        ["shardKey=sensor-ts", "{sensor:", "1,", "ts:", "1}", "3000", "3000", "(1)", "0", "(0)"],
    ]
    doc = json.loads(invoke("compare", str(tmp_path / "keys"), "--shards", "-o", "json"))
    assert list(doc[1])[:4] == ["configuration", "run", "shardKey", "documents"]
    assert [(r["configuration"], r["shard1 documents"], r["shard1 chunks"]) for r in doc] == [
        ("shardKey=hashed-id", 1500, 2),
        ("shardKey=sensor-ts", 0, 0),
    ]
    refused = run("compare", str(tmp_path / "keys"), "--shards", "--pair-by", "shardKey")
    assert (refused.returncode, refused.stderr.strip()) == (
        2,
        "error: --shards draws the shard distribution alone: leave out --pair-by",
    )


def test_an_archived_experiments_run_dimension_is_compared_not_refused(tmp_path: Path) -> None:
    """Study 4's bucketed write test from the archive: its cells differ in
    run.properties.bucketsize by design, which its runs carry (experiment.varies), so compare
    judges bucketed against per-measurement rather than refusing the pair; the same runs
    without that label are refused, naming the difference."""

    def cells(varies: bool) -> list[Any]:
        out = []
        for i, (name, size) in enumerate((("per-measurement", "0"), ("bucketed", "60"))):
            labels = {"writes": name, "experiment.cell": f"writes={name}"}
            if varies:
                labels["experiment.varies"] = "run.properties.bucketsize"
            out += [
                benchmark_run(
                    f"bw-c{i}-r{rep}", workloads=("writes",), repetitions=1, seed=10 * i + rep,
                    throughput=1000 + 500 * i, labels=labels,
                    spec={"run": {"properties": {"bucketsize": size}}},
                )
                for rep in (1, 2, 3)
            ]  # fmt: skip
        return out

    args = ("--group-by", "writes", "--baseline", "per-measurement", "--metric", "throughput")
    export.export(cells(varies=True), str(tmp_path / "bw"))
    judged = json.loads(invoke("compare", str(tmp_path / "bw"), *args, "-o", "json"))
    (row,) = [r for r in judged["rows"] if r["configuration"] == "bucketed"]
    assert row["verdict"] != "not comparable" and judged["incomparable"] == []
    export.export(cells(varies=False), str(tmp_path / "plain"))
    refused = run("compare", str(tmp_path / "plain"), *args)
    assert refused.returncode == 2 and "differ in run.properties" in refused.stderr


# --- bad input: one line on stderr, exit code 2, never a traceback ---------------------------


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_an_unreadable_archive_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run("compare", str(tmp_path / "missing")), "missing")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run("list", str(tmp_path / "empty")), "no archived run")
    broken = tmp_path / "broken" / "ns" / "r" / "uid"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text("{not json")
    assert_one_line_error(run("describe", str(broken)))


def test_runs_that_are_not_comparable_are_one_line(tmp_path: Path) -> None:
    export.export([benchmark_run("w1")], str(tmp_path / "a"))
    export.export(
        [benchmark_run("w2", seed=3, spec={"run": {"fieldLength": 1000}})], str(tmp_path / "b")
    )
    result = run("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert_one_line_error(
        result, "not comparable", "run.fieldLength 100 vs 1000", "--allow-incomparable"
    )
    flagged = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--allow-incomparable")
    assert flagged.returncode == 0 and "not comparable" in flagged.stdout


def test_a_run_name_without_a_kube_context_is_one_line() -> None:
    assert_one_line_error(run("describe", "nosuchrun"), "kube")
    assert_one_line_error(run("compare", "a", "b"), "kube")


def test_bad_options_are_one_line(planes: tuple[Path, Path]) -> None:
    assert_one_line_error(run("compare", str(planes[0]), "--baseline", "nope"), "baseline 'nope'")
    assert_one_line_error(run("compare", str(planes[0]), "--metric", "p42"), "unknown metric")


def test_compare_and_report_show_cpu_per_role_from_archives(tmp_path: Path) -> None:
    """Two sharded runs whose steps carry status.roles: `compare --metric cpu:mongos` shows the
    routers' cores per configuration, and the report plots CPU per role."""
    folders = []
    for name, mongos_cores, seed in (("two-routers", 0.5, 1), ("four-routers", 1.5, 2)):
        built = benchmark_run(name, shards=2, seed=seed, mongos_cores=mongos_cores)
        export.export([built], str(tmp_path / name))
        folders.append(str(tmp_path / name))
    table = invoke("compare", *folders, "--metric", "cpu:mongos", "--allow-incomparable", "--wide")
    lines = [" ".join(line.split()) for line in table.splitlines()]
    assert sum("cpu:mongos (cores) two-routers" in x for x in lines) == 2, table  # a and c
    four = [x for x in lines if x.startswith("four-routers 3")]
    assert len(four) == 2 and all("worse" in x for x in four), table
    out = tmp_path / "report"
    invoke("report", *folders, "--allow-incomparable", "-o", str(out))
    assert (out / "figures" / "cpu-roles.png").exists()
    page = (out / "report.html").read_text()
    assert "CPU per role" in page and "cpu:mongos (cores)" in page


def test_compare_of_one_configuration_shows_its_figures(planes: tuple[Path, Path]) -> None:
    """Nothing to judge it against: the compact view would be empty, so its figures per
    workload and metric (mean, SD, n, interval, CV) are the answer, within 100 columns (study
    4's queries are one run); --wide is the full table."""
    done = run("compare", str(planes[0]), "--metric", "throughput", "--metric", "avg")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].strip() == "Per-workload summary (mean ± SD, 95% CI, n)"
    assert lines[2].split() == ["workload", "metric", "n", "mean", "±", "SD", "CI", "CV"]
    rows = [x.split()[:4] for x in lines[4:] if x.strip()]
    assert rows[:3] == [
        ["a", "throughput", "(ops/s)", "3"],
        ["a", "READ", "avg", "(us)"],
        ["a", "UPDATE", "avg", "(us)"],
    ]
    assert max(map(len, lines)) <= 100
    alone = invoke("compare", str(planes[0]), "--metric", "throughput")
    assert alone != invoke("compare", str(planes[0]), "--metric", "throughput", "--wide")
    two = invoke("compare", str(planes[0]), str(planes[1]), "--metric", "throughput")
    assert two != invoke(
        "compare", str(planes[0]), str(planes[1]), "--metric", "throughput", "--wide"
    )
