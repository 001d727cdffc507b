"""`mongobench history` on archives written by the archive's own writer: a folder (unit tier)
and the loopback S3 server (protocol tier, a real S3-compatible server over HTTP). A 5%
throughput drop injected at one run is found there, with the runs either side and the
provenance field that changed; the cache in the archive grows with the next run."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from localplane.pytest_plugin import s3server  # noqa: F401  (pytest finds fixtures by name)
from localplane.s3server import S3Server
from mongobench_archive import Root, open_root
from mongobench_cli.app import app
from mongobench_results import history

T0 = datetime(2026, 10, 1, tzinfo=UTC)
DROP_AT = 40


def run_object(i: int, throughput: float) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": f"weekly-{i:03d}", "namespace": "bench", "uid": f"uid-{i:03d}"},
        "spec": {"driver": "ycsb", "labels": {"study": "weekly"}},
        "status": {
            "phase": "Succeeded",
            "startTime": (T0 + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "clusterSnapshot": {"topology": {"type": "ReplicaSet", "replicaSet": {"members": 3}}},
            "steps": [
                {
                    "index": 2,
                    "kind": "run",
                    "workload": "a",
                    "repetition": 1,
                    "phase": "Succeeded",
                    "result": {"throughput": throughput, "operations": {}},
                }
            ],
        },
    }


def archive_runs(root: Root, first: int, last: int, *, provenance: bool = True) -> None:
    """Runs first..last-1 of a weekly study: 2% noise, 5% slower from run DROP_AT on, when the
    provenance says mongod 7.0.15 replaced 7.0.14."""
    rng = random.Random(7)
    values = [
        1000 * (0.95 if i >= DROP_AT else 1.0) * (1 + 0.02 * rng.gauss(0, 1)) for i in range(100)
    ]
    for i in range(first, last):
        obj = run_object(i, values[i])
        w = root.writer("bench", obj["metadata"]["name"], obj["metadata"]["uid"])
        if provenance:
            w.put_json(
                history.PROVENANCE,
                {
                    "mongod": {"buildInfo": {"version": "7.0.15" if i >= DROP_AT else "7.0.14"}},
                    "runUid": obj["metadata"]["uid"],
                },
            )
        w.put_manifest(obj, "Succeeded", True)


def invoke(*args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", **(env or {})})
    assert result.exit_code == 0, result.output
    return result.output


def check_found(out: str) -> dict[str, Any]:
    doc = json.loads(out)
    [change] = doc["changes"]
    assert change["series"] == "topology=ReplicaSet,workload=a,metric=throughput"
    assert abs(change["index"] - DROP_AT) <= 1
    assert change["regression"] is True
    assert change["magnitude"] == pytest.approx(-0.05, abs=0.015)
    assert change["after"]["run"] == f"bench/weekly-{change['index']:03d}"
    paths = [p["path"] for p in change["provenance"]]
    assert "runUid" in paths  # each run's own uid differs, wherever the change is placed
    if change["index"] == DROP_AT:
        assert "mongod.buildInfo.version" in paths
    return doc


@pytest.mark.unit
def test_history_of_a_folder_finds_the_drop_and_updates_its_cache(tmp_path: Path) -> None:
    root = open_root(str(tmp_path / "archive"))
    archive_runs(root, 0, 70)
    doc = check_found(invoke("history", str(tmp_path / "archive"), "-o", "json"))
    assert doc["runs"] == 70 and doc["newRuns"] == 70
    cache = json.loads((tmp_path / "archive" / history.SERIES_CACHE).read_text())
    assert len(cache["runs"]) == 70
    # The next run is appended to the cached series; nothing else is passed again.
    archive_runs(root, 70, 71)
    doc = check_found(invoke("history", str(tmp_path / "archive"), "-o", "json"))
    assert doc["runs"] == 71 and doc["newRuns"] == 1
    [series] = doc["series"]
    assert len(series["points"]) == 71
    # The table, the report page (a plot per series) and the Grafana rows.
    table = invoke(
        "history",
        str(tmp_path / "archive"),
        "--report",
        str(tmp_path / "report"),
        "--grafana",
        str(tmp_path / "grafana.json"),
    )
    assert "-5." in table and "worse" in table and "mongod.buildInfo.version" in table
    page = (tmp_path / "report" / "history.html").read_text()
    assert page.count("<img") == 1 and "workload=a" in page
    rows = json.loads((tmp_path / "grafana.json").read_text())
    assert len(rows) == 71 and sum(r["change"] for r in rows) == 1
    assert (tmp_path / "archive" / history.GRAFANA_EXPORT).exists()


@pytest.mark.unit
def test_history_without_provenance_says_none_recorded(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path)), 0, 60, provenance=False)
    out = invoke("history", str(tmp_path), "--read-only")
    assert "none recorded" in out
    assert not (tmp_path / history.SERIES_CACHE).exists()


@pytest.fixture
def s3_env(s3server: S3Server) -> Iterator[dict[str, str]]:  # noqa: F811
    yield {
        "AWS_ACCESS_KEY_ID": "mongobench-test",
        "AWS_SECRET_ACCESS_KEY": "mongobench-test-secret-key",
        "AWS_REGION": "us-east-1",
    }


@pytest.mark.protocol
def test_history_of_an_s3_archive_finds_the_drop(
    s3server: S3Server,  # noqa: F811
    s3_env: dict[str, str],
) -> None:
    url = "s3://mongobench/weekly"
    root = open_root(
        url,
        endpoint_url=s3server.endpoint,
        region="us-east-1",
        access_key_id=s3_env["AWS_ACCESS_KEY_ID"],
        secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"],
    )
    archive_runs(root, 0, 60)
    args = ("history", url, "--s3-endpoint", s3server.endpoint, "-o", "json")
    doc = check_found(invoke(*args, env=s3_env))
    assert doc["newRuns"] == 60
    assert f"weekly/{history.SERIES_CACHE}" in s3server.keys("mongobench")
    archive_runs(root, 60, 61)
    doc = check_found(invoke(*args, env=s3_env))
    assert doc["newRuns"] == 1 and doc["runs"] == 61


# --- the gate: --fail-on regression and acknowledgements (unit tier, a folder archive) ----------

SERIES = "topology=ReplicaSet,workload=a,metric=throughput"


def gate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["history", *args, "--fail-on", "regression"], env={"COLUMNS": "250"}
    )
    return result.exit_code, result.output


def write_acks(path: Path, run: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "acknowledgements:\n"
        f"  - series: {SERIES}\n"
        f"    run: {run}\n"
        "    reason: mongod 7.0.15 is 5% slower on workload a, accepted\n"
        "    by: alice\n"
    )


@pytest.mark.unit
def test_fail_on_regression_exits_3_naming_the_change_in_100_columns(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path)), 0, 60)
    code, out = gate(str(tmp_path))
    assert code == 3, out
    gate_out = out[out.index("REGRESSION: ") :]
    assert all(len(line) <= 100 for line in gate_out.splitlines())
    assert f"REGRESSION: {SERIES}" in gate_out
    assert "  change -5." in gate_out and "(worse)" in gate_out
    assert "  before bench/weekly-03" in gate_out and "  after  bench/weekly-04" in gate_out
    assert "1 unacknowledged regression(s) at the newest runs" in gate_out
    # Without --fail-on the same history is a report: exit 0.
    assert invoke("history", str(tmp_path), "--read-only")
    # JSON keeps stdout parseable; the regression is listed there too.
    result = CliRunner().invoke(
        app, ["history", str(tmp_path), "-o", "json", "--fail-on", "regression"]
    )
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    [regression] = doc["regressions"]
    assert regression["series"] == SERIES and regression["acknowledged"] is None


@pytest.mark.unit
def test_an_acknowledged_regression_passes_the_gate_and_is_shown_apart(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path)), 0, 60)
    # The change's run as the failing gate named it (40 or 41: it follows a run or two).
    write_acks(tmp_path / history.ACKS, "bench/weekly-040")
    code, out = gate(str(tmp_path))
    assert code == 0, out
    assert "acknowledged: mongod 7.0.15 is 5% slower on workload a, accepted (alice)" in out
    assert f"acknowledged regression: {SERIES}" in out
    assert "no regression (1 acknowledged) at the newest runs" in out
    assert "REGRESSION" not in out
    # The history's own table shows it apart too, with or without the gate.
    table = invoke("history", str(tmp_path), "--read-only")
    assert "acknowledged: mongod 7.0.15 is 5% slower" in table


@pytest.mark.unit
def test_acks_given_with_the_option_silence_only_the_change_they_name(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path / "archive")), 0, 60)
    write_acks(tmp_path / "acks.yaml", "bench/weekly-040")
    code, out = gate(str(tmp_path / "archive"), "--acks", str(tmp_path / "acks.yaml"))
    assert code == 0, out
    # An acknowledgement of a run far from the change silences nothing, and says so.
    write_acks(tmp_path / "acks.yaml", "bench/weekly-010")
    code, out = gate(str(tmp_path / "archive"), "--acks", str(tmp_path / "acks.yaml"))
    assert code == 3, out
    assert f"note: no change point at bench/weekly-010 in {SERIES}" in out


@pytest.mark.unit
def test_a_history_without_a_regression_passes_the_gate(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path)), 0, DROP_AT)  # before the drop: steady
    code, out = gate(str(tmp_path))
    assert code == 0, out
    assert "no regression at the newest runs" in out


@pytest.mark.unit
def test_bad_acknowledgements_are_one_line_and_exit_2(tmp_path: Path) -> None:
    archive_runs(open_root(str(tmp_path / "archive")), 0, 60)
    (tmp_path / "acks.yaml").write_text("acknowledgements:\n  - series: workload=a\n")
    code, out = gate(str(tmp_path / "archive"), "--acks", str(tmp_path / "acks.yaml"))
    assert code == 2
    assert out.strip().startswith("error: ") and len(out.strip().splitlines()) == 1
    assert "acknowledgements[0]: run is missing" in out
    code, out = gate(str(tmp_path / "archive"), "--acks", str(tmp_path / "missing.yaml"))
    assert (code, out.count("\n")) == (2, 1) and "missing.yaml" in out
    (tmp_path / "archive" / history.ACKS).parent.mkdir(exist_ok=True)
    (tmp_path / "archive" / history.ACKS).write_text("acknowledgements: [\n")
    code, out = gate(str(tmp_path / "archive"))
    assert (code, out.count("\n")) == (2, 1)
    assert out.startswith(f"error: {history.ACKS}: not YAML: ")


@pytest.mark.unit
def test_the_ci_examples_acknowledgements_parse() -> None:
    """The acknowledgements the documented workflow passes with --acks are well-formed."""
    from mongobench_cli import history as history_view

    repo = Path(__file__).resolve().parents[2]
    [entry] = history_view.read_acks(repo / "manifests" / "ci" / "acks.yaml")
    assert entry.series == SERIES and entry.by == "alice"
