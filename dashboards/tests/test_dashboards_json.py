"""Unit tier: the committed dashboard JSON is what the code generates, decodes through the SDK's
typed models without losing a key, and every panel queries the dashboard's Prometheus variable.

What this proves: the JSON is well-formed for grafana-foundation-sdk's schema (the Python
models generated from Grafana's own schemas). It does not run Grafana; the PromQL is run against
a real Prometheus by e2e/local/tests/test_dashboards.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.cog.runtime import UnknownDataquery
from grafana_foundation_sdk.models import prometheus
from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel

pytestmark = pytest.mark.unit

DASHBOARDS = Path(__file__).resolve().parents[1]
REPO = DASHBOARDS.parent
JSON_DIR = DASHBOARDS / "json"
CHART_DIR = REPO / "charts" / "mongobench" / "dashboards"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# uids are how Grafana links to and replaces a dashboard: changing one orphans the old copy.
UIDS = {
    "benchmark-comparison.json": "mongobench-benchmark-comparison",
    "benchmark-clients.json": "mongobench-benchmark-clients",
    "operator.json": "mongobench-operator",
    "nodes-cpu.json": "mongobench-nodes-cpu",
    "mongodb-cluster.json": "mongobench-mongodb-cluster",
    "benchmark-run.json": "mongobench-benchmark-run",
}
# Keys of a Prometheus annotation query that Grafana's Prometheus data source reads but the SDK's
# AnnotationQuery model does not define (generate.PromAnnotation adds them): the only keys the
# round trip may lose.
PROMETHEUS_ANNOTATION_KEYS = {"titleFormat", "textFormat", "tagKeys", "step"}
BUILTINS = {"__rate_interval", "__interval", "__range"}


def load_generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mongobench_dashboards", DASHBOARDS / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


generate = load_generate()


def committed() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(JSON_DIR.glob("*.json"))}


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every non-row panel, including those inside collapsed rows."""
    out: list[dict[str, Any]] = []
    for p in board.get("panels", []):
        if p["type"] == "row":
            out += p.get("panels", [])
        else:
            out.append(p)
    return out


def test_committed_json_is_what_the_code_generates() -> None:
    files = generate.generate()
    assert set(files) == set(UIDS)
    for folder in (JSON_DIR, CHART_DIR):
        assert {p.name for p in folder.glob("*.json")} == set(files), folder
        for name, text in files.items():
            assert (folder / name).read_text() == text, f"{folder / name}: run generate.py"
    assert generate.main(["--check"]) == 0


def test_generation_is_deterministic() -> None:
    assert generate.generate() == generate.generate()


def test_check_fails_on_a_hand_edited_missing_or_extra_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [tmp_path / "json", tmp_path / "chart"]
    assert generate.main([], dirs=dirs) == 0
    assert generate.main(["--check"], dirs=dirs) == 0

    edited = dirs[1] / "operator.json"
    edited.write_text(edited.read_text().replace("Reconciles/s", "Reconciles per second", 1))
    assert generate.main(["--check"], dirs=dirs) == 1
    assert "operator.json" in capsys.readouterr().err
    assert generate.main([], dirs=dirs) == 0  # regenerating repairs it
    assert generate.main(["--check"], dirs=dirs) == 0

    (dirs[0] / "nodes-cpu.json").unlink()
    shutil.copy(dirs[0] / "operator.json", dirs[0] / "old.json")
    assert generate.main(["--check"], dirs=dirs) == 1
    err = capsys.readouterr().err
    assert "nodes-cpu.json" in err and "old.json: not generated" in err
    assert generate.main([], dirs=dirs) == 0
    assert sorted(p.name for p in dirs[0].iterdir()) == sorted(UIDS)


def test_committed_form_is_sorted_and_indented() -> None:
    for name, board in committed().items():
        text = (JSON_DIR / name).read_text()
        assert text == json.dumps(board, sort_keys=True, indent=2) + "\n", name


@pytest.mark.parametrize("name", sorted(UIDS))
def test_round_trips_through_the_sdk_models(name: str) -> None:
    """from_json drops keys its schema does not know, so equality after the round trip means
    every key is one the SDK's models (generated from Grafana's schemas) define."""
    register_default_plugins()  # typed decoding of panel options and Prometheus queries
    raw = committed()[name]
    model = Dashboard.from_json(raw)
    expected = json.loads(json.dumps(raw))
    for a in expected.get("annotations", {}).get("list", []):
        for key in PROMETHEUS_ANNOTATION_KEYS:
            a.pop(key, None)
    assert json.loads(json.dumps(model, cls=JSONEncoder)) == expected
    for p in model.panels or []:
        if isinstance(p, RowPanel):
            continue
        assert isinstance(p, Panel)
        # Options decoded into the panel plugin's model, not kept as an opaque dict.
        assert not isinstance(p.options, dict | type(None)), (name, p.title)
        for t in p.targets or []:
            assert isinstance(t, prometheus.Dataquery), (name, p.title, t)
            assert not isinstance(t, UnknownDataquery)


def test_round_trip_would_catch_an_unknown_key() -> None:
    register_default_plugins()
    raw = committed()["operator.json"]
    raw["panels"][0]["targets"][0]["exprr"] = raw["panels"][0]["targets"][0].pop("expr")
    assert json.loads(json.dumps(Dashboard.from_json(raw), cls=JSONEncoder)) != raw


def test_uids_are_unique_and_stable() -> None:
    boards = committed()
    assert {name: b["uid"] for name, b in boards.items()} == UIDS
    assert len(set(UIDS.values())) == len(UIDS)
    for b in boards.values():
        assert 8 <= len(b["uid"]) <= 40  # Grafana's limit
        assert "mongobench" in b["tags"]
        ids = [p["id"] for p in b["panels"]] + [
            q["id"] for p in b["panels"] if p["type"] == "row" for q in p.get("panels", [])
        ]
        assert len(ids) == len(set(ids)), b["uid"]


@pytest.mark.parametrize("name", sorted(UIDS))
def test_every_panel_queries_the_datasource_variable(name: str) -> None:
    board = committed()[name]
    found = panels(board)
    assert found
    for p in found:
        assert p["datasource"] == DATASOURCE, p["title"]
        assert p.get("targets"), f"{p['title']}: no target"
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == DATASOURCE, p["title"]
            assert t["expr"].strip(), p["title"]


@pytest.mark.parametrize("name", sorted(UIDS))
def test_variables_are_defined_and_filter_with_regex(name: str) -> None:
    board = committed()[name]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    ds = variables["datasource"]
    assert (ds["type"], ds["query"]) == ("datasource", "prometheus")
    for v in variables.values():
        if v["type"] == "query":
            assert v["datasource"] == DATASOURCE, v["name"]
            assert v["query"].startswith("label_values("), v["name"]
            if v.get("includeAll"):
                assert v["allValue"] == ".*", v["name"]  # All also matches a missing label
    exprs = [t["expr"] for p in panels(board) for t in p["targets"]]
    exprs += [v["query"] for v in variables.values() if v["type"] == "query"]
    exprs += [a["expr"] for a in board.get("annotations", {}).get("list", [])]
    for expr in exprs:
        for var in re.findall(r"\$\{?(\w+)", expr):
            assert var in variables or var in BUILTINS, (var, expr)
        # A multi-value variable expands to a|b: only a regex matcher accepts it.
        for var in re.findall(r'"\$\{?(\w+)\}?"', expr):
            assert re.search(rf'=~"\${{?{var}\b', expr), (var, expr)
            assert not re.search(rf'(?<![=!])="\${{?{var}\b', expr), (var, expr)


@pytest.mark.parametrize("name", sorted(UIDS))
def test_panels_fit_the_grid_without_overlapping(name: str) -> None:
    cells: dict[tuple[int, int], str] = {}
    for p in committed()[name]["panels"]:
        g = p["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, (p["title"], cells.get((x, y)))
                cells[(x, y)] = p["title"]


def test_benchmark_run_annotates_each_step_by_name() -> None:
    (steps,) = committed()["benchmark-run.json"]["annotations"]["list"]
    assert steps["datasource"] == DATASOURCE
    assert "mongobench_run_step_running" in steps["expr"]
    assert steps["titleFormat"] == "{{step}}"
    # Every label a format names survives the aggregation of the expression.
    by = re.search(r"max by \(([^)]*)\)", steps["expr"])
    assert by is not None
    kept = set(by[1].replace(" ", "").split(","))
    for fmt in (steps["titleFormat"], steps["textFormat"]):
        assert set(re.findall(r"\{\{(\w+)\}\}", fmt)) <= kept, fmt
    assert set(steps["tagKeys"].split(",")) <= kept
