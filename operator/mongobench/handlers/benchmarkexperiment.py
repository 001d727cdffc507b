"""BenchmarkExperiment handlers: thin; the decision lives in mongobench.experiment.schedule and
the I/O of one reconcile in mongobench.experiment.reconcile.

The experiment owns its MongoClusters and BenchmarkRuns (ownerReferences): deleting it lets
garbage collection delete them; the archive, outside the cluster, stays.
"""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.experiment import reconcile
from mongobench.handlers.common import BENCHMARKEXPERIMENT, reference, refusals, settled
from mongobench.k8s import conditions as cond
from mongobench.observability.metrics import instrumented
from mongobench.state import state_of

KIND = reconcile.KIND


def _advance(memo: kopf.Memo, ref: dict[str, Any]) -> None:
    """`ref`: the experiment (handlers.common.reference), for its Events."""
    state = state_of(memo)
    namespace, name = ref["metadata"]["namespace"], ref["metadata"]["name"]
    with (
        refusals(KIND, namespace, name, cond.SUCCEEDED, state.locks),
        state.locks.lock(KIND, namespace, name),
    ):
        outcome = reconcile.advance(namespace, name)
        if outcome is None:
            return
        for type_, reason, message in outcome.events:
            kopf.event(ref, type=type_, reason=reason, message=message)  # type: ignore[arg-type]


@kopf.on.resume(*BENCHMARKEXPERIMENT)
@kopf.on.create(*BENCHMARKEXPERIMENT)
@instrumented(KIND, "start")
def start(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _advance(memo, reference(body))


# Clusters and runs move on their own: the experiment looks every 2 s until it ends (k8s.ticker,
# decided by the experiment's events).
TICK_SECONDS = 2.0


@kopf.on.event(*BENCHMARKEXPERIMENT)
async def experiment_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    namespace, name = meta["namespace"], meta["name"]
    status = body.get("status") or {}
    ref = reference(body)
    state_of(memo).ticker.schedule(
        (KIND, namespace, name),
        type != "DELETED"
        and not meta.get("deletionTimestamp")
        and status.get("phase") not in reconcile.TERMINAL
        and not settled(body, cond.SUCCEEDED),
        TICK_SECONDS,
        lambda: tick(memo, ref),
    )


@instrumented(KIND, "tick")
def tick(memo: kopf.Memo, ref: dict[str, Any]) -> None:
    _advance(memo, ref)
