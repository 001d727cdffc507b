"""Unit tier: the pure decisions behind replica-set reconfig and rolling restarts."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.mongo.model import (
    MemberStatus,
    ReplicaSetSpec,
    ReplicaSetStatus,
    Role,
    RoleGrant,
    UserSpec,
)
from mongobench.mongo.plan import (
    initiate_document,
    next_reconfig,
    next_rolling_step,
    shard_seed_list,
    user_command,
)

pytestmark = pytest.mark.unit

H = [f"rs0-{i}.rs0-hl.ns.svc.cluster.local:27017" for i in range(9)]


def _config(hosts: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "_id": "rs0",
        "version": 7,
        "term": 2,
        "members": [{"_id": i, "host": h, "votes": 1, "priority": 1} for i, h in enumerate(hosts)],
        **extra,
    }


def _status(states: dict[str, str], primary: str | None = None, **lag: int) -> ReplicaSetStatus:
    members = tuple(
        MemberStatus(h, i, s, s != "DOWN", optime_seconds=1000 - lag.get(f"m{i}", 0))
        for i, (h, s) in enumerate(states.items())
    )
    if primary is None:
        primary = next((h for h, s in states.items() if s == "PRIMARY"), None)
    return ReplicaSetStatus("rs0", Role.REPLICA, True, members, primary=primary)


def test_initiate_caps_voting_members_at_seven() -> None:
    doc = initiate_document(ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:9])))
    assert [m.get("votes", 1) for m in doc["members"]] == [1] * 7 + [0, 0]
    assert doc["members"][8] == {"_id": 8, "host": H[8], "priority": 0, "votes": 0}
    assert "configsvr" not in doc


def test_seed_list_names_the_set_and_every_member() -> None:
    spec = ReplicaSetSpec("sh1", Role.SHARD, (H[0], H[1]))
    assert shard_seed_list(spec) == f"sh1/{H[0]},{H[1]}"


def test_scale_up_adds_one_member_at_a_time_in_order() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:5]))
    step = next_reconfig(spec, _config(H[:3]), _status(dict.fromkeys(H[:3], "SECONDARY"), H[0]))
    assert step is not None and step.kind == "add" and step.host == H[3] and step.config
    assert [m["host"] for m in step.config["members"]] == H[:4]
    assert step.config["version"] == 8 and "term" not in step.config


def test_newly_added_member_blocks_the_next_voting_change() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:5]))
    config = _config(H[:4])
    config["members"][3]["newlyAdded"] = True
    states = {H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY", H[3]: "SECONDARY"}
    step = next_reconfig(spec, config, _status(states))
    assert step is not None and (step.kind, step.host) == ("wait", H[3])


def test_a_down_member_does_not_block_its_own_removal() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2]))
    step = next_reconfig(
        spec, _config(H[:3]), _status({H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "DOWN"})
    )
    assert step is not None and (step.kind, step.host) == ("remove", H[2])


def test_scale_down_removes_highest_id_first_and_never_the_primary_directly() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, (H[0],))
    states = {H[0]: "SECONDARY", H[1]: "SECONDARY", H[2]: "PRIMARY"}
    step = next_reconfig(spec, _config(H[:3]), _status(states))
    assert step is not None and (step.kind, step.host) == ("step_down", H[2])
    states = {H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY"}
    step = next_reconfig(spec, _config(H[:3]), _status(states))
    assert step is not None and (step.kind, step.host) == ("remove", H[2])


def test_replacement_adds_before_it_removes() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, (H[0], H[1], H[3]))
    states = {H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY"}
    step = next_reconfig(spec, _config(H[:3]), _status(states))
    assert step is not None and (step.kind, step.host) == ("add", H[3])


def test_no_voting_change_without_a_primary() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:3]))
    step = next_reconfig(spec, _config(H[:2]), _status(dict.fromkeys(H[:2], "SECONDARY")))
    assert step is not None and step.kind == "wait" and "primary" in step.reason


def test_priority_change_is_its_own_step() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2]), priorities=((H[1], 0.5),))
    states = {H[0]: "PRIMARY", H[1]: "SECONDARY"}
    step = next_reconfig(spec, _config(H[:2]), _status(states))
    assert step is not None and step.kind == "priority" and step.config
    assert step.config["members"][1]["priority"] == 0.5


def test_converged_config_needs_no_step() -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:3]))
    states = {H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY"}
    assert next_reconfig(spec, _config(H[:3]), _status(states)) is None


def test_rolling_restart_order_secondaries_high_ordinal_first_primary_last() -> None:
    states = {H[0]: "SECONDARY", H[1]: "PRIMARY", H[2]: "SECONDARY"}
    status = _status(states)
    order = []
    pending = list(H[:3])
    while True:
        step = next_rolling_step(status, pending)
        if step.kind == "done":
            break
        assert step.kind in {"restart", "step_down"}
        order.append((step.kind, step.host))
        if step.kind == "step_down":
            # after the step-down another member is primary and the old one is a secondary
            status = _status({H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY"})
        else:
            pending.remove(str(step.host))
    assert order == [
        ("restart", H[2]),
        ("restart", H[0]),
        ("step_down", H[1]),
        ("restart", H[1]),
    ]


def test_a_primary_with_nobody_to_hand_over_to_is_restarted_not_stepped_down() -> None:
    # replSetStepDown fails when no electable secondary exists: a one-member set would never roll.
    alone = _status({H[0]: "PRIMARY"})
    step = next_rolling_step(alone, [H[0]])
    assert (step.kind, step.host) == ("restart", H[0])
    passive = ReplicaSetStatus(
        "rs0",
        Role.REPLICA,
        True,
        (MemberStatus(H[0], 0, "PRIMARY", True), MemberStatus(H[1], 1, "SECONDARY", True, 1, 0)),
        primary=H[0],
    )
    assert next_rolling_step(passive, [H[0]]).kind == "restart"
    pair = _status({H[0]: "PRIMARY", H[1]: "SECONDARY"})
    assert next_rolling_step(pair, [H[0]]).kind == "step_down"


def test_rolling_restart_waits_for_unhealthy_or_lagging_members() -> None:
    states = {H[0]: "PRIMARY", H[1]: "STARTUP2", H[2]: "SECONDARY"}
    assert next_rolling_step(_status(states), [H[2]]).kind == "wait"
    lagging = _status({H[0]: "PRIMARY", H[1]: "SECONDARY", H[2]: "SECONDARY"}, m1=30)
    step = next_rolling_step(lagging, [H[2]])
    assert step.kind == "wait" and step.host == H[1]
    assert next_rolling_step(lagging, [H[2]], max_lag_seconds=60).kind == "restart"


def test_user_command_create_update_or_nothing() -> None:
    user = UserSpec("bench", "pw", (RoleGrant("readWrite", "ycsb"),))
    assert user_command(user, None) == {
        "createUser": "bench",
        "pwd": "pw",
        "roles": [{"role": "readWrite", "db": "ycsb"}],
    }
    same = {"user": "bench", "roles": [{"role": "readWrite", "db": "ycsb"}]}
    assert user_command(user, same) is None
    drifted = {"user": "bench", "roles": [{"role": "read", "db": "ycsb"}]}
    assert user_command(user, drifted) == {
        "updateUser": "bench",
        "roles": [{"role": "readWrite", "db": "ycsb"}],
    }
