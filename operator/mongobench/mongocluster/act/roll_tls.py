"""I/O: a roll between TLS modes (the steps and why they keep every connection up: tls_roll),
one step per sync pass that finds the members restarted onto the previous one.

A step records the new mode in status.tls first (desired() builds the pods from it, so a crash
after the record resumes the step), then rewrites the connection Secret (its URI switches to TLS
from preferTLS on) and applies the workloads; the rolling restart itself is the one a version
change takes (mongocluster.act.rolling: secondaries first, the primary stepped down last; mongos by
its Deployment). One Event per step, one when the roll is done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mongobench.api.kinds import MONGOCLUSTER as KIND
from mongobench.clock import Clock, rfc3339
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.conditions import Event
from mongobench.mongocluster.act.provision import (
    Desired,
    apply_workloads,
    cluster_secrets,
    ensure_secrets,
)
from mongobench.mongocluster.act.rolling import rolled
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.build.tls import COMBINED_KEY, certificate_requests, client_secret
from mongobench.mongocluster.decide.status import WorkloadState
from mongobench.mongocluster.decide.sync_plan import held_replicas
from mongobench.mongocluster.decide.tls_roll import (
    DISABLED,
    RollStep,
    done_message,
    effective_spec,
    jobs_without_ca,
    next_mode,
    plain_client_pods,
    target_mode,
    template_mode,
    toward,
)


def advance(
    kube: KubeApi,
    body: Mapping[str, Any],
    d: Desired,
    statefulsets: Mapping[str, WorkloadState],
    clock: Clock,
    *,
    config: OperatorConfig,
) -> list[Event]:
    """The roll's next step, if one is due; the Events it decided. `clock` dates the records
    (read again for the stamp that must follow the Secret's write)."""
    now = clock()
    meta, status = body["metadata"], body.get("status") or {}
    record = dict(status.get("tls") or {})
    current, target = target_mode(d.spec), target_mode(d.target)
    rolling = record.get("phase") == cond.TLS_ROLLING
    namespace, name = meta["namespace"], meta["name"]
    if current == target and not rolling:
        # No roll: a cluster created in its mode has the mode recorded once, nothing more.
        if record.get("mode") != current and (current != DISABLED or record):
            _record(kube, namespace, name, {"mode": current, "message": done_message(current)})
        return []
    mode_after = None if current == target else toward(current, target)
    step = next_mode(
        current=current,
        target=target,
        rolled=rolled(kube, d.layout, lambda w, c: template_mode(w, c) == current),
        certificates_ready=mode_after in (None, DISABLED) or _certificates_ready(kube, d),
        clients_without_ca=(
            _jobs_without_ca(kube, d.layout)
            if (current, mode_after) == ("allowTLS", "preferTLS")
            else 0
        ),
        # Only where this roll switched the URI: a cluster created in preferTLS had TLS clients.
        plain_clients=(
            _plain_clients(kube, d.layout, record["clientsSince"])
            if mode_after == "requireTLS" and record.get("clientsSince")
            else 0
        ),
    )
    if step.action in ("hold", "done"):  # a roll's end: every member runs the spec's mode
        done = {"mode": current, "phase": cond.TLS_ROLLED, "message": step.message}
        _record(kube, namespace, name, {**done, "completedAt": rfc3339(now)})
        return [(cond.NORMAL, cond.EVENT_TLS_ROLLED, step.message)]
    if step.action == "wait":
        if not rolling or record.get("message") != step.message:
            _record(kube, namespace, name, {**_started(record, now), "message": step.message})
        return []
    _take_step(
        kube, body, d, statefulsets, record=record, step=step, clock=clock, now=now, config=config
    )
    return [(cond.NORMAL, cond.EVENT_TLS_MODE_ROLLING, step.message)]


def _take_step(
    kube: KubeApi,
    body: Mapping[str, Any],
    d: Desired,
    statefulsets: Mapping[str, WorkloadState],
    *,
    record: Mapping[str, Any],
    step: RollStep,
    clock: Clock,
    now: datetime,
    config: OperatorConfig,
) -> None:
    """Members onto the step's mode: recorded, the URI Secrets, then the workloads."""
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    spec = effective_spec(d.target, step.mode)
    after = dataclasses.replace(d, spec=spec, wanted=None if spec == d.target else d.target)
    switched = spec.tls.operator_dials_tls and not d.spec.tls.operator_dials_tls
    update: dict[str, Any] = {**_started(record, now), "mode": step.mode, "message": step.message}
    if switched:
        update["clientsSince"] = rfc3339(now)
    elif not spec.tls.operator_dials_tls:
        update["clientsSince"] = None
    # The record first: desired() builds the pods from it from now on, so a crash here resumes.
    _record(kube, namespace, name, update)
    ensure_secrets(kube, after, body)
    if switched:
        # Stamped again once the Secret holds the TLS URI: a client reads it when its container
        # starts, so one created in a later second than the first stamp may still have read the
        # plain URI (a slow write) and would not be waited for before requireTLS.
        _record(kube, namespace, name, {"clientsSince": rfc3339(clock())})
    apply_workloads(
        kube, after, body, config, held_replicas(d.layout, statefulsets, body.get("status") or {})
    )


def _started(record: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    if record.get("phase") == cond.TLS_ROLLING:
        return {}
    return {"phase": cond.TLS_ROLLING, "startedAt": rfc3339(now), "completedAt": None}


def _record(kube: KubeApi, namespace: str, name: str, tls: Mapping[str, Any]) -> None:
    kube.patch_status(KIND, namespace, name, {"tls": dict(tls)})


def _certificates_ready(kube: KubeApi, d: Desired) -> bool:
    """Every certificate Secret the cluster needs holds an issued certificate."""
    secrets = cluster_secrets(kube, d.layout)
    return all(
        (secrets.get(r.secret) or {}).get(COMBINED_KEY) for r in certificate_requests(d.layout)
    )


def _jobs_without_ca(kube: KubeApi, layout: ClusterLayout) -> int:
    jobs = kube.list("Job", layout.namespace, f"{lbl.CLIENT_OF}={layout.name}")
    return jobs_without_ca(jobs, client_secret(layout))


def _plain_clients(kube: KubeApi, layout: ClusterLayout, since: str | None) -> int:
    pods = kube.list("Pod", layout.namespace, f"{lbl.CLIENT_OF}={layout.name}")
    return plain_client_pods(pods, since)
