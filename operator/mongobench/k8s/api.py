"""The Kubernetes API as the controllers see it: a small interface (`KubeApi`), passed to every
controller as the MongoDB pool is, and its implementation over the operator's own ApiClient.

Every controller receives a KubeApi; nothing reaches a client through a module global. The unit
tests pass an in-memory fake (operator/tests/unit/fake_kube.py) where the operator passes
`KubeClient`. Events are the operator's own core/v1 Events (posted with its client and its
RBAC), so work queued from a handler to another thread posts them as a handler does.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import urllib3

from mongobench.k8s.client import FIELD_MANAGER, ApiClient, ApiError, resource_path
from mongobench.k8s.conditions import NORMAL, WARNING, EventType

__all__ = ["NORMAL", "WARNING", "EventType", "KubeApi", "KubeClient"]

log = logging.getLogger("mongobench.k8s")

REPORTING_COMPONENT = "mongobench-operator"
# The apiserver refuses longer Event messages; kopf cut them at the same length.
MESSAGE_LIMIT = 1024
# Distinct (object, type, reason, message) remembered for aggregation: enough for every object's
# recent Events; an older one forgotten is posted anew, as client-go's aggregator does.
AGGREGATED_EVENTS = 4096


class KubeApi(Protocol):
    """What the controllers do with the Kubernetes API. `namespace` is None for cluster-scoped
    kinds (Node, StorageClass). ApiError for any refusal, except where a method says otherwise."""

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        ...

    def list(
        self, kind: str, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """POST; ApiError 409 when it exists. `dry_run`: validated (strict fields), not stored."""
        ...

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply as the operator's field manager; the object as stored."""
        ...

    def patch(
        self, kind: str, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch (lists in it are replaced, None removes a field)."""
        ...

    def patch_status(self, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Merge-patch a custom resource's status subresource."""
        ...

    def delete(self, kind: str, namespace: str, name: str, propagation: str = "Background") -> bool:
        """Delete if present; True when something was deleted."""
        ...

    def served(self, group_version: str, plural: str) -> bool:
        """Whether the apiserver serves this resource now (e.g. a CRD installed later)."""
        ...

    def version(self) -> dict[str, Any]:
        """GET /version: the apiserver's gitVersion, platform, build (a run's provenance)."""
        ...

    def event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Post an Event about `obj` (apiVersion, kind, metadata namespace/name/uid). Never
        raises: an Event that cannot be posted is logged, the work that caused it goes on."""
        ...


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).isoformat().replace("+00:00", "Z")


def event_object(
    obj: Mapping[str, Any], type_: EventType, reason: str, message: str, now: float
) -> dict[str, Any]:
    """A core/v1 Event about `obj`, named as client-go names them (object name, hex time)."""
    meta = obj.get("metadata") or {}
    stamp = _rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{int(now * 1e9):x}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
        },
        "type": type_,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "source": {"component": REPORTING_COMPONENT},
        "reportingComponent": REPORTING_COMPONENT,
        "reportingInstance": os.environ.get("HOSTNAME", REPORTING_COMPONENT),
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
    }


class KubeClient:
    """KubeApi over the operator's ApiClient. Thread-safe (handler threads share it).

    A repeated identical Event (same object, type, reason and message) increments the count of
    the one posted before instead of adding another, as kubectl's and client-go's do."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api
        self._lock = threading.Lock()
        self._posted: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return self.api.request("GET", resource_path(kind, namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(
        self, kind: str, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        query = [("labelSelector", label_selector)] if label_selector else []
        return list(self.api.request("GET", resource_path(kind, namespace), query)["items"])

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        meta = obj["metadata"]
        query = [("dryRun", "All"), ("fieldValidation", "Strict")] if dry_run else None
        return self.api.request(
            "POST", resource_path(obj["kind"], meta.get("namespace")), query, dict(obj)
        )

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return self.api.request(
            "PATCH",
            resource_path(obj["kind"], meta.get("namespace"), meta["name"]),
            [("fieldManager", FIELD_MANAGER), ("force", "true")],
            json.dumps(obj),
            "application/apply-patch+yaml",
        )

    def patch(
        self, kind: str, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self.api.request(
            "PATCH",
            resource_path(kind, namespace, name),
            None,
            dict(patch),
            "application/merge-patch+json",
        )

    def patch_status(self, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self.api.request(
            "PATCH",
            f"{resource_path(kind, namespace, name)}/status",
            None,
            {"status": dict(status)},
            "application/merge-patch+json",
        )

    def delete(self, kind: str, namespace: str, name: str, propagation: str = "Background") -> bool:
        try:
            self.api.request(
                "DELETE",
                resource_path(kind, namespace, name),
                None,
                {"propagationPolicy": propagation},
            )
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def served(self, group_version: str, plural: str) -> bool:
        try:
            resources = self.api.request("GET", f"/apis/{group_version}")["resources"]
        except ApiError as exc:
            if exc.status != 404:
                raise
            return False
        return any(r.get("name") == plural for r in resources)

    def version(self) -> dict[str, Any]:
        return self.api.request("GET", "/version")

    def event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace"))
        key = (str(meta.get("uid")), type_, reason, message)
        now = time.time()
        try:
            with self._lock:
                seen = self._posted.pop(key, None)
            if seen is not None:
                name, count = seen
                try:
                    self.patch(
                        "Event",
                        namespace,
                        name,
                        {"count": count + 1, "lastTimestamp": _rfc3339(now)},
                    )
                    self._remember(key, name, count + 1)
                    return
                except ApiError as exc:
                    if exc.status != 404:  # expired (the apiserver keeps Events an hour)
                        raise
            posted = self.create(event_object(obj, type_, reason, message, now))
            self._remember(key, posted["metadata"]["name"], 1)
        except (ApiError, urllib3.exceptions.HTTPError) as exc:  # refused, or no answer in time
            log.warning(
                "Event %s on %s %s/%s not posted: %s",
                reason,
                obj.get("kind"),
                namespace,
                meta.get("name"),
                exc,
            )

    def _remember(self, key: tuple[str, ...], name: str, count: int) -> None:
        with self._lock:
            self._posted[key] = (name, count)
            while len(self._posted) > AGGREGATED_EVENTS:
                self._posted.popitem(last=False)
