"""Pure: the objects a deleted MongoCluster of the same name left behind.

Garbage collection deletes a MongoCluster's children after it, in its own time: tens of seconds
on a busy control plane (CI saw 45 s, the collector retrying its REST mapping of the CRD with
backoff). A cluster created again under the same name meanwhile (an experiment's next round
does exactly that) must not take them over. Server-side apply would make it their owner, so the
collector would keep them, and the new cluster would run the old members, with their data, users
and keyfile, beside its own new Secrets; or adopt old Secrets the collector deletes a moment
later. Like controller-runtime's SetControllerReference, which refuses an object another
controller owns, the new cluster waits until they are gone (status says which), then creates
its own. Objects with no controller (orphaned on purpose) are adopted as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mongobench.api.kinds import MONGOCLUSTER as KIND


def foreign(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether a MongoCluster other than the one with `uid` controls `obj`."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    controller = next((r for r in refs if r.get("controller")), None)
    return (
        controller is not None and controller.get("kind") == KIND and controller.get("uid") != uid
    )


def left_behind(objects: Iterable[tuple[str, Mapping[str, Any]]], uid: str) -> list[str]:
    """The "Kind name" of each (kind, object) a MongoCluster other than `uid` controls."""
    return [f"{kind} {obj['metadata']['name']}" for kind, obj in objects if foreign(obj, uid)]


def waiting_message(objects: list[str]) -> str:
    return (
        f"waiting for garbage collection to delete what a deleted MongoCluster of the same name "
        f"left: {', '.join(objects)}"
    )


class PredecessorPending(Exception):
    """provision() found a predecessor's objects: nothing was created or applied (retried)."""

    def __init__(self, objects: list[str]) -> None:
        super().__init__(waiting_message(objects))
        self.objects = objects
