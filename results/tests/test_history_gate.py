"""Unit tier: the gate over a history's change points (mongobench_results.history.verdict):
which regressions the newest runs still sit after, per metric's direction, and the
acknowledgements that silence exactly the change they name."""

from __future__ import annotations

import re

import pytest
from test_history import light_run, shifted

from mongobench_results import history

pytestmark = pytest.mark.unit

SERIES = "topology=ReplicaSet,workload=a,metric=throughput"


def changes_of(at: dict[int, float], n: int = 120, seed: int = 3) -> list[history.Change]:
    values = shifted(n, at, seed=seed)
    h = history.build([light_run(i, v) for i, v in enumerate(values)], metrics=["throughput"])
    return h.changes()


def ack(run: str, series: str = SERIES) -> history.Ack:
    return history.Ack(series, run, "7.0.15 is slower; accepted", "alice")


def test_a_drop_the_newest_runs_sit_after_stands_until_acknowledged() -> None:
    [drop] = changes_of({60: 0.95})
    assert drop.after.run == "bench/r060"
    v = history.verdict([drop], [])
    assert v.standing == [drop] and v.acknowledged == []
    v = history.verdict([drop], [ack("bench/r060")])
    assert v.standing == [] and v.acknowledged == [(drop, ack("bench/r060"))]
    assert v.ack_of(drop) == ack("bench/r060") and v.unmatched == []
    # The uid names the run as well.
    assert history.verdict([drop], [ack("uid-060")]).standing == []


def test_an_acknowledgement_follows_its_change_a_run_or_two_but_no_further() -> None:
    [drop] = changes_of({60: 0.95})
    assert history.verdict([drop], [ack("bench/r061")]).standing == []
    far = history.verdict([drop], [ack("bench/r057")])
    assert far.standing == [drop] and far.unmatched == [ack("bench/r057")]
    other_series = ack("bench/r060", SERIES.replace("workload=a", "workload=b"))
    assert history.verdict([drop], [other_series]).standing == [drop]


def test_an_acknowledgement_silences_that_change_not_a_later_one() -> None:
    first, second = changes_of({40: 0.90, 80: 0.90})
    assert (first.index, second.index) == (40, 80)
    v = history.verdict([first, second], [ack("bench/r040")])
    assert v.standing == [second]
    assert [c for c, _ in v.acknowledged] == [first]


def test_a_regression_won_back_by_a_later_change_no_longer_stands() -> None:
    drop, back = changes_of({60: 0.95, 90: 1.0 / 0.95})
    assert (drop.regression, back.regression) == (True, False)
    assert history.verdict([drop, back], []).standing == []
    # Won back by less than half: it still stands.
    drop, partly = changes_of({40: 0.90, 80: 1.03}, n=160)
    assert history.verdict([drop, partly], []).standing == [drop]


def test_faster_is_no_regression_and_higher_latency_is() -> None:
    [up] = changes_of({60: 1.05})
    assert history.verdict([up], []).standing == []
    latency = history.Series(
        (("topology", "ReplicaSet"), ("workload", "a"), ("metric", "READ p99")),
        "ms",
        higher_is_better=False,
        points=[history.Point(f"bench/r{i}", f"u{i}", f"t{i}", 1.0, 1) for i in range(10)],
    )
    slower = history.Change(latency, 5, mean_before=2.0, mean_after=2.4, pvalue=1e-5)
    faster = history.Change(latency, 5, mean_before=2.4, mean_after=2.0, pvalue=1e-5)
    assert history.verdict([slower], []).standing == [slower]
    assert history.verdict([faster], []).standing == []


def test_acknowledgements_parse_from_a_file_or_a_list_and_bad_ones_say_where() -> None:
    entry = {"series": SERIES, "run": "bench/r060", "reason": "accepted", "by": "alice"}
    assert history.parse_acks({"acknowledgements": [entry]}, "f") == [
        history.Ack(SERIES, "bench/r060", "accepted", "alice")
    ]
    assert history.parse_acks([entry], "spec") == history.parse_acks(
        {"acknowledgements": [entry]}, "f"
    )
    assert history.parse_acks(None, "f") == [] and history.parse_acks({}, "f") == []
    bad = [
        ({"acks": []}, "f: the only top-level key is acknowledgements"),
        ({"acknowledgements": {"a": 1}}, "f: acknowledgements must be a list"),
        ([{**entry, "reason": " "}], "f: acknowledgements[0]: reason is missing"),
        ([entry, {**entry, "who": "x"}], "f: acknowledgements[1]: unknown field 'who'"),
        ([{**entry, "series": "workload=a"}], "is not a series id"),
        ([{**entry, "series": "topology=R,metric=x,workload=a"}], "is not a series id"),
    ]
    for doc, message in bad:
        with pytest.raises(history.HistoryError, match=re.escape(message)):
            history.parse_acks(doc, "f")


def test_a_run_name_runs_share_names_no_change_and_the_uid_does() -> None:
    """An experiment's runs keep their names night after night: its name is ambiguous."""
    values = shifted(120, {60: 0.95}, seed=3)
    runs = [light_run(i, v) for i, v in enumerate(values)]
    for hr in runs:
        hr.run["metadata"]["name"] = "nightly-c0-r1"
    named = [history.HistoryRun("bench/nightly-c0-r1", hr.uid, hr.run) for hr in runs]
    [drop] = history.build(named, metrics=["throughput"]).changes()
    assert history.ack_run(drop) == "uid-060"
    assert history.verdict([drop], [ack("bench/nightly-c0-r1")]).standing == [drop]
    assert history.verdict([drop], [ack("uid-060")]).standing == []
    [unique] = changes_of({60: 0.95})
    assert history.ack_run(unique) == "bench/r060"
