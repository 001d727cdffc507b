"""Unit tier: the CRDs repeat a few Kubernetes scheduling schemas (a field per role: the
defaults, mongod, configServer, mongos and each shard of a MongoCluster; a BenchmarkRun's
clients). Written out in full so `kubectl explain` and the apiserver see them, they must stay
copies of one another: a rule fixed in one place and not in the others fails here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

CRDS = Path(__file__).resolve().parents[3] / "crds"
SHARED = ("nodeSelector", "nodeAffinity", "tolerations")


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return
    for name, child in (node.get("properties") or {}).items():
        yield f"{path}.{name}", child
        yield from _walk(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _walk(node[key], f"{path}[*]")


def copies(field: str) -> dict[str, str]:
    """Every schema of `field` in the CRDs, by path, as canonical JSON; a message's own path
    ("placement.mongos.nodeSelector keys ...") and the descriptions left out."""
    out: dict[str, str] = {}
    for crd_file in sorted(CRDS.glob("mongobench.io_*.yaml")):
        crd = yaml.safe_load(crd_file.read_text())
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        for path, schema in _walk(spec, crd["spec"]["names"]["kind"]):
            if path.endswith(f".{field}"):
                text = json.dumps(_without_descriptions(schema), sort_keys=True)
                out[path] = re.sub(r"[A-Za-z.\[\]*]*nodeSelector keys", "nodeSelector keys", text)
    return out


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


@pytest.mark.parametrize("field", SHARED)
def test_every_copy_of_a_scheduling_schema_is_the_same(field: str) -> None:
    found = copies(field)
    placements = {p for p in found if p.startswith("MongoCluster.placement")}
    assert len(placements) == 5, sorted(found)  # defaults, mongod, configServer, mongos, shards
    if field != "nodeSelector":
        assert "BenchmarkRun.clients." + field in found
    assert len(set(found.values())) == 1, sorted(found)
