"""`make crds-check`: the CRD chart's files (charts/mongobench-crds/files, rendered by its
templates) are byte-for-byte copies of crds/ (the one source), real files (no symlinks: `helm
package` and Argo CD would follow or refuse them), and the operator chart's admission-warnings
template renders the policy of crds/mongobench-admission-warnings.yaml.

Fix a drift with `make crds-sync`. Exit 1 with one line per problem.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "crds"
CHART = REPO / "charts" / "mongobench"
CRDS_CHART = REPO / "charts" / "mongobench-crds"
COPIES = CRDS_CHART / "files"
SHOWN = "charts/mongobench-crds/files"
ADMISSION = SOURCE / "mongobench-admission-warnings.yaml"
# crds/ files that are not CRDs and go to the chart as a template instead.
NOT_CRDS = {ADMISSION.name}


def crd_sources() -> list[Path]:
    return sorted(p for p in SOURCE.glob("*.yaml") if p.name not in NOT_CRDS)


def copy_problems() -> list[str]:
    problems = []
    for path in sorted([*CHART.rglob("*"), *CRDS_CHART.rglob("*")]):
        if path.is_symlink():
            problems.append(f"{path.relative_to(REPO)} is a symlink: charts carry real files")
    sources = {p.name: p for p in crd_sources()}
    copies = {p.name: p for p in COPIES.glob("*.yaml")}
    for name in sorted(sources.keys() - copies.keys()):
        problems.append(f"{SHOWN}/{name} is missing (crds/{name} exists)")
    for name in sorted(copies.keys() - sources.keys()):
        problems.append(f"{SHOWN}/{name} has no source in crds/")
    for name in sorted(sources.keys() & copies.keys()):
        if sources[name].read_bytes() != copies[name].read_bytes():
            problems.append(f"{SHOWN}/{name} differs from crds/{name}")
    return problems


def _by_kind(docs: list[Any]) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in docs if isinstance(d, dict) and "kind" in d}


def admission_problems(helm: str) -> list[str]:
    rendered = subprocess.run(
        [helm, "template", "mb", str(CHART), "--show-only", "templates/admission-warnings.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    chart = _by_kind(list(yaml.safe_load_all(rendered)))
    source = _by_kind(list(yaml.safe_load_all(ADMISSION.read_text())))
    problems = []
    policy = "ValidatingAdmissionPolicy"
    if chart.get(policy, {}).get("spec") != source[policy]["spec"]:
        problems.append(f"the chart's {policy} spec differs from crds/{ADMISSION.name}")
    binding = f"{policy}Binding"
    chart_binding = dict(chart.get(binding, {}).get("spec") or {})
    source_binding = dict(source[binding]["spec"])
    chart_binding.pop("policyName", None)
    source_binding.pop("policyName", None)
    if chart_binding != source_binding:
        problems.append(f"the chart's {binding} spec differs from crds/{ADMISSION.name}")
    return problems


def main() -> int:
    if sys.argv[1:2] == ["--sync"]:
        for source in crd_sources():
            target = COPIES / source.name
            target.unlink(missing_ok=True)
            target.write_bytes(source.read_bytes())
        return 0
    helm = sys.argv[1] if len(sys.argv) > 1 else "helm"
    problems = copy_problems() + admission_problems(helm)
    for p in problems:
        print(f"crds-check: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
