"""Test double: an in-memory model of the MongoDB a cluster's wiring talks to, standing in for
mongobench.mongo.MongoAdmin where a unit test drives a controller (the real handle over pymongo
is proven against scripted wire peers and FerretDB on the protocol tier).

Replica sets converge at once with as many members as their spec names; `pinned` keeps a set's
configuration at another size (a removal MongoDB has not made yet). Shards are added
when asked; a shard the spec dropped drains over `drain_calls` removeShard calls, then is gone.
"""

from __future__ import annotations

from typing import Any

from mongobench.mongo.chunks import sharding_problem
from mongobench.mongo.errors import PermanentMongoError
from mongobench.mongo.model import (
    STANDALONE_STATE,
    CollectionDiskUse,
    DiskShare,
    Distribution,
    DrainingProgress,
    FcvScope,
    MemberStatus,
    Mongos,
    ReplicaSetSpec,
    ReplicaSetStatus,
    Role,
    RollingStep,
    ServerDescription,
    ShardInfo,
    ShardingSpec,
    ShardShare,
    SlowOperation,
    UserSpec,
)
from mongobench.mongo.plan import next_rolling_step


class FakeMongo:
    def __init__(self, *, drain_calls: int = 2) -> None:
        self.pinned: dict[str, int] = {}  # replSet -> members its configuration keeps
        self.shards: dict[str, str] = {}  # shard id -> replSet name
        self.draining: dict[str, int] = {}  # shard id -> removeShard calls left
        self.drain_calls = drain_calls
        self.users: dict[str, list[str]] = {}  # replSet or "mongos" -> usernames
        self.passwords: dict[tuple[str, str], str] = {}  # (replSet or "mongos", user) -> set
        self.fcv: str | None = None  # None: the running binaries' series, as a new cluster's
        self.fcv_binaries: str | None = None
        self.running = "7.0.14"  # the binaries serverStatus reports (before a roll: the old)
        self.calls: list[str] = []
        self.collections: set[str] = set()  # "db.collection"
        self.connector = self  # what the pool closes at shutdown (close() below)
        self.argv_extra: list[str] = []  # options a server reports it was started with

    # --- what wire(), roll() and feature_compatibility() ask ---------------------------------

    def ensure_replica_set(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        self.calls.append(f"ensure_replica_set {spec.name}")
        return self.replica_set_status(spec)

    def replica_set_status(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        count = self.pinned.get(spec.name, len(spec.members))
        hosts = [
            *spec.members,
            *(f"{spec.name}-{i}.extra" for i in range(len(spec.members), count)),
        ]
        # A standalone's one member has no replica-set state (MongoAdmin reports it so).
        first = STANDALONE_STATE if spec.role is Role.STANDALONE else "PRIMARY"
        members = tuple(
            MemberStatus(host, i, first if i == 0 else "SECONDARY", True)
            for i, host in enumerate(hosts[:count])
        )
        return ReplicaSetStatus(
            spec.name, spec.role, True, members, primary=members[0].host if members else None
        )

    def ensure_users(self, target: ReplicaSetSpec | Mongos, users: list[UserSpec]) -> None:
        key = target.name if isinstance(target, ReplicaSetSpec) else "mongos"
        self.users[key] = [u.username for u in users]

    def set_password(self, target: ReplicaSetSpec | Mongos, username: str, password: str) -> bool:
        key = target.name if isinstance(target, ReplicaSetSpec) else "mongos"
        self.passwords[(key, username)] = password
        self.calls.append(f"set_password {key} {username}")
        return True

    def server_facts(self, host: str) -> Any:
        from mongobench.mongo.errors import TransientMongoError

        raise TransientMongoError("serverStatus", host, "not scripted")  # informational only

    # --- what a run's provenance asks (benchmarkrun.act.facts)
    # -------------------------------------

    def describe_server(self, host: str) -> ServerDescription:
        """A 7.0.14 mongod (a mongos for a mongos host), started with `argv_extra` verbatim."""
        self.calls.append(f"describe {host}")
        mongos = "mongos" in host
        argv = ["mongos" if mongos else "mongod", "--keyFile", "/etc/keyfile", *self.argv_extra]
        status: dict[str, Any] = {"version": "7.0.14", "process": "mongos" if mongos else "mongod"}
        if not mongos:
            status["storageEngine"] = {"name": "wiredTiger"}
            status["wiredTiger"] = {"cache": {"maximum bytes configured": 268435456}}
        return ServerDescription(
            host,
            {
                "version": "7.0.14",
                "gitVersion": "ce59cfc6a3c5e5c067dca0d30697edd68d4f5188",
                "ok": 1.0,
            },
            {"argv": argv, "parsed": {"security": {"keyFile": "/etc/keyfile"}}, "ok": 1.0},
            status,
        )

    def ensure_shard(self, mongos: Mongos, shard: ReplicaSetSpec) -> ShardInfo:
        self.calls.append(f"ensure_shard {shard.name}")
        self.shards.setdefault(shard.name, shard.name)
        return ShardInfo(shard.name, f"{shard.name}/{','.join(shard.members)}")

    def list_shards(self, mongos: Mongos) -> tuple[ShardInfo, ...]:
        return tuple(
            ShardInfo(shard, f"{name}/", draining=shard in self.draining)
            for shard, name in self.shards.items()
        )

    def remove_shard(
        self, mongos: Mongos, shard: str, *, move_primaries_to: str | None = None
    ) -> DrainingProgress:
        self.calls.append(f"remove_shard {shard}")
        if shard not in self.draining:
            self.draining[shard] = self.drain_calls
            return DrainingProgress(shard, "started", remaining_chunks=10)
        self.draining[shard] -= 1
        if self.draining[shard] > 0:
            return DrainingProgress(shard, "ongoing", remaining_chunks=5)
        del self.draining[shard]
        del self.shards[shard]
        return DrainingProgress(shard, "completed")

    def rolling_step(self, spec: ReplicaSetSpec, needs_restart: list[str]) -> RollingStep:
        """The operator's own order (mongo.plan), on this model's view of the set."""
        return next_rolling_step(self.replica_set_status(spec), needs_restart)

    def running_version(self, target: ReplicaSetSpec | Mongos) -> str:
        self.calls.append("serverStatus")
        return self.running

    def feature_compatibility_version(self, target: ReplicaSetSpec | FcvScope) -> str:
        return self.fcv or ".".join(self.running.split(".")[:2])

    def ensure_feature_compatibility_version(
        self, target: ReplicaSetSpec | FcvScope, version: str, *, binaries: str
    ) -> bool:
        self.fcv_binaries = binaries  # the version the caller says every member runs
        changed, self.fcv = self.fcv != version, version
        return changed

    # --- what a BenchmarkRun's data steps ask (benchmarkrun.act.data.ClusterData) ----------------

    def drop_collection(self, target: Any, database: str, collection: str) -> bool:
        self.calls.append(f"drop {database}.{collection}")
        existed = f"{database}.{collection}" in self.collections
        self.collections.discard(f"{database}.{collection}")
        return existed

    def ensure_collection(
        self, target: Any, database: str, collection: str, indexes: Any = ()
    ) -> None:
        self.calls.append(f"create {database}.{collection}")
        self.calls.extend(f"index {ix.name} {ix.document()}" for ix in indexes)
        self.collections.add(f"{database}.{collection}")

    def check_sharding(self, mongos: Mongos, spec: ShardingSpec) -> str:
        """As MongoAdmin: the layout's problem for the running release, before any command."""
        problem = sharding_problem(spec, self.running)
        if problem is not None:
            raise PermanentMongoError("shardCollection", mongos.hosts[0], problem)
        return mongos.hosts[0]

    def shard_collection(self, mongos: Mongos, spec: ShardingSpec) -> str:
        self.calls.append(f"shard {spec.namespace} on {spec.key_doc}")
        self.collections.add(spec.namespace)
        return f"sharded {spec.namespace}"

    def distribution(self, mongos: Mongos, database: str, collection: str) -> Distribution:
        shares = tuple(
            ShardShare(shard, 500, 2, 100.0 / len(self.shards)) for shard in sorted(self.shards)
        )
        return Distribution(f"{database}.{collection}", True, shares)

    def disk_use(self, target: Any, database: str, collection: str) -> CollectionDiskUse:
        self.calls.append(f"collStats {database}.{collection}")
        shards = sorted(self.shards) if isinstance(target, Mongos) else [None]
        return CollectionDiskUse(
            f"{database}.{collection}",
            tuple(DiskShare(s, 500, 550_000, 183_333, 20_000) for s in shards),
        )

    def set_profiler(
        self, sets: Any, database: str, level: int, slow_ms: Any = None
    ) -> dict[str, int]:
        self.calls.append(f"profile {level} on {','.join(s.name for s in sets)}")
        return {s.name: 100 for s in sets}

    def slow_operations(
        self, sets: Any, database: str, since: Any, until: Any, top: int, *, sharded: bool
    ) -> tuple[SlowOperation, ...]:
        self.calls.append(f"system.profile top {top}")
        shard = sets[0].name if sharded else None
        return (
            SlowOperation("query", f"{database}.usertable", "find usertable", 250, shard=shard),
        )

    def close(self) -> None:
        pass
