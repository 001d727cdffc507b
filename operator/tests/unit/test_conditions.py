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


# Calls that name a condition type, a reason, a phase or an Event type, and which positional
# arguments are names.
_NAMED_ARGS = {
    "set_condition": (1, 3),
    "ResizeOutcome": (1,),
    "condition": (0, 2),  # orchestrate's self.condition(type, status, reason, message)
    "info": (0,),  # orchestrate's outcome.info(reason, message)
    "warn": (0,),
    "finish": (0,),  # orchestrate's finish(phase, message)
    "event": (1, 2),  # KubeApi.event(obj, type, reason, message)
}
_NAMED_KEYWORDS = ("reason", "phase", "type_")
# Keys of status dicts whose values are names.
_NAMED_KEYS = ("phase", "reason")
# Free text, not a name: a rolling step's reason ends up in a message.
_FREE_TEXT_CALLS = ("RollingStep",)


def _is_str(node: Any) -> bool:
    import ast

    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _strings(node: Any) -> list[Any]:
    """`node` if it is a string literal, or the string literals of a literal tuple/list/set."""
    import ast

    if _is_str(node):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e for e in node.elts if _is_str(e)]
    return []


def _reads_phase(node: Any) -> bool:
    """x.phase, x["phase"], x.get("phase"), or a variable named phase."""
    import ast

    if isinstance(node, ast.Attribute):
        return node.attr == "phase"
    if isinstance(node, ast.Name):
        return node.id == "phase"
    if isinstance(node, ast.Subscript):
        return _is_str(node.slice) and node.slice.value == "phase"  # type: ignore[attr-defined]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        return node.func.attr == "get" and _is_str(first) and first.value == "phase"  # type: ignore[union-attr]
    return False


def _named_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every condition type, reason, phase or Event type written as a string
    literal: as such an argument, keyword or status key, assigned to a phase, or compared with
    one."""
    import ast

    found: list[Any] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value if isinstance(func, ast.Attribute) else None
            if called in ("info", "warn") and isinstance(owner, ast.Name) and owner.id == "log":
                continue
            if called in _FREE_TEXT_CALLS:
                continue
            if isinstance(owner, ast.Attribute) and owner.attr == "on":  # kopf.on.event(...)
                continue
            found += [node.args[i] for i in _NAMED_ARGS.get(called, ()) if i < len(node.args)]
            found += [k.value for k in node.keywords if k.arg in _NAMED_KEYWORDS]
        elif isinstance(node, ast.Dict):
            found += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if _is_str(k) and k.value in _NAMED_KEYS
            ]  # type: ignore[union-attr]
        elif isinstance(node, ast.Assign):
            if any(_reads_phase(t) for t in node.targets):
                found.append(node.value)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_reads_phase(o) for o in operands):
                found += [o for o in operands if not _reads_phase(o)]
    return sorted({(s.lineno, s.value) for node in found for s in _strings(node)})


def test_the_literal_check_finds_what_it_forbids() -> None:
    """The check below can fail: each way of writing a name as a literal is found, constants
    and free text are not."""
    source = """
self.finish("Failed", message)
kube.event(body, "Warning", "StepFailed", message)
set_condition(conditions, "Ready", TRUE, "Provisioning")
self.mark(step, phase="Running")
status["phase"] = "Collecting"
new = {"phase": "Pending", "reason": cond.RUN_FAILED}
if run.get("phase") in ("Succeeded", "Failed"): pass
if cluster.phase == "Ready": pass
if phase != "Deleting": pass
self.finish(cond.RUN_FAILED, "the step failed")
log.info("Ready", extra={})
RollingStep("wait", reason="a member catches up")
if policy == "Delete": pass
"""
    assert sorted(value for _, value in _named_literals(source)) == sorted(
        [
            "Failed",
            "Warning",
            "StepFailed",
            "Ready",
            "Provisioning",
            "Running",
            "Collecting",
            "Pending",
            "Succeeded",
            "Failed",
            "Ready",
            "Deleting",
        ]
    )


def test_no_module_writes_a_condition_reason_or_phase_as_a_string_literal() -> None:
    from pathlib import Path

    import mongobench

    root = Path(mongobench.__file__).parent
    literal = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "k8s/conditions.py":  # where the constants are defined
            continue
        literal += [f"{rel}:{line} {value!r}" for line, value in _named_literals(path.read_text())]
    assert literal == []
