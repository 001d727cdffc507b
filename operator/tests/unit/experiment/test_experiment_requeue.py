"""Unit tier: when a BenchmarkExperiment looks again, decided from its body alone
(experiment.requeue, pure): every experiment_tick_seconds until it ends, is deleted or its spec
is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongobench.config import OperatorConfig
from mongobench.controller import EVENTS_ONLY, REFUSED_ANNOTATION, Result
from mongobench.experiment.decide import requeue
from mongobench.k8s import conditions as cond

pytestmark = pytest.mark.unit

CONFIG = OperatorConfig.from_env({"MONGOBENCH_EXPERIMENT_TICK_SECONDS": "0.5"})


def experiment(phase: str | None, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "e", "generation": 2},
        "status": {"conditions": list(conditions), **({"phase": phase} if phase else {})},
    }


def refused(generation: int) -> dict[str, Any]:
    """Running, with a refusal the status could not take (handlers.common.report_refusal) of
    `generation` (the body's is 2)."""
    body = experiment(cond.RUN_RUNNING)
    noted = {"generation": generation, "reason": cond.INVALID_SPEC, "message": "bad"}
    body["metadata"]["annotations"] = {REFUSED_ANNOTATION: json.dumps(noted)}
    return body


@pytest.mark.parametrize(
    ("body", "deleted", "expected"),
    [
        (experiment(None), False, Result(0.5)),  # the create handler runs first; ticks too
        (experiment(cond.RUN_RUNNING), False, Result(0.5)),  # clusters and runs move alone
        (experiment(cond.RUN_RUNNING), True, EVENTS_ONLY),
        (experiment(cond.RUN_SUCCEEDED), False, EVENTS_ONLY),
        (experiment(cond.RUN_FAILED), False, EVENTS_ONLY),
        (refused(2), False, EVENTS_ONLY),  # this spec refused: until it changes
        (refused(1), False, Result(0.5)),  # an older spec's refusal: this one is tried
    ],
)
def test_an_experiments_body_says_how_often_it_looks_again(
    body: dict[str, Any], deleted: bool, expected: Result
) -> None:
    assert requeue.ticks(body, deleted=deleted, config=CONFIG) == expected


def test_an_experiment_being_deleted_never_ticks() -> None:
    body = experiment(cond.RUN_RUNNING)
    body["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    assert requeue.ticks(body, deleted=False, config=CONFIG) == EVENTS_ONLY
