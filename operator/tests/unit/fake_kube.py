"""Test double: an in-memory Kubernetes API implementing mongobench.k8s.api.KubeApi.

It keeps objects by (kind, namespace, name) and answers as the apiserver does where the
controllers depend on it: 404 as None or False, 409 on a second create, uid, generation and
creationTimestamp set on create (now; objects a test `put` in place were created long ago),
server-side apply merging into what exists (status kept), JSON merge patches, label selectors
(`a=b`, `a`, `a in (b,c)`), discovery (`served`). Every write is recorded (`writes`), Events
are kept as posted (`events`), and `refuse` makes a verb fail.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from mongobench.clock import rfc3339
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import EventType

CREATED = "2026-01-01T00:00:00Z"  # of objects a test puts in place
# The operator's clock in unit tests (mongobench.clock: the controllers are given it): a fixed
# date running at the real rate from the session's start, so what a test sees never depends on
# the day it runs (`make test` runs the unit tier again with the wall clock a year ahead).
UNIT_EPOCH = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
_STARTED = time.monotonic()


def unit_clock() -> datetime:
    return UNIT_EPOCH + timedelta(seconds=time.monotonic() - _STARTED)


Key = tuple[str, str | None, str]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge, None removes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# One selector term: `key in (a,b)`, `key=value` or `key` (exists).
TERM = re.compile(r"\s*([^\s,=()]+)\s*(?:in\s*\(([^)]*)\)|=\s*([^\s,]*))?\s*(?:,|$)")


def matches(labels: Mapping[str, str], selector: str | None) -> bool:
    for key, among, value in TERM.findall(selector or ""):
        if key not in labels:
            return False
        if among and labels[key] not in [v.strip() for v in among.split(",")]:
            return False
        if value and labels[key] != value:
            return False
    return True


class FakeKube:
    def __init__(self, *objects: Mapping[str, Any], served: tuple[str, ...] = ()) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.served_resources = set(served)  # "group/version/plural"
        self.server_version = {"major": "1", "minor": "32", "gitVersion": "v1.32.2"}
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name)
        self.events: list[tuple[str, str, EventType, str, str]] = []  # (kind, name, type, ...)
        self.refusals: dict[tuple[str, str], ApiError] = {}
        self._uids = itertools.count(1)
        for obj in objects:
            self.put(obj)

    # --- test helpers ---------------------------------------------------------------------

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store `obj` as if the apiserver had created it (no write recorded)."""
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", CREATED)
        self.objects[(stored["kind"], meta.get("namespace"), meta["name"])] = stored
        return stored

    def refuse(self, verb: str, kind: str, status: int = 422, message: str = "refused") -> None:
        """Make every `verb` (get, list, create, apply, patch, patch_status, delete) on `kind`
        fail with `status`."""
        self.refusals[(verb, kind)] = ApiError(status, "Refused", json.dumps({"message": message}))

    def reasons(self) -> list[str]:
        return [reason for _, _, _, reason, _ in self.events]

    def verbs(self, verb: str, kind: str | None = None) -> list[str]:
        """Names written with `verb` (on `kind`), in order."""
        return [n for v, k, n in self.writes if v == verb and kind in (None, k)]

    def _check(self, verb: str, kind: str) -> None:
        refusal = self.refusals.get((verb, kind))
        if refusal is not None:
            raise refusal

    def _key(self, kind: str, namespace: str | None, name: str) -> Key:
        return (kind, namespace if kind not in ("Node", "StorageClass") else None, name)

    # --- KubeApi ---------------------------------------------------------------------------

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        self._check("get", kind)
        found = self.objects.get(self._key(kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def list(
        self, kind: str, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        self._check("list", kind)
        return [
            copy.deepcopy(obj)
            for (k, ns, _), obj in sorted(self.objects.items(), key=lambda i: str(i[0]))
            if k == kind
            and (namespace is None or ns == namespace)
            and matches(obj["metadata"].get("labels") or {}, label_selector)
        ]

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        self._check("create", obj["kind"])
        meta = obj["metadata"]
        if self._key(obj["kind"], meta.get("namespace"), meta["name"]) in self.objects:
            raise ApiError(409, "Conflict", '{"message": "already exists"}')
        if dry_run:
            return copy.deepcopy(dict(obj))
        self.writes.append(("create", obj["kind"], meta["name"]))
        created = merge_patch(obj, {"metadata": {"creationTimestamp": rfc3339(unit_clock())}})
        return copy.deepcopy(self.put(created))

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._check("apply", obj["kind"])
        meta = obj["metadata"]
        self.writes.append(("apply", obj["kind"], meta["name"]))
        key = self._key(obj["kind"], meta.get("namespace"), meta["name"])
        if key not in self.objects:
            return copy.deepcopy(self.put(obj))
        existing = self.objects[key]
        merged = merge_patch(existing, {k: v for k, v in obj.items() if k != "status"})
        if merged.get("spec") != existing.get("spec"):
            merged["metadata"]["generation"] = int(existing["metadata"]["generation"]) + 1
        self.objects[key] = merged
        return copy.deepcopy(merged)

    def patch(
        self, kind: str, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        self._check("patch", kind)
        key = self._key(kind, namespace, name)
        if key not in self.objects:
            raise ApiError(404, "Not Found", '{"message": "not found"}')
        self.writes.append(("patch", kind, name))
        existing = self.objects[key]
        merged = merge_patch(existing, patch)
        if merged.get("spec") != existing.get("spec"):  # as the apiserver: a spec change
            merged["metadata"]["generation"] = int(existing["metadata"]["generation"]) + 1
        self.objects[key] = merged
        return copy.deepcopy(merged)

    def patch_status(self, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self._check("patch_status", kind)
        key = self._key(kind, namespace, name)
        if key not in self.objects:
            raise ApiError(404, "Not Found", '{"message": "not found"}')
        self.writes.append(("patch_status", kind, name))
        obj = self.objects[key]
        obj["status"] = merge_patch(obj.get("status") or {}, status)

    def delete(self, kind: str, namespace: str, name: str, propagation: str = "Background") -> bool:
        self._check("delete", kind)
        if self.objects.pop(self._key(kind, namespace, name), None) is None:
            return False
        self.writes.append(("delete", kind, name))
        return True

    def served(self, group_version: str, plural: str) -> bool:
        return f"{group_version}/{plural}" in self.served_resources

    def version(self) -> dict[str, Any]:
        self._check("get", "Version")
        return dict(self.server_version)

    def event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        self.events.append((str(obj.get("kind")), str(meta.get("name")), type_, reason, message))
