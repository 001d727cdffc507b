"""BenchmarkExperiment handlers: thin; the decision lives in mongobench.experiment.decide.schedule
and the I/O of one reconcile in mongobench.experiment.act.reconcile.

The experiment owns its MongoClusters and BenchmarkRuns (ownerReferences): deleting it lets
garbage collection delete them; the archive, outside the cluster, stays.

The reconcile (and the comparison library with it) loads with the first experiment the operator
handles (handlers/__init__.py says why).
"""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.api.kinds import BENCHMARKEXPERIMENT as KIND
from mongobench.clock import wall
from mongobench.experiment.decide import requeue
from mongobench.handlers.common import BENCHMARKEXPERIMENT, refusals
from mongobench.k8s import conditions as cond
from mongobench.observability.metrics import instrumented
from mongobench.state import state_of


def _advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    from mongobench.experiment.act import reconcile

    state = state_of(memo)
    with (
        refusals(state.kube, KIND, namespace, name, cond.SUCCEEDED, locks=state.locks),
        state.locks.lock(KIND, namespace, name),
    ):
        reconcile.advance(state.kube, namespace, name, wall(), state.config)


@kopf.on.resume(*BENCHMARKEXPERIMENT)
@kopf.on.create(*BENCHMARKEXPERIMENT)
@instrumented(KIND, "start")
def start(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    _advance(memo, meta["namespace"], meta["name"])


@kopf.on.event(*BENCHMARKEXPERIMENT)
async def experiment_changed(
    body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """The experiment's events decide how often it looks (experiment.requeue; runtime.ticker)."""
    namespace, name = meta["namespace"], meta["name"]
    result = requeue.ticks(body, deleted=type == "DELETED", config=state_of(memo).config)
    state_of(memo).ticker.requeue(
        (KIND, namespace, name), result, lambda: tick(memo, namespace, name)
    )


@instrumented(KIND, "tick")
def tick(memo: kopf.Memo, namespace: str, name: str) -> None:
    _advance(memo, namespace, name)
