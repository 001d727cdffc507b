"""Provenance of runs, compared (pure): which facts of what ran differ between configurations.

A run's provenance is its archive's `provenance.json` (the whole document) or, for a run read
from the cluster, the summary its status keeps (`status.provenance`, made by `summary` here, so
the operator and the CLI agree on it). Both reduce to the same flat fields (`fields`); a field
only one side knows is not compared. Differences in RESULT_CHANGING are flagged: they change
results by themselves (another mongod build or FCV, another machine, another cache), so two
configurations that differ in them measure more than the dimension being compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

API_VERSION = "mongobench.io/provenance/v1"

# field -> what it is, in the order reports list them
FIELDS: dict[str, str] = {
    "mongodVersion": "mongod/mongos version",
    "gitVersion": "mongod build (gitVersion)",
    "featureCompatibilityVersion": "feature compatibility version",
    "storageEngine": "storage engine",
    "cacheBytes": "WiredTiger cache in effect (bytes)",
    "cacheConfiguredGB": "WiredTiger cache configured (GB)",
    "instanceTypes": "node instance types",
    "zones": "node zones",
    "kernels": "node kernels",
    "osImages": "node OS images",
    "containerRuntimes": "container runtimes",
    "kubeletVersions": "kubelet versions",
    "cpuModels": "CPU models",
    "kubernetesVersion": "Kubernetes version",
    "operatorVersion": "operator version",
    "databaseImages": "database images (by digest)",
    "clientImages": "client images (by digest)",
}
# Differences that change results by themselves (issue 27): flagged wherever they appear.
RESULT_CHANGING = frozenset(
    {"mongodVersion", "featureCompatibilityVersion", "instanceTypes", "cacheBytes"}
)


def _sorted_unique(values: Iterable[Any]) -> list[str]:
    return sorted({str(v) for v in values if v not in (None, "")})


def _image(c: Mapping[str, Any]) -> str:
    """`image@digest` as the kubelet reported it: the imageID's digest, else the image alone."""
    image_id = str(c.get("imageID") or "")
    digest = image_id.rpartition("@")[2] if "@" in image_id else ""
    image = str(c.get("image") or "")
    return f"{image.partition('@')[0]}@{digest}" if digest else image


def summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The small block kept in status.provenance (and compared for runs without an archive)."""
    servers = [s for s in doc.get("servers") or [] if isinstance(s, Mapping)]
    first = next((s for s in servers if s.get("buildInfo")), {})
    build = first.get("buildInfo") or {}
    storage = doc.get("storage") or {}
    nodes = [n for n in doc.get("nodes") or [] if isinstance(n, Mapping)]
    containers = [c for c in doc.get("containers") or [] if isinstance(c, Mapping)]
    digests = {c["imageID"] for c in containers if "@" in str(c.get("imageID") or "")}
    out: dict[str, Any] = {
        "mongodVersion": build.get("version"),
        "gitVersion": build.get("gitVersion"),
        "featureCompatibilityVersion": doc.get("featureCompatibilityVersion"),
        "storageEngine": storage.get("engine"),
        "cacheBytes": storage.get("cacheBytesInEffect"),
        "cacheConfiguredGB": storage.get("cacheConfiguredGB"),
        "imageDigests": len(digests),
        "instanceTypes": _sorted_unique(n.get("instanceType") for n in nodes),
        "kubernetesVersion": (doc.get("kubernetes") or {}).get("gitVersion"),
        "operatorVersion": (doc.get("operator") or {}).get("version"),
    }
    return {k: v for k, v in out.items() if v is not None}


def fields(prov: Mapping[str, Any] | None) -> dict[str, str]:
    """The comparable fields of a provenance document or of a status summary, as text."""
    if not prov:
        return {}
    if prov.get("apiVersion") != API_VERSION:  # a status summary: what it keeps
        out = {k: prov.get(k) for k in FIELDS if k in prov}
        return {k: _text(v) for k, v in out.items() if v not in (None, [])}
    s = summary(prov)
    nodes = [n for n in prov.get("nodes") or [] if isinstance(n, Mapping)]
    containers = [c for c in prov.get("containers") or [] if isinstance(c, Mapping)]
    full: dict[str, Any] = {
        **{k: s.get(k) for k in FIELDS if k in s},
        "zones": _sorted_unique(n.get("zone") for n in nodes),
        "kernels": _sorted_unique(n.get("kernelVersion") for n in nodes),
        "osImages": _sorted_unique(n.get("osImage") for n in nodes),
        "containerRuntimes": _sorted_unique(n.get("containerRuntimeVersion") for n in nodes),
        "kubeletVersions": _sorted_unique(n.get("kubeletVersion") for n in nodes),
        "cpuModels": _sorted_unique(n.get("cpuModel") for n in nodes),
        "databaseImages": _sorted_unique(
            _image(c) for c in containers if c.get("role") == "database"
        ),
        "clientImages": _sorted_unique(_image(c) for c in containers if c.get("role") == "client"),
    }
    return {k: _text(v) for k, v in full.items() if v not in (None, [], "")}


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Difference:
    """One provenance field whose values differ between the baseline and a configuration."""

    configuration: str
    field: str
    baseline: tuple[str, ...]  # the values among the baseline's runs
    other: tuple[str, ...]
    changes_results: bool

    @property
    def what(self) -> str:
        return FIELDS.get(self.field, self.field)

    def note(self, baseline_name: str) -> str:
        flag = " (changes results)" if self.changes_results else ""
        return (
            f"{self.configuration}: {self.what} {' | '.join(self.other) or '(unknown)'} "
            f"vs {' | '.join(self.baseline) or '(unknown)'} in {baseline_name}{flag}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "configuration": self.configuration,
            "field": self.field,
            "what": self.what,
            "baseline": list(self.baseline),
            "other": list(self.other),
            "changesResults": self.changes_results,
        }


def _values(runs: Sequence[Mapping[str, str]], key: str) -> tuple[str, ...]:
    return tuple(sorted({r[key] for r in runs if key in r}))


def differences(
    configurations: Mapping[str, Sequence[Mapping[str, Any] | None]], baseline: str
) -> list[Difference]:
    """For each configuration but the baseline: the fields whose values (over its runs) differ
    from the baseline's. `configurations`: name -> its runs' provenance (document, summary or
    None). Fields a side does not know are not compared."""
    flat = {name: [fields(p) for p in provs] for name, provs in configurations.items()}
    base = flat.get(baseline, [])
    out: list[Difference] = []
    for name, runs in flat.items():
        if name == baseline:
            continue
        for key in FIELDS:
            a, b = _values(base, key), _values(runs, key)
            if a and b and a != b:
                out.append(Difference(name, key, a, b, key in RESULT_CHANGING))
    return out
