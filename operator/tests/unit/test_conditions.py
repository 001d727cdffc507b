"""Unit tier: standard conditions keep their transition time unless their status changes."""

import pytest

from mongobench.k8s.conditions import get_condition, is_true, set_condition

pytestmark = pytest.mark.unit


def test_new_condition_is_added_with_transition_time() -> None:
    out = set_condition(
        [], "Ready", "False", "Provisioning", "pods starting", generation=2, now="T1"
    )
    assert out == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Provisioning",
            "message": "pods starting",
            "lastTransitionTime": "T1",
            "observedGeneration": 2,
        }
    ]


def test_same_status_keeps_transition_time_but_updates_reason() -> None:
    first = set_condition([], "Ready", "False", "Provisioning", now="T1")
    second = set_condition(first, "Ready", "False", "Initializing", "rs0 initiating", now="T2")
    assert second[0]["lastTransitionTime"] == "T1"
    assert second[0]["reason"] == "Initializing"


def test_status_change_moves_transition_time_and_keeps_other_conditions() -> None:
    conditions = set_condition([], "Provisioned", "True", "PodsReady", now="T0")
    conditions = set_condition(conditions, "Ready", "False", "Initializing", now="T1")
    conditions = set_condition(conditions, "Ready", "True", "Ready", now="T2")
    assert [c["type"] for c in conditions] == ["Provisioned", "Ready"]
    assert get_condition(conditions, "Ready")["lastTransitionTime"] == "T2"  # type: ignore[index]
    assert is_true(conditions, "Ready")
    assert not is_true(conditions, "Missing")
