"""kubeconform, offline and strict: Kubernetes' own JSON schemas (PyPI `kubernetes-validate`,
the `-strict` variants: no unknown fields) and schemas converted from CRDs (the project's, the
Prometheus Operator's from its pinned module), in the layout kubeconform's templates expect.

    validate(documents_text, crds=[...], kubernetes="1.32.0") -> list of problems (empty: valid)
"""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from localplane.tools import REPO, binary

K8S_SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
REPO_CRDS = REPO / "crds"


def _kind_file(api_version: str, kind: str) -> str:
    """kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json` for an object."""
    group, _, version = api_version.rpartition("/")
    suffix = f"-{group.split('.')[0].lower()}-{version}" if group else f"-{version}"
    return f"{kind.lower()}{suffix}.json"


def _kubernetes_schemas(text: str, kubernetes: str, into: Path) -> None:
    """Self-contained schemas for the kinds in `text`: kubernetes-validate's strict ones, whose
    `$ref`s point into a shared /api/_definitions.json that kubeconform cannot resolve, with
    those definitions inlined as `$defs`."""
    source = K8S_SCHEMAS / f"v{kubernetes}-local-strict"
    definitions = json.loads((source / "_definitions.json").read_text())["$defs"]
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict) or "kind" not in doc:
            continue
        name = _kind_file(str(doc.get("apiVersion", "")), str(doc["kind"]))
        if (into / name).is_file() or not (source / name).is_file():
            continue
        schema = json.loads(
            (source / name).read_text().replace('"/api/_definitions.json#/$defs/', '"#/$defs/')
        )
        schema.pop("$id", None)
        schema["$defs"] = definitions
        (into / name).write_text(json.dumps(schema))


_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "not")


def _strict(schema: Any) -> Any:
    """A CRD's OpenAPI schema as JSON schema that, like kubeconform -strict, refuses unknown
    fields: additionalProperties false on every object with properties, unless the CRD keeps
    unknown fields there."""
    if not isinstance(schema, dict):
        return schema
    out = _strict_children(schema)
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    preserve = out.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


def _strict_children(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` whose sub-schemas are all made strict."""
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _strict(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_strict(sub) for sub in out[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = _strict(out[key])
    return out


def _crd_schemas(crds: Iterable[dict[str, Any]], into: Path) -> None:
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"].lower()
        for version in crd["spec"]["versions"]:
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            props = schema.setdefault("properties", {})
            props.setdefault("apiVersion", {"type": "string"})
            props.setdefault("kind", {"type": "string"})
            props["metadata"] = {"type": "object"}
            out = into / group / f"{kind}_{version['name']}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(_strict(schema)))


class _Loader(yaml.SafeLoader):
    """YAML 1.1's `=` (the "value" type) is a plain string in Kubernetes' YAML 1.2 parser; the
    Prometheus Operator CRDs have an enum with it."""


_Loader.add_constructor(
    "tag:yaml.org,2002:value",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def load_crds(*paths: Path, pattern: str = "*.yaml") -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.glob(pattern)) if path.is_dir() else [path]
        for f in files:
            docs += [
                d
                for d in yaml.load_all(f.read_text(), Loader=_Loader)
                if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
            ]
    return docs


def validate(
    text: str,
    crds: Iterable[dict[str, Any]] = (),
    kubernetes: str = "1.32.0",
    skip: Iterable[str] = (),
) -> list[str]:
    """Problems kubeconform -strict finds in the YAML documents of `text`; a kind with no schema
    is a problem too (no -ignore-missing-schemas), unless named in `skip`."""
    with tempfile.TemporaryDirectory(prefix="kubeconform-") as tmp:
        crd_dir = Path(tmp) / "crds"
        _crd_schemas(list(crds), crd_dir)
        k8s_dir = Path(tmp) / "kubernetes"
        k8s_dir.mkdir()
        _kubernetes_schemas(text, kubernetes, k8s_dir)
        args = [
            str(binary("kubeconform")),
            "-strict",
            "-summary",
            "-output",
            "json",
            "-kubernetes-version",
            kubernetes,
            "-schema-location",
            str(k8s_dir) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
            "-schema-location",
            str(crd_dir) + "/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json",
        ]
        if skip:
            args += ["-skip", ",".join(skip)]
        proc = subprocess.run(
            [*args, "-"], input=text, capture_output=True, text=True, check=False, timeout=120
        )
    report = json.loads(proc.stdout or "{}")
    problems = [
        f"{r.get('kind')}/{r.get('name')}: {r.get('status')}: {r.get('msg')}"
        for r in report.get("resources", [])
        if r.get("status") not in ("statusValid", "statusSkipped")
    ]
    if proc.returncode != 0 and not problems:
        problems.append(proc.stderr.strip() or f"kubeconform exited {proc.returncode}")
    summary = report.get("summary", {})
    if not problems and not summary.get("valid"):
        problems.append(f"nothing validated: {summary}")
    return problems
