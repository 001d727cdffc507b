"""Unit tier: the CRDs (the one source of truth) and the operator's typed models agree.

Walks every object of each CRD's spec schema beside the dataclass the operator parses it into:
the same field names, compatible types, the same enums, the same required fields and defaults.
A field added to one side only fails here, before it can be silently dropped.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import pytest
import yaml

from mongobench.api import BenchmarkExperimentSpec, BenchmarkRunSpec, MongoClusterSpec, SpecError
from mongobench.api.benchmarkrun import Cleanup, cluster_of
from mongobench.api.schema import field_of, json_name

pytestmark = pytest.mark.unit

CRDS = Path(__file__).resolve().parents[3] / "crds"


def spec_schema(filename: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / filename).read_text())
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"]["properties"]["spec"])


def _strip_optional(hint: Any) -> Any:
    if get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in get_args(hint) if a is not type(None)]
        assert len(inner) == 1
        return inner[0]
    return hint


def _as_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {json_name(f): _as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, tuple):
        return [_as_json(v) for v in value]
    return value


def with_nested_defaults(schema: dict[str, Any], value: Any) -> Any:
    """What the apiserver stores for `value`: defaults of nested fields filled in."""
    if not isinstance(value, dict) or "properties" not in schema:
        return value
    out = dict(value)
    for name, sub in schema["properties"].items():
        if name not in out and "default" in sub:
            out[name] = sub["default"]
        if name in out:
            out[name] = with_nested_defaults(sub, out[name])
    return out


def compare(cls: Any, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    hints = get_type_hints(cls)
    props = schema.get("properties", {})
    fields = {json_name(f): f for f in dataclasses.fields(cls)}
    for missing in sorted(set(props) - set(fields)):
        problems.append(f"{path}.{missing}: in the CRD, not in {cls.__name__}")
    for extra in sorted(set(fields) - set(props)):
        problems.append(f"{path}.{extra}: in {cls.__name__}, not in the CRD")
    required = set(schema.get("required", []))
    for name, field in fields.items():
        if name not in props:
            continue
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        if (name in required) == has_default:
            problems.append(f"{path}.{name}: required in CRD={name in required}, model default")
        sub = props[name]
        if "default" in sub:
            model_default = (
                field.default
                if field.default is not dataclasses.MISSING
                else field.default_factory()  # type: ignore[misc]
            )
            crd_default = with_nested_defaults(sub, sub["default"])
            if _as_json(model_default) != crd_default:
                problems.append(
                    f"{path}.{name}: default CRD={crd_default!r} model={_as_json(model_default)!r}"
                )
        elif field.default not in (dataclasses.MISSING, None, ()):
            problems.append(f"{path}.{name}: model default {field.default!r} not in the CRD")
        compare_type(_strip_optional(hints[field.name]), sub, f"{path}.{name}", problems)


def compare_type(hint: Any, sub: dict[str, Any], path: str, problems: list[str]) -> None:
    origin = get_origin(hint)
    if hint is Any:  # any JSON value (a dimension's values)
        if not sub.get("x-kubernetes-preserve-unknown-fields"):
            problems.append(f"{path}: CRD type {sub.get('type')}, model any value")
        return
    if origin is typing.Literal:
        if list(get_args(hint)) != sub.get("enum"):
            problems.append(f"{path}: enum CRD={sub.get('enum')} model={list(get_args(hint))}")
        return
    if dataclasses.is_dataclass(hint):
        if sub.get("type") != "object":
            problems.append(f"{path}: CRD type {sub.get('type')}, model object")
        compare(hint, sub, path, problems)
        return
    if origin is tuple:
        (item,) = [a for a in get_args(hint) if a is not Ellipsis]
        if sub.get("type") != "array":
            problems.append(f"{path}: CRD type {sub.get('type')}, model array")
        compare_type(item, sub["items"], f"{path}[]", problems)
        return
    if origin is dict:
        if get_args(hint)[1] is Any and sub.get("x-kubernetes-preserve-unknown-fields"):
            return  # a free-form object on both sides
        if sub.get("type") != "object" or "additionalProperties" not in sub:
            problems.append(f"{path}: CRD is not a map, model is")
            return
        value_hint = get_args(hint)[1]
        if value_hint is not Any:
            compare_type(value_hint, sub["additionalProperties"], f"{path}{{}}", problems)
        return
    expected = {str: "string", int: "integer", bool: "boolean", float: "number"}[hint]
    if sub.get("type") != expected:
        problems.append(f"{path}: CRD type {sub.get('type')}, model {expected}")


@pytest.mark.parametrize(
    ("filename", "model"),
    [
        ("mongobench.io_mongoclusters.yaml", MongoClusterSpec),
        ("mongobench.io_benchmarkruns.yaml", BenchmarkRunSpec),
        ("mongobench.io_benchmarkexperiments.yaml", BenchmarkExperimentSpec),
    ],
)
def test_model_agrees_with_crd(filename: str, model: type) -> None:
    problems: list[str] = []
    compare(model, spec_schema(filename), "spec", problems)
    assert problems == []


def test_the_comparison_catches_a_drifted_field() -> None:
    """Guards the test above: a model missing a CRD field and with a wrong default is reported."""

    @dataclasses.dataclass(frozen=True)
    class Drifted:
        version: str
        platform: typing.Literal["auto", "eks"] = "eks"

    problems: list[str] = []
    compare(Drifted, spec_schema("mongobench.io_mongoclusters.yaml"), "spec", problems)
    joined = "\n".join(problems)
    assert "spec.topology: in the CRD, not in Drifted" in joined
    assert "spec.platform: default CRD='auto' model='eks'" in joined
    assert "spec.platform: enum" in joined


def test_every_schema_field_has_a_description() -> None:
    """`kubectl explain` must read well: no field without a description."""
    missing: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        if path and "description" not in node and not path.endswith(".metadata"):
            missing.append(path)
        for name, child in node.get("properties", {}).items():
            walk(child, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")
        additional = node.get("additionalProperties")
        if isinstance(additional, dict) and additional.get("type") == "object":
            walk(additional, f"{path}{{}}")

    for crd_file in sorted(CRDS.glob("mongobench.io_*.yaml")):
        crd = yaml.safe_load(crd_file.read_text())
        for version in crd["spec"]["versions"]:
            walk(version["schema"]["openAPIV3Schema"], crd["spec"]["names"]["kind"])
    assert missing == []


def test_a_field_read_alone_is_typed_and_defaulted_by_the_model() -> None:
    """field_of (the queue, deletion, a refused run's cleanup): one field converted and
    defaulted as the whole parse would, whatever another field holds."""
    stored = {"workloads": [{"name": "a"}], "driver": "gatling", "concurrency": "Shared"}
    with pytest.raises(SpecError, match=r"spec\.driver: 'gatling' is not one of"):
        BenchmarkRunSpec.parse(stored)
    assert field_of(BenchmarkRunSpec, stored, "concurrency") == "Shared"
    assert field_of(BenchmarkRunSpec, stored, "database") == "ycsb"  # the model's default
    assert field_of(BenchmarkRunSpec, stored, "cleanup") == Cleanup(jobs="OnSuccess", data="Never")
    assert field_of(BenchmarkRunSpec, {"cleanup": {"data": "Always"}}, "cleanup").data == "Always"
    with pytest.raises(SpecError, match=r"spec\.deletionPolicy: 'Sometimes' is not one of"):
        field_of(MongoClusterSpec, {"deletionPolicy": "Sometimes"}, "deletion_policy")
    with pytest.raises(SpecError, match=r"spec\.workloads: required"):
        field_of(BenchmarkRunSpec, {}, "workloads")


def test_the_cluster_a_stored_run_names() -> None:
    """Routing a cluster's events and holding its deletion: a run's clusterRef, read alone."""
    assert cluster_of({"clusterRef": {"name": "k"}, "driver": "gatling"}) == "k"
    assert cluster_of({"uriSecretRef": {"name": "s"}}) is None
    assert cluster_of({"clusterRef": "k"}) is None  # unreadable: refused on its own
    assert cluster_of(None) is None


def test_an_experiment_spec_takes_the_crds_defaults_and_rules() -> None:
    """The experiment's defaults are the model's (one place), and its rules hold without the
    apiserver: unique dimension names, one valueName per value."""
    spec = BenchmarkExperimentSpec.parse({"cluster": {}, "run": {}, "calibration": True})
    assert (spec.repetitions, spec.order, spec.max_clusters) == (3, "Interleaved", 1)
    assert spec.max_repetitions == 3
    dim = {"name": "d", "target": "run", "field": "f", "values": [1, 2]}
    with pytest.raises(SpecError, match="dimension names must be unique"):
        BenchmarkExperimentSpec.parse({"cluster": {}, "run": {}, "dimensions": [dim, dim]})
    with pytest.raises(SpecError, match="valueNames must name each value once"):
        BenchmarkExperimentSpec.parse(
            {"cluster": {}, "run": {}, "dimensions": [dim | {"valueNames": ["x"]}]}
        )
    adaptive = {
        "repetitions": 2,
        "repeatUntil": {"metric": "p99", "relativeHalfWidth": 0.05, "maxRepetitions": 9},
    }
    assert (
        BenchmarkExperimentSpec.parse({"cluster": {}, "run": {}, **adaptive}).max_repetitions == 9
    )
