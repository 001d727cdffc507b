"""Protocol tier: replica-set administration against scripted wire peers (mockupdb).

pymongo really talks TCP to loopback peers; the peers' replies are scripted here with the codes
and messages a real mongod sends. What these prove: the exact command documents and how each
reply is handled. They do not prove that a real mongod reaches the states we script.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from bson import Timestamp
from mongo_wirepeer import Cluster, body, run

from mongobench.mongo import (
    Connector,
    MappedResolver,
    MongoAdmin,
    PermanentMongoError,
    ReplicaSetSpec,
    Role,
    TransientMongoError,
)

pytestmark = pytest.mark.protocol

H = [f"rs0-{i}.rs0-hl.bench.svc.cluster.local:27017" for i in range(3)]
UNINITIALIZED = {"isWritablePrimary": False, "secondary": False, "isreplicaset": True}


def _uninitialized(cluster: Cluster, hosts: list[str]) -> MongoAdmin:
    for h in hosts:
        cluster.peer(h, dict(UNINITIALIZED))
    return cluster.admin()


def test_initiate_sends_every_member_by_dns_name_to_the_first_member(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H)
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H))
    result = run(admin.ensure_replica_set, spec)

    request = cluster.peers[H[0]].receives()
    assert body(request) == {
        "replSetInitiate": {
            "_id": "rs0",
            "members": [
                {"_id": 0, "host": H[0]},
                {"_id": 1, "host": H[1]},
                {"_id": 2, "host": H[2]},
            ],
        }
    }
    request.ok()
    status = result()
    assert status.initialized and status.action == "replSetInitiate"
    assert not status.converged  # the caller re-invokes until members report PRIMARY/SECONDARY
    for h in H[1:]:
        cluster.peers[h].assert_silent()


def test_config_server_set_of_one_is_initiated_with_configsvr_flag(cluster: Cluster) -> None:
    host = "cfg-0.cfg-hl.bench.svc.cluster.local:27019"
    admin = _uninitialized(cluster, [host])
    spec = ReplicaSetSpec("cfg", Role.CONFIG, (host,))
    result = run(admin.ensure_replica_set, spec)
    request = cluster.peers[host].receives()
    assert body(request) == {
        "replSetInitiate": {"_id": "cfg", "configsvr": True, "members": [{"_id": 0, "host": host}]}
    }
    request.ok()
    assert result().initialized


def test_shard_set_priorities_appear_only_where_overridden(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H[:2])
    spec = ReplicaSetSpec("sh0", Role.SHARD, tuple(H[:2]), priorities=((H[1], 0),))
    result = run(admin.ensure_replica_set, spec)
    request = cluster.peers[H[0]].receives()
    assert request.doc["replSetInitiate"] == {
        "_id": "sh0",
        "members": [{"_id": 0, "host": H[0]}, {"_id": 1, "host": H[1], "priority": 0}],
    }
    request.ok()
    result()


def test_already_initialized_is_success(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H[:1])
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:1]))
    result = run(admin.ensure_replica_set, spec)
    cluster.peers[H[0]].receives().command_err(
        23, "already initialized", codeName="AlreadyInitialized"
    )
    assert result().initialized


def test_initiate_waits_for_every_member_to_answer(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H[:2])
    # the third member's name maps to a loopback port nobody listens on
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    admin.connector.resolver.mapping[H[2]] = dead  # type: ignore[attr-defined]
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H))
    started = time.monotonic()
    status = admin.ensure_replica_set(spec)
    assert time.monotonic() - started < 10  # bounded by the connector's timeout, no hang
    assert not status.initialized
    assert status.pending is not None and H[2] in status.pending
    assert status.member(H[2]) is not None and not status.member(H[2]).healthy  # type: ignore[union-attr]
    cluster.peers[H[0]].assert_silent()


def test_node_not_found_on_initiate_is_transient(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H[:1])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:1])))
    cluster.peers[H[0]].receives().command_err(
        74, "replSetInitiate quorum check failed", codeName="NodeNotFound"
    )
    with pytest.raises(TransientMongoError) as err:
        result()
    assert err.value.code == 74


def test_initiate_refused_for_data_is_permanent_with_server_message(cluster: Cluster) -> None:
    admin = _uninitialized(cluster, H[:1])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:1])))
    msg = "'rs0-0:27017' has data already, cannot initiate set."
    cluster.peers[H[0]].receives().command_err(93, msg, codeName="InvalidReplicaSetConfig")
    with pytest.raises(PermanentMongoError) as err:
        result()
    assert err.value.code == 93 and msg in str(err.value) and H[0] in str(err.value)


def test_no_member_reachable_is_transient_and_fast() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    connector = Connector(resolver=MappedResolver({H[0]: dead}), timeout_seconds=1)
    started = time.monotonic()
    with pytest.raises(TransientMongoError, match="no member reachable"), connector:
        MongoAdmin(connector).ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, (H[0],)))
    assert time.monotonic() - started < 5


# ---- initialized sets -----------------------------------------------------------------------


def _member(i: int, host: str, state: str, health: int = 1, secs: int = 1000) -> dict[str, Any]:
    code = {"PRIMARY": 1, "SECONDARY": 2, "STARTUP2": 5, "DOWN": 8}[state]
    return {
        "_id": i,
        "name": host,
        "health": health,
        "state": code,
        "stateStr": state,
        "optime": {"ts": Timestamp(secs, 1), "t": 3},
    }


def _running(
    cluster: Cluster,
    members: list[tuple[str, str]],
    *,
    config_extra: dict[str, Any] | None = None,
    set_name: str = "rs0",
) -> MongoAdmin:
    """Peers for an initialized set; the first PRIMARY member answers status and config."""
    hosts = [h for h, _ in members]
    primary = next((h for h, s in members if s == "PRIMARY"), None)
    status = {"set": set_name, "members": [_member(i, h, s) for i, (h, s) in enumerate(members)]}
    config = {
        "_id": set_name,
        "version": 4,
        "term": 3,
        "protocolVersion": 1,
        "members": [
            {"_id": i, "host": h, "priority": 1.0, "votes": 1} for i, h in enumerate(hosts)
        ],
        "settings": {"chainingAllowed": True},
    }
    config.update(config_extra or {})
    for h, state in members:
        hello = {
            "setName": set_name,
            "isWritablePrimary": state == "PRIMARY",
            "secondary": state == "SECONDARY",
            "hosts": hosts,
            "me": h,
        }
        if primary:
            hello["primary"] = primary
        peer = cluster.peer(h, hello)
        peer.canned["replsetgetstatus"] = status
        peer.canned["replsetgetconfig"] = {"config": config}
    return cluster.admin()


def test_status_reports_members_state_and_health(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    cluster.peers[H[2]].canned["replsetgetstatus"]["members"][2] = _member(2, H[2], "DOWN", 0)
    status = admin.replica_set_status(ReplicaSetSpec("rs0", Role.REPLICA, tuple(H)))
    assert status.initialized and status.primary == H[0] and status.config_version == 4
    assert [(m.host, m.state, m.healthy) for m in status.members] == [
        (H[0], "PRIMARY", True),
        (H[1], "SECONDARY", True),
        (H[2], "DOWN", False),
    ]
    assert status.as_status()["members"][2] == {"host": H[2], "state": "DOWN", "health": False}


def test_converged_set_sends_no_mutation(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY")])
    status = admin.ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    assert status.converged
    assert [r.command_name for r in cluster.peers[H[0]].auto] == [
        "replSetGetStatus",
        "replSetGetConfig",
    ]
    cluster.peers[H[0]].assert_silent()


def test_adding_a_member_is_one_reconfig_with_the_next_id(cluster: Cluster) -> None:
    admin = _running(
        cluster,
        [(H[0], "PRIMARY"), (H[1], "SECONDARY")],
        config_extra={},
    )
    # mongod 4.4+ reports server-managed fields that must not be sent back
    config = cluster.peers[H[0]].canned["replsetgetconfig"]["config"]
    config["members"][1]["newlyAdded"] = False
    cluster.peer(H[2], dict(UNINITIALIZED))
    admin = cluster.admin()  # resolver now maps the new pod too

    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H)))
    request = cluster.peers[H[0]].receives()
    assert body(request) == {
        "replSetReconfig": {
            "_id": "rs0",
            "version": 5,
            "protocolVersion": 1,
            "members": [
                {"_id": 0, "host": H[0], "priority": 1.0, "votes": 1},
                {"_id": 1, "host": H[1], "priority": 1.0, "votes": 1},
                {"_id": 2, "host": H[2]},
            ],
            "settings": {"chainingAllowed": True},
        }
    }
    request.ok()
    status = result()
    assert status.action == f"adding {H[2]}" and not status.converged


def test_next_add_waits_until_the_newcomer_is_secondary(cluster: Cluster) -> None:
    four = [*H, "rs0-3.rs0-hl.bench.svc.cluster.local:27017"]
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    cluster.peers[H[0]].canned["replsetgetstatus"]["members"][2] = _member(2, H[2], "STARTUP2")
    cluster.peer(four[3], dict(UNINITIALIZED))
    admin = cluster.admin()
    status = admin.ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, tuple(four)))
    assert status.pending is not None and H[2] in status.pending and "STARTUP2" in status.pending
    cluster.peers[H[0]].assert_silent()


def test_removing_a_secondary_drops_it_from_the_config(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    request = cluster.peers[H[0]].receives()
    sent = request.doc["replSetReconfig"]
    assert [m["host"] for m in sent["members"]] == H[:2] and sent["version"] == 5
    assert "term" not in sent
    request.ok()
    assert result().action == f"removing {H[2]}"


def test_removing_the_primary_steps_it_down_first(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "SECONDARY"), (H[1], "SECONDARY"), (H[2], "PRIMARY")])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    request = cluster.peers[H[2]].receives()
    assert body(request) == {"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 10}
    request.ok()
    assert "stepping down" in (result().action or "")


def test_not_writable_primary_during_reconfig_is_transient(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    cluster.peers[H[0]].receives().command_err(10107, "not primary", codeName="NotWritablePrimary")
    with pytest.raises(TransientMongoError) as err:
        result()
    assert err.value.code == 10107 and "not primary" in str(err.value)


def test_member_already_present_after_a_failed_reconfig_is_success(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    request = cluster.peers[H[0]].receives()
    # Someone else applied the same change first; the module re-observes and finds it done.
    cluster.peers[H[0]].canned["replsetgetconfig"] = {"config": request.doc["replSetReconfig"]}
    request.command_err(
        103, "version 5 is not greater", codeName="NewReplicaSetConfigurationIncompatible"
    )
    assert result().action == f"removing {H[2]}"


def test_incompatible_reconfig_that_did_not_happen_is_permanent(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    result = run(admin.ensure_replica_set, ReplicaSetSpec("rs0", Role.REPLICA, tuple(H[:2])))
    cluster.peers[H[0]].receives().command_err(
        103, "bad config", codeName="NewReplicaSetConfigurationIncompatible"
    )
    with pytest.raises(PermanentMongoError, match="bad config") as err:
        result()
    assert err.value.code_name == "NewReplicaSetConfigurationIncompatible"


def test_role_mismatch_with_configsvr_flag_is_permanent(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY")])
    with pytest.raises(PermanentMongoError, match="configsvr=False"):
        admin.ensure_replica_set(ReplicaSetSpec("rs0", Role.CONFIG, (H[0],)))


def test_member_of_another_set_is_permanent(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY")], set_name="other")
    with pytest.raises(PermanentMongoError, match="'other'"):
        admin.ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, (H[0],)))


def test_not_yet_initialized_status_reads_as_uninitialized(cluster: Cluster) -> None:
    # hello already carries setName but the status call races the initiate
    admin = _running(cluster, [(H[0], "PRIMARY")])
    del cluster.peers[H[0]].canned["replsetgetstatus"]
    result = run(admin.replica_set_status, ReplicaSetSpec("rs0", Role.REPLICA, (H[0],)))
    cluster.peers[H[0]].receives().command_err(
        94, "no replset config has been received", codeName="NotYetInitialized"
    )
    assert result().initialized is False


def test_rolling_restart_steps_the_primary_down_last(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    spec = ReplicaSetSpec("rs0", Role.REPLICA, tuple(H))
    step = admin.rolling_step(spec, [H[0], H[2]])
    assert (step.kind, step.host) == ("restart", H[2])
    cluster.peers[H[0]].assert_silent()

    result = run(admin.rolling_step, spec, [H[0]])
    request = cluster.peers[H[0]].receives()
    assert request.command_name == "replSetStepDown"
    request.ok()
    assert result().kind == "step_down"


def test_rolling_restart_waits_for_a_lagging_secondary(cluster: Cluster) -> None:
    admin = _running(cluster, [(H[0], "PRIMARY"), (H[1], "SECONDARY"), (H[2], "SECONDARY")])
    cluster.peers[H[0]].canned["replsetgetstatus"]["members"][1] = _member(
        1, H[1], "SECONDARY", secs=900
    )
    step = admin.rolling_step(ReplicaSetSpec("rs0", Role.REPLICA, tuple(H)), [H[2]])
    assert step.kind == "wait" and H[1] in step.reason and "100s" in step.reason
