"""Unit tier: a BenchmarkExperiment that names a history (spec.history) ends with condition
Regressed, judged against runs archived in a folder (the archive writer, the operator's
archive settings) and its own runs from an in-memory API (fake_kube)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_kube import FakeKube, unit_clock

from mongobench.config import OperatorConfig
from mongobench.experiment.act import reconcile
from mongobench.k8s import conditions as cond
from mongobench.k8s.conditions import get_condition
from mongobench_archive import open_root

pytestmark = pytest.mark.unit

NS = "ns"
KIND = "BenchmarkExperiment"
T0 = datetime(2026, 6, 1, tzinfo=UTC)
HISTORY = 60


def rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_status(throughput: float, start: datetime) -> dict[str, Any]:
    return {
        "phase": cond.RUN_SUCCEEDED,
        "startTime": rfc3339(start),
        "clusterSnapshot": {"topology": {"type": "ReplicaSet", "replicaSet": {"members": 3}}},
        "steps": [
            {
                "index": 2,
                "kind": "run",
                "workload": "a",
                "repetition": 1,
                "phase": cond.STEP_SUCCEEDED,
                "result": {"throughput": throughput, "operations": {}},
            }
        ],
    }


def archive_history(folder: Path, drop_at: int = HISTORY) -> None:
    """60 earlier runs of the study at about 1000 ops/s (2% noise; 950 from run `drop_at` on),
    archived as the operator archives runs (the archive writer, manifest last)."""
    rng = random.Random(3)
    root = open_root(str(folder / "lab"))
    for i in range(HISTORY):
        level = 950 if i >= drop_at else 1000
        obj = {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": {"namespace": NS, "name": f"nightly-{i:03d}", "uid": f"old-{i:03d}"},
            "spec": {},
            "status": run_status(level * (1 + 0.02 * rng.gauss(0, 1)), T0 + timedelta(days=i)),
        }
        root.writer(NS, obj["metadata"]["name"], obj["metadata"]["uid"]).put_manifest(
            obj, cond.RUN_SUCCEEDED, True
        )


@pytest.fixture
def folder_default(tmp_path: Path) -> Iterator[Path]:
    """The operator's default archive is a folder (development), made current for the test."""
    before = OperatorConfig.current()
    OperatorConfig(archive_url=str(tmp_path)).make_current()
    try:
        yield tmp_path
    finally:
        before.make_current()


def experiment(**history: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": KIND,
        "metadata": {"namespace": NS, "name": "x"},
        "spec": {
            "cluster": {"version": "7.0.14", "topology": {"type": "ReplicaSet"}},
            "run": {"workloads": [{"name": "a"}]},
            "dimensions": [
                {"name": "threads", "target": "run", "field": "run.threads", "values": [1, 4]}
            ],
            "repetitions": 3,
            "history": {"archive": {"prefix": "lab"}, **history},
        },
    }


def run_to_the_end(kube: FakeKube, throughput: float) -> dict[str, Any]:
    """Advance the experiment, each run succeeding at `throughput` (2% noise) after the
    history's last run, until it ends; its final status."""
    rng = random.Random(9)
    day = HISTORY
    for _ in range(60):
        outcome = reconcile.advance(kube, NS, "x", unit_clock(), OperatorConfig.current())
        if outcome is None or outcome.phase != cond.RUN_RUNNING:
            break
        for (kind, _, _name), obj in sorted(kube.objects.items()):
            if kind == "MongoCluster" and not obj.get("status"):
                obj["status"] = {"phase": cond.PHASE_READY}
            if kind == "BenchmarkRun" and not obj.get("status"):
                start = T0 + timedelta(days=day)
                day += 1
                obj["status"] = run_status(throughput * (1 + 0.02 * rng.gauss(0, 1)), start)
    found = kube.get(KIND, NS, "x")
    assert found is not None and found["status"]["phase"] == cond.RUN_SUCCEEDED
    return dict(found["status"])


def test_an_experiment_five_percent_slower_than_its_history_is_regressed(
    folder_default: Path,
) -> None:
    archive_history(folder_default)
    kube = FakeKube(experiment())
    final = run_to_the_end(kube, 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.TRUE, cond.REGRESSION_FOUND)
    series = "topology=ReplicaSet,workload=a,metric=throughput"
    assert series in regressed["message"]
    [change] = final["history"]["regressed"]
    assert change["series"] == series
    # 6 runs after the change, at 2% noise: the change of the mean is near the 5% injected.
    assert -0.08 < change["magnitude"] < -0.025
    assert change["runBefore"] == f"{NS}/nightly-{HISTORY - 1:03d}"
    mine = {f"{NS}/{n}" for kind, _, n in kube.objects if kind == "BenchmarkRun"}
    assert len(mine) == 6 and change["runAfter"] in mine
    assert final["history"]["runs"] == HISTORY + 6
    # Read only: the operator wrote nothing into the history's archive.
    assert not (folder_default / "lab" / "history").exists()


def test_an_experiment_like_its_history_is_not_regressed(folder_default: Path) -> None:
    archive_history(folder_default)
    final = run_to_the_end(FakeKube(experiment()), 1000.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.FALSE, cond.NO_REGRESSION)
    assert final["history"]["regressed"] == []


def test_a_faster_experiment_is_a_change_but_not_a_regression(folder_default: Path) -> None:
    archive_history(folder_default)
    final = run_to_the_end(FakeKube(experiment()), 1050.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None and regressed["status"] == cond.FALSE


def test_an_unreadable_history_leaves_the_condition_unknown(folder_default: Path) -> None:
    # Nothing archived under the prefix: the history cannot be read; the experiment still ends.
    final = run_to_the_end(FakeKube(experiment()), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.UNKNOWN, cond.HISTORY_UNAVAILABLE)
    assert "lab: no such folder" in regressed["message"]


def test_without_spec_history_there_is_no_regressed_condition(folder_default: Path) -> None:
    body = experiment()
    del body["spec"]["history"]
    final = run_to_the_end(FakeKube(body), 950.0)
    assert get_condition(final["conditions"], cond.REGRESSED) is None
    assert "history" not in final


# --- acknowledgements: spec.history.acknowledgements and the archive's history/acks.yaml --------

SERIES = "topology=ReplicaSet,workload=a,metric=throughput"
REASON = "the 7.0.15 upgrade costs 5% on workload a; accepted"


def ack(run: str) -> dict[str, str]:
    return {"series": SERIES, "run": run, "reason": REASON, "by": "alice"}


def first_run_after_the_change(folder: Path) -> str:
    """The run the change is placed at, as an experiment without acknowledgements finds it."""
    final = run_to_the_end(FakeKube(experiment()), 950.0)
    [change] = final["history"]["regressed"]
    return str(change["runAfter"])


def test_an_acknowledged_regression_is_named_apart_and_not_true(folder_default: Path) -> None:
    archive_history(folder_default)
    run = first_run_after_the_change(folder_default)
    # The same experiment created again with the change acknowledged in its spec.
    final = run_to_the_end(FakeKube(experiment(acknowledgements=[ack(run)])), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.FALSE, cond.ACKNOWLEDGED)
    assert f"{SERIES}: -" in regressed["message"]
    assert f"acknowledged: {REASON} (alice)" in regressed["message"]
    assert final["history"]["regressed"] == []
    [accepted] = final["history"]["acknowledged"]
    assert (accepted["series"], accepted["runAfter"]) == (SERIES, run)
    assert (accepted["reason"], accepted["by"]) == (REASON, "alice")


def test_the_archives_acknowledgements_count_as_the_specs(folder_default: Path) -> None:
    archive_history(folder_default)
    run = first_run_after_the_change(folder_default)
    acks = folder_default / "lab" / "history" / "acks.yaml"
    acks.parent.mkdir(parents=True)
    acks.write_text(yaml.safe_dump({"acknowledgements": [ack(run)]}))
    final = run_to_the_end(FakeKube(experiment()), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None and regressed["reason"] == cond.ACKNOWLEDGED
    # A bad file is the condition's Unknown, naming the file and the entry.
    acks.write_text("acknowledgements:\n  - {series: nonsense, run: r, reason: x, by: y}\n")
    final = run_to_the_end(FakeKube(experiment()), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.UNKNOWN, cond.HISTORY_UNAVAILABLE)
    assert "history/acks.yaml: acknowledgements[0]: series 'nonsense'" in regressed["message"]


def test_an_acknowledgement_of_another_run_silences_nothing(folder_default: Path) -> None:
    archive_history(folder_default)
    final = run_to_the_end(FakeKube(experiment(acknowledgements=[ack(f"{NS}/nightly-010")])), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None
    assert (regressed["status"], regressed["reason"]) == (cond.TRUE, cond.REGRESSION_FOUND)
    assert final["history"]["acknowledged"] == []


def test_runs_after_an_earlier_regression_are_regressed_until_it_is_acknowledged(
    folder_default: Path,
) -> None:
    """The history dropped 5% at nightly-030 and stayed there; this experiment, as slow as the
    history's newest runs, is no change point itself but still sits after the drop."""
    archive_history(folder_default, drop_at=30)
    final = run_to_the_end(FakeKube(experiment()), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None and regressed["status"] == cond.TRUE
    [change] = final["history"]["regressed"]
    assert change["runAfter"] in {f"{NS}/nightly-{i:03d}" for i in (29, 30, 31)}
    final = run_to_the_end(FakeKube(experiment(acknowledgements=[ack(change["runAfter"])])), 950.0)
    regressed = get_condition(final["conditions"], cond.REGRESSED)
    assert regressed is not None and regressed["reason"] == cond.ACKNOWLEDGED
