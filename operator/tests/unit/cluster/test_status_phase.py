"""Unit tier: the MongoCluster phase is derived from what was observed, in the documented order
(cluster/status.py): Pending, Provisioning, Initializing, Ready, then Scaling, Degraded, Failed,
Deleting."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.cluster.layout import cluster_layout
from mongobench.cluster.status import Observed, Wiring, WorkloadState, compute_status

pytestmark = pytest.mark.unit

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:30Z"
LAYOUT = cluster_layout(
    "c",
    "ns",
    MongoClusterSpec.parse(
        {
            "version": "7.0.14",
            "topology": {"type": "Sharded", "sharded": {"shards": 2, "membersPerShard": 3}},
        }
    ),
)
SETS = ("c-cfg", "c-shard0", "c-shard1")
WIRED = Wiring(
    True,
    shards=frozenset({"c-shard0", "c-shard1"}),
    config_members=dict.fromkeys(SETS, 3),
)


def observed(
    ready: int = 3,
    replicas: int = 3,
    mongos: tuple[int, int] = (2, 2),
    wiring: Wiring | None = WIRED,
    **kw: Any,
) -> Observed:
    return Observed(
        statefulsets={name: WorkloadState(replicas, ready) for name in SETS},
        mongos=WorkloadState(*mongos),
        wiring=wiring,
        **kw,
    )


def phase(obs: Observed, previous: dict[str, Any] | None = None) -> str:
    status = compute_status(LAYOUT, obs, previous or {}, generation=1, created=T0, now=T1)
    return str(status["phase"])


READY_BEFORE = {"timings": {"readySeconds": 42.0}}


def test_first_creation_goes_pending_provisioning_initializing_ready() -> None:
    assert phase(Observed(statefulsets={})) == "Pending"
    assert phase(observed(ready=1, wiring=None)) == "Provisioning"
    assert phase(observed(wiring=Wiring(False, "c-cfg: initiating"))) == "Initializing"
    status = compute_status(LAYOUT, observed(), {}, generation=1, created=T0, now=T1)
    assert status["phase"] == "Ready"
    assert status["timings"]["readySeconds"] == 90.0  # the deploy time users measured by hand


def test_after_ready_a_lost_pod_is_degraded_not_provisioning() -> None:
    assert phase(observed(ready=2), READY_BEFORE) == "Degraded"
    assert phase(observed(ready=2)) == "Provisioning"  # never Ready yet


def test_after_ready_a_shape_change_is_scaling_until_observed_done() -> None:
    more_mongos = Observed(
        statefulsets={n: WorkloadState(3, 3) for n in SETS},
        mongos=WorkloadState(2, 2),
        wiring=WIRED,
    )
    layout3 = cluster_layout(
        "c",
        "ns",
        MongoClusterSpec.parse(
            {
                "version": "7.0.14",
                "topology": {
                    "type": "Sharded",
                    "sharded": {"shards": 2, "membersPerShard": 3, "mongos": 3},
                },
            }
        ),
    )
    status = compute_status(layout3, more_mongos, READY_BEFORE, generation=2, created=T0, now=T1)
    assert status["phase"] == "Scaling"
    # A member still in the replica set configuration after the StatefulSet shrank: Scaling.
    leaving = Wiring(True, shards=WIRED.shards, config_members={**WIRED.config_members, "c-cfg": 4})
    assert phase(observed(wiring=leaving), READY_BEFORE) == "Scaling"
    assert phase(observed(), READY_BEFORE) == "Ready"


def test_failure_and_deletion_win() -> None:
    assert phase(observed(failure="Unauthorized"), READY_BEFORE) == "Failed"
    assert phase(observed(deleting=True, failure="x"), READY_BEFORE) == "Deleting"
