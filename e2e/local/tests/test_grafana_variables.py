"""Unit tier: the harness' model of what Grafana sends Prometheus (localplane.grafana), checked on
the committed dashboards and on Grafana's documented behaviour, with a fake label API."""

from __future__ import annotations

from typing import Any

import pytest

from localplane import grafana
from localplane.tools import REPO

pytestmark = pytest.mark.unit

BOARDS = grafana.load_boards(REPO / "dashboards" / "json")


def board(*variables: dict[str, Any]) -> dict[str, Any]:
    return {"templating": {"list": list(variables)}}


def query_var(name: str, query: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": "query", "query": query, **kw}


def fake_labels(values: dict[str, list[str]]) -> grafana.LabelValues:
    asked: list[tuple[str | None, str]] = []

    def label_values(match: str | None, label: str) -> list[str]:
        asked.append((match, label))
        return values.get(label, [])

    label_values.asked = asked  # type: ignore[attr-defined]
    return label_values


def test_an_opened_dashboard_takes_all_or_the_first_option_and_chains_the_queries() -> None:
    labels = fake_labels({"namespace": ["b", "a"], "run": ["r2", "r1"]})
    b = board(
        query_var("namespace", "label_values(up, namespace)", includeAll=True, multi=True,
                  allValue=".*"),
        query_var("run", 'label_values(up{namespace=~"$namespace"}, run)', sort=1),
    )  # fmt: skip
    got = grafana.resolve(b, labels)
    assert got["namespace"].rendered() == ".*"
    assert got["run"].rendered() == "r1"  # sorted, the first
    assert labels.asked[1] == ('up{namespace=~".*"}', "run")  # type: ignore[attr-defined]


def test_picks_must_be_offered_and_several_become_an_escaped_alternation() -> None:
    labels = fake_labels({"ns": ["a.b", "c"]})
    b = board(query_var("ns", "label_values(up, ns)", includeAll=True, multi=True))
    assert grafana.resolve(b, labels, {"ns": ["a.b", "c"]})["ns"].rendered() == "(a\\\\.b|c)"
    # All with no allValue: every option.
    assert grafana.resolve(b, labels, {"ns": "All"})["ns"].rendered() == "(a\\\\.b|c)"
    with pytest.raises(grafana.VariableError, match="offers"):
        grafana.resolve(b, labels, {"ns": "d"})
    with pytest.raises(grafana.VariableError, match="no variables"):
        grafana.resolve(b, labels, {"nope": "x"})


def test_a_single_value_variable_refuses_several_and_all() -> None:
    b = board(query_var("run", "label_values(up, run)"))
    labels = fake_labels({"run": ["x", "y"]})
    with pytest.raises(grafana.VariableError, match="one value"):
        grafana.resolve(b, labels, {"run": ["x", "y"]})
    with pytest.raises(grafana.VariableError, match="no All"):
        grafana.resolve(b, labels, {"run": "All"})
    with pytest.raises(grafana.VariableError, match="no value"):
        grafana.resolve(b, fake_labels({}))


def test_interpolation_knows_three_spellings_and_refuses_unknown_names() -> None:
    v = grafana.resolve(board({"name": "c", "type": "constant", "query": ".*"}), fake_labels({}))
    built = grafana.builtins(3 * 3600, 30)
    assert grafana.interpolate("a{x=~'$c',y=~'${c}',z=~'[[c]]'}[$__rate_interval]", v, built) == (
        "a{x=~'.*',y=~'.*',z=~'.*'}[2m]"
    )
    with pytest.raises(grafana.VariableError, match=r"\$d is no variable"):
        grafana.interpolate("a{x=~'$d'}", v)


def test_rate_interval_is_four_scrapes_at_least() -> None:
    # A 3 h range on ~1000 points: $__interval 11 s; a 30 s scrape makes $__rate_interval 2m.
    assert grafana.builtins(3 * 3600, 30) == {
        "__interval": "30s",
        "__rate_interval": "2m",
        "__range": "3h",
    }
    assert grafana.builtins(3600, 1)["__rate_interval"] == "5s"


def test_every_committed_dashboard_resolves_with_the_models_it_uses() -> None:
    """Every variable of every dashboard is a kind this model knows, and every query names only
    variables of its board: a new kind of variable fails here, not silently in the run test."""
    labels = fake_labels({})
    for name, b in BOARDS.items():
        everything = {label: ["x"] for label in _labels_asked(b)}
        resolved = grafana.resolve(b, fake_labels(everything))
        for t in grafana.targets(name, b):
            assert "$" not in grafana.interpolate(t.expr, resolved, grafana.builtins(10800, 30))
    assert labels.asked == []  # type: ignore[attr-defined]
    assert sum(len(grafana.targets(n, b)) for n, b in BOARDS.items()) >= 70


def _labels_asked(b: dict[str, Any]) -> list[str]:
    out = []
    for v in b["templating"]["list"]:
        if v["type"] == "query":
            m = grafana.LABEL_VALUES.match(v["query"])
            assert m, v["query"]
            out.append(m["label"])
    return out
