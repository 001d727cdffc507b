"""Unit tier: the chart grants exactly the API calls the operator's code makes, no more, no less.

"Used" is derived from the code, not listed by hand:
- every call of the KubeApi the controllers are given (`mongobench.k8s.api`: get, list, patch,
  patch_status, delete, event; `kube.X(...)` or `self.kube.X(...)`) in `operator/mongobench`,
  read from its syntax tree; a kind passed through a function parameter is resolved at that
  function's call sites;
- the kinds the operator's builders create (dict literals with a `kind` the client knows): each
  is server-side applied or posted, so create and patch;
- kopf, from its registry once the handlers are imported: every watched resource is listed and
  watched; a resource with change handlers is patched (finalizer, progress and diff-base
  annotations); the peering object is watched and patched; CRDs are scanned;
- Events: `kube.event(...)` posts them (create; a repeated one is counted by a patch);
- the Role the operator gives benchmark clients: the operator must hold every verb it grants
  (Kubernetes refuses RBAC escalation), read from the rule literals in its code.

What no code can show is in BEYOND_THE_CODE, each with its reason, and must stay small.
The cluster tier (e2e/local/tests/test_chart.py) checks the same chart against the apiserver's
audit log of a real flow.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml

import mongobench.handlers  # noqa: F401 - importing registers the handlers with kopf
from localplane.tools import REPO, binary
from mongobench.k8s import client

pytestmark = pytest.mark.unit

CHART = REPO / "charts" / "mongobench"
CODE = REPO / "operator" / "mongobench"
Grant = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)

BEYOND_THE_CODE: dict[Grant, str] = {}

KUBE_CALLS = {
    "get": "get", "list": "list", "delete": "delete", "patch": "patch", "patch_status": "patch",
}  # fmt: skip


def group_and_plural(kind: str) -> tuple[str, str]:
    prefix, plural, _ = client._RESOURCES[kind]
    parts = prefix.split("/")
    return ("" if parts[0] == "api" else parts[1]), plural


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(CODE.rglob("*.py")):
        if path != CODE / "k8s" / "client.py":
            yield path, ast.parse(path.read_text())


def literals(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets if isinstance(target, ast.Name)
    }  # fmt: skip


KIND_NAMES = literals(ast.parse((CODE / "api" / "kinds.py").read_text()))


def string_constants(tree: ast.Module) -> dict[str, str]:
    """A module's names bound to a string: assigned a literal, or a kind name imported from
    mongobench.api.kinds (`from mongobench.api.kinds import MONGOCLUSTER as KIND`)."""
    imported = {
        alias.asname or alias.name: KIND_NAMES[alias.name]
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "mongobench.api.kinds"
        for alias in node.names
    }
    return literals(tree) | imported


def kube_call(node: ast.AST) -> str | None:
    """`kube.<name>(...)` or `self.kube.<name>(...)`: the KubeApi method's name."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    owner = node.func.value
    if (isinstance(owner, ast.Name) and owner.id == "kube") or (
        isinstance(owner, ast.Attribute) and owner.attr == "kube"
    ):
        return node.func.attr
    return None


class Module:
    """One module's client calls, with its constants and functions for resolving kinds."""

    def __init__(self, tree: ast.Module, callers: dict[str, set[str]]) -> None:
        self.tree, self.consts, self.callers = tree, string_constants(tree), callers
        self.enclosing: dict[ast.AST, ast.FunctionDef] = {}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                for child in ast.walk(fn):
                    self.enclosing.setdefault(child, fn)

    def kinds(self, node: ast.expr, call: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Name) and node.id in self.consts:
            return {self.consts[node.id]}
        if isinstance(node, ast.Name) and call in self.enclosing:
            fn = self.enclosing[call]
            params = [a.arg for a in fn.args.args]
            if node.id in params:
                return self.callers.get(f"{fn.name}:{params.index(node.id)}", set())
        return set()

    def grants(self) -> set[Grant]:
        out: set[Grant] = set()
        for node in ast.walk(self.tree):
            name = kube_call(node)
            if name is None or not isinstance(node, ast.Call) or not node.args:
                continue
            if name in KUBE_CALLS:
                for kind in self.kinds(node.args[0], node):
                    group, plural = group_and_plural(kind)
                    resource = f"{plural}/status" if name == "patch_status" else plural
                    out.add((group, resource, KUBE_CALLS[name]))
        return out


def call_site_kinds(trees: list[ast.Module]) -> dict[str, set[str]]:
    """`function:position` -> the kind literals (or module constants) passed there."""
    out: dict[str, set[str]] = {}
    for tree in trees:
        consts = string_constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", None
            )  # fmt: skip
            for i, arg in enumerate(node.args):
                value = arg.value if isinstance(arg, ast.Constant) else consts.get(
                    getattr(arg, "id", "")
                )  # fmt: skip
                if isinstance(value, str) and value in client._RESOURCES:
                    out.setdefault(f"{fn}:{i}", set()).add(value)
    return out


def built_kinds(tree: ast.Module) -> set[str]:
    """Kinds of object literals (a `kind` and `metadata`; an ownerReference has no metadata)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant)}  # fmt: skip
            kind = fields.get("kind")
            if "metadata" in fields and isinstance(kind, ast.Constant):
                out.add(str(kind.value))
    return out & client._RESOURCES.keys()


def onward_rules(tree: ast.Module) -> set[Grant]:
    """Verbs of RBAC rule literals the operator creates (it must hold them itself)."""
    out: set[Grant] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                  if isinstance(k, ast.Constant)}  # fmt: skip
        if {"apiGroups", "resources", "verbs"} <= fields.keys():
            values = {key: [e.value for e in fields[key].elts if isinstance(e, ast.Constant)]
                      for key in ("apiGroups", "resources", "verbs")}  # type: ignore[attr-defined]  # fmt: skip
            out |= {(g, r, v) for g in values["apiGroups"] for r in values["resources"]
                    for v in values["verbs"]}  # fmt: skip
    return out


def kopf_grants(clusterwide: bool) -> set[Grant]:
    registry = kopf.get_default_registry()
    out: set[Grant] = set()
    kinds: list[tuple[Any, bool]] = [
        (registry._watching, False),
        (registry._changing, True),
        (registry._spawning, True),
        (registry._indexing, False),
    ]
    for handlers, patched in kinds:
        for handler in handlers.get_all_handlers():
            group, plural = handler.selector.group or "", handler.selector.any_name
            assert plural, handler.selector
            out |= {(group, plural, "list"), (group, plural, "watch")}
            if patched:
                out.add((group, plural, "patch"))
    peering = "clusterkopfpeerings" if clusterwide else "kopfpeerings"
    out |= {("kopf.dev", peering, v) for v in ("list", "watch", "patch")}
    # kopf scans CRDs to resolve the resources it serves and, given namespaces (not cluster-wide),
    # lists and watches namespaces to find which exist (its namespace observer).
    out |= {("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("list", "watch")}
    if not clusterwide:
        out |= {("", "namespaces", v) for v in ("list", "watch")}
    return out


def used(clusterwide: bool = True) -> set[Grant]:
    parsed = list(modules())
    trees = [tree for _, tree in parsed]
    callers = call_site_kinds(trees)
    out = kopf_grants(clusterwide)
    for path, tree in parsed:
        out |= Module(tree, callers).grants()
        for kind in built_kinds(tree):
            group, plural = group_and_plural(kind)
            out |= {(group, plural, "create"), (group, plural, "patch")}
        out |= onward_rules(tree)
        if re.search(r"\bkube\.event\(", path.read_text()):
            out |= {("", "events", "create"), ("", "events", "patch")}
    return out


def granted(*sets: str) -> dict[str, set[Grant]]:
    rendered = subprocess.run(
        [str(binary("helm")), "template", "mb", str(CHART), *[f"--set={s}" for s in sets]],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    out: dict[str, set[Grant]] = {}
    for doc in yaml.safe_load_all(rendered):
        if doc and doc["kind"] in ("ClusterRole", "Role"):
            rules: list[dict[str, Any]] = doc["rules"]
            out.setdefault(doc["kind"], set()).update(
                (g, r, v) for rule in rules for g in rule["apiGroups"]
                for r in rule["resources"] for v in rule["verbs"]
            )  # fmt: skip
    return out


def explain(missing: set[Grant], unused: set[Grant]) -> str:
    lines = [f"used by the code, not granted: {g}" for g in sorted(missing)]
    return "\n".join(lines + [f"granted, used by no code: {g}" for g in sorted(unused)])


def test_cluster_wide_rbac_is_exactly_what_the_code_calls() -> None:
    grants = granted()["ClusterRole"]
    needed = used(clusterwide=True) | set(BEYOND_THE_CODE)
    assert grants == needed, explain(needed - grants, grants - needed)


def test_namespaced_rbac_is_exactly_what_the_code_calls() -> None:
    roles = granted("watchNamespaces={a}")
    grants = roles["Role"] | roles["ClusterRole"]
    needed = used(clusterwide=False) | set(BEYOND_THE_CODE)
    assert grants == needed, explain(needed - grants, grants - needed)


def test_the_derivation_sees_calls_of_every_kind() -> None:
    """The derivation can fail: each source of "used" finds what it must (a drift in the client's
    or kopf's shape would otherwise make the comparison above vacuous)."""
    found = used()
    assert ("", "secrets", "list") in found  # kube.list("Secret", ...)
    assert ("", "persistentvolumeclaims", "patch") in found  # kube.patch(kind, ...), resolved
    assert ("storage.k8s.io", "storageclasses", "get") in found  # kube.get("StorageClass", ...)
    assert ("", "nodes", "list") in found  # kube.list("Node", None)
    assert ("", "events", "create") in found  # kube.event(...)
    assert ("batch", "jobs", "create") in found  # a built Job, applied
    assert ("batch", "jobs", "watch") in found  # kopf.on.event("batch", "v1", "jobs")
    assert ("", "configmaps", "update") in found  # granted onward to client pods
    assert ("mongobench.io", "benchmarkexperiments/status", "patch") in found  # KIND, imported
    assert ("kopf.dev", "clusterkopfpeerings", "patch") in found
