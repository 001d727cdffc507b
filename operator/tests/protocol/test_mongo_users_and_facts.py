"""Protocol tier: users (incl. the keyfile and localhost exception paths), serverStatus facts
and FCV, against scripted wire peers (mockupdb). SCRAM itself is not scripted: authentication is
either absent or refused with the server's AuthenticationFailed, which is exactly the first-user
situation (full SCRAM, incl. __system by keyfile, runs against the model in e2e/local).
"""

from __future__ import annotations

import pytest
from mongo_wirepeer import Cluster, body, run

from mongobench.mongo import (
    Credentials,
    Mongos,
    PermanentMongoError,
    ReplicaSetSpec,
    Role,
    admin_user,
    benchmark_user,
    exporter_user,
    internal_credentials,
)

pytestmark = pytest.mark.protocol

HOST = "rs0-0.rs0-hl.bench.svc.cluster.local:27017"
RS = ReplicaSetSpec("rs0", Role.REPLICA, (HOST,))
PRIMARY = {"setName": "rs0", "isWritablePrimary": True, "primary": HOST, "hosts": [HOST]}
ROUTER = "mongos-0.mongos-hl.bench.svc.cluster.local:27017"
PASSWORD = "s3cr3t-Pa55"


def test_first_user_is_created_through_the_localhost_exception(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.reject_auth = True  # no user exists yet: the server refuses every login
    admin = cluster.admin(Credentials("admin", PASSWORD))
    result = run(admin.ensure_users, RS, [admin_user("admin", PASSWORD)])
    request = peer.receives()
    assert body(request) == {
        "createUser": "admin",
        "pwd": PASSWORD,
        "roles": [{"role": "root", "db": "admin"}],
    }
    request.ok()
    assert result() == ("created admin",)
    # the login was attempted first, and the user was created on a connection without it
    assert [r.command_name.lower() for r in peer.auto] == ["saslstart"]


def test_localhost_exception_unavailable_is_permanent_and_never_shows_the_password(
    cluster: Cluster,
) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.reject_auth = True
    admin = cluster.admin(Credentials("admin", PASSWORD))
    result = run(admin.ensure_users, RS, [admin_user("admin", PASSWORD)])
    peer.receives().command_err(
        13, "command createUser requires authentication", codeName="Unauthorized"
    )
    with pytest.raises(PermanentMongoError, match="localhost exception") as err:
        result()
    text = f"{err.value} {err.value!r} {err.value.args} {admin_user('admin', PASSWORD)!r}"
    assert PASSWORD not in text and "mongodb://" not in text


def test_with_the_keyfile_the_first_user_is_created_as_the_internal_user(cluster: Cluster) -> None:
    # What the operator does: members run with --keyFile and it is not on their loopback.
    peer = cluster.peer(HOST, PRIMARY)
    peer.reject_auth = True  # scripted: both logins are refused, so we see what each asked for
    keyfile = "a2V5ZmlsZS1ieXRlcw==\n"
    admin = cluster.admin(Credentials("admin", PASSWORD), bootstrap=internal_credentials(keyfile))
    result = run(admin.ensure_users, RS, [admin_user("admin", PASSWORD)])
    with pytest.raises(PermanentMongoError, match="different keyfile") as err:
        result()
    logins = [(r.doc["$db"], bytes(r.doc["payload"]).decode()) for r in peer.auto]
    assert [db for db, _ in logins] == ["admin", "local"]
    assert "n=admin," in logins[0][1] and "n=__system," in logins[1][1]
    text = f"{err.value} {err.value!r}"
    assert "a2V5ZmlsZS1ieXRlcw" not in text and PASSWORD not in text


def test_users_get_exactly_their_roles(cluster: Cluster) -> None:
    peer = cluster.peer(ROUTER, {"isWritablePrimary": True, "msg": "isdbgrid"})
    admin = cluster.admin()
    users = [benchmark_user("bench", "pw1", "ycsb"), exporter_user("exporter", "pw2")]
    result = run(admin.ensure_users, Mongos((ROUTER,)), users)

    info = peer.receives()
    assert body(info) == {"usersInfo": {"user": "bench", "db": "admin"}}
    info.ok(users=[])
    create = peer.receives()
    assert body(create) == {
        "createUser": "bench",
        "pwd": "pw1",
        "roles": [{"role": "readWrite", "db": "ycsb"}],
    }
    create.ok()

    peer.receives().ok(users=[])
    create = peer.receives()
    assert body(create) == {
        "createUser": "exporter",
        "pwd": "pw2",
        "roles": [{"role": "clusterMonitor", "db": "admin"}, {"role": "read", "db": "local"}],
    }
    create.ok()
    assert result() == ("created bench", "created exporter")


def test_existing_user_with_matching_roles_is_left_alone(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["usersinfo"] = {
        "users": [{"user": "bench", "db": "admin", "roles": [{"role": "readWrite", "db": "ycsb"}]}]
    }
    admin = cluster.admin()
    assert admin.ensure_users(RS, [benchmark_user("bench", "pw", "ycsb")]) == ()
    peer.assert_silent()


def test_drifted_roles_are_updated_without_resending_the_password(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["usersinfo"] = {
        "users": [{"user": "bench", "db": "admin", "roles": [{"role": "read", "db": "ycsb"}]}]
    }
    result = run(cluster.admin().ensure_users, RS, [benchmark_user("bench", "pw", "ycsb")])
    request = peer.receives()
    assert body(request) == {"updateUser": "bench", "roles": [{"role": "readWrite", "db": "ycsb"}]}
    request.ok()
    assert result() == ("updated roles of bench",)


def test_user_already_exists_is_success(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["usersinfo"] = {"users": []}
    result = run(cluster.admin().ensure_users, RS, [benchmark_user("bench", "pw", "ycsb")])
    peer.receives().command_err(
        51003, 'User "bench@admin" already exists', codeName="Location51003"
    )
    assert result() == ()


def test_users_go_to_the_primary_not_a_secondary(cluster: Cluster) -> None:
    second = "rs0-1.rs0-hl.bench.svc.cluster.local:27017"
    hosts = [HOST, second]
    cluster.peer(second, {"setName": "rs0", "secondary": True, "primary": HOST, "hosts": hosts})
    primary = cluster.peer(HOST, {**PRIMARY, "hosts": hosts})
    primary.canned["usersinfo"] = {"users": []}
    spec = ReplicaSetSpec("rs0", Role.REPLICA, (second, HOST))
    result = run(cluster.admin().ensure_users, spec, [benchmark_user("bench", "pw", "ycsb")])
    request = primary.receives()
    assert request.command_name == "createUser"
    request.ok()
    assert result() == ("created bench",)
    cluster.peers[second].assert_silent()


def test_server_facts_from_server_status(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["serverstatus"] = {
        "host": "rs0-0",
        "version": "7.0.14",
        "process": "mongod",
        "uptime": 1234.0,
        "connections": {"current": 12, "available": 838848},
        "storageEngine": {"name": "wiredTiger"},
        "wiredTiger": {
            "cache": {"maximum bytes configured": 268435456, "bytes currently in the cache": 1024}
        },
        "mem": {"resident": 210},
        "opcounters": {
            "insert": 5,
            "query": 7,
            "update": 0,
            "delete": 0,
            "getmore": 0,
            "command": 9,
        },
    }
    facts = cluster.admin().server_facts(HOST)
    assert (facts.version, facts.process, facts.storage_engine) == (
        "7.0.14",
        "mongod",
        "wiredTiger",
    )
    assert (facts.connections_current, facts.cache_max_bytes, facts.resident_mb) == (
        12,
        268435456,
        210,
    )
    assert dict(facts.opcounters)["insert"] == 5


@pytest.mark.parametrize(
    ("binaries", "current", "wanted", "sent"),
    [
        # Raised after an upgrade, per release series: `confirm` from 7.0 on, absent before.
        ("5.0.31", "4.4", "5.0", {"setFeatureCompatibilityVersion": "5.0"}),
        ("6.0.20", "5.0", "6.0", {"setFeatureCompatibilityVersion": "6.0"}),
        ("7.0.14", "6.0", "7.0", {"setFeatureCompatibilityVersion": "7.0", "confirm": True}),
        ("8.0.4", "7.0", "8.0", {"setFeatureCompatibilityVersion": "8.0", "confirm": True}),
        # Lowered before a downgrade: the binaries decide, not the (older) target.
        ("7.0.14", "7.0", "6.0", {"setFeatureCompatibilityVersion": "6.0", "confirm": True}),
        ("6.0.20", "6.0", "5.0", {"setFeatureCompatibilityVersion": "5.0"}),
    ],
)
def test_fcv_is_sent_in_the_form_the_running_binaries_accept(
    cluster: Cluster, binaries: str, current: str, wanted: str, sent: dict[str, object]
) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["getparameter"] = {"featureCompatibilityVersion": {"version": current}}
    admin = cluster.admin()
    result = run(admin.ensure_feature_compatibility_version, RS, wanted, binaries=binaries)
    request = peer.receives()
    assert body(request) == sent
    request.ok()
    assert result() is True


def test_fcv_already_current_sends_nothing(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    peer.canned["getparameter"] = {"featureCompatibilityVersion": {"version": "7.0"}}
    admin = cluster.admin()
    assert admin.ensure_feature_compatibility_version(RS, "7.0", binaries="7.0.14") is False
    peer.assert_silent()


def test_a_renewed_certificate_is_reloaded_with_rotate_certificates(cluster: Cluster) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    admin = cluster.admin()  # unauthenticated: the peer scripts no SCRAM
    result = run(admin.rotate_certificates, HOST)
    request = peer.receives()
    assert body(request) == {
        "rotateCertificates": 1,
        "message": "mongobench: renewed certificate",
    }
    request.ok()
    assert result() is None


def test_a_member_that_cannot_reload_its_certificate_is_an_error_naming_it(
    cluster: Cluster,
) -> None:
    peer = cluster.peer(HOST, PRIMARY)
    admin = cluster.admin()  # unauthenticated: the peer scripts no SCRAM
    result = run(admin.rotate_certificates, HOST)
    peer.receives().command_err(2, "no certificate to load", codeName="BadValue")
    with pytest.raises(PermanentMongoError, match="rotateCertificates"):
        result()
