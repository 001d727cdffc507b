"""Unit tier: history series built from run records, Otava's change points on known synthetic
series (on the workspace's numpy and scipy, which override the versions Otava pins), the
incremental pass agreeing with the full one, and the provenance diff at a change."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from finished_runs import T0, benchmark_run

from mongobench_results import history

pytestmark = pytest.mark.unit


def archived(name: str, day: int, **options: Any) -> history.HistoryRun:
    """A finished run (real documents and status) that started `day` days after T0."""
    built = benchmark_run(name, **options)
    built.run["status"]["startTime"] = (T0 + timedelta(days=day)).isoformat()
    return history.HistoryRun(f"bench/{name}", built.run["metadata"]["uid"], built.run)


def light_run(
    i: int, throughput: float, labels: dict[str, str] | None = None
) -> history.HistoryRun:
    """A minimal run object as run.json holds it: one measured repetition of workload a."""
    return history.HistoryRun(
        f"bench/r{i:03d}",
        f"uid-{i:03d}",
        {
            "metadata": {"name": f"r{i:03d}", "namespace": "bench"},
            "spec": {"labels": labels or {}},
            "status": {
                "startTime": (T0 + timedelta(hours=i)).isoformat(),
                "clusterSnapshot": {"topology": {"type": "ReplicaSet"}},
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
        },
    )


def shifted(n: int, at: dict[int, float], cv: float = 0.02, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    level, out = 1000.0, []
    for i in range(n):
        level *= at.get(i, 1.0)
        out.append(level * (1 + cv * rng.gauss(0, 1)))
    return out


def test_series_per_topology_workload_and_metric_in_time_order() -> None:
    # Archived out of order: the history orders by the runs' start.
    runs = [
        archived("late", 3, throughput={"a": 1100.0, "c": 2000.0}, seed=3),
        archived("early", 1, throughput={"a": 1000.0, "c": 2000.0}, seed=1),
        archived("sharded", 2, shards=2, throughput=900.0, seed=2),
    ]
    h = history.build(runs, metrics=["throughput", "p99"])
    rs = h.series["topology=ReplicaSet,workload=a,metric=throughput"]
    assert [p.run for p in rs.points] == ["bench/early", "bench/late"]
    assert rs.higher_is_better and rs.unit == "ops/s"
    # Each point is the mean of the run's valid trials (3 repetitions each).
    assert [p.trials for p in rs.points] == [3, 3]
    assert rs.points[0].value == pytest.approx(1000.0, rel=0.05)
    assert rs.points[1].value == pytest.approx(1100.0, rel=0.05)
    sharded = h.series["topology=Sharded,workload=a,metric=throughput"]
    assert [p.run for p in sharded.points] == ["bench/sharded"]
    # Latency series per operation, lower is better.
    p99 = h.series["topology=ReplicaSet,workload=a,metric=READ p99"]
    assert not p99.higher_is_better and p99.unit == "us"


def test_series_keys_split_by_label_and_dimension() -> None:
    runs = [
        light_run(0, 1000.0, {"cloud": "aws"}),
        light_run(1, 1000.0, {"cloud": "gcp"}),
        light_run(2, 1000.0, {}),
    ]
    h = history.build(runs, series_keys=["cloud", "version"], metrics=["throughput"])
    assert sorted(h.series) == [
        "topology=ReplicaSet,workload=a,metric=throughput,cloud=aws,version=none",
        "topology=ReplicaSet,workload=a,metric=throughput,cloud=gcp,version=none",
        "topology=ReplicaSet,workload=a,metric=throughput,cloud=none,version=none",
    ]
    with pytest.raises(history.HistoryError):
        history.build(runs, series_keys=["workload"])
    with pytest.raises(history.HistoryError):
        history.build(runs, metrics=["speed"])


def test_invalid_trials_stay_out_of_the_points() -> None:
    run = archived("judged", 1, workloads=("a",), invalid={"a#2": ["ClientBound"]})
    h = history.build([run], metrics=["throughput"])
    [s] = h.series.values()
    assert s.points[0].trials == 2


def test_a_five_percent_drop_is_found_where_it_happens() -> None:
    values = shifted(200, {120: 0.95})
    [(index, before, after, p)] = history.detect(values)
    assert abs(index - 120) <= 1  # E-Divisive places it by the data: within a run here
    assert after / before - 1 == pytest.approx(-0.05, abs=0.01)
    assert p < 0.001


def test_a_steady_series_has_no_change_point() -> None:
    assert history.detect(shifted(300, {}, seed=7)) == []
    assert history.detect([1000.0] * 50) == []  # no variance at all
    assert history.detect([1.0, 2.0]) == []  # too few points


def test_changes_name_the_runs_either_side_and_the_direction() -> None:
    values = shifted(120, {60: 0.95, 90: 1.0 / 0.95}, seed=3)
    h = history.build([light_run(i, v) for i, v in enumerate(values)], metrics=["throughput"])
    changes = h.changes()
    assert [(c.index, c.regression) for c in changes] == [(60, True), (90, False)]
    drop = changes[0]
    assert (drop.before.run, drop.after.run) == ("bench/r059", "bench/r060")
    assert drop.magnitude == pytest.approx(-0.05, abs=0.01)
    assert drop.provenance is None and drop.provenance_text() == "none recorded"


def test_the_cached_history_grows_one_run_at_a_time_like_a_fresh_one() -> None:
    values = shifted(400, {100: 0.95, 250: 1.05, 380: 0.95}, seed=11)
    runs = [light_run(i, v) for i, v in enumerate(values)]
    cached = history.build(runs[:300], metrics=["throughput"])
    for r in runs[300:]:  # one run at a time, through the cache's JSON, as an archive grows
        cached = history.History.from_json(cached.to_json())
        assert cached.add([r]) == ["topology=ReplicaSet,workload=a,metric=throughput"]
    fresh = history.build(runs, metrics=["throughput"])
    assert cached.series.keys() == fresh.series.keys()
    [s] = cached.series.values()
    assert [p.run for p in s.points] == [r.key for r in runs]
    found = [c.index for c in cached.changes()]
    assert found == [c.index for c in fresh.changes()]
    assert len(found) == 3
    assert all(abs(i - t) <= 3 for i, t in zip(found, (100, 250, 380), strict=True))
    assert len(cached.runs) == 400
    # A run seen before is not added twice.
    assert cached.add([runs[5]]) == []


def test_a_run_older_than_the_last_point_is_inserted_in_order() -> None:
    values = shifted(60, {})
    h = history.build([light_run(i, v) for i, v in enumerate(values) if i != 30])
    h.changes()
    h.add([light_run(30, values[30])])
    [s] = h.series.values()
    assert [p.run for p in s.points][29:32] == ["bench/r029", "bench/r030", "bench/r031"]


def test_provenance_changes_are_the_scalar_fields_that_differ() -> None:
    before = {
        "mongod": {"buildInfo": {"version": "7.0.14"}, "fcv": "7.0"},
        "nodes": [{"instanceType": "m5.large", "kernel": "6.1"}],
        "seeds": {"ycsb": 1},
    }
    after = {
        "mongod": {"buildInfo": {"version": "7.0.15"}, "fcv": "7.0"},
        "nodes": [{"instanceType": "m5.large", "kernel": "6.8"}],
        "operator": {"version": "0.2.0"},
        "seeds": {"ycsb": 1},
    }
    got = history.provenance_changes(before, after)
    assert got is not None
    assert [c.text() for c in got] == [
        'mongod.buildInfo.version: "7.0.14" -> "7.0.15"',
        'nodes[0].kernel: "6.1" -> "6.8"',
        'operator.version: (absent) -> "0.2.0"',
    ]
    assert history.provenance_changes(before, None) is None
    assert history.provenance_changes(before, before) == ()


def test_the_change_carries_the_provenance_diff_of_its_runs() -> None:
    values = shifted(80, {40: 0.95}, seed=5)
    h = history.build([light_run(i, v) for i, v in enumerate(values)], metrics=["throughput"])

    [at] = [c.index for c in h.changes()]

    def provenance(point: history.Point) -> dict[str, Any]:
        version = "7.0.15" if int(point.run[-3:]) >= at else "7.0.14"
        return {"mongod": {"version": version}, "run": point.run}

    [change] = h.changes(provenance)
    assert [c.path for c in change.provenance or ()] == ["mongod.version", "run"]
    assert "mongod.version" in change.provenance_text()


def test_grafana_rows_mark_the_first_point_after_a_change() -> None:
    values = shifted(80, {40: 0.95}, seed=5)
    h = history.build([light_run(i, v) for i, v in enumerate(values)], metrics=["throughput"])
    rows = history.grafana_rows(h, h.changes())
    assert len(rows) == 80
    marked = [r for r in rows if r["change"]]
    [change] = h.changes()
    assert [r["run"] for r in marked] == [change.after.run]
    assert marked[0]["regression"] is True and marked[0]["workload"] == "a"
    assert rows[0]["time"] < rows[1]["time"]
