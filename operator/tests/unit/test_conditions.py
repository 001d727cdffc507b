"""Unit tier: standard conditions keep their transition time unless their status changes; every
condition and reason is a constant documented in mongobench.k8s.conditions."""

from typing import Any

import pytest

from mongobench.k8s.conditions import get_condition, is_true, set_condition

pytestmark = pytest.mark.unit


def test_new_condition_is_added_with_transition_time() -> None:
    out = set_condition(
        [], "Ready", "False", "Provisioning", "pods starting", generation=2, now="T1"
    )
    assert out == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Provisioning",
            "message": "pods starting",
            "lastTransitionTime": "T1",
            "observedGeneration": 2,
        }
    ]


def test_same_status_keeps_transition_time_but_updates_reason() -> None:
    first = set_condition([], "Ready", "False", "Provisioning", now="T1")
    second = set_condition(first, "Ready", "False", "Initializing", "rs0 initiating", now="T2")
    assert second[0]["lastTransitionTime"] == "T1"
    assert second[0]["reason"] == "Initializing"


def test_status_change_moves_transition_time_and_keeps_other_conditions() -> None:
    conditions = set_condition([], "Provisioned", "True", "PodsReady", now="T0")
    conditions = set_condition(conditions, "Ready", "False", "Initializing", now="T1")
    conditions = set_condition(conditions, "Ready", "True", "Ready", now="T2")
    assert [c["type"] for c in conditions] == ["Provisioned", "Ready"]
    assert get_condition(conditions, "Ready")["lastTransitionTime"] == "T2"  # type: ignore[index]
    assert is_true(conditions, "Ready")
    assert not is_true(conditions, "Missing")


# --- one documented place for names ------------------------------------------------------------


def _constants() -> dict[str, str]:
    from mongobench.k8s import conditions

    return {
        name: value
        for name, value in vars(conditions).items()
        if name.isupper()
        and isinstance(value, str)
        and name not in ("TRUE", "FALSE", "UNKNOWN", "NORMAL", "WARNING")
    }


def test_every_condition_and_reason_constant_is_documented_and_nothing_else_is() -> None:
    from mongobench.k8s.conditions import CONDITIONS, EVENT_REASONS, PHASES

    documented = {d.type for d in CONDITIONS}
    documented |= {reason for d in CONDITIONS for reason in d.reasons}
    documented |= set(EVENT_REASONS)
    documented |= {phase for phases in PHASES.values() for phase in phases}
    assert set(_constants().values()) == documented
    for doc in CONDITIONS:
        assert doc.meaning and all(doc.reasons.values()), doc.type
        assert set(doc.kinds) <= {"MongoCluster", "BenchmarkRun", "BenchmarkExperiment"}
    assert all(EVENT_REASONS.values())
    assert all(all(phases.values()) for phases in PHASES.values())


def test_the_crds_name_only_documented_condition_types() -> None:
    """The status.conditions descriptions (kubectl explain) list types that exist."""
    import re
    from pathlib import Path

    import yaml

    from mongobench.k8s.conditions import CONDITIONS

    crds = Path(__file__).resolve().parents[3] / "crds"
    for kind, name in (
        ("MongoCluster", "mongobench.io_mongoclusters.yaml"),
        ("BenchmarkRun", "mongobench.io_benchmarkruns.yaml"),
        ("BenchmarkExperiment", "mongobench.io_benchmarkexperiments.yaml"),
    ):
        types = {d.type for d in CONDITIONS if kind in d.kinds}
        crd = yaml.safe_load((crds / name).read_text())
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        text = status["properties"]["conditions"]["description"]
        listed = set(re.findall(r"\b[A-Z][A-Za-z]+\b", text.split("(", 1)[1])) - {"True"}
        assert listed and listed <= types, (name, listed - types)


def test_a_refused_spec_stops_work_until_its_generation_changes() -> None:
    from mongobench.k8s.conditions import INVALID_SPEC, READY, refused

    status = {"conditions": set_condition([], READY, "False", INVALID_SPEC, "x", generation=3)}
    assert refused(status, READY, 3)
    assert not refused(status, READY, 4)  # the user changed the spec: try again
    failed = {"conditions": set_condition([], READY, "False", "Failed", "x", generation=3)}
    assert not refused(failed, READY, 3)  # MongoDB's refusal: the wiring keeps retrying
    assert not refused({}, READY, 3)


# Calls that name a condition type or a reason, and which arguments are names.
_NAMED_ARGS = {
    "set_condition": (1, 3),
    "report_refusal": (2, 3),
    "ResizeOutcome": (1,),
    "condition": (0, 2),  # orchestrate's self.condition(type, status, reason, message)
    "info": (0,),  # orchestrate's outcome.info(reason, message)
    "warn": (0,),
}
# The BenchmarkRun state machine is being refactored by its owner; until then its literals
# are checked to be documented names rather than constants.
LITERALS_ALLOWED: set[str] = set()


def _named_literals(path: Any) -> list[tuple[int, str]]:
    import ast

    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = func.value if isinstance(func, ast.Attribute) else None
        if called in ("info", "warn") and isinstance(owner, ast.Name) and owner.id == "log":
            continue
        args = [node.args[i] for i in _NAMED_ARGS.get(called, ()) if i < len(node.args)]
        args += [k.value for k in node.keywords if k.arg == "reason"]
        out += [
            (a.lineno, a.value)
            for a in args
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
    return out


def test_no_module_writes_a_condition_or_reason_as_a_string_literal() -> None:
    from pathlib import Path

    import mongobench
    from mongobench.k8s.conditions import CONDITIONS, EVENT_REASONS

    root = Path(mongobench.__file__).parent
    documented = {d.type for d in CONDITIONS} | set(EVENT_REASONS)
    documented |= {r for d in CONDITIONS for r in d.reasons}
    literal, undocumented = [], []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ("k8s/conditions.py", "mongo/plan.py"):  # plan: RollingStep's free-text reason
            continue
        for line, value in _named_literals(path):
            if rel not in LITERALS_ALLOWED:
                literal.append(f"{rel}:{line} {value!r}")
            elif value not in documented:
                undocumented.append(f"{rel}:{line} {value!r}")
    assert literal == []
    assert undocumented == []
