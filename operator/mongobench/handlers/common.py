"""What every handler shares: the resource coordinates, and one way to report an error the user
caused (a spec the operator cannot use, an object the apiserver refuses): a condition, phase
Failed and one Event, never a retried traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mongobench.api import GROUP, VERSION, SpecError
from mongobench.controller import REFUSED_ANNOTATION, recorded_refusal
from mongobench.k8s.api import WARNING, KubeApi
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import (
    FALSE,
    INVALID_SPEC,
    OBJECT_REJECTED,
    PHASE_FAILED,
    set_condition,
)
from mongobench.runtime.locks import ResourceLocks

# (group, version, plural), spread into kopf.on.* decorators.
MONGOCLUSTER = (GROUP, VERSION, "mongoclusters")
BENCHMARKRUN = (GROUP, VERSION, "benchmarkruns")
BENCHMARKEXPERIMENT = (GROUP, VERSION, "benchmarkexperiments")


def user_error(exc: BaseException) -> tuple[str, str] | None:
    """(reason, message) when `exc` is the user's to fix; None for anything else (retried)."""
    if isinstance(exc, SpecError):
        return INVALID_SPEC, str(exc)
    if isinstance(exc, ApiError) and exc.status == 422:  # an object built from the spec
        return (
            OBJECT_REJECTED,
            f"the apiserver refused an object built from the spec: {exc.message}",
        )
    return None


def report_refusal(
    kube: KubeApi, kind: str, body: Mapping[str, Any], condition: str, refusal: tuple[str, str]
) -> None:
    """Phase Failed and `condition` False with the reason, and one Warning Event: the same
    refusal of the same generation (an operator restart, a child's event) repeats nothing.
    `refusal`: (reason, message)."""
    if recorded_refusal(body, condition) == refusal:
        return
    reason, message = refusal
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    generation = int(meta.get("generation") or 0)
    status = body.get("status") or {}
    conditions = set_condition(
        status.get("conditions"), condition, FALSE, reason, message, generation=generation
    )
    try:
        kube.patch_status(
            kind,
            namespace,
            name,
            {"phase": PHASE_FAILED, "observedGeneration": generation, "conditions": conditions},
        )
    except ApiError as exc:
        if exc.status != 422:
            raise
        noted = {"generation": generation, "reason": reason, "message": message}
        kube.patch(
            kind,
            namespace,
            name,
            {"metadata": {"annotations": {REFUSED_ANNOTATION: json.dumps(noted)}}},
        )
        message += f" (the status could not be written: {exc.message})"
    kube.event(body, WARNING, reason, message)


@contextmanager
def refusals(
    kube: KubeApi, kind: str, namespace: str, name: str, condition: str, *, locks: ResourceLocks
) -> Iterator[None]:
    """Every handler's guard: an error the user caused is reported on the resource (see
    report_refusal) and ends the handler; anything else propagates and kopf retries it.

    Reported under the resource's lock from a fresh read, so two handlers refused at once (an
    update and a timer) tell the user once."""
    try:
        yield
    except (SpecError, ApiError) as exc:
        found = user_error(exc)
        if found is None:
            raise
        with locks.lock(kind, namespace, name):
            current = kube.get(kind, namespace, name)
            # Gone, or going: nobody to tell, and deletion never waits for a spec.
            if current is None or current["metadata"].get("deletionTimestamp"):
                return
            try:
                report_refusal(kube, kind, current, condition, found)
            except ApiError as gone:
                if gone.status != 404:
                    raise
