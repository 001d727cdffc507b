"""Hypothesis strategies for MongoCluster and BenchmarkRun specs, read from the repo's CRDs.

Values follow each field's OpenAPI schema (type, enum, bounds, pattern, lengths), so a sample
passes the schema and meets the CEL rules or not by chance: the property tests check what
happens either way. `SIZES` keeps the shapes small enough for a server-side dry run of every
child object (the largest shapes are the unit tier's: operator/tests/unit/test_names.py).
`corrupted()` breaks one field of a sample against its schema and says which.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

from localplane.tools import REPO

CRDS = REPO / "crds"
FILES = {
    "MongoCluster": "mongobench.io_mongoclusters.yaml",
    "BenchmarkRun": "mongobench.io_benchmarkruns.yaml",
}
# Upper bounds for sizes (a dry run per child object: keep the object count modest).
SIZES = {
    "spec.topology.replicaSet.members": 5,
    "spec.topology.sharded.shards": 3,
    "spec.topology.sharded.membersPerShard": 3,
    "spec.topology.sharded.configServers": 3,
    "spec.topology.sharded.mongos": 3,
    "spec.clients.parallelism": 4,
    "spec.repetitions": 3,
}
# Map keys: what CEL rules expect (a random key would only test the one rule that refuses it).
KEYS: dict[str, st.SearchStrategy[str]] = {
    "spec.resources": st.sampled_from(["mongod", "configServer", "mongos", "exporter"]),
    "spec.topology.replicaSet.memberPriorities": st.sampled_from("0123456"),
    "spec.topology.sharded.memberPriorities": st.sampled_from("0123456"),
    "spec.placement.shards": st.sampled_from("0123"),
}
LABEL_KEY = (
    r"([a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?(\.[a-z]{2,5})?/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?"
)
NAMES = {
    "MongoCluster": r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?",
    "BenchmarkRun": r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?",
}


DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def _label_ok(value: str) -> bool:
    return len(value) <= 63 and LABEL_VALUE.fullmatch(value) is not None


def _dns_label_ok(value: str, pattern: re.Pattern[str] = DNS_1123_LABEL) -> bool:
    return len(value) <= 63 and pattern.fullmatch(value) is not None


def name_problems(obj: Mapping[str, Any]) -> list[str]:
    """What Kubernetes would refuse in `obj`'s names and labels (its apimachinery rules:
    DNS-1123 subdomain and label, DNS-1035 label for Services, label values, the 52-character
    StatefulSet limit the controller-revision-hash label imposes, pod host names)."""
    kind, meta = obj["kind"], obj["metadata"]
    name = meta["name"]
    ok = len(name) <= 253 and SUBDOMAIN.fullmatch(name) is not None
    out = [] if ok else [f"{kind} {name}: not a DNS subdomain"]
    pod_labels = obj.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
    for key, label in [*(meta.get("labels") or {}).items(), *pod_labels.items()]:
        if not _label_ok(label):
            out.append(f"{kind} {name}: label {key}={label}")
    if kind == "Service" and not _dns_label_ok(name, DNS_1035_LABEL):
        out.append(f"Service {name}: not a DNS-1035 label")
    if kind == "StatefulSet":
        if len(name) > 52:
            out.append(f"StatefulSet {name}: controller-revision-hash label would exceed 63")
        last = f"{name}-{obj['spec']['replicas'] - 1}"
        if not _dns_label_ok(last):
            out.append(f"pod {last}: not a host name")
    if kind == "Job":
        if not _label_ok(name):
            out.append(f"Job {name}: job-name label")
        last = f"{name}-{obj['spec']['completions'] - 1}"
        if not _dns_label_ok(last):
            out.append(f"pod {last}: not a host name")
    return out


def spec_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / FILES[kind]).read_text())
    return dict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])


def _string(node: Mapping[str, Any]) -> st.SearchStrategy[str]:
    low, high = int(node.get("minLength", 0)), int(node.get("maxLength", 40))
    if "pattern" in node:
        base = st.from_regex(node["pattern"], fullmatch=True)
    else:
        base = st.text(st.characters(codec="ascii", min_codepoint=32, max_codepoint=126))
    return base.filter(lambda s: low <= len(s) <= min(high, 80))


def _number(node: Mapping[str, Any], path: str, integer: bool) -> st.SearchStrategy[Any]:
    low = node.get("minimum", -5 if integer else -5.0)
    high = min(node.get("maximum", 1_000_000), SIZES.get(path, 1_000_000))
    if integer:
        return st.integers(int(low), int(high))
    return st.floats(float(low), float(high), allow_nan=False, allow_infinity=False)


def value(node: Mapping[str, Any], path: str = "spec") -> st.SearchStrategy[Any]:
    """Values of the schema `node` at `path` (a dotted path, as the apiserver names fields)."""
    if "enum" in node:
        return st.sampled_from(list(node["enum"]))
    if node.get("x-kubernetes-int-or-string"):
        string = next(s for s in node["anyOf"] if s["type"] == "string")
        return st.one_of(st.integers(0, 64), _string({**node, **string}))
    kind = node.get("type")
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        return _number(node, path, kind == "integer")
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = value(node["items"], f"{path}[]")
        most = min(int(node.get("maxItems", 4)), 4)
        if node.get("x-kubernetes-list-type") == "map":
            (key,) = node["x-kubernetes-list-map-keys"]
            return st.lists(
                items,
                min_size=int(node.get("minItems", 0)),
                max_size=most,
                unique_by=lambda i: i[key],
            )
        return st.lists(items, min_size=int(node.get("minItems", 0)), max_size=most)
    if kind == "object" and "properties" in node:
        props = node["properties"]
        required = set(node.get("required", ()))
        return st.fixed_dictionaries(
            {k: value(v, f"{path}.{k}") for k, v in props.items() if k in required},
            optional={k: value(v, f"{path}.{k}") for k, v in props.items() if k not in required},
        )
    if kind == "object" and isinstance(node.get("additionalProperties"), Mapping):
        keys = KEYS.get(path, st.from_regex(LABEL_KEY, fullmatch=True))
        most = min(int(node.get("maxProperties", 3)), 3)
        return st.dictionaries(
            keys, value(node["additionalProperties"], f"{path}.*"), max_size=most
        )
    return st.fixed_dictionaries({})


def _meet_rules(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Mend the cross-field rules most samples break, so that many are admitted (the rest
    still test refusals): one target, a bound for runs and warm-ups, shapes that match the
    topology, custom workloads with a base, scenarios with driver locust."""
    if kind == "BenchmarkRun":
        _mend_run(spec)
    else:
        _mend_cluster(spec)
    return spec


def _mend_run(spec: dict[str, Any]) -> None:
    if "clusterRef" in spec:
        spec.pop("uriSecretRef", None)
    elif "uriSecretRef" not in spec:
        spec["clusterRef"] = {"name": "target"}
    for phase in ("run", "warmup"):
        if phase in spec and not {"operationCount", "durationSeconds"} & set(spec[phase]):
            spec[phase]["operationCount"] = 100
    for workload in spec["workloads"]:
        _mend_workload(workload)
    load = spec.get("load") or {}
    if load.get("skip"):
        load.pop("scenario", None)
    if "scenario" in load or any("scenario" in w for w in spec["workloads"]):
        spec["driver"] = "locust"  # scenarios are Locust files
    _mend_scheduling(spec.get("clients") or {})


def _mend_workload(workload: dict[str, Any]) -> None:
    if "scenario" in workload:  # a scenario workload: a name of its own, no base
        workload.pop("base", None)
        if len(workload["name"]) == 1 and workload["name"] in "abcdef":
            workload["name"] += "-scenario"
    elif workload["name"] not in "abcdef":
        workload.setdefault("base", "a")
    elif len(workload["name"]) == 1:
        workload.pop("base", None)


def _mend_cluster(spec: dict[str, Any]) -> None:
    if "version" in spec:  # the pattern's MAJOR.MINOR.PATCH, moved into the supported range
        major, _, patch = spec["version"].split(".")
        spec["version"] = f"{5 + int(major) % 4}.0.{patch}"
    topology = spec.get("topology") or {}
    if topology.get("type") == "Sharded":
        topology.pop("replicaSet", None)
        topology.setdefault("sharded", {"shards": 1})
    else:
        topology.pop("sharded", None)
    spec.get("tls", {}).pop("enabled", None)
    _mend_placement(spec.get("placement") or {}, topology.get("sharded"))


def _mend_placement(placement: dict[str, Any], sharded: dict[str, Any] | None) -> None:
    """Shard blocks for shards that exist; presets without the roles' antiAffinity, CoLocated
    only for a shape it fits (config servers and routers at most one per shard member)."""
    shards = (sharded or {}).get("shards", 0)
    blocks = placement.get("shards") or {}
    for key in [k for k in blocks if int(k) >= shards]:
        del blocks[key]
    if placement.get("preset") == "CoLocated":
        nodes = shards * (sharded or {}).get("membersPerShard", 3)
        cfg, mongos = (sharded or {}).get("configServers", 3), (sharded or {}).get("mongos", 2)
        if not sharded or cfg > nodes or mongos > nodes:
            placement["preset"] = "Dedicated"
    roles = [placement.get(r) or {} for r in ("mongod", "configServer", "mongos")]
    for block in [placement, *roles, *blocks.values()]:
        _mend_scheduling(block)
        if placement.get("preset") in ("CoLocated", "Dedicated") and block is not placement:
            block.pop("antiAffinity", None)


def _mend_scheduling(block: dict[str, Any]) -> None:
    """Tolerations and node affinity expressions as Kubernetes' rules have them."""
    for t in block.get("tolerations") or []:
        if not t.get("key"):
            t["operator"] = "Exists"
        if t.get("operator") == "Exists":
            t.pop("value", None)
        if "tolerationSeconds" in t:
            t["effect"] = "NoExecute"
    affinity = block.get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    terms = [*required.get("nodeSelectorTerms", []), *(p["preference"] for p in preferred)]
    for term in terms:
        for req in term.get("matchExpressions", []):
            if req["operator"] in ("Exists", "DoesNotExist"):
                req.pop("values", None)
            elif req["operator"] in ("Gt", "Lt"):
                req["values"] = ["1"]
            elif not req.get("values"):
                req["values"] = ["a"]


def specs(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """Samples of the schema; half of them mended to meet the common cross-field rules."""
    raw = value(spec_schema(kind))
    return st.tuples(raw, st.booleans()).map(
        lambda drawn: _meet_rules(kind, drawn[0]) if drawn[1] else drawn[0]
    )


def names(kind: str) -> st.SearchStrategy[str]:
    return st.from_regex(NAMES[kind], fullmatch=True)


@dataclass(frozen=True)
class Corruption:
    path: str  # the field the apiserver must name, e.g. spec.topology.replicaSet.members
    spec: dict[str, Any]


def _leaves(node: Mapping[str, Any], data: Any, path: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, schema) of the scalar fields present in `data`, as the apiserver spells them."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(data, dict) and "properties" in node:
        for key, child in data.items():
            out += _leaves(node["properties"][key], child, f"{path}.{key}")
    elif isinstance(data, list) and node.get("type") == "array":
        for i, item in enumerate(data):
            out += _leaves(node["items"], item, f"{path}[{i}]")
    elif not isinstance(data, dict | list):
        out.append((path, node))
    return out


def _breaks(node: Mapping[str, Any]) -> list[Any]:
    """Values of the wrong kind or out of bounds for a scalar field's schema."""
    if "enum" in node:
        return ["NotOneOfThem"]
    kind = node.get("type")
    if node.get("x-kubernetes-int-or-string"):
        return ["not a quantity!"]
    if kind == "string":
        broken: list[Any] = [12345]
        if "maxLength" in node:
            broken.append("x" * (int(node["maxLength"]) + 1))
        if "pattern" in node:
            broken.append("no such value!")
        return broken
    if kind in ("integer", "number"):
        broken = ["seven"]
        if "maximum" in node:
            broken.append(node["maximum"] + 1)
        if "minimum" in node:
            broken.append(node["minimum"] - 1)
        return broken
    if kind == "boolean":
        return ["yes please"]
    return []


@st.composite
def corrupted(draw: st.DrawFn, kind: str) -> Corruption:
    """A sample with one scalar field broken against its schema; the path of that field."""
    schema = spec_schema(kind)
    spec = draw(specs(kind))
    leaves = [(p, n) for p, n in _leaves(schema, spec, "spec") if _breaks(n)]
    path, node = draw(st.sampled_from(leaves))
    bad = draw(st.sampled_from(_breaks(node)))
    _set(spec, path.removeprefix("spec."), bad)
    return Corruption(path, spec)


def _set(data: Any, dotted: str, new: Any) -> None:
    parts = [p for p in dotted.replace("[", ".[").split(".") if p]
    for part in parts[:-1]:
        data = data[int(part[1:-1])] if part.startswith("[") else data[part]
    last = parts[-1]
    if last.startswith("["):
        data[int(last[1:-1])] = new
    else:
        data[last] = new
