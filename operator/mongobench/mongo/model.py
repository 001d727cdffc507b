"""What the caller asks for and what the module observed: frozen, I/O-free, safe to log.

Secrets (passwords) are excluded from every ``repr`` so a dataclass in a log line or an exception
never leaks them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any


class Role(StrEnum):
    CONFIG = "config"
    SHARD = "shard"
    REPLICA = "replica"
    # One mongod without --replSet: no replica-set commands, its one member always writable.
    STANDALONE = "standalone"


# The state status shows for a standalone mongod: it has no replica-set member state.
STANDALONE_STATE = "STANDALONE"


# replSetGetStatus myState/state codes -> names (server's MemberState).
MEMBER_STATES: dict[int, str] = {
    0: "STARTUP",
    1: "PRIMARY",
    2: "SECONDARY",
    3: "RECOVERING",
    5: "STARTUP2",
    6: "UNKNOWN",
    7: "ARBITER",
    8: "DOWN",
    9: "ROLLBACK",
    10: "REMOVED",
}


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str = "admin"
    mechanism: str | None = None  # None: the server's default (SCRAM)


# mongod authenticates members to each other as __system@local with the keyfile's contents as the
# password (whitespace ignored). The operator holds the keyfile, so it can bootstrap a keyfile-
# secured set from outside the member's loopback, where the localhost exception does not apply.
INTERNAL_USER = "__system"


def keyfile_keys(keyfile: str) -> tuple[str, ...]:
    """The keys of a keyfile, in order, as mongod reads it: one key, or a YAML list of keys
    (``- key`` per line: MongoDB's key rotation holds the new and the old key this way, and a
    member accepts any of them). Whitespace inside a key is ignored."""
    lines = [line.strip() for line in keyfile.splitlines() if line.strip()]
    if lines and all(line.startswith("-") for line in lines):
        keys = ("".join(line[1:].split()).strip("'\"") for line in lines)
        return tuple(key for key in keys if key)
    return ("".join(keyfile.split()),)


def keyfile_text(keys: tuple[str, ...]) -> str:
    """The keyfile holding `keys`: the key itself for one, a YAML list for more."""
    return keys[0] if len(keys) == 1 else "".join(f"- {key}\n" for key in keys)


def internal_credentials(keyfile: str) -> Credentials:
    """The cluster-internal identity: only for replSetInitiate, the first user and updateUser
    (rotation). With several keys, the first (see internal_credentials_each)."""
    return internal_credentials_each(keyfile)[0]


def internal_credentials_each(keyfile: str) -> tuple[Credentials, ...]:
    """The internal identity once per key, in the keyfile's order: during a keyfile rotation
    the Secret lists the new key first, and a member not yet restarted accepts only the old one,
    so the operator tries them in turn (Connector.fall_back)."""
    return tuple(Credentials(INTERNAL_USER, key, source="local") for key in keyfile_keys(keyfile))


X509 = "MONGODB-X509"


def member_certificate_credentials() -> Credentials:
    """The cluster-internal identity under x.509 member authentication (``--clusterAuthMode
    x509`` refuses the keyfile): a certificate whose subject's O and OU are the members' is
    ``__system``. The connection's tlsCertificateKeyFile is that certificate."""
    return Credentials("", "", source="$external", mechanism=X509)


@dataclass(frozen=True)
class ReplicaSetSpec:
    """A replica set as the operator wants it.

    ``members`` are the stable DNS names in order
    (``pod-N.svc-headless.ns.svc.cluster.local:27017``); replSetInitiate goes to the first one.
    ``priorities`` overrides a member's priority (default 1; 0 makes it never primary).
    """

    name: str
    role: Role
    members: tuple[str, ...]
    priorities: tuple[tuple[str, float], ...] = ()

    def priority(self, host: str) -> float:
        return dict(self.priorities).get(host, 1.0)


@dataclass(frozen=True)
class Mongos:
    """The routers of a sharded cluster; any one that answers is used."""

    hosts: tuple[str, ...]


@dataclass(frozen=True)
class FcvScope:
    """Where a sharded cluster's featureCompatibilityVersion is read and set. mongos keeps no
    FCV document (a 5.0 router refuses the parameter, 6.0-8.2 routers answer with their own
    binaries' series, 8.3 refuses it again), so it is read on every replica set's primary,
    config servers first, and set through the routers, as MongoDB's upgrade procedure does."""

    routers: Mongos
    sets: tuple[ReplicaSetSpec, ...]


@dataclass(frozen=True)
class RoleGrant:
    role: str
    db: str = "admin"


@dataclass(frozen=True)
class UserSpec:
    username: str
    password: str = field(repr=False)
    roles: tuple[RoleGrant, ...]
    db: str = "admin"


def admin_user(username: str, password: str, *, root: bool = True) -> UserSpec:
    """The user people log in with (root); the operator itself uses cluster_admin_user."""
    roles = (RoleGrant("root"),) if root else (RoleGrant("userAdminAnyDatabase"),)
    return UserSpec(username, password, roles)


def cluster_admin_user(username: str, password: str) -> UserSpec:
    """The operator's own identity, created first (as __system by keyfile) on every set.

    clusterAdmin: replSet*, addShard/removeShard/movePrimary, shardCollection, FCV, serverStatus
    and config.* reads for the distribution; userAdminAnyDatabase: the other users;
    readWriteAnyDatabase: create, index, count and drop the benchmark collection;
    dbAdminAnyDatabase: `profile` (enableProfiler) and reading system.profile (spec.profiler),
    which none of the others grants.
    """
    return UserSpec(
        username,
        password,
        (
            RoleGrant("clusterAdmin"),
            RoleGrant("readWriteAnyDatabase"),
            RoleGrant("userAdminAnyDatabase"),
            RoleGrant("dbAdminAnyDatabase"),
        ),
    )


def benchmark_user(username: str, password: str, database: str) -> UserSpec:
    return UserSpec(username, password, (RoleGrant("readWrite", database),))


def exporter_user(username: str, password: str) -> UserSpec:
    # mongodb_exporter needs clusterMonitor for serverStatus/replSetGetStatus and read on local
    # for the oplog window.
    return UserSpec(username, password, (RoleGrant("clusterMonitor"), RoleGrant("read", "local")))


@dataclass(frozen=True)
class Hello:
    """One member's answer to ``hello``: who it thinks it is and who the primary is."""

    host: str
    set_name: str | None
    writable_primary: bool
    secondary: bool
    primary: str | None
    hosts: tuple[str, ...]
    me: str | None
    is_mongos: bool
    config_server: bool
    max_wire_version: int

    @property
    def initialized(self) -> bool:
        # An uninitialized `mongod --replSet` answers without setName ("isreplicaset": true).
        return self.set_name is not None


@dataclass(frozen=True)
class MemberStatus:
    host: str
    id: int
    state: str
    healthy: bool
    votes: int = 1
    priority: float = 1.0
    optime_seconds: int | None = None
    message: str | None = None

    @property
    def serving(self) -> bool:
        return self.healthy and self.state in {"PRIMARY", "SECONDARY", STANDALONE_STATE}


@dataclass(frozen=True)
class ReplicaSetStatus:
    """The observed set, as status shows it; ``converged`` tells the caller to stop re-invoking."""

    name: str
    role: Role
    initialized: bool
    members: tuple[MemberStatus, ...] = ()
    primary: str | None = None
    config_version: int | None = None
    action: str | None = None
    pending: str | None = None

    @property
    def converged(self) -> bool:
        return self.initialized and self.pending is None and self.action is None

    def member(self, host: str) -> MemberStatus | None:
        return next((m for m in self.members if m.host == host), None)

    def as_status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role.value,
            "initialized": self.initialized,
            "primary": self.primary,
            "members": [
                {"host": m.host, "state": m.state, "health": m.healthy} for m in self.members
            ],
        }


@dataclass(frozen=True)
class ShardInfo:
    id: str
    host: str
    draining: bool = False
    state: int | None = None

    @property
    def set_name(self) -> str:
        return self.host.split("/", 1)[0]


@dataclass(frozen=True)
class DrainingProgress:
    """``removeShard``'s answer: started, ongoing (with what is left) or completed."""

    shard: str
    state: str
    remaining_chunks: int = 0
    remaining_dbs: int = 0
    jumbo_chunks: int = 0
    dbs_to_move: tuple[str, ...] = ()
    message: str = ""

    @property
    def completed(self) -> bool:
        return self.state == "completed"


class Bound(Enum):
    """MinKey/MaxKey as plain values (the driver's types are read and written in admin.py)."""

    MIN = "MinKey"
    MAX = "MaxKey"


@dataclass(frozen=True)
class KeyField:
    field: str
    hashed: bool = False


# A shard key value (split point, chunk or zone bound): one value per key field, in key order.
KeyValue = tuple[Any, ...]


@dataclass(frozen=True)
class Zone:
    """Key range [min, max) kept on ``shards`` (addShardToZone + updateZoneKeyRange)."""

    name: str
    shards: tuple[str, ...]
    min: KeyValue
    max: KeyValue


@dataclass(frozen=True)
class IndexSpec:
    """A secondary index: (field, 1 | -1 | "hashed" | "text") in order."""

    name: str
    keys: tuple[tuple[str, int | str], ...]
    unique: bool = False

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "key": dict(self.keys)}
        if self.unique:
            doc["unique"] = True
        return doc


@dataclass(frozen=True)
class ShardingSpec:
    """How the benchmark collection is sharded: one field (``key``, ``hashed``) or a compound
    key (``fields``), hashed (with initial chunks) or ranged.

    ``split_points`` pre-split a ranged key at those values (a scalar for a one-field key, else
    a tuple in key order, shorter tuples padded with MinKey); ``initial_chunks`` asks a hashed
    key for that many chunks up front (ignored by servers that no longer support it).
    """

    database: str
    collection: str
    key: str = "_id"
    hashed: bool = True
    initial_chunks: int | None = None
    split_points: tuple[Any, ...] = ()
    fields: tuple[KeyField, ...] = ()
    zones: tuple[Zone, ...] = ()
    ycsb_hashed_keys: bool = True  # YCSB's insert order: hashed or ordered key names
    ycsb_records: int = 100_000  # YCSB's recordCount: ordered names are user0..user<n-1>

    @property
    def namespace(self) -> str:
        return f"{self.database}.{self.collection}"

    @property
    def key_fields(self) -> tuple[KeyField, ...]:
        return self.fields or (KeyField(self.key, self.hashed),)

    @property
    def any_hashed(self) -> bool:
        return any(f.hashed for f in self.key_fields)

    @property
    def key_doc(self) -> dict[str, Any]:
        return {f.field: "hashed" if f.hashed else 1 for f in self.key_fields}

    @property
    def description(self) -> str:
        """``hashed _id`` / ``ranged field0`` / ``compound {_id: 1, field0: hashed}``."""
        if len(self.key_fields) == 1:
            (f,) = self.key_fields
            return f"{'hashed' if f.hashed else 'ranged'} {f.field}"
        parts = ", ".join(f"{f.field}: {'hashed' if f.hashed else 1}" for f in self.key_fields)
        return f"compound {{{parts}}}"

    def value(self, point: Any) -> KeyValue:
        """A split point or bound as a full key value: MinKey for the fields not given (MaxKey
        after a MaxKey)."""
        values = tuple(point) if isinstance(point, tuple) else (point,)
        pad = Bound.MAX if values and values[-1] is Bound.MAX else Bound.MIN
        return values + (pad,) * (len(self.key_fields) - len(values))


@dataclass(frozen=True)
class ShardShare:
    shard: str
    documents: int
    chunks: int
    percent: float
    data_bytes: int | None = None  # $collStats storageStats.size (uncompressed)


@dataclass(frozen=True)
class Distribution:
    namespace: str
    sharded: bool
    shards: tuple[ShardShare, ...] = ()

    @property
    def total_documents(self) -> int:
        return sum(s.documents for s in self.shards)

    def as_status(self) -> dict[str, Any]:
        """The per-shard balance table (status.distribution of the CRDs)."""
        return {
            "collection": self.namespace,
            "sharded": self.sharded,
            "documents": self.total_documents,
            "shards": [
                {
                    "shard": s.shard,
                    "documents": s.documents,
                    "percent": s.percent,
                    "chunks": s.chunks,
                    **({} if s.data_bytes is None else {"dataBytes": s.data_bytes}),
                }
                for s in self.shards
            ],
        }


@dataclass(frozen=True)
class SlowOperation:
    """One system.profile entry as status keeps it: the command's shape, never its values."""

    op: str
    ns: str
    shape: str  # the command's keys with every value as ? (profiler.command_shape)
    millis: int
    plan_summary: str | None = None
    docs_examined: int | None = None
    keys_examined: int | None = None
    nreturned: int | None = None
    shard: str | None = None  # the shard's replica set (sharded clusters)
    query_hash: str | None = None  # planCacheShapeHash (8.0+) or queryHash

    def as_status(self) -> dict[str, Any]:
        optional = {
            "planSummary": self.plan_summary,
            "docsExamined": self.docs_examined,
            "keysExamined": self.keys_examined,
            "nreturned": self.nreturned,
            "shard": self.shard,
            "queryHash": self.query_hash,
        }
        return {
            "op": self.op,
            "ns": self.ns,
            "shape": self.shape,
            "millis": self.millis,
            **{k: v for k, v in optional.items() if v is not None},
        }


@dataclass(frozen=True)
class DiskShare:
    """A collection's storage on one shard (or the whole set): $collStats storageStats."""

    shard: str | None
    documents: int
    data_bytes: int  # size: uncompressed BSON
    storage_bytes: int  # storageSize: on disk, compressed
    index_bytes: int  # totalIndexSize

    def as_status(self) -> dict[str, Any]:
        return {
            **({} if self.shard is None else {"shard": self.shard}),
            "documents": self.documents,
            "dataBytes": self.data_bytes,
            "storageBytes": self.storage_bytes,
            "indexBytes": self.index_bytes,
        }


@dataclass(frozen=True)
class CollectionDiskUse:
    namespace: str
    shards: tuple[DiskShare, ...] = ()  # one per shard; one with shard None when not sharded

    def total(self) -> DiskShare:
        return DiskShare(
            None,
            sum(s.documents for s in self.shards),
            sum(s.data_bytes for s in self.shards),
            sum(s.storage_bytes for s in self.shards),
            sum(s.index_bytes for s in self.shards),
        )

    def as_status(self) -> dict[str, Any]:
        """status.steps[].diskUse.collections[]: the total, and per shard when sharded."""
        per_shard = [s.as_status() for s in self.shards if s.shard is not None]
        return {
            "collection": self.namespace,
            **self.total().as_status(),
            **({"shards": per_shard} if per_shard else {}),
        }


@dataclass(frozen=True)
class ServerFacts:
    """The serverStatus facts status reports; fields a server does not report stay None."""

    host: str
    version: str | None
    process: str | None
    uptime_seconds: float | None
    connections_current: int | None
    connections_available: int | None
    storage_engine: str | None
    cache_max_bytes: int | None
    cache_used_bytes: int | None
    resident_mb: int | None
    opcounters: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ServerDescription:
    """What a server says it is (a run's provenance): buildInfo, getCmdLineOpts unredacted, and
    serverStatus' configuration facts (process, version, engine, WiredTiger cache), as JSON."""

    host: str
    build_info: dict[str, Any] | None
    cmd_line_opts: dict[str, Any] | None
    server_status: dict[str, Any] | None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class RollingStep:
    """The next move of a rolling restart: wait, restart one member, step the primary down, done."""

    kind: str  # "wait" | "restart" | "step_down" | "done"
    host: str | None = None
    reason: str = ""
