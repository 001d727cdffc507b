"""What real mongod/mongos of each supported release accept, for every command the operator
sends: where it runs, from which release, and (for commands the server parses strictly) which
fields it knows. The wire model (mongomodel.py) refuses as those servers refuse; the
conformance table in e2e/local/README.md lists the same rules with the MongoDB source each was
checked against, and a unit test holds the operator, this table and the README to each other.

Test support only, never imported by the product.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Release = tuple[int, int]

MONGOD, MONGOS = "mongod", "mongos"
BOTH = frozenset({MONGOD, MONGOS})

# Fields every command may carry: the driver's and the generic arguments (MongoDB's
# src/mongo/idl/generic_argument.idl), never "unknown".
GENERIC_FIELDS = frozenset(
    {
        "$db",
        "lsid",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "$clusterTime",
        "$readPreference",
        "readConcern",
        "writeConcern",
        "maxTimeMS",
        "comment",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "$audit",
        "mayBypassWriteBlocking",
    }
)


@dataclass(frozen=True)
class CommandRule:
    """One command as the servers take it. ``fields`` None: parsed leniently (unknown fields
    ignored); else an IDL ``strict`` command, whose unknown fields are error 40415. ``since`` and
    ``until``: the releases that have it (``until`` exclusive), per process kind in ``on``."""

    on: frozenset[str]
    fields: frozenset[str] | None
    source: str  # the MongoDB file or manual page the rule was checked against
    since: Release = (5, 0)
    until: Release | None = None
    # field -> the releases that know it (a field added later is unknown before)
    field_since: tuple[tuple[str, Release], ...] = ()
    # field -> the BSON types its IDL type takes (another is TypeMismatch, 14)
    types: tuple[tuple[str, tuple[type, ...]], ...] = ()


def _strict(*fields: str) -> frozenset[str]:
    return frozenset(fields)


_STR, _BOOL, _NUM, _DOC, _LIST = (str,), (bool,), (int, float), (dict,), (list,)
_USERS_IDL = "src/mongo/db/auth/user_management_commands.idl"
_USER_TYPES = (("pwd", _STR), ("roles", _LIST))
# createUser's and updateUser's fields (user_management_commands.idl)
_USER_FIELDS = _strict(
    "pwd", "customData", "roles", "digestPassword", "authenticationRestrictions", "mechanisms"
)

RULES: dict[str, CommandRule] = {
    "hello": CommandRule(BOTH, None, "src/mongo/db/repl/hello.idl"),
    "serverStatus": CommandRule(BOTH, None, "src/mongo/db/commands/server_status.cpp"),
    "buildInfo": CommandRule(BOTH, None, "src/mongo/db/commands/generic.cpp"),
    "getCmdLineOpts": CommandRule(BOTH, None, "src/mongo/db/commands/generic.cpp"),
    "rotateCertificates": CommandRule(
        BOTH,
        _strict("message"),
        "src/mongo/db/commands/rotate_certificates.idl",
        types=(("message", _STR),),
    ),
    "replSetInitiate": CommandRule(
        frozenset({MONGOD}), None, "src/mongo/db/repl/repl_set_commands.cpp"
    ),
    "replSetGetStatus": CommandRule(
        frozenset({MONGOD}), None, "src/mongo/db/repl/repl_set_commands.cpp"
    ),
    "replSetGetConfig": CommandRule(
        frozenset({MONGOD}),
        _strict("commitmentStatus", "includeNewlyAdded"),
        "src/mongo/db/repl/repl_set_get_config.idl (via repl_set_commands.cpp)",
    ),
    "replSetReconfig": CommandRule(
        frozenset({MONGOD}), None, "src/mongo/db/repl/repl_set_commands.cpp"
    ),
    "replSetStepDown": CommandRule(
        frozenset({MONGOD}),
        _strict("secondaryCatchUpPeriodSecs", "force"),
        "src/mongo/db/repl/repl_set_commands.idl",
        types=(("secondaryCatchUpPeriodSecs", _NUM), ("force", _BOOL)),
    ),
    "getParameter": CommandRule(BOTH, None, "src/mongo/db/commands/parameters.cpp"),
    "setFeatureCompatibilityVersion": CommandRule(
        BOTH,
        _strict("confirm", "fromConfigServer", "changeTimestamp", "phase", "dryRun"),
        "src/mongo/db/commands/set_feature_compatibility_version.idl",
        field_since=(("confirm", (7, 0)), ("dryRun", (8, 2))),
        types=(("confirm", _BOOL),),
    ),
    "usersInfo": CommandRule(
        BOTH,
        _strict(
            "showCredentials",
            "showCustomData",
            "showPrivileges",
            "showAuthenticationRestrictions",
            "filter",
        ),
        "src/mongo/db/auth/user_management_commands.idl",
    ),
    "createUser": CommandRule(BOTH, _USER_FIELDS, _USERS_IDL, types=_USER_TYPES),
    "updateUser": CommandRule(BOTH, _USER_FIELDS, _USERS_IDL, types=_USER_TYPES),
    "create": CommandRule(BOTH, None, "src/mongo/db/commands/create.idl"),
    "drop": CommandRule(
        BOTH,
        _strict("collectionUUID"),
        "src/mongo/db/drop.idl",
        field_since=(("collectionUUID", (6, 0)),),
    ),
    "listCollections": CommandRule(
        BOTH,
        _strict("filter", "nameOnly", "authorizedCollections", "cursor", "includePendingDrops"),
        "src/mongo/db/list_collections.idl",
        types=(("filter", _DOC), ("nameOnly", _BOOL), ("cursor", _DOC)),
    ),
    "listIndexes": CommandRule(
        BOTH,
        _strict("cursor", "includeBuildUUIDs", "includeIndexBuildInfo"),
        "src/mongo/db/list_indexes.idl",
        types=(("cursor", _DOC),),
    ),
    "createIndexes": CommandRule(
        BOTH,
        _strict("indexes", "commitQuorum", "ignoreUnknownIndexOptions", "returnOnStart"),
        "src/mongo/db/create_indexes.idl",
        types=(("indexes", _LIST),),
    ),
    "find": CommandRule(BOTH, None, "src/mongo/db/query/find_command.idl"),
    "profile": CommandRule(
        BOTH,
        None,
        "src/mongo/db/commands/profile.idl; src/mongo/db/commands/profile_common.cpp; "
        "src/mongo/s/commands/cluster_profile_cmd.cpp",
    ),
    "aggregate": CommandRule(BOTH, None, "src/mongo/db/pipeline/aggregate_command.idl"),
    "getMore": CommandRule(
        BOTH,
        _strict(
            "collection",
            "batchSize",
            "term",
            "lastKnownCommittedOpTime",
            "includeQueryStatsMetrics",
        ),
        "src/mongo/db/query/getmore_command.idl",
        types=(("collection", _STR),),
    ),
    "listShards": CommandRule(
        frozenset({MONGOS}), None, "src/mongo/s/commands/cluster_list_shards_cmd.cpp"
    ),
    "addShard": CommandRule(frozenset({MONGOS}), None, "src/mongo/s/request_types/add_shard.idl"),
    "removeShard": CommandRule(
        frozenset({MONGOS}), None, "src/mongo/s/request_types/remove_shard.idl"
    ),
    "movePrimary": CommandRule(
        frozenset({MONGOS}), None, "src/mongo/s/request_types/move_primary.idl"
    ),
    "enableSharding": CommandRule(
        frozenset({MONGOS}), None, "src/mongo/s/commands/cluster_enable_sharding_cmd.cpp"
    ),
    "shardCollection": CommandRule(
        frozenset({MONGOS}),
        None,
        "src/mongo/s/request_types/shard_collection.idl, sharded_ddl_commands.idl; "
        "src/mongo/db/s/config/initial_split_policy.cpp",
    ),
    "split": CommandRule(frozenset({MONGOS}), None, "src/mongo/s/commands/cluster_split_cmd.cpp"),
    "moveChunk": CommandRule(
        frozenset({MONGOS}), None, "src/mongo/s/commands/cluster_move_chunk_cmd.cpp"
    ),
    "moveRange": CommandRule(
        frozenset({MONGOS}),
        _strict("toShard", "min", "max", "forceJumbo", "waitForDelete", "secondaryThrottle"),
        "src/mongo/s/request_types/move_range_request.idl",
        since=(6, 0),
        types=(("toShard", _STR), ("min", _DOC), ("max", _DOC)),
    ),
    "addShardToZone": CommandRule(
        frozenset({MONGOS}),
        _strict("zone"),
        "src/mongo/s/request_types/add_shard_to_zone.idl",
        types=(("zone", _STR),),
    ),
    "updateZoneKeyRange": CommandRule(
        frozenset({MONGOS}),
        _strict("min", "max", "zone"),
        "src/mongo/s/request_types/update_zone_key_range.idl",
        types=(("min", _DOC), ("max", _DOC), ("zone", _STR)),
    ),
}

_BY_LOWER = {name.lower(): name for name in RULES}


@dataclass(frozen=True)
class Refusal:
    code: int
    code_name: str
    message: str


def release_of(version: str) -> Release:
    major, minor, *_ = version.split(".")
    return int(major), int(minor)


def check(command: str, doc: Mapping[str, Any], *, process: str, version: str) -> Refusal | None:
    """How a ``process`` (mongod or mongos) of ``version`` refuses ``doc``; None when it takes
    it (or the command is not one the operator sends: the model's handlers decide those)."""
    name = _BY_LOWER.get(command.lower())
    if name is None:
        return None
    rule = RULES[name]
    release = release_of(version)
    known = process in rule.on and rule.since <= release
    if rule.until is not None and release >= rule.until:
        known = False
    if not known:
        return Refusal(59, "CommandNotFound", f"no such command: '{name}'")
    if rule.fields is None:
        return None
    added, types = dict(rule.field_since), dict(rule.types)
    for field in list(doc)[1:]:
        if field in GENERIC_FIELDS:
            continue
        if field not in rule.fields or release < added.get(field, (0, 0)):
            return Refusal(
                40415, "Location40415", f"BSON field '{name}.{field}' is an unknown field."
            )
        if field in types and not _typed(doc[field], types[field]):
            return Refusal(14, "TypeMismatch", f"BSON field '{name}.{field}' is the wrong type")
    return None


def _typed(value: Any, kinds: tuple[type, ...]) -> bool:
    """As the IDL parses: a bool is not a number, a number not a bool."""
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


# The mongod/mongos flags the operator's pod builders write (mongocluster/build/statefulset.py,
# mongos.py, podspec.py, tls.py) -> where each is a startup option, and the source checked: the
# options manual pages and src/mongo/db/mongod_options*.idl / src/mongo/s/mongos_options.idl.
# Every one exists on every supported release (5.0-8.x); a process given a flag it does not
# know refuses to start.
_SERVER_OPTS = "src/mongo/db/server_options_general.idl"
_TLS_OPTS = "src/mongo/util/net/ssl_options_server.idl"
FLAGS: dict[str, tuple[frozenset[str], str]] = {
    "--port": (BOTH, "src/mongo/db/server_options_nongeneral.idl"),
    "--bind_ip_all": (BOTH, "src/mongo/db/server_options_nongeneral.idl"),
    "--keyFile": (BOTH, _SERVER_OPTS),
    "--clusterAuthMode": (BOTH, _SERVER_OPTS),
    "--dbpath": (frozenset({MONGOD}), "src/mongo/db/mongod_options_storage.idl"),
    "--replSet": (frozenset({MONGOD}), "src/mongo/db/mongod_options_replication.idl"),
    "--configsvr": (frozenset({MONGOD}), "src/mongo/db/mongod_options_sharding.idl"),
    "--shardsvr": (frozenset({MONGOD}), "src/mongo/db/mongod_options_sharding.idl"),
    "--wiredTigerCacheSizeGB": (
        frozenset({MONGOD}),
        "src/mongo/db/storage/wiredtiger/wiredtiger_global_options.idl",
    ),
    "--configdb": (frozenset({MONGOS}), "src/mongo/s/mongos_options.idl"),
    "--tlsMode": (BOTH, _TLS_OPTS),
    "--tlsCertificateKeyFile": (BOTH, _TLS_OPTS),
    "--tlsCAFile": (BOTH, _TLS_OPTS),
    "--tlsAllowConnectionsWithoutCertificates": (BOTH, _TLS_OPTS),
}
