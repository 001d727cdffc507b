"""BenchmarkRun handlers: thin; the state machine lives in mongobench.bench.orchestrate."""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from mongobench.api import BenchmarkRunSpec, SpecError
from mongobench.bench import jobs, orchestrate
from mongobench.bench.cpu_status import cpu_for_step
from mongobench.bench.data import ClusterData
from mongobench.config import OperatorConfig
from mongobench.handlers.common import BENCHMARKRUN, reject_spec
from mongobench.k8s import client as kube
from mongobench.mongo.errors import MongoAdminError
from mongobench.observability import metrics
from mongobench.observability.metrics import instrumented

_data = ClusterData()


def _advance(namespace: str, name: str) -> None:
    config = OperatorConfig.current()
    outcome = orchestrate.advance(namespace, name, config, _data, cpu_for_step(config))
    if outcome is None:
        return
    for type_, reason, message in outcome.events:
        kopf.event(dict(outcome.run), type=type_, reason=reason, message=message)  # type: ignore[arg-type]
    if outcome.phase in orchestrate.TERMINAL:
        run = kube.get("BenchmarkRun", namespace, name)
        if run is not None:
            metrics.export_run(run)


@kopf.on.resume(*BENCHMARKRUN)
@kopf.on.create(*BENCHMARKRUN)
@instrumented("BenchmarkRun", "start")
def start(
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    body: kopf.Body,
    **_: Any,
) -> None:
    generation = int(meta.get("generation") or 0)
    try:
        BenchmarkRunSpec.parse(dict(spec))
    except SpecError as exc:
        reject_spec(patch, body, status, generation, condition="Succeeded", error=exc)
        return
    if status.get("phase") in orchestrate.TERMINAL:
        metrics.export_run(dict(body))  # results of finished runs stay exported after restarts
        return
    _advance(meta["namespace"], meta["name"])


# Steps are driven by their Jobs' events; the timer covers waits nothing else wakes up for
# (the cluster becoming Ready, MongoDB reachable again) and stops with the run.
@kopf.timer(
    *BENCHMARKRUN,
    interval=1.0,
    when=lambda status, **_: status.get("phase") not in (*orchestrate.TERMINAL, None),
)
@instrumented("BenchmarkRun", "tick")
def tick(meta: kopf.Meta, **_: Any) -> None:
    _advance(meta["namespace"], meta["name"])


@kopf.on.event("batch", "v1", "jobs", labels={jobs.RUN_LABEL: kopf.PRESENT})
@instrumented("BenchmarkRun", "job-event")
def job_changed(meta: kopf.Meta, type: str | None, **_: Any) -> None:
    if type is None:  # the initial listing: resume handlers cover it
        return
    _advance(meta["namespace"], meta["labels"][jobs.RUN_LABEL])


@kopf.on.delete(*BENCHMARKRUN)
@instrumented("BenchmarkRun", "delete")
def delete(body: kopf.Body, spec: kopf.Spec, status: kopf.Status, **_: Any) -> None:
    # Jobs and result ConfigMaps are owned by the run and go with it; data only if asked.
    metrics.forget_run(dict(body))
    parsed = BenchmarkRunSpec.parse(dict(spec))
    succeeded = status.get("phase") == "Succeeded"
    if parsed.cleanup.data == "Always" and not succeeded:
        # Best effort: an unreachable MongoDB must not hold the run's deletion forever.
        try:
            message = orchestrate.drop_data(_data, parsed, body["metadata"]["namespace"])
        except (MongoAdminError, ApiException) as exc:
            kopf.warn(body, reason="DataNotDropped", message=str(exc))
        else:
            kopf.info(body, reason="DataDropped", message=message)
