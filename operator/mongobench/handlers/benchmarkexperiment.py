"""BenchmarkExperiment handlers: thin; the decision lives in mongobench.experiment.schedule and
the I/O of one reconcile in mongobench.experiment.reconcile.

The experiment owns its MongoClusters and BenchmarkRuns (ownerReferences): deleting it lets
garbage collection delete them; the archive, outside the cluster, stays.
"""

from __future__ import annotations

from typing import Any

import kopf

from mongobench.experiment import reconcile
from mongobench.handlers.common import BENCHMARKEXPERIMENT, refusals, settled
from mongobench.k8s import conditions as cond
from mongobench.observability.metrics import instrumented
from mongobench.state import state_of

KIND = reconcile.KIND


def _advance(memo: kopf.Memo, namespace: str, name: str) -> None:
    state = state_of(memo)
    with (
        refusals(KIND, namespace, name, cond.SUCCEEDED, state.locks),
        state.locks.lock(KIND, namespace, name),
    ):
        outcome = reconcile.advance(namespace, name)
        if outcome is None:
            return
        body = {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": KIND,
            "metadata": {"namespace": namespace, "name": name},
        }
        for type_, reason, message in outcome.events:
            kopf.event(body, type=type_, reason=reason, message=message)  # type: ignore[arg-type]


@kopf.on.resume(*BENCHMARKEXPERIMENT)
@kopf.on.create(*BENCHMARKEXPERIMENT)
@instrumented(KIND, "start")
def start(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    _advance(memo, meta["namespace"], meta["name"])


# Clusters and runs move on their own: the timer looks every 2 s until the experiment ends.
@kopf.timer(
    *BENCHMARKEXPERIMENT,
    interval=2.0,
    when=lambda body, status, **_: (
        status.get("phase") not in reconcile.TERMINAL and not settled(body, cond.SUCCEEDED)
    ),
)
@instrumented(KIND, "tick")
def tick(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    _advance(memo, meta["namespace"], meta["name"])
