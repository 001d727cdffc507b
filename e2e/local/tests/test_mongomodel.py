"""The in-memory mongod/mongos model (localplane.mongomodel), driven by the product's MongoAdmin.

Protocol tier: real pymongo over loopback TCP to a model, so these prove the module converges
against the model's rules (see the model's docstring), not against a real mongod.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pymongo.common
import pytest
from bson import Int64, MaxKey, MinKey

from localplane.mongomodel import MongoModel
from mongobench.mongo import (
    Connector,
    Credentials,
    MappedResolver,
    MongoAdmin,
    Mongos,
    PermanentMongoError,
    ReplicaSetSpec,
    ReplicaSetStatus,
    Role,
    ShardingSpec,
    admin_user,
    benchmark_user,
    internal_credentials,
    internal_credentials_each,
)
from mongobench.mongo.model import Bound, IndexSpec, KeyField, Zone
from mongobench.mongocluster.act.rolling import before_series_change, fcv_target
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout

pytestmark = pytest.mark.protocol


def _hosts(prefix: str, n: int, port: int = 27017) -> tuple[str, ...]:
    return tuple(f"{prefix}-{i}.{prefix}-hl.bench.svc.cluster.local:{port}" for i in range(n))


KEYFILE = "c2VjcmV0LWtleWZpbGUtY29udGVudHM=\n"  # as a user's keyfile Secret may hold it
ADMIN = admin_user("admin", "admin-pw")


@pytest.fixture(autouse=True)
def prompt_rechecks(monkeypatch: pytest.MonkeyPatch) -> None:
    """pymongo waits at least MIN_HEARTBEAT_INTERVAL (0.5 s) before it checks a server again
    when no server suits an operation: the model changes state at once (a primary right after
    replSetInitiate), so those waits were most of this file's time (a test's 2-6 s)."""
    monkeypatch.setattr(pymongo.common, "MIN_HEARTBEAT_INTERVAL", 0.02)


@pytest.fixture
def model() -> Iterator[MongoModel]:
    with MongoModel(keyfile=KEYFILE, catch_up_seconds=0.2, drain_calls=2) as m:
        yield m


def _admin(model: MongoModel, keyfile: str = KEYFILE) -> Connector:
    # the live map: members started later in a test are resolvable too
    return Connector(
        Credentials(ADMIN.username, ADMIN.password),
        bootstrap_credentials=internal_credentials(keyfile),
        resolver=MappedResolver(model.host_map),
        timeout_seconds=2,
    )


@pytest.fixture
def admin(model: MongoModel) -> Iterator[MongoAdmin]:
    with _admin(model) as connector:
        yield MongoAdmin(connector)


def _converge(admin: MongoAdmin, spec: ReplicaSetSpec, limit: int = 60) -> list[str]:
    """Re-invoke ensure_replica_set as a handler would; returns the actions taken."""
    actions: list[str] = []
    for _ in range(limit):
        status: ReplicaSetStatus = admin.ensure_replica_set(spec)
        if status.action:
            actions.append(status.action)
        if status.converged:
            # as the operator's wiring does: the first user, created as __system by keyfile
            admin.ensure_users(spec, [ADMIN])
            return actions
        time.sleep(0.05)
    raise AssertionError(f"not converged after {limit} calls: {status}")


def test_three_member_set_initiates_and_reaches_primary_plus_secondaries(
    model: MongoModel, admin: MongoAdmin
) -> None:
    hosts = _hosts("rs0", 3)
    for h in hosts:
        model.member(h)
    spec = ReplicaSetSpec("rs0", Role.REPLICA, hosts)
    assert _converge(admin, spec) == ["replSetInitiate"]
    status = admin.replica_set_status(spec)
    assert [(m.host, m.state) for m in status.members] == [
        (hosts[0], "PRIMARY"),
        (hosts[1], "SECONDARY"),
        (hosts[2], "SECONDARY"),
    ]
    assert _converge(admin, spec) == []  # idempotent: nothing more to do


def test_scale_up_then_down_one_voting_change_at_a_time(
    model: MongoModel, admin: MongoAdmin
) -> None:
    hosts = _hosts("rs0", 5)
    for h in hosts:
        model.member(h)
    _converge(admin, ReplicaSetSpec("rs0", Role.REPLICA, hosts[:1]))
    # the model rejects a reconfig that changes two voters at once, so success proves stepping
    assert _converge(admin, ReplicaSetSpec("rs0", Role.REPLICA, hosts)) == [
        f"adding {h}" for h in hosts[1:]
    ]
    assert _converge(admin, ReplicaSetSpec("rs0", Role.REPLICA, hosts[:3])) == [
        f"removing {hosts[4]}",
        f"removing {hosts[3]}",
    ]
    assert (
        len(admin.replica_set_status(ReplicaSetSpec("rs0", Role.REPLICA, hosts[:3])).members) == 3
    )


@pytest.mark.parametrize(
    ("binaries", "lowered"),
    [("5.0.31", "4.4"), ("6.0.20", "5.0"), ("7.0.14", "6.0"), ("8.0.4", "7.0")],
)
def test_fcv_lowered_and_raised_again_on_each_release(
    model: MongoModel, admin: MongoAdmin, binaries: str, lowered: str
) -> None:
    # A downgrade's first step and its undo, as binaries of each series take the command:
    # the model refuses `confirm` before 7.0 and requires it from 7.0, as mongod does.
    model.server_version, series = binaries, binaries.rsplit(".", 1)[0]
    model.fcv = series
    spec = ReplicaSetSpec("rs0", Role.REPLICA, _hosts("rs0", 1))
    model.member(spec.members[0])
    _converge(admin, spec)
    assert admin.ensure_feature_compatibility_version(spec, lowered, binaries=binaries) is True
    assert admin.ensure_feature_compatibility_version(spec, series, binaries=binaries) is True
    assert model.fcv_history == [lowered, series]
    other = "7.0.14" if binaries < "7" else "6.0.20"  # the other form: refused
    with pytest.raises(PermanentMongoError, match="confirm"):
        admin.ensure_feature_compatibility_version(spec, lowered, binaries=other)
    assert admin.feature_compatibility_version(spec) == series


def test_fcv_and_collections_on_a_set(model: MongoModel, admin: MongoAdmin) -> None:
    spec = ReplicaSetSpec("rs0", Role.REPLICA, _hosts("rs0", 1))
    model.member(spec.members[0])
    _converge(admin, spec)
    assert admin.feature_compatibility_version(spec) == "7.0"
    assert admin.ensure_feature_compatibility_version(spec, "7.0", binaries="7.0.14") is False
    # sends confirm (the model's one server_version stands for binaries already on 8.0)
    assert admin.ensure_feature_compatibility_version(spec, "8.0", binaries="8.0.4") is True
    assert (admin.feature_compatibility_version(spec), model.fcv_history) == ("8.0", ["8.0"])
    with pytest.raises(PermanentMongoError, match="confirm: true"):
        admin.command(spec.members[0], {"setFeatureCompatibilityVersion": "7.0"})
    assert admin.ensure_collection(spec, "ycsb", "usertable") == ("created ycsb.usertable",)
    assert admin.drop_collection(spec, "ycsb", "usertable") is True
    assert model.dropped == ["ycsb.usertable"]
    with pytest.raises(PermanentMongoError, match="no such command: 'listdatabases'"):
        admin.command(spec.members[0], {"listDatabases": 1})


def test_standalone_is_never_initiated_and_gets_its_users_by_keyfile(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """Protocol tier (model): a mongod without --replSet answers as MongoDB's does, and the
    operator's module wires it with no replica-set command at all."""
    spec = ReplicaSetSpec("sa-mongod", Role.STANDALONE, _hosts("sa-mongod", 1))
    (host,) = spec.members
    model.standalone(host)
    hello = admin.hello(host)
    assert (hello.set_name, hello.writable_primary, hello.initialized) == (None, True, False)
    # replSetGetStatus is the server's NoReplicationEnabled (76), as MongoDB answers it
    with pytest.raises(PermanentMongoError, match="not running with --replSet") as refused:
        admin.command(host, {"replSetGetStatus": 1}, bootstrap=True)
    assert refused.value.code == 76
    with pytest.raises(PermanentMongoError, match="not started with replication enabled"):
        admin.command(host, {"replSetInitiate": {"_id": "x", "members": []}}, bootstrap=True)
    assert [c.split()[0] for c in model.no_replication] == ["replSetGetStatus", "replSetInitiate"]
    model.no_replication.clear()
    assert _converge(admin, spec) == []  # nothing to initiate: users only
    status = admin.replica_set_status(spec)
    assert (status.initialized, status.primary, status.converged) == (True, host, True)
    assert [(m.host, m.state, m.serving) for m in status.members] == [(host, "STANDALONE", True)]
    assert ("admin", "admin") in model.standalones[host].users
    assert admin.ensure_collection(spec, "ycsb", "usertable") == ("created ycsb.usertable",)
    assert admin.drop_collection(spec, "ycsb", "usertable") is True
    assert admin.feature_compatibility_version(spec) == "7.0"
    # its one member restarts in a roll: there is nobody to hand over to, and no step-down
    assert admin.rolling_step(spec, [host]).kind == "restart"
    assert model.no_replication == []  # the module sent no replica-set command


def test_a_replica_set_member_is_no_standalone(model: MongoModel, admin: MongoAdmin) -> None:
    """Protocol tier (model): a Standalone pointed at a mongod started with --replSet is a
    permanent error that says what it found."""
    (host,) = _hosts("rs0", 1)
    model.member(host)
    _converge(admin, ReplicaSetSpec("rs0", Role.REPLICA, (host,)))
    with pytest.raises(PermanentMongoError, match="found a member of replica set 'rs0'"):
        admin.ensure_replica_set(ReplicaSetSpec("x-mongod", Role.STANDALONE, (host,)))


def test_sharded_cluster_end_to_end(model: MongoModel, admin: MongoAdmin) -> None:
    cfg = ReplicaSetSpec("cfg", Role.CONFIG, _hosts("cfg", 1, 27019))
    shards = [ReplicaSetSpec(f"sh{i}", Role.SHARD, _hosts(f"sh{i}", 2, 27018)) for i in range(2)]
    router = "mongos-0.mongos-hl.bench.svc.cluster.local:27017"
    for spec in (cfg, *shards):
        for h in spec.members:
            model.member(h)
    model.mongos(router)
    model.sharded.documents["ycsb.usertable"] = 1001
    mongos = Mongos((router,))

    for spec in (cfg, *shards):
        _converge(admin, spec)
    assert admin.hello(cfg.members[0]).config_server
    for spec in shards:
        assert admin.ensure_shard(mongos, spec).id == spec.name
        assert admin.ensure_shard(mongos, spec).id == spec.name  # already a shard: no error
    assert [s.id for s in admin.list_shards(mongos)] == ["sh0", "sh1"]

    assert admin.ensure_users(mongos, [benchmark_user("bench", "pw", "ycsb")]) == ("created bench",)
    assert admin.ensure_users(mongos, [benchmark_user("bench", "pw", "ycsb")]) == ()

    spec = ShardingSpec("ycsb", "usertable", hashed=True)
    assert admin.shard_collection(mongos, spec) == "sharded"
    assert admin.shard_collection(mongos, spec) == "already sharded"
    dist = admin.distribution(mongos, "ycsb", "usertable")
    assert [(s.shard, s.documents, s.chunks) for s in dist.shards] == [
        ("sh0", 501, 2),
        ("sh1", 500, 2),
    ]
    assert dist.total_documents == 1001

    states = []
    for _ in range(10):
        progress = admin.remove_shard(mongos, "sh1")
        states.append(progress.state)
        if progress.completed:
            break
    assert states == ["started", "ongoing", "completed"]
    assert admin.remove_shard(mongos, "sh1").completed  # already gone: still success
    assert [s.id for s in admin.list_shards(mongos)] == ["sh0"]

    # A drop through mongos takes the collection's sharding with it.
    assert admin.drop_collection(mongos, "ycsb", "usertable") is True
    assert model.dropped == ["ycsb.usertable"]
    assert admin.shard_collection(mongos, spec) == "sharded"


def test_compound_ranged_key_presplit_with_a_zone_and_indexes(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """A compound ranged key pre-split over YCSB's key names, a zone and a unique index, through
    the product's MongoAdmin against the model's chunk, zone and index rules."""
    cfg = ReplicaSetSpec("cfg", Role.CONFIG, _hosts("cfg", 1, 27019))
    shards = [ReplicaSetSpec(f"sh{i}", Role.SHARD, _hosts(f"sh{i}", 1, 27018)) for i in range(3)]
    router = "mongos-0.mongos-hl.bench.svc.cluster.local:27017"
    for spec in (cfg, *shards):
        model.member(spec.members[0])
    model.mongos(router)
    mongos = Mongos((router,))
    for spec in (cfg, *shards):
        _converge(admin, spec)
        if spec.role is Role.SHARD:
            admin.ensure_shard(mongos, spec)
    sharding = ShardingSpec(
        "ycsb",
        "usertable",
        initial_chunks=4,
        fields=(KeyField("_id"), KeyField("field0")),
        zones=(Zone("top", ("sh2",), ("user8",), (Bound.MAX,)),),
    )
    # 4 YCSB chunks + the zone's lower bound: 5 chunks; round-robin over sh0..sh2 outside the
    # zone, the zone's chunk on sh2: 3 chunks move off the primary shard sh0
    assert admin.shard_collection(mongos, sharding) == "sharded, 3 chunk(s) moved"
    # a re-run (or a pass interrupted after shardCollection) splits and moves nothing more
    assert admin.shard_collection(mongos, sharding) == "already sharded"
    held = [c["shard"] for c in model.sharded.chunks["ycsb.usertable"]]
    assert held == ["sh0", "sh1", "sh2", "sh0", "sh2"]
    assert set(model.sharded.moved_by) == {"moveRange"}  # 7.0 routers: the 6.0+ command
    # interrupted right after shardCollection: the next pass splits and moves
    admin.drop_collection(mongos, "ycsb", "usertable")
    admin.command(router, {"shardCollection": "ycsb.usertable", "key": sharding.key_doc})
    assert admin.shard_collection(mongos, sharding) == "already sharded, 3 chunk(s) moved"
    assert [c["shard"] for c in model.sharded.chunks["ycsb.usertable"]] == held
    assert model.sharded.zones == {"sh2": {"top"}}
    index = IndexSpec("by-f1", (("field1", 1), ("field2", -1)), unique=True)
    done = admin.ensure_collection(mongos, "ycsb", "usertable", [index])
    assert done == ("created index by-f1",)
    assert admin.ensure_collection(mongos, "ycsb", "usertable", [index]) == ()
    model.sharded.documents["ycsb.usertable"] = 1000
    dist = admin.distribution(mongos, "ycsb", "usertable")
    assert [(s.shard, s.documents, s.chunks) for s in dist.shards] == [
        ("sh0", 400, 2),
        ("sh1", 200, 1),
        ("sh2", 400, 2),
    ]
    assert [s.data_bytes for s in dist.shards] == [440_000, 220_000, 440_000]
    # a zone naming a shard the cluster does not have is refused before any zone command
    admin.drop_collection(mongos, "ycsb", "usertable")
    wrong = ShardingSpec(
        "ycsb",
        "usertable",
        key="_id",
        hashed=False,
        zones=(Zone("top", ("sh9",), ("user8",), (Bound.MAX,)),),
    )
    with pytest.raises(PermanentMongoError, match="zone shard\\(s\\) sh9 not in the cluster"):
        admin.shard_collection(mongos, wrong)


def _three_shards(model: MongoModel, admin: MongoAdmin) -> tuple[Mongos, str]:
    cfg = ReplicaSetSpec("cfg", Role.CONFIG, _hosts("cfg", 1, 27019))
    shards = [ReplicaSetSpec(f"sh{i}", Role.SHARD, _hosts(f"sh{i}", 1, 27018)) for i in range(3)]
    router = "mongos-0.mongos-hl.bench.svc.cluster.local:27017"
    for spec in (cfg, *shards):
        model.member(spec.members[0])
    model.mongos(router)
    mongos = Mongos((router,))
    for spec in (cfg, *shards):
        _converge(admin, spec)
        if spec.role is Role.SHARD:
            admin.ensure_shard(mongos, spec)
    return mongos, router


@pytest.mark.parametrize(
    ("release", "verb"),
    [("5.0.31", "moveChunk"), ("6.0.20", "moveRange"), ("8.0.4", "moveRange")],
)
def test_chunks_move_by_move_range_where_the_release_has_it(
    model: MongoModel, admin: MongoAdmin, release: str, verb: str
) -> None:
    """Round-robin placement of a pre-split ranged key: moveRange from 6.0, moveChunk on 5.0,
    whose routers do not know moveRange (the model refuses it as they do)."""
    model.server_version = release
    mongos, _ = _three_shards(model, admin)
    ranged = ShardingSpec("ycsb", "usertable", "_id", hashed=False, split_points=("user3", "user6"))
    assert admin.shard_collection(mongos, ranged) == "sharded, 2 chunk(s) moved"
    assert [c["shard"] for c in model.sharded.chunks["ycsb.usertable"]] == ["sh0", "sh1", "sh2"]
    assert model.sharded.moved_by == [verb, verb]


def test_hashed_zones_are_presplit_by_shard_collection_once_declared(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """A hashed key with zones: the zones first, then shardCollection with presplitHashedZones
    (no numInitialChunks), which the model refuses without zones already there."""
    mongos, router = _three_shards(model, admin)
    hashed = ShardingSpec(
        "ycsb",
        "usertable",
        fields=(KeyField("region"), KeyField("_id", hashed=True)),
        zones=(
            Zone("eu", ("sh0",), ("eu",), ("us",)),
            Zone("us", ("sh1", "sh2"), ("us",), (Bound.MAX,)),
        ),
    )
    assert admin.shard_collection(mongos, hashed) == "sharded"
    assert model.sharded.presplit == ["ycsb.usertable"]
    assert model.sharded.zones == {"sh0": {"eu"}, "sh1": {"us"}, "sh2": {"us"}}
    assert [r["zone"] for r in model.sharded.zone_ranges["ycsb.usertable"]] == ["eu", "us"]
    # the hole below eu on the first shard, then two chunks per zone shard (FCV 7.0)
    held = [c["shard"] for c in model.sharded.chunks["ycsb.usertable"]]
    assert held == ["sh0", "sh0", "sh0", "sh1", "sh1", "sh2", "sh2"]
    assert admin.shard_collection(mongos, hashed) == "already sharded"  # a re-run: nothing
    assert model.sharded.presplit == ["ycsb.usertable"]
    # The order matters: without the zones declared, the server refuses the pre-split.
    model.sharded.zone_ranges.clear()
    admin.drop_collection(mongos, "ycsb", "usertable")
    with pytest.raises(PermanentMongoError, match="zones are set up"):
        admin.command(
            router,
            {
                "shardCollection": "ycsb.usertable",
                "key": hashed.key_doc,
                "presplitHashedZones": True,
            },
        )
    assert model.refusals == []  # every command the operator sent was one the routers know


def test_rolling_restart_steps_down_the_primary_last(model: MongoModel, admin: MongoAdmin) -> None:
    hosts = _hosts("rs0", 3)
    for h in hosts:
        model.member(h)
    spec = ReplicaSetSpec("rs0", Role.REPLICA, hosts)
    _converge(admin, spec)
    pending = list(hosts)
    order = []
    for _ in range(20):
        step = admin.rolling_step(spec, pending)
        if step.kind == "done":
            break
        if step.kind == "restart":
            pending.remove(str(step.host))  # the "pod" comes back on the new revision at once
        if step.kind != "wait":
            order.append((step.kind, step.host))
        time.sleep(0.05)
    assert order == [
        ("restart", hosts[2]),
        ("restart", hosts[1]),
        ("step_down", hosts[0]),
        ("restart", hosts[0]),
    ]
    assert admin.replica_set_status(spec).primary == hosts[1]


def test_no_localhost_exception_the_keyfile_bootstraps_the_first_user(
    model: MongoModel, admin: MongoAdmin
) -> None:
    hosts = _hosts("rs0", 1)
    model.member(hosts[0])
    spec = ReplicaSetSpec("rs0", Role.REPLICA, hosts)
    with Connector(resolver=MappedResolver(model.host_map), timeout_seconds=2) as anonymous:
        # A remote client with no credentials: what the localhost exception would have allowed.
        with pytest.raises(PermanentMongoError) as refused:
            MongoAdmin(anonymous).ensure_replica_set(spec)
        assert refused.value.code == 13 and "localhost exception" in refused.value.message
    assert model.sets == {}

    assert _converge(admin, spec) == ["replSetInitiate"]
    assert set(model.sets["rs0"].users) == {("admin", "admin")}
    # From now on the admin user itself logs in: nothing more goes through the keyfile.
    assert admin.ensure_users(spec, [ADMIN, benchmark_user("bench", "pw", "ycsb")]) == (
        "created bench",
    )


def test_a_keyfile_the_members_do_not_share_is_a_permanent_error_naming_it(
    model: MongoModel,
) -> None:
    hosts = _hosts("rs0", 1)
    model.member(hosts[0])
    with (
        _admin(model, keyfile="bm90LXRoZS1zYW1lLWtleWZpbGU=") as connector,
        pytest.raises(PermanentMongoError) as wrong,
    ):
        MongoAdmin(connector).ensure_replica_set(ReplicaSetSpec("rs0", Role.REPLICA, hosts))
    assert wrong.value.code == 18 and "different keyfile" in wrong.value.message
    assert model.sets == {}


def test_a_member_with_a_keyfile_listing_two_keys_accepts_either_and_the_operator_tries_each() -> (
    None
):
    """MongoDB's keyfile rotation: a member started with the YAML list [new, old] accepts
    __system by either key; one started with the old key alone refuses the new one, and the
    operator's bootstrap, given the list, falls back to the old key (Connector.fall_back)."""
    old, new = "b2xkLWtleS1vZi10aGUtc2V0", "bmV3LWtleS1vZi10aGUtc2V0"
    both = f"- {new}\n- {old}\n"
    hosts = _hosts("rs0", 1)
    with MongoModel(keyfile=both, catch_up_seconds=0.2) as listing:
        listing.member(hosts[0])
        for key in (new, old):
            with _admin(listing, keyfile=key) as connector:
                assert MongoAdmin(connector).bootstrap_command(hosts[0], {"hello": 1})["ok"]
    with MongoModel(keyfile=old, catch_up_seconds=0.2) as not_restarted:
        not_restarted.member(hosts[0])
        with _admin(not_restarted, keyfile=new) as connector, pytest.raises(PermanentMongoError):
            MongoAdmin(connector).bootstrap_command(hosts[0], {"hello": 1})
        first, *rest = internal_credentials_each(both)
        with Connector(
            Credentials(ADMIN.username, ADMIN.password),
            bootstrap_credentials=first,
            bootstrap_fallbacks=rest,
            resolver=MappedResolver(not_restarted.host_map),
            timeout_seconds=2,
        ) as connector:
            admin = MongoAdmin(connector)
            assert admin.bootstrap_command(hosts[0], {"hello": 1})["ok"]
            assert connector.bootstrap_credentials is not None
            assert connector.bootstrap_credentials.password == old


def test_an_admin_secret_changed_after_creation_is_named_not_retried(
    model: MongoModel, admin: MongoAdmin
) -> None:
    hosts = _hosts("rs0", 1)
    model.member(hosts[0])
    spec = ReplicaSetSpec("rs0", Role.REPLICA, hosts)
    _converge(admin, spec)
    with _admin(model) as connector:
        connector.credentials = Credentials(ADMIN.username, "rotated-in-the-secret-only")
        with pytest.raises(PermanentMongoError) as stale:
            MongoAdmin(connector).ensure_users(spec, [admin_user("admin", "rotated")])
    assert "exists but the password in its Secret does not authenticate" in stale.value.message


def test_describe_server_reads_build_options_and_cache_and_provenance_redacts_the_secret(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """What a member and a mongos say of themselves (buildInfo, getCmdLineOpts, serverStatus)
    through the product's MongoAdmin, shaped by the provenance builder: a password given on
    mongod's command line (verbatim in argv, as mongod reports it) never survives."""
    from mongobench.benchmarkrun.build.provenance import ServerObservation, server_document

    (host,) = _hosts("rs0", 1)
    model.member(host)
    spec = ReplicaSetSpec("rs0", Role.REPLICA, (host,))
    _converge(admin, spec)
    model.extra_options = {
        "ldapQueryPassword": "ldap-Pa55word",
        "diagnosticDataCollectionEnabled": "false",
    }
    member = admin.describe_server(host)
    assert member.errors == ()
    assert member.build_info is not None and member.build_info["version"] == "7.0.14"
    assert member.build_info["gitVersion"] == model.git_version
    assert member.server_status == {
        "version": "7.0.14",
        "process": "mongod",
        "storageEngine": {"name": "wiredTiger"},
        "wiredTiger": {"cache": {"maximum bytes configured": model.cache_bytes}},
    }
    assert member.cmd_line_opts is not None
    assert "ldapQueryPassword=ldap-Pa55word" in member.cmd_line_opts["argv"]  # as the server says
    doc = server_document(
        ServerObservation(
            host, "replica", "rs0", member.build_info, member.cmd_line_opts, member.server_status
        )
    )
    assert "ldap-Pa55word" not in repr(doc)
    assert doc["cmdLineOpts"]["parsed"]["security"]["keyFile"] == "/etc/mongodb-keyfile/keyfile"
    assert (
        doc["cmdLineOpts"]["parsed"]["setParameter"]["diagnosticDataCollectionEnabled"] == "false"
    )
    assert "ldapQueryPassword=<redacted>" in doc["cmdLineOpts"]["argv"]
    assert doc["cacheBytesInEffect"] == 256 * 1024 * 1024
    assert admin.feature_compatibility_version(spec) == "7.0"

    router = model.mongos("mongos-0.mongos-hl.bench.svc.cluster.local:27017")
    assert router
    model.sharded.users[("admin", "admin")] = {"user": "admin", "db": "admin", "pwd": "admin-pw"}
    described = admin.describe_server("mongos-0.mongos-hl.bench.svc.cluster.local:27017")
    assert described.server_status is not None
    assert described.server_status["process"] == "mongos"
    assert "wiredTiger" not in described.server_status
    assert described.build_info is not None and described.build_info["version"] == "7.0.14"


# ---- issue 39: what real 5.0-8.0 servers refuse or ignore, per release ------------------------

RELEASES = ("5.0.31", "6.0.20", "7.0.14", "8.0.4")


def _sharded_layout(model: MongoModel, admin: MongoAdmin) -> ClusterLayout:
    """A one-member config set, one one-member shard and a router, named as the operator's
    layout names them, wired by the operator's own MongoAdmin."""
    sets = tuple(
        ReplicaSetLayout(name, role, 1, component, "bench")
        for name, role, component in (
            ("c-cfg", Role.CONFIG, "configsvr"),
            ("c-sh0", Role.SHARD, "shard"),
        )
    )
    layout = ClusterLayout("c", "bench", True, sets, 1, "c-keyfile", "c-admin")
    for rs in sets:
        model.member(rs.member_host(0))
    model.mongos(layout.mongos_host)
    for rs in sets:
        _converge(admin, rs.to_spec())
    admin.ensure_shard(Mongos((layout.mongos_host,)), sets[1].to_spec())
    return layout


@pytest.mark.parametrize(
    ("release", "left_behind", "target"),
    [
        ("5.0.31", "4.4", "6.0.20"),
        ("6.0.20", "5.0", "7.0.14"),
        ("7.0.14", "6.0", "8.0.4"),
        ("8.0.4", "7.0", "8.2.1"),
    ],
)
def test_sharded_fcv_is_read_on_the_sets_primaries_and_raised_through_mongos(
    model: MongoModel, admin: MongoAdmin, release: str, left_behind: str, target: str
) -> None:
    """Protocol tier, per release. mongos keeps no FCV: 5.0 routers refuse the parameter
    (InvalidOptions, which the operator classes permanent: every roll failed), 6.0-8.0 routers
    answer with their own series (the raise before an upgrade was skipped). The operator reads
    it on the config servers' and shards' primaries and sets it through mongos."""
    model.server_version, model.fcv = release, left_behind
    layout = _sharded_layout(model, admin)
    series = release.rsplit(".", 1)[0]
    if release.startswith("5."):
        with pytest.raises(PermanentMongoError) as refused:
            admin.command(layout.mongos_host, {"getParameter": 1, "featureCompatibilityVersion": 1})
        assert refused.value.code == 72
    else:  # the routers' own binaries, not the cluster's FCV
        routers = admin.command(
            layout.mongos_host, {"getParameter": 1, "featureCompatibilityVersion": 1}
        )
        assert routers["featureCompatibilityVersion"]["version"] == series != left_behind
    step, fcv = before_series_change(admin, layout, target, None)
    assert (step.action, fcv, model.fcv_history) == ("raise", series, [series])
    assert admin.feature_compatibility_version(fcv_target(layout)) == series
    assert model.refusals == []


_BAD_HASHED_ZONES = [
    pytest.param(
        (KeyField("_id", hashed=True),),
        (Zone("a", ("sh0",), (Bound.MIN,), (0,)), Zone("b", ("sh1",), (0,), (Bound.MAX,))),
        "one zone over the whole key",
        id="hashed-first-two-zones-31412",
    ),
    pytest.param(
        (KeyField("region"), KeyField("_id", hashed=True)),
        (Zone("eu", ("sh0",), ("eu",), ("eu", Bound.MAX)),),
        "max must differ from min",
        id="same-prefix-31390",
    ),
    pytest.param(
        (KeyField("region"), KeyField("_id", hashed=True)),
        (Zone("low", ("sh0",), (Bound.MIN,), ("eu",)),),
        "min must give every field before the hashed field",
        id="minkey-prefix-31388",
    ),
    pytest.param(
        (KeyField("region"), KeyField("_id", hashed=True)),
        (Zone("eu", ("sh0",), ("eu", 5), ("us",)),),
        "min may not give the hashed field",
        id="hashed-lower-bound-31389",
    ),
    pytest.param(
        (KeyField("region"), KeyField("_id", hashed=True)),
        (Zone("eu", ("sh0",), ("eu",), ("us", "x")),),
        "takes 64-bit hash values",
        id="string-hashed-bound",
    ),
]


@pytest.mark.parametrize("release", RELEASES)
def test_hashed_zone_layouts_the_server_refuses_are_refused_before_any_command(
    model: MongoModel, admin: MongoAdmin, release: str
) -> None:
    """Protocol tier, per release: presplitHashedZones' rules (initial_split_policy.cpp) and
    the hashed bounds' types. The operator says why in one line and sends nothing that changes
    the cluster (one model per release: a refused layout leaves it as it was)."""
    model.server_version = release
    mongos, _ = _three_shards(model, admin)
    for case in _BAD_HASHED_ZONES:
        fields, zones, why = case.values
        spec = ShardingSpec("ycsb", "usertable", fields=fields, zones=zones)
        with pytest.raises(PermanentMongoError, match=why):
            admin.shard_collection(mongos, spec)
        assert (model.sharded_history, model.sharded.zones, model.refusals) == ([], {}, []), case.id


@pytest.mark.parametrize("release", RELEASES)
def test_the_model_refuses_a_presplit_zone_layout_as_the_server_does(
    model: MongoModel, admin: MongoAdmin, release: str
) -> None:
    """Protocol tier: the layout the operator sent before this fix (one zone whose bounds share
    the prefix), sent raw: refused with 31390 by every release's policy."""
    model.server_version = release
    _, router = _three_shards(model, admin)
    admin.command(router, {"addShardToZone": "sh0", "zone": "eu"})
    low, high = {"region": "eu", "_id": MinKey()}, {"region": "eu", "_id": MaxKey()}
    admin.command(router, {"updateZoneKeyRange": "ycsb.t", "min": low, "max": high, "zone": "eu"})
    with pytest.raises(PermanentMongoError) as refused:
        admin.command(
            router,
            {
                "shardCollection": "ycsb.t",
                "key": {"region": 1, "_id": "hashed"},
                "presplitHashedZones": True,
            },
        )
    assert refused.value.code == 31390


@pytest.mark.parametrize("release", RELEASES)
def test_hashed_bounds_travel_as_number_long(
    model: MongoModel, admin: MongoAdmin, release: str
) -> None:
    """Protocol tier, per release: a hashed field's integer bound is sent as NumberLong; the
    driver's int32 is refused (InvalidOptions) by shardCollection with zones on every release."""
    model.server_version = release
    mongos, _ = _three_shards(model, admin)
    spec = ShardingSpec(
        "ycsb",
        "usertable",
        fields=(KeyField("region"), KeyField("_id", hashed=True)),
        zones=(Zone("eu", ("sh0",), ("eu",), ("us", 0)),),
    )
    assert admin.shard_collection(mongos, spec) == "sharded"
    (zone,) = model.sharded.zone_ranges["ycsb.usertable"]
    assert type(zone["max"]["_id"]) is Int64
    assert model.refusals == []


@pytest.mark.parametrize(
    ("release", "honoured"),
    [("5.0.31", True), ("6.0.20", True), ("7.0.14", True), ("8.0.4", False)],
)
def test_pre_split_chunks_of_a_hashed_key_is_refused_where_the_server_ignores_it(
    model: MongoModel, admin: MongoAdmin, release: str, honoured: bool
) -> None:
    """Protocol tier, per release: numInitialChunks is honoured before 7.2 and ignored from
    7.2 (SERVER-74747): on 8.0 the operator refuses preSplitChunks with the reason instead of
    reporting a pre-split that did not happen."""
    model.server_version = release
    mongos, _ = _three_shards(model, admin)
    spec = ShardingSpec("ycsb", "usertable", initial_chunks=8)
    if honoured:
        assert admin.shard_collection(mongos, spec) == "sharded"
        assert model.sharded.initial_chunks == {"ycsb.usertable": (8, True)}
    else:
        with pytest.raises(PermanentMongoError, match="ignores numInitialChunks"):
            admin.shard_collection(mongos, spec)
        assert model.sharded_history == [] and model.sharded.initial_chunks == {}


@pytest.mark.parametrize("release", RELEASES)
def test_drop_says_whether_the_collection_existed(
    model: MongoModel, admin: MongoAdmin, release: str
) -> None:
    """Protocol tier, per release: mongos answers ok for a collection that does not exist
    (SERVER-36317), mongod too from 7.0 (SERVER-43894), NamespaceNotFound before: the operator
    says "was already gone" on every release and target."""
    model.server_version = release
    mongos, _ = _three_shards(model, admin)
    assert admin.drop_collection(mongos, "ycsb", "usertable") is False
    admin.shard_collection(mongos, ShardingSpec("ycsb", "usertable"))
    assert admin.drop_collection(mongos, "ycsb", "usertable") is True
    assert admin.drop_collection(mongos, "ycsb", "usertable") is False
    rs = ReplicaSetSpec("rs0", Role.REPLICA, _hosts("rs0", 1))
    model.member(rs.members[0])
    _converge(admin, rs)
    assert admin.drop_collection(rs, "ycsb", "usertable") is False
    admin.ensure_collection(rs, "ycsb", "usertable")
    assert admin.drop_collection(rs, "ycsb", "usertable") is True
    assert model.refusals == []


@pytest.mark.parametrize("release", RELEASES)
def test_the_model_refuses_what_the_release_does_not_know(
    model: MongoModel, admin: MongoAdmin, release: str
) -> None:
    """Protocol tier: unknown (40415) and mistyped (14) fields of strict commands, commands a
    mongos does not have (59), commands and fields newer than the release."""
    model.server_version = release
    _mongos, router = _three_shards(model, admin)
    member = model.sets["sh0"].config["members"][0]["host"]
    refused = {
        "unknown field": (router, {"addShardToZone": "sh0", "zone": "z", "shard": "sh0"}, 40415),
        "mistyped field": (router, {"addShardToZone": "sh0", "zone": 5}, 14),
        "not on mongos": (router, {"replSetGetStatus": 1}, 59),
        "not on mongod": (member, {"listShards": 1}, 59),
        "confirm": (member, {"setFeatureCompatibilityVersion": "5.0", "confirm": True}, 40415),
        "moveRange": (router, {"moveRange": "ycsb.t", "toShard": "sh1", "min": {"_id": 0}}, 59),
    }
    if release >= "7":  # confirm is known from 7.0
        del refused["confirm"]
    if release >= "6":  # moveRange exists from 6.0
        del refused["moveRange"]
    for what, (host, cmd, code) in refused.items():
        with pytest.raises(PermanentMongoError) as err:
            admin.command(host, cmd)
        assert err.value.code == code, what
    assert len(model.refusals) == len(refused)


# What the benchmark's clients ran, as system.profile entries of a 7.0 mongod (the model records
# those slower than slowms while the database is profiled; the data path never reaches it).
PROFILED = [
    {
        "op": "query",
        "ns": "ycsb.usertable",
        "command": {"find": "usertable", "filter": {"_id": "user4242"}, "limit": 1, "$db": "ycsb"},
        "millis": 250,
        "planSummary": "IDHACK",
        "docsExamined": 1,
        "keysExamined": 1,
        "nreturned": 1,
        "queryHash": "1A2B3C4D",
    },
    {
        "op": "update",
        "ns": "ycsb.usertable",
        "command": {"q": {"_id": "user7"}, "u": {"$set": {"field3": "secret-value"}}},
        "millis": 120,
        "planSummary": "IDHACK",
        "docsExamined": 1,
        "keysExamined": 1,
    },
    {"op": "insert", "ns": "ycsb.usertable", "command": {"insert": "usertable"}, "millis": 30},
    {"op": "query", "ns": "other.coll", "command": {"find": "coll"}, "millis": 900},
]


def test_profiler_on_a_set_keeps_the_slow_operations_without_their_values(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """Protocol tier: the profile command, the system.profile find and the slowms put back,
    over the wire to the model (its shapes from MongoDB's profile.idl and profile_common.cpp)."""
    spec = ReplicaSetSpec("rs0", Role.REPLICA, _hosts("rs0", 1))
    model.member(spec.members[0])
    _converge(admin, spec)
    model.profiled_operations = PROFILED
    since = datetime.now(UTC) - timedelta(seconds=1)
    assert admin.set_profiler([spec], "ycsb", 1, 50) == {"rs0": 100}  # the slowms it found
    ops = admin.slow_operations([spec], "ycsb", since, None, 10, sharded=False)
    # slower than 50 ms, in ycsb only, slowest first
    assert [(o.op, o.millis, o.shard) for o in ops] == [("query", 250, None), ("update", 120, None)]
    assert ops[0].shape == "find usertable {filter: {_id: ?}, limit: ?}"
    assert ops[1].shape == "{q: {_id: ?}, u: {$set: {field3: ?}}}"
    assert "user4242" not in repr(ops) and "secret-value" not in repr(ops)
    assert (ops[0].plan_summary, ops[0].query_hash, ops[0].nreturned) == ("IDHACK", "1A2B3C4D", 1)
    assert admin.set_profiler([spec], "ycsb", 0, {"rs0": 100}) == {"rs0": 50}
    assert model.profile_calls[-1][2:] == (0, 100)  # level 0, the slowms found put back
    # a later window holds nothing of the earlier step
    later = datetime.now(UTC) + timedelta(seconds=5)
    assert admin.slow_operations([spec], "ycsb", later, None, 10, sharded=False) == ()


def test_profiler_runs_on_each_shards_primary_as_mongos_refuses_it(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """Protocol tier: mongos answers level 1 with BadValue as cluster_profile_cmd.cpp does; the
    shards' primaries are profiled and their slowest operations merged, named by shard."""
    _, router = _three_shards(model, admin)
    with pytest.raises(PermanentMongoError, match="not permitted on mongoS"):
        admin.command(router, {"profile": 1, "slowms": 50}, db="ycsb")
    shards = [ReplicaSetSpec(f"sh{i}", Role.SHARD, _hosts(f"sh{i}", 1, 27018)) for i in range(3)]
    model.profiled_operations = PROFILED
    since = datetime.now(UTC) - timedelta(seconds=1)
    assert admin.set_profiler(shards, "ycsb", 1, 50) == {"sh0": 100, "sh1": 100, "sh2": 100}
    ops = admin.slow_operations(shards, "ycsb", since, None, 4, sharded=True)
    assert [(o.shard, o.millis) for o in ops] == [
        ("sh0", 250),
        ("sh1", 250),
        ("sh2", 250),
        ("sh0", 120),
    ]


def test_disk_use_per_shard_through_mongos_and_of_a_set(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """Protocol tier: $collStats storageStats through mongos (one document per shard) and on a
    replica set's primary; a collection that does not exist uses nothing."""
    mongos, _ = _three_shards(model, admin)
    admin.shard_collection(mongos, ShardingSpec("ycsb", "usertable", hashed=True))
    model.sharded.documents["ycsb.usertable"] = 900
    use = admin.disk_use(mongos, "ycsb", "usertable")
    assert [(s.shard, s.documents, s.data_bytes) for s in use.shards] == [
        ("sh0", 300, 330_000),
        ("sh1", 300, 330_000),
        ("sh2", 300, 330_000),
    ]
    status = use.as_status()
    assert (status["documents"], status["dataBytes"], status["indexBytes"]) == (
        900,
        990_000,
        36_000,
    )
    assert status["storageBytes"] == 3 * 110_000 and len(status["shards"]) == 3

    spec = ReplicaSetSpec("rs0", Role.REPLICA, _hosts("rs0", 1))
    model.member(spec.members[0])
    _converge(admin, spec)
    assert admin.disk_use(spec, "ycsb", "usertable").shards == ()  # not created yet
    admin.ensure_collection(spec, "ycsb", "usertable")
    model.sets["rs0"].documents["ycsb.usertable"] = 10
    single = admin.disk_use(spec, "ycsb", "usertable").as_status()
    assert single == {
        "collection": "ycsb.usertable",
        "documents": 10,
        "dataBytes": 11_000,
        "storageBytes": 3_666,
        "indexBytes": 400,
    }


def test_a_standalone_is_profiled_and_measured_as_a_primary_is(
    model: MongoModel, admin: MongoAdmin
) -> None:
    """Protocol tier (model): a mongod without --replSet has its own system.profile and
    $collStats, reached as the set's primary is (no shard)."""
    spec = ReplicaSetSpec("sa-mongod", Role.STANDALONE, _hosts("sa-mongod", 1))
    (host,) = spec.members
    model.standalone(host)
    _converge(admin, spec)
    model.profiled_operations = PROFILED
    since = datetime.now(UTC) - timedelta(seconds=1)
    assert admin.set_profiler([spec], "ycsb", 1, 100) == {"sa-mongod": 100}
    ops = admin.slow_operations([spec], "ycsb", since, None, 10, sharded=False)
    assert [(o.millis, o.shard) for o in ops] == [(250, None), (120, None)]
    admin.ensure_collection(spec, "ycsb", "usertable")
    model.standalones[host].documents["ycsb.usertable"] = 3
    assert admin.disk_use(spec, "ycsb", "usertable").total().documents == 3
