"""The chart's alerts, checked as shipped: render, `promtool check rules`, `promtool test rules`.

    make test-rules     (PYTHONPATH=e2e/local .venv/bin/python alerts/check.py)

Renders charts/mongobench/templates/prometheusrules.yaml with `helm template` (alerts enabled,
default thresholds), writes its rule groups as a Prometheus rule file, and runs promtool on it
and on every alerts/tests/*.test.yaml. It also fails when an alert lacks a runbook, a summary or
a description, or lacks a promtool case where it fires and one where it stays quiet.

The promtool copy of the rules leaves out the `runbook` annotation: promtool compares every
annotation of a firing alert, and the paragraph is static text (summary and description, which
are templated, are compared).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from localplane.tools import binary  # the pinned helm that hack/build-tools.sh builds

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CHART = REPO / "charts" / "mongobench"
TEMPLATE = "templates/prometheusrules.yaml"
TESTS = HERE / "tests"
REQUIRED_ANNOTATIONS = ("summary", "description", "runbook")


def render(helm: str, *values: str) -> dict[str, Any]:
    """The PrometheusRule as `helm template` renders it (alerts enabled, plus ``values``)."""
    cmd = [helm, "template", "mb", str(CHART), "--show-only", TEMPLATE]
    for v in ("alerts.enabled=true", *values):
        cmd += ["--set", v]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"helm template failed:\n{out.stderr}")
    doc: dict[str, Any] = yaml.safe_load(out.stdout)
    return doc


def alerts(groups: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for g in groups for r in g["rules"] if "alert" in r]


def for_promtool(groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A Prometheus rule file of the groups, without the static runbook annotation."""

    def strip(rule: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(rule)
        if "annotations" in out:
            out["annotations"] = {k: v for k, v in out["annotations"].items() if k != "runbook"}
        return out

    return {"groups": [{**g, "rules": [strip(r) for r in g["rules"]]} for g in groups]}


def problems(groups: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the rules or their tests lack (pure): annotations, a firing and a quiet case."""
    out: list[str] = []
    cases: dict[str, dict[str, int]] = {}
    for test_file in tests:
        for test in test_file.get("tests") or []:
            for case in test.get("alert_rule_test") or []:
                kind = "firing" if case.get("exp_alerts") else "quiet"
                counts = cases.setdefault(case["alertname"], {"firing": 0, "quiet": 0})
                counts[kind] += 1
    names = [str(r["alert"]) for r in alerts(groups)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"{name}: defined more than once")
    for rule in alerts(groups):
        name = str(rule["alert"])
        annotations = rule.get("annotations") or {}
        out += [
            f"{name}: no {a} annotation" for a in REQUIRED_ANNOTATIONS if not annotations.get(a)
        ]
        if "severity" not in (rule.get("labels") or {}):
            out.append(f"{name}: no severity label")
        for kind, n in cases.get(name, {"firing": 0, "quiet": 0}).items():
            if n == 0:
                out.append(f"{name}: no promtool case where it is {kind}")
    out += [f"{n}: tested but no such alert" for n in sorted(set(cases) - set(names))]
    return out


def promtool(*args: str, cwd: Path) -> None:
    exe = shutil.which("promtool")
    if exe is None:
        raise SystemExit("promtool is missing: `apt-get install prometheus` (or `make setup`)")
    out = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    print(out.stdout.strip())
    if out.returncode != 0:
        raise SystemExit(f"promtool {args[0]} {args[1]} failed:\n{out.stderr}")


def main() -> int:
    groups = render(str(binary("helm")))["spec"]["groups"]
    test_files = sorted(TESTS.glob("*.test.yaml"))
    found = problems(groups, [yaml.safe_load(p.read_text()) for p in test_files])
    if found:
        print("alerts incomplete:\n  " + "\n  ".join(found), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mongobench-alerts-") as tmp:
        work = Path(tmp)
        (work / "rules.yaml").write_text(yaml.safe_dump(for_promtool(groups), sort_keys=False))
        promtool("check", "rules", "rules.yaml", cwd=work)
        for p in test_files:
            shutil.copy(p, work / p.name)
        promtool("test", "rules", *(p.name for p in test_files), cwd=work)
    print(f"{len(alerts(groups))} alerts, {len(test_files)} promtool test files: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
