"""MongoCluster handlers: thin; the logic lives in mongobench.cluster (provision, sync, delete)."""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.api import SpecError
from mongobench.cluster import deletion, reconcile
from mongobench.cluster import labels as lbl
from mongobench.handlers.common import MONGOCLUSTER, reject_spec
from mongobench.k8s.conditions import is_true
from mongobench.observability.metrics import instrumented


@kopf.on.resume(*MONGOCLUSTER)
@kopf.on.create(*MONGOCLUSTER)
@kopf.on.update(*MONGOCLUSTER, field="spec")
@instrumented("MongoCluster", "provision")
def provision(
    body: kopf.Body, meta: kopf.Meta, status: kopf.Status, patch: kopf.Patch, **_: Any
) -> None:
    generation = int(meta.get("generation") or 0)
    try:
        reconcile.provision(body)
    except SpecError as exc:
        reject_spec(patch, body, status, generation, condition="Ready", error=exc)
        return
    if not status.get("phase"):
        kopf.info(body, reason="Provisioning", message="objects created")
    _publish(reconcile.sync(meta["namespace"], meta["name"]))


# Retries the wiring until Ready (MongoDB steps wait for elections and catch-up; nothing else
# would wake us). Once Ready, child events below notice changes; no timer runs, no idle writes.
@kopf.timer(
    *MONGOCLUSTER,
    interval=2.0,
    idle=1.0,
    when=lambda status, **_: (
        status.get("phase") not in ("Ready", "Deleting", None)
        or not is_true(status.get("conditions"), "Updated")
    ),
)
@instrumented("MongoCluster", "sync")
def wire_until_ready(meta: kopf.Meta, **_: Any) -> None:
    _publish(reconcile.sync(meta["namespace"], meta["name"]))


@kopf.on.event(
    "apps", "v1", "statefulsets", labels={lbl.MANAGED_BY: "mongobench", lbl.CLUSTER: kopf.PRESENT}
)
@kopf.on.event(
    "apps", "v1", "deployments", labels={lbl.MANAGED_BY: "mongobench", lbl.CLUSTER: kopf.PRESENT}
)
@instrumented("MongoCluster", "child-event")
def child_changed(meta: kopf.Meta, type: str | None, **_: Any) -> None:
    # A member's pod became ready or went away: observe the whole cluster now.
    if type is None:  # kopf's initial listing: the resume handler covers it
        return
    _publish(reconcile.sync(meta["namespace"], meta["labels"][lbl.CLUSTER]))


@kopf.on.delete(*MONGOCLUSTER)
@instrumented("MongoCluster", "delete")
def delete(body: kopf.Body, meta: kopf.Meta, **_: Any) -> None:
    deletion.finalize(body)


def _publish(result: reconcile.SyncResult | None) -> None:
    """Events for what a sync changed, on the MongoCluster as it read it."""
    if result is None or result.body is None:
        return
    body: Any = dict(result.body)
    if result.failure and result.changed:
        kopf.warn(body, reason="MongoDBError", message=result.failure)
    if result.changed and result.storage_warning:
        kopf.warn(body, reason="NotExpandable", message=result.storage_warning)
    for reason, message in result.events:
        kopf.info(body, reason=reason, message=message)
    if result.fcv_set:
        kopf.info(
            body,
            reason="FeatureCompatibilityVersionSet",
            message=f"featureCompatibilityVersion set to {result.fcv_set}",
        )
    if result.changed and result.phase == "Ready":
        kopf.info(body, reason="Ready", message="all members ready and wired")
