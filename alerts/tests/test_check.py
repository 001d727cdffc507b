"""Unit tier: alerts/check.py's completeness check fails an alert without a runbook, a severity,
or a promtool case where it fires and one where it stays quiet (promtool itself runs in
`make test-rules`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.unit


def load_check() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "check.py"
    spec = importlib.util.spec_from_file_location("alerts_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = load_check()
ANNOTATIONS = {"summary": "s", "description": "d", "runbook": "r"}


def rule(name: str, **changes: Any) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": "up == 0",
        "labels": {"severity": "warning"},
        "annotations": dict(ANNOTATIONS),
        **changes,
    }


def cases(*pairs: tuple[str, bool]) -> list[dict[str, Any]]:
    tests = [
        {"alertname": name, "exp_alerts": [{"exp_labels": {}}] if firing else []}
        for name, firing in pairs
    ]
    return [{"tests": [{"alert_rule_test": tests}]}]


def test_complete_rules_pass() -> None:
    groups = [{"name": "g", "rules": [rule("A"), {"record": "x", "expr": "up"}]}]
    assert check.problems(groups, cases(("A", True), ("A", False))) == []


def test_each_gap_is_named() -> None:
    groups = [
        {
            "name": "g",
            "rules": [
                rule("A", annotations={"summary": "s", "description": "d"}),
                rule("B", labels={}),
                rule("B"),
            ],
        }
    ]
    found = check.problems(groups, cases(("A", True), ("B", False), ("C", True)))
    assert found == [
        "B: defined more than once",
        "A: no runbook annotation",
        "A: no promtool case where it is quiet",
        "B: no severity label",
        "B: no promtool case where it is firing",
        "B: no promtool case where it is firing",
        "C: tested but no such alert",
    ]


def test_promtool_copy_drops_only_the_static_runbook() -> None:
    original = rule("A")
    (copied,) = check.for_promtool([{"name": "g", "rules": [original]}])["groups"][0]["rules"]
    assert copied["annotations"] == {"summary": "s", "description": "d"}
    assert original["annotations"]["runbook"] == "r"  # the input is untouched
