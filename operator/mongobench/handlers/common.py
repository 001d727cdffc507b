"""What every handler shares: the resource coordinates, and one way to report an error the user
caused (a spec the operator cannot use, an object the apiserver refuses): a condition, phase
Failed and one Event, never a retried traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mongobench.api import GROUP, VERSION, SpecError
from mongobench.k8s.api import WARNING, KubeApi
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import (
    CLUSTER_DELETED,
    CLUSTER_IS_READY,
    CLUSTER_NOT_FOUND,
    CLUSTER_NOT_READY,
    CLUSTER_READY,
    FALSE,
    INVALID_SPEC,
    OBJECT_REJECTED,
    PHASE_FAILED,
    PHASE_READY,
    TRUE,
    get_condition,
    refused,
    set_condition,
)
from mongobench.k8s.locks import ResourceLocks

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


# Where a refusal is recorded when the status cannot be written: Kubernetes before 1.33 checks
# a status write against the spec's current rules without ratcheting (kubernetes#129503), so
# an object stored before a rule existed takes no status; its metadata still takes writes.
REFUSED_ANNOTATION = "mongobench.io/refused"


def recorded_refusal(body: Mapping[str, Any], condition: str) -> tuple[str, str] | None:
    """(reason, message) of the refusal recorded for the object's current generation."""
    meta = body.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    status = body.get("status") or {}
    if status.get("phase") == PHASE_FAILED and refused(status, condition, generation):
        found = get_condition(status.get("conditions"), condition) or {}
        return str(found.get("reason")), str(found.get("message"))
    try:
        noted = json.loads((meta.get("annotations") or {})[REFUSED_ANNOTATION])
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(noted, dict) or noted.get("generation") != generation:
        return None
    return str(noted.get("reason")), str(noted.get("message"))


def settled(body: Mapping[str, Any], condition: str) -> bool:
    """Whether work on the object stops until its spec changes (timers ask this)."""
    return recorded_refusal(body, condition) is not None


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


# How a BenchmarkRun sees its MongoCluster, in the reasons of its ClusterReady condition: the
# run follows the cluster (k8s.dependents) and the cluster's events wake it when this changes.
def cluster_as_runs_see_it(body: Mapping[str, Any], deleted: bool) -> str:
    """The MongoCluster in a run's terms: NotFound (deleted), Ready or NotReady."""
    if deleted:
        return CLUSTER_NOT_FOUND
    status = body.get("status") or {}
    ready = status.get("phase") == PHASE_READY and not body["metadata"].get("deletionTimestamp")
    return CLUSTER_IS_READY if ready else CLUSTER_NOT_READY


def cluster_as_run_saw_it(status: Mapping[str, Any]) -> str | None:
    """What the run recorded of its cluster (as cluster_as_runs_see_it says it); None before
    its first look."""
    found = get_condition(status.get("conditions"), CLUSTER_READY)
    if found is None:
        return None
    if found.get("status") == TRUE:
        return CLUSTER_IS_READY
    if found.get("reason") in (CLUSTER_NOT_FOUND, CLUSTER_DELETED):
        return CLUSTER_NOT_FOUND
    return CLUSTER_NOT_READY
