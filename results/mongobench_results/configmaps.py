"""A result document stored as Kubernetes ConfigMaps: the format both sides share (pure).

The runner's ConfigMap sink writes one client's document as `<name>-p0`, `<name>-p1`, ... (data
key `result.json`, parts concatenated in order, each at most 900 KiB: a ConfigMap holds at most
1 MiB), labelled with the result's name, its step (`result-set`), the part's index and the part
count. The operator collects a step's results with `assemble` and the CLI reads results not yet
archived with it. Nothing here talks to an API server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PART_BYTES = 900 * 1024
DATA_KEY = "result.json"
LABEL_RESULT = "mongobench.io/result-of"
# The step a client's result belongs to: `<prefix>` of its name `<prefix>-c<index>`. The operator
# reads one step's results by it, not every result in the namespace (result_set).
LABEL_RESULT_SET = "mongobench.io/result-set"
LABEL_PART = "mongobench.io/part"
LABEL_PARTS = "mongobench.io/parts"


def serialise(document: Mapping[str, Any]) -> str:
    """The document's text, as every sink writes it."""
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def split_parts(text: str, limit: int = PART_BYTES) -> list[str]:
    """Splits on character boundaries so that each part's UTF-8 encoding is <= limit bytes."""
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for ch in text:
        n = len(ch.encode())
        if size + n > limit and current:
            parts.append("".join(current))
            current, size = [], 0
        current.append(ch)
        size += n
    parts.append("".join(current))
    return parts


def manifests(
    document: Mapping[str, Any],
    namespace: str,
    name: str,
    owner_ref: Mapping[str, Any] | None = None,
    part_bytes: int = PART_BYTES,
) -> list[dict[str, Any]]:
    """The ConfigMaps `<name>-p<i>` that hold the document (what the runner's sink writes)."""
    parts = split_parts(serialise(document), part_bytes)
    out = []
    for i, chunk in enumerate(parts):
        meta: dict[str, Any] = {
            "name": f"{name}-p{i}",
            "namespace": namespace,
            "labels": {
                LABEL_RESULT: name,
                LABEL_RESULT_SET: result_set(name),
                LABEL_PART: str(i),
                LABEL_PARTS: str(len(parts)),
            },
        }
        if owner_ref:
            meta["ownerReferences"] = [dict(owner_ref)]
        out.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {DATA_KEY: chunk}}
        )
    return out


def result_set(name: str) -> str:
    """The step of the result `<prefix>-c<index>` (assemble's naming): `<prefix>`. A name not
    in that form is its own set."""
    prefix, sep, index = name.rpartition("-c")
    return prefix if sep and prefix and index.isdigit() else name


@dataclass(frozen=True)
class Collected:
    documents: list[dict[str, Any]]  # one per client that reported completely, by index
    missing: list[int]  # client indexes without a complete document


def _texts(
    configmaps: Iterable[Mapping[str, Any]], prefix: str, clients: int
) -> tuple[list[str], list[int]]:
    """Each complete client's text `<prefix>-c<index>` (its parts in order), and the indexes of
    the clients with parts missing."""
    parts: dict[str, dict[int, str]] = {}
    expected: dict[str, int] = {}
    for cm in configmaps:
        labels = cm["metadata"].get("labels") or {}
        owner = labels.get(LABEL_RESULT, "")
        if not owner.startswith(f"{prefix}-c"):
            continue
        parts.setdefault(owner, {})[int(labels.get(LABEL_PART, 0))] = (cm.get("data") or {}).get(
            DATA_KEY, ""
        )
        expected[owner] = int(labels.get(LABEL_PARTS, 1))
    texts: list[str] = []
    missing: list[int] = []
    for index in range(clients):
        owner = f"{prefix}-c{index}"
        got = parts.get(owner, {})
        if not got or len(got) != expected.get(owner):
            missing.append(index)
            continue
        texts.append("".join(got[i] for i in sorted(got)))
    return texts, missing


def missing_clients(
    configmaps: Iterable[Mapping[str, Any]], prefix: str, clients: int
) -> list[int]:
    """The clients of `<prefix>` with parts missing, without decoding any document."""
    return _texts(configmaps, prefix, clients)[1]


def assemble(configmaps: Iterable[Mapping[str, Any]], prefix: str, clients: int) -> Collected:
    """Pure, the reverse of ConfigMapSink: each client's document `<prefix>-c<index>` from its
    parts (concatenated in part order); a client with parts missing is missing. The operator
    collects steps with it and the CLI reads archived-to-be results with it."""
    texts, missing = _texts(configmaps, prefix, clients)
    return Collected([json.loads(text) for text in texts], missing)
