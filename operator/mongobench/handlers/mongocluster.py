"""MongoCluster handlers: parse the spec, hand it to the reconciler, publish what was observed."""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.api import MongoClusterSpec, SpecError
from mongobench.handlers.common import MONGOCLUSTER, write_condition
from mongobench.observability.metrics import instrumented


@kopf.on.resume(*MONGOCLUSTER)
@kopf.on.create(*MONGOCLUSTER)
@kopf.on.update(*MONGOCLUSTER, field="spec")
@instrumented("MongoCluster", "reconcile")
def reconcile(
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    body: kopf.Body,
    **_: Any,
) -> None:
    generation = int(meta.get("generation") or 0)
    try:
        MongoClusterSpec.parse(dict(spec))
    except SpecError as exc:
        patch.status["phase"] = "Failed"
        write_condition(
            patch,
            status,
            generation,
            type_="Ready",
            value="False",
            reason="InvalidSpec",
            message=str(exc),
        )
        kopf.warn(body, reason="InvalidSpec", message=str(exc))
        patch.status["observedGeneration"] = generation
        return
    if not status.get("phase"):
        patch.status["phase"] = "Pending"
        write_condition(
            patch,
            status,
            generation,
            type_="Ready",
            value="False",
            reason="Reconciling",
            message="accepted by the operator",
        )
        kopf.info(body, reason="Accepted", message="MongoCluster accepted")
    patch.status["observedGeneration"] = generation
