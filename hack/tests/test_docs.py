"""Unit tier: the documentation site cannot drift from what it documents. The generated API and
CLI references (hack/docs_gen.py) are current and say what the CRDs and the CLI say; the
troubleshooting page names every condition reason and Warning Event the operator sets; every
link into the repository resolves; the README stays one page. (`make lint` builds the site with
`mkdocs build --strict`, which fails on a broken link between pages.)"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mongobench.k8s import conditions

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
URL = "https://github.com/mongobench/mongobench"


def _load_docs_gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen", REPO / "hack" / "docs_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_gen"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


docs_gen = _load_docs_gen()


def crd(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD of one kind, Widget, with `schema` as its spec."""
    return {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "mongobench.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1alpha1",
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"properties": {"spec": schema}}},
                }
            ],
        },
    }


# --- the generated references are current ---------------------------------------------------
def test_the_committed_references_are_what_the_crds_and_the_cli_generate() -> None:
    assert docs_gen.stale() == [], "run make docs (hack/docs_gen.py) and commit the result"


def test_a_field_added_to_a_crd_makes_the_api_page_stale() -> None:
    documents = docs_gen.crd_documents()
    changed = copy.deepcopy(documents)
    run = next(
        d for d in changed if d.get("spec", {}).get("names", {}).get("kind") == "BenchmarkRun"
    )
    spec = run["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["sparkles"] = {"type": "integer", "default": 7, "maximum": 9,
                                      "description": "A new knob."}  # fmt: skip
    before, after = docs_gen.render_api(documents), docs_gen.render_api(changed)
    assert "`spec.sparkles`" not in before
    assert "| `spec.sparkles` | `integer` | `7` | &lt;= 9 | A new knob. |" in after


# --- the API reference: what each row says ----------------------------------------------------
def test_api_rows_carry_type_default_bounds_enum_and_the_cel_rules_with_their_messages() -> None:
    schema = {
        "type": "object",
        "required": ["size"],
        "x-kubernetes-validations": [
            {"rule": "self.size > 1 || self.mode == 'a'", "message": "size <name> needs mode a"}
        ],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 64, "description": "Shards."},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    page = "\n".join(docs_gen.render_crd(crd(schema)))
    assert "| `spec.size` (required) | `integer` |  | &gt;= 1; &lt;= 64 | Shards. |" in page
    assert '| `spec.mode` | `string` | `"a"` | one of `"a"`, `"b"` |  |' in page
    assert "| `spec.items[].name` | `string` |" in page
    assert "| `spec.labels` | `map[string]string` |" in page
    # The rule: its message (escaped for HTML) and the CEL expression (pipes kept in code).
    assert "- `spec`: size &lt;name&gt; needs mode a" in page
    assert "`self.size > 1 || self.mode == 'a'`" in page


def test_every_cel_rule_of_the_crds_is_on_the_api_page() -> None:
    page = (REPO / docs_gen.API_PAGE).read_text()
    rules = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            rules.extend(v["rule"] for v in node.get("x-kubernetes-validations", ()))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for document in docs_gen.crd_documents():
        if document.get("spec", {}).get("group") == "mongobench.io":
            walk(document["spec"]["versions"])
    assert len(rules) > 50
    missing = [r for r in rules if f"`{' '.join(r.split())}`" not in page]
    assert missing == []


# --- the CLI reference ------------------------------------------------------------------------
def test_every_command_and_option_of_the_cli_is_on_the_cli_page() -> None:
    page = (REPO / docs_gen.CLI_PAGE).read_text()
    root = docs_gen.cli_command()
    ctx = root.context_class(root, info_name="mongobench")
    commands = root.list_commands(ctx)
    assert {"list", "compare", "report", "history", "completion"} <= set(commands)
    for name in commands:
        command = root.get_command(ctx, name)
        assert f"## `mongobench {name}`" in page
        for param in command.params:
            for opt in getattr(param, "opts", ()):
                if opt.startswith("-"):
                    assert f"{opt}" in page, (name, opt)
    # A choice: its pipes as entities, so neither MkDocs nor GitHub splits the table's cell.
    assert "<code>--adjust &lt;holm&#124;bh&#124;none&gt;</code>" in page


# --- troubleshooting --------------------------------------------------------------------------
def sections(text: str, level: str) -> dict[str, str]:
    parts = re.split(rf"^{level} (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def table_reasons(section: str) -> set[str]:
    return set(re.findall(r"^\| `([A-Za-z]+)` \|", section, flags=re.M))


def test_troubleshooting_names_every_condition_type_and_reason_the_operator_sets() -> None:
    page = (REPO / "docs" / "troubleshooting.md").read_text()
    by_type = sections(page, "###")
    missing = []
    for doc in conditions.CONDITIONS:
        if doc.type not in by_type:
            missing.append(f"condition {doc.type}")
            continue
        missing += [
            f"{doc.type}: {r}" for r in doc.reasons if r not in table_reasons(by_type[doc.type])
        ]
    assert missing == [], f"docs/troubleshooting.md lacks {missing}"


def test_troubleshooting_names_every_warning_event() -> None:
    page = (REPO / "docs" / "troubleshooting.md").read_text()
    listed = table_reasons(sections(page, "##")["Warning Events"])
    listed |= table_reasons(sections(page, "##")["Refused specs (every kind)"])
    warnings = {r for r, text in conditions.EVENT_REASONS.items() if "Warning" in text}
    assert {"StepFailed", "ArchiveFailed", "RotationRefused"} <= warnings
    assert warnings - listed == set()


# --- links into the repository, the README ----------------------------------------------------
def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_link_into_the_repository_names_an_existing_path() -> None:
    broken = []
    for page in pages():
        text = page.read_text()
        for path in re.findall(rf"{re.escape(URL)}/(?:blob|tree|edit)/main/([^)#\s>]+)", text):
            if not (REPO / path).exists():
                broken.append(f"{page.relative_to(REPO)}: {path}")
        if page.name == "README.md":  # GitHub resolves the README's relative links
            for target in re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text):
                if not (page.parent / target).exists():
                    broken.append(f"README.md: {target}")
    assert broken == []


def test_the_readme_fits_one_page_and_keeps_the_quick_start() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    quick = re.search(r"```sh\n(.*?)```", text[text.index("## Quick start") :], re.S)
    assert quick is not None
    assert [line.split()[:2] for line in quick[1].splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    image = re.search(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert image is not None and (REPO / image[1]).stat().st_size < 200_000
