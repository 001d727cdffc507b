"""The pymongo implementation of every MongoDB administration step the operator takes.

Each ``ensure_*`` observes first, then performs at most one mutating step and returns what it
observed; "already initialized", "already a shard", "user exists" and "member already present"
are success paths. Errors come out as ``TransientMongoError`` (retry) or ``PermanentMongoError``
(condition + Event), see errors.py.

Before the first user exists, commands that need privileges (replSetInitiate, the first
createUser) run as the cluster's internal identity, __system@local authenticated with the keyfile
members share: the operator reaches members by Service DNS, not through their loopback, so the
localhost exception never applies to it. Without a keyfile they fall back to an unauthenticated
connection, which succeeds exactly when the localhost exception applies or auth is off.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from mongobench.mongo import chunks, driver, plan, profiler
from mongobench.mongo.connect import Connector
from mongobench.mongo.errors import (
    ALREADY_INITIALIZED,
    AUTHENTICATION_FAILED,
    DUPLICATE_KEY,
    INVALID_REPLICA_SET_CONFIG,
    NAMESPACE_EXISTS,
    NAMESPACE_NOT_FOUND,
    NOT_YET_INITIALIZED,
    SHARD_NOT_FOUND,
    UNAUTHORIZED,
    USER_ALREADY_EXISTS,
    USER_NOT_FOUND,
    MongoAdminError,
    PermanentMongoError,
    TransientMongoError,
    classify,
)
from mongobench.mongo.model import (
    MEMBER_STATES,
    STANDALONE_STATE,
    Bound,
    CollectionDiskUse,
    Distribution,
    DrainingProgress,
    FcvScope,
    Hello,
    IndexSpec,
    MemberStatus,
    Mongos,
    ReplicaSetSpec,
    ReplicaSetStatus,
    Role,
    RollingStep,
    ServerDescription,
    ServerFacts,
    ShardInfo,
    ShardingSpec,
    ShardShare,
    SlowOperation,
    UserSpec,
)
from mongobench.mongo.versions import UnsupportedVersion, capabilities, major_minor

log = logging.getLogger("mongobench.mongo")

Doc = dict[str, Any]

_KEYFILE_HINT = (
    "the keyfile in the cluster's keyfile Secret does not authenticate as the internal user: "
    "do the members run with a different keyfile?"
)
_LOCALHOST_HINT = (
    "no user can authenticate yet and this connection does not qualify for the localhost "
    "exception: create the first user through the member itself (port-forward or exec) or "
    "before auth is enforced"
)


class MongoAdmin:
    """All MongoDB administration, behind a ``Connector`` that knows how to reach members."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector

    # ---- commands ---------------------------------------------------------------------------

    def command(
        self,
        host: str,
        cmd: Mapping[str, Any],
        *,
        db: str = "admin",
        authenticate: bool = True,
        bootstrap: bool = False,
    ) -> Doc:
        """Run one command on one member; pymongo errors come out classified.

        ``bootstrap``: if the configured user cannot authenticate (it does not exist yet), run it
        as the bootstrap identity instead (see ``bootstrap_command``).
        """
        operation = next(iter(cmd))
        if bootstrap and self.connector.credentials is None:
            return self.bootstrap_command(host, cmd, db=db)
        try:
            with self.connector.lend(host, authenticate=authenticate) as client:
                return client[db].command(dict(cmd))
        except driver.OperationFailure as exc:
            if not (bootstrap and authenticate and exc.code == AUTHENTICATION_FAILED):
                raise classify(exc, operation, host) from None
        except driver.PyMongoError as exc:
            raise classify(exc, operation, host) from None
        return self.bootstrap_command(host, cmd, db=db)

    def bootstrap_command(self, host: str, cmd: Mapping[str, Any], *, db: str = "admin") -> Doc:
        """Run a command before any user exists: as __system@local with the cluster's keyfile
        when the connector has it, else unauthenticated (the localhost exception)."""
        operation = next(iter(cmd))
        keyfile = self.connector.bootstrap_credentials is not None
        log.info(
            "%s on %s: no user can log in yet, %s",
            operation,
            host,
            "authenticating with the cluster's keyfile"
            if keyfile
            else "relying on the localhost exception",
        )
        try:
            with self.connector.lend(host, bootstrap=True) as client:
                return client[db].command(dict(cmd))
        except driver.OperationFailure as exc:
            if exc.code == AUTHENTICATION_FAILED and self.connector.fall_back():
                # The keyfile lists another key (a rotation's old one): the member may run
                # with that one still.
                log.info("%s on %s: the keyfile's key refused, trying its next", operation, host)
                return self.bootstrap_command(host, cmd, db=db)
            if exc.code in (UNAUTHORIZED, AUTHENTICATION_FAILED):
                hint = _KEYFILE_HINT if keyfile else _LOCALHOST_HINT
                code_name = (exc.details or {}).get("codeName")
                raise PermanentMongoError(
                    operation, host, hint, code=exc.code, code_name=code_name
                ) from None
            raise classify(exc, operation, host) from None
        except driver.PyMongoError as exc:
            raise classify(exc, operation, host) from None

    def hello(self, host: str) -> Hello:
        # hello needs no authentication: it is how an uninitialized, user-less member is seen.
        doc = self.command(host, {"hello": 1}, authenticate=False)
        return Hello(
            host=host,
            set_name=doc.get("setName"),
            writable_primary=bool(doc.get("isWritablePrimary", doc.get("ismaster"))),
            secondary=bool(doc.get("secondary")),
            primary=doc.get("primary"),
            hosts=tuple(doc.get("hosts", ())),
            me=doc.get("me"),
            is_mongos=doc.get("msg") == "isdbgrid",
            config_server=bool(doc.get("configsvr")),
            max_wire_version=int(doc.get("maxWireVersion", 0)),
        )

    def rotate_certificates(self, host: str) -> None:
        """rotateCertificates (5.0+): the member reloads its TLS certificate and CA files; new
        connections get the new certificate, open ones keep theirs."""
        self.command(host, {"rotateCertificates": 1, "message": "mongobench: renewed certificate"})

    def server_facts(self, host: str) -> ServerFacts:
        doc = self.command(host, {"serverStatus": 1})
        conns = doc.get("connections") or {}
        cache = (doc.get("wiredTiger") or {}).get("cache") or {}
        ops = doc.get("opcounters") or {}
        return ServerFacts(
            host=host,
            version=doc.get("version"),
            process=doc.get("process"),
            uptime_seconds=_num(doc.get("uptime")),
            connections_current=_int(conns.get("current")),
            connections_available=_int(conns.get("available")),
            storage_engine=(doc.get("storageEngine") or {}).get("name"),
            cache_max_bytes=_int(cache.get("maximum bytes configured")),
            cache_used_bytes=_int(cache.get("bytes currently in the cache")),
            resident_mb=_int((doc.get("mem") or {}).get("resident")),
            opcounters=tuple((k, int(v)) for k, v in ops.items() if isinstance(v, int | float)),
        )

    def describe_server(self, host: str) -> ServerDescription:
        """What the server says it is, for a run's provenance: buildInfo, getCmdLineOpts (as
        the server reports them: the caller redacts) and the serverStatus facts that describe
        its configuration. A command that fails leaves its part None and says why."""
        parts: dict[str, Doc | None] = {}
        errors: list[str] = []
        for name in ("buildInfo", "getCmdLineOpts", "serverStatus"):
            try:
                parts[name] = _json_safe(self.command(host, {name: 1}))
            except MongoAdminError as exc:
                parts[name] = None
                errors.append(f"{name} on {host}: {exc}")
        status = parts["serverStatus"]
        if status is not None:  # the configuration, not the counters
            cache = ((status.get("wiredTiger") or {}).get("cache") or {}).get(
                "maximum bytes configured"
            )
            status = {
                k: status[k] for k in ("host", "version", "process", "storageEngine") if k in status
            }
            if cache is not None:
                status["wiredTiger"] = {"cache": {"maximum bytes configured": cache}}
        return ServerDescription(
            host, parts["buildInfo"], parts["getCmdLineOpts"], status, tuple(errors)
        )

    # ---- replica sets -----------------------------------------------------------------------

    def _hellos(self, spec: ReplicaSetSpec) -> tuple[dict[str, Hello], dict[str, MongoAdminError]]:
        seen: dict[str, Hello] = {}
        failed: dict[str, MongoAdminError] = {}
        for host in spec.members:
            try:
                seen[host] = self.hello(host)
            except TransientMongoError as exc:
                failed[host] = exc
        if not seen:
            first = next(iter(failed.values()))
            raise TransientMongoError(
                "hello", ",".join(spec.members), f"no member reachable ({first.message})"
            )
        for host, h in seen.items():
            if h.set_name is not None and h.set_name != spec.name:
                raise PermanentMongoError(
                    "hello",
                    host,
                    f"member belongs to replica set {h.set_name!r}, not {spec.name!r}",
                )
        return seen, failed

    def _observe(self, spec: ReplicaSetSpec) -> tuple[ReplicaSetStatus, Doc | None, str | None]:
        """(status, config, host the config came from); config is None when uninitialized."""
        seen, _ = self._hellos(spec)
        initialized = [h for h in seen.values() if h.initialized]
        if not initialized:
            members = tuple(
                MemberStatus(
                    host, i, "UNINITIALIZED" if host in seen else "UNREACHABLE", host in seen
                )
                for i, host in enumerate(spec.members)
            )
            return ReplicaSetStatus(spec.name, spec.role, False, members), None, None
        primary = next((h.host for h in initialized if h.writable_primary), None)
        if primary is None:
            primary = next((h.primary for h in initialized if h.primary), None)
        # Ask the primary when it answers; any initialized member knows config and status too.
        source = primary if primary in seen else initialized[0].host
        try:
            status = self.command(source, {"replSetGetStatus": 1}, bootstrap=True)
        except MongoAdminError as exc:
            if exc.code in (NOT_YET_INITIALIZED, INVALID_REPLICA_SET_CONFIG):
                return ReplicaSetStatus(spec.name, spec.role, False), None, None
            raise
        config = self.command(source, {"replSetGetConfig": 1}, bootstrap=True)["config"]
        configured = {str(m["host"]): m for m in config.get("members", [])}
        observed: list[MemberStatus] = []
        for m in status.get("members", []):
            conf = configured.get(str(m["name"]), {})
            optime = m.get("optime")
            ts = optime.get("ts") if isinstance(optime, Mapping) else optime
            observed.append(
                MemberStatus(
                    host=str(m["name"]),
                    id=int(m.get("_id", conf.get("_id", -1))),
                    state=str(m.get("stateStr") or MEMBER_STATES.get(int(m.get("state", 6)))),
                    healthy=bool(m.get("health", 1)),
                    votes=int(conf.get("votes", 1)),
                    priority=float(conf.get("priority", 1.0)),
                    optime_seconds=ts.time if isinstance(ts, driver.Timestamp) else None,
                    message=m.get("lastHeartbeatMessage") or m.get("infoMessage") or None,
                )
            )
        # The set's own view decides who is primary; hello only chose whom to ask.
        result = ReplicaSetStatus(
            name=spec.name,
            role=spec.role,
            initialized=True,
            members=tuple(observed),
            primary=next((x.host for x in observed if x.state == "PRIMARY"), None),
            config_version=int(config.get("version", 0)),
        )
        return result, config, source

    def replica_set_status(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        """Observe only: members with state and health, whether the set is initialized."""
        if spec.role is Role.STANDALONE:
            return self._standalone(spec)
        return self._observe(spec)[0]

    def _standalone(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        """A standalone mongod as status shows it: its one member, serving once hello answers.
        hello only: replSetGetStatus has nothing to say (NoReplicationEnabled, 76), and there is
        nothing to initiate."""
        (host,) = spec.members
        hello = self.hello(host)
        if hello.set_name is not None or hello.is_mongos:
            found = f"a member of replica set {hello.set_name!r}" if hello.set_name else "mongos"
            raise PermanentMongoError("hello", host, f"expected a standalone mongod, found {found}")
        member = MemberStatus(host, 0, STANDALONE_STATE, True)
        return ReplicaSetStatus(spec.name, spec.role, True, (member,), primary=host)

    def ensure_replica_set(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        """Initiate, or take the single next reconfig step toward ``spec.members``.

        Re-invoke until ``converged``: an add waits for the newcomer to reach SECONDARY before
        the next voting change, and removing the primary steps it down first.
        """
        if spec.role is Role.STANDALONE:  # nothing to initiate or reconfigure
            return self._standalone(spec)
        return self._ensure_set(spec)

    def _ensure_set(self, spec: ReplicaSetSpec) -> ReplicaSetStatus:
        status, config, _ = self._observe(spec)
        if config is None:
            return self._initiate(spec, status)
        if config.get("_id") != spec.name:
            raise PermanentMongoError(
                "replSetGetConfig",
                spec.members[0],
                f"configured set is {config.get('_id')!r}, not {spec.name!r}",
            )
        if bool(config.get("configsvr")) != (spec.role is Role.CONFIG):
            raise PermanentMongoError(
                "replSetGetConfig",
                spec.members[0],
                f"set {spec.name!r} has configsvr={bool(config.get('configsvr'))} but its role "
                f"is {spec.role.value}",
            )
        step = plan.next_reconfig(spec, config, status)
        if step is None:
            lagging = [m for m in status.members if m.host in spec.members and not m.serving]
            if lagging:
                m = lagging[0]
                return _with(status, pending=f"waiting for {m.host} ({m.state})")
            return status
        if step.kind == "wait":
            return _with(status, pending=step.reason)
        if step.kind == "step_down":
            self.step_down(spec)
            return _with(status, action=step.reason)
        assert step.config is not None and status.primary is not None
        log.info("replica set %s: %s", spec.name, step.reason)
        try:
            self.command(status.primary, {"replSetReconfig": step.config}, bootstrap=True)
        except PermanentMongoError:
            # Another actor (or our previous, interrupted attempt) may already have made the change.
            _, again, _ = self._observe(spec)
            if again is None or not _same_members(again, step.config):
                raise
        return _with(status, action=step.reason)

    def _initiate(self, spec: ReplicaSetSpec, status: ReplicaSetStatus) -> ReplicaSetStatus:
        missing = [m.host for m in status.members if not m.healthy]
        if missing:
            # replSetInitiate checks every member is up; asking earlier only fails with code 74.
            return _with(status, pending=f"waiting for {', '.join(missing)} before replSetInitiate")
        doc = plan.initiate_document(spec)
        log.info("replica set %s: replSetInitiate with %d member(s)", spec.name, len(spec.members))
        try:
            self.command(spec.members[0], {"replSetInitiate": doc}, bootstrap=True)
        except MongoAdminError as exc:
            if exc.code != ALREADY_INITIALIZED:
                raise
        members = tuple(MemberStatus(m["host"], m["_id"], "STARTUP", True) for m in doc["members"])
        return ReplicaSetStatus(spec.name, spec.role, True, members, action="replSetInitiate")

    def step_down(self, spec: ReplicaSetSpec, *, seconds: int = 60) -> str | None:
        """Ask the primary to step down (catch-up period included); returns the old primary."""
        status = self.replica_set_status(spec)
        if status.primary is None:
            return None
        cmd = {"replSetStepDown": seconds, "secondaryCatchUpPeriodSecs": 10}
        try:
            self.command(status.primary, cmd)
        except TransientMongoError as exc:
            # Servers before 4.2 drop every connection on step-down: that is the success signal.
            if exc.code is not None:
                raise
        return status.primary

    def rolling_step(self, spec: ReplicaSetSpec, needs_restart: Sequence[str]) -> RollingStep:
        """Next move of a rolling change; a step-down is done here, a restart by the caller."""
        step = plan.next_rolling_step(self.replica_set_status(spec), needs_restart)
        if step.kind == "step_down":
            self.step_down(spec)
        return step

    def _primary(self, spec: ReplicaSetSpec) -> str:
        # hello only: it needs no privileges, so it also works before the first user exists.
        seen, _ = self._hellos(spec)
        primary = next((h.host for h in seen.values() if h.writable_primary), None)
        if primary is None:
            raise TransientMongoError("hello", ",".join(spec.members), "no primary (election?)")
        return primary

    # ---- feature compatibility --------------------------------------------------------------

    def _target(self, target: ReplicaSetSpec | Mongos | str) -> str:
        """Where writes go: any mongos, a set's primary, or one named (standalone) server."""
        if isinstance(target, str):
            return target
        return self._mongos(target) if isinstance(target, Mongos) else self._primary(target)

    def running_version(self, target: ReplicaSetSpec | Mongos | str) -> str:
        """The version of the binaries that serve ``target`` (serverStatus): a set's primary
        and the routers are the last to be upgraded, so mid-roll this is still the old one."""
        host = self._target(target)
        return str(self.command(host, {"serverStatus": 1})["version"])

    def feature_compatibility_version(self, target: ReplicaSetSpec | FcvScope | str) -> str:
        """The FCV a set's primary (or a named server) holds; for a sharded cluster
        (``FcvScope``) the lowest its sets' primaries hold, never the routers' answer."""
        if isinstance(target, FcvScope):
            return min(
                (self.feature_compatibility_version(rs) for rs in target.sets),
                key=major_minor,
            )
        host = self._target(target)
        doc = self.command(host, {"getParameter": 1, "featureCompatibilityVersion": 1})
        return str(doc["featureCompatibilityVersion"]["version"])

    def ensure_feature_compatibility_version(
        self, target: ReplicaSetSpec | FcvScope | str, version: str, *, binaries: str
    ) -> bool:
        """Set FCV (raised after an upgrade, or lowered before a downgrade) on servers running
        `binaries` (MAJOR.MINOR.PATCH: the command's form depends on them, not on the FCV);
        True when it changed something. A sharded cluster's is set through its routers."""
        if self.feature_compatibility_version(target) == version:
            return False
        setter = target.routers if isinstance(target, FcvScope) else target
        self.command(self._target(setter), capabilities(binaries).fcv_command(version))
        return True

    # ---- users ------------------------------------------------------------------------------

    def ensure_users(
        self, target: ReplicaSetSpec | Mongos | str, users: Sequence[UserSpec]
    ) -> tuple[str, ...]:
        """Create or fix each user; returns what was done (empty when all matched).

        The connector's credentials should be the first user's: until it exists authentication
        fails, and it is created through the localhost exception.
        """
        host = self._target(target)
        done: list[str] = []
        for user in users:
            try:
                info = self.command(
                    host, {"usersInfo": {"user": user.username, "db": user.db}}, db=user.db
                )
            except PermanentMongoError as exc:
                if exc.code != AUTHENTICATION_FAILED:
                    raise
                # No user can log in yet: create this one through the localhost exception.
                self._create_first_user(host, user)
                done.append(f"created {user.username}")
                continue
            existing = next(iter(info.get("users", [])), None)
            cmd = plan.user_command(user, existing)
            if cmd is None:
                continue
            try:
                self.command(host, cmd, db=user.db)
            except PermanentMongoError as exc:
                if exc.code not in (USER_ALREADY_EXISTS, DUPLICATE_KEY):
                    raise
                continue
            done.append(
                f"{'created' if 'createUser' in cmd else 'updated roles of'} {user.username}"
            )
        return tuple(done)

    def set_password(
        self, target: ReplicaSetSpec | Mongos | str, username: str, password: str
    ) -> bool:
        """Give an admin-database user a new password, as the internal user (__system, by
        keyfile): the change never depends on a password it replaces, so a rotation
        interrupted after it can be repeated. False when the set has no such user."""
        host = self._target(target)
        log.info("updateUser %s on %s: new password (as the internal user)", username, host)
        try:
            with self.connector.lend(host, bootstrap=True) as client:
                client["admin"].command(plan.password_command(username, password))
        except driver.OperationFailure as exc:
            if exc.code == USER_NOT_FOUND:
                return False
            raise classify(exc, "updateUser", host) from None
        except driver.PyMongoError as exc:
            raise classify(exc, "updateUser", host) from None
        return True

    def _create_first_user(self, host: str, user: UserSpec) -> None:
        cmd = plan.user_command(user, None)
        assert cmd is not None
        try:
            self.bootstrap_command(host, cmd, db=user.db)
        except PermanentMongoError as exc:
            if exc.code not in (USER_ALREADY_EXISTS, DUPLICATE_KEY):
                raise
            # It exists, yet its password did not authenticate: the Secret no longer matches.
            raise PermanentMongoError(
                "usersInfo",
                host,
                f"user {user.username!r} exists but the password in its Secret does not "
                "authenticate (was the Secret changed after the cluster was created?)",
                code=AUTHENTICATION_FAILED,
                code_name="AuthenticationFailed",
            ) from None

    # ---- benchmark collection ---------------------------------------------------------------

    def drop_collection(
        self, target: ReplicaSetSpec | Mongos | str, database: str, collection: str
    ) -> bool:
        """Drop the collection (and its sharding metadata); False when it did not exist.

        Asked first, not read from drop's reply: mongos answers ok for a collection that does
        not exist (SERVER-36317), and so does mongod from 7.0 (SERVER-43894)."""
        host = self._target(target)
        listed = self.command(
            host,
            {"listCollections": 1, "filter": {"name": collection}, "nameOnly": True},
            db=database,
        )
        existed = bool(listed.get("cursor", {}).get("firstBatch"))
        try:
            self.command(host, {"drop": collection}, db=database)
        except PermanentMongoError as exc:
            if exc.code != NAMESPACE_NOT_FOUND:
                raise
            return False
        return existed

    def ensure_collection(
        self,
        target: ReplicaSetSpec | Mongos | str,
        database: str,
        collection: str,
        indexes: Sequence[IndexSpec] = (),
    ) -> tuple[str, ...]:
        """Create the collection and its named indexes unless they exist; returns what it did."""
        host = self._target(target)
        done: list[str] = []
        try:
            self.command(host, {"create": collection}, db=database)
            done.append(f"created {database}.{collection}")
        except PermanentMongoError as exc:
            if exc.code != NAMESPACE_EXISTS:
                raise
        if not indexes:
            return tuple(done)
        reply = self.command(host, {"listIndexes": collection, "cursor": {}}, db=database)
        existing = {str(ix["name"]) for ix in _all_batches(self, host, database, reply)}
        missing = [ix.document() for ix in indexes if ix.name not in existing]
        if missing:
            self.command(host, {"createIndexes": collection, "indexes": missing}, db=database)
            done.extend(f"created index {ix['name']}" for ix in missing)
        return tuple(done)

    # ---- sharding ---------------------------------------------------------------------------

    def _mongos(self, mongos: Mongos) -> str:
        last: MongoAdminError | None = None
        for host in mongos.hosts:
            try:
                h = self.hello(host)
            except TransientMongoError as exc:
                last = exc
                continue
            if not h.is_mongos:
                raise PermanentMongoError("hello", host, "not a mongos (no msg: isdbgrid)")
            return host
        raise TransientMongoError(
            "hello", ",".join(mongos.hosts), f"no mongos reachable ({last.message if last else ''})"
        )

    def list_shards(self, mongos: Mongos) -> tuple[ShardInfo, ...]:
        doc = self.command(self._mongos(mongos), {"listShards": 1})
        return tuple(
            ShardInfo(
                id=str(s["_id"]),
                host=str(s["host"]),
                draining=bool(s.get("draining", False)),
                state=s.get("state"),
            )
            for s in doc.get("shards", [])
        )

    def ensure_shard(self, mongos: Mongos, shard: ReplicaSetSpec) -> ShardInfo:
        """addShard with the set's seed list, unless a shard for that set is already listed."""
        found = _find_shard(self.list_shards(mongos), shard.name)
        if found is not None:
            return found
        host = self._mongos(mongos)
        seed = plan.shard_seed_list(shard)
        log.info("addShard %s", seed)
        try:
            reply = self.command(host, {"addShard": seed, "name": shard.name})
        except PermanentMongoError:
            # "already a member of the existing shard": observed state decides, not the message.
            found = _find_shard(self.list_shards(mongos), shard.name)
            if found is None:
                raise
            return found
        return ShardInfo(str(reply.get("shardAdded", shard.name)), seed)

    def remove_shard(
        self, mongos: Mongos, shard_id: str, *, move_primaries_to: str | None = None
    ) -> DrainingProgress:
        """Start or continue draining; call until ``completed``. A vanished shard is completed.

        Databases whose primary shard is the one leaving (``dbs_to_move``) are moved one per
        call to ``move_primaries_to`` when given; otherwise they are reported for the caller.
        """
        host = self._mongos(mongos)
        try:
            doc = self.command(host, {"removeShard": shard_id})
        except PermanentMongoError as exc:
            if exc.code == SHARD_NOT_FOUND or exc.code_name == "ShardNotFound":
                return DrainingProgress(shard_id, "completed", message=exc.message)
            raise
        remaining = doc.get("remaining") or {}
        progress = DrainingProgress(
            shard=shard_id,
            state=str(doc.get("state", "ongoing")),
            remaining_chunks=int(remaining.get("chunks", 0)),
            remaining_dbs=int(remaining.get("dbs", 0)),
            jumbo_chunks=int(remaining.get("jumboChunks", 0)),
            dbs_to_move=tuple(doc.get("dbsToMove", ())),
            message=str(doc.get("msg", "")),
        )
        if progress.dbs_to_move and move_primaries_to:
            db = progress.dbs_to_move[0]
            log.info("movePrimary %s to %s", db, move_primaries_to)
            self.command(host, {"movePrimary": db, "to": move_primaries_to})
        return progress

    def _collection_entry(self, host: str, namespace: str) -> Doc | None:
        reply = self.command(
            host, {"find": "collections", "filter": {"_id": namespace}, "limit": 1}, db="config"
        )
        batch = reply.get("cursor", {}).get("firstBatch", [])
        entry = batch[0] if batch else None
        return None if entry is None or entry.get("dropped") else entry

    def _command_unless_done(self, host: str, cmd: Doc, done_code: int) -> None:
        """Run ``cmd``; a permanent error with ``done_code`` means an earlier pass did it."""
        try:
            self.command(host, cmd)
        except PermanentMongoError as exc:
            if exc.code != done_code:
                raise

    def _split(self, host: str, cmd: Doc) -> None:
        try:
            self.command(host, _to_bson(cmd))
        except PermanentMongoError as exc:
            if "boundary" not in exc.message:  # already split there (an earlier pass): fine
                raise

    def _chunks(self, host: str, spec: ShardingSpec, entry: Doc) -> list[chunks.Chunk]:
        match = {"uuid": entry["uuid"]} if "uuid" in entry else {"ns": spec.namespace}
        reply = self.command(
            host, {"find": "chunks", "filter": match, "sort": {"min": 1}}, db="config"
        )
        docs = [
            {"min": _from_bson(d["min"]), "max": _from_bson(d["max"]), "shard": d["shard"]}
            for d in _all_batches(self, host, "config", reply)
        ]
        return chunks.chunks_from(spec, docs)

    def _zones(self, host: str, spec: ShardingSpec) -> list[str]:
        """addShardToZone and updateZoneKeyRange (idempotent); returns the active shards. A
        zone naming a shard the cluster does not have is refused before any zone command."""
        shards = [s.id for s in self.list_shards(Mongos((host,))) if not s.draining]
        unknown = sorted({s for z in spec.zones for s in z.shards} - set(shards))
        if unknown:
            raise PermanentMongoError(
                "addShardToZone",
                host,
                f"zone shard(s) {', '.join(unknown)} not in the cluster ({', '.join(shards)})",
            )
        for cmd in chunks.zone_commands(spec):
            self.command(host, _to_bson(cmd))
        return shards

    def _move_range(self, host: str) -> bool:
        """Whether the routers have moveRange (6.0+); an unknown release is asked moveChunk."""
        try:
            return capabilities(self.running_version(host)).move_range
        except UnsupportedVersion:
            return False

    def _place_chunks(self, host: str, spec: ShardingSpec) -> int:
        """A ranged key's splits, the zones, then chunk moves (see chunks.py); returns the
        number of chunks moved. Every step is a no-op when an earlier pass did it."""
        for cmd in chunks.split_commands(spec):
            self._split(host, cmd)
        shards = self._zones(host, spec)
        entry = self._collection_entry(host, spec.namespace)
        found = self._chunks(host, spec, entry or {})
        moves = chunks.move_commands(spec, found, shards)
        if moves and self._move_range(host):  # the routers' release is asked only to move
            moves = chunks.move_commands(spec, found, shards, move_range=True)
        for cmd in moves:
            verb = next(iter(cmd))
            log.info("%s %s to %s", verb, spec.namespace, cmd.get("toShard", cmd.get("to")))
            self.command(host, _to_bson(cmd))
        return len(moves)

    def check_sharding(self, mongos: Mongos, spec: ShardingSpec) -> str:
        """Refuse (PermanentMongoError, one line) a layout the routers' release would refuse or
        silently ignore (chunks.sharding_problem), before any command changes anything;
        returns the router it asked."""
        host = self._mongos(mongos)
        problem = chunks.sharding_problem(spec, self.running_version(host))
        if problem is not None:
            raise PermanentMongoError("shardCollection", host, problem)
        return host

    def shard_collection(self, mongos: Mongos, spec: ShardingSpec) -> str:
        """enableSharding + shardCollection, then zones and a ranged key's pre-split and chunk
        moves (chunks.py); says what it did or that it matched."""
        host = self.check_sharding(mongos, spec)
        entry = self._collection_entry(host, spec.namespace)
        if entry is not None:
            if dict(entry.get("key", {})) != spec.key_doc:
                raise PermanentMongoError(
                    "shardCollection",
                    host,
                    f"{spec.namespace} is already sharded on {dict(entry['key'])}, "
                    f"not {spec.key_doc}",
                )
            done = "already sharded"
        else:
            # "already enabled" on servers before 6.0
            self._command_unless_done(host, {"enableSharding": spec.database}, ALREADY_INITIALIZED)
            if chunks.presplits_hashed_zones(spec):
                self._zones(host, spec)  # presplitHashedZones needs them declared first
            log.info("shardCollection %s on %s", spec.namespace, spec.key_doc)
            cmd = chunks.shard_collection_command(spec)
            self._command_unless_done(host, cmd, ALREADY_INITIALIZED)
            done = "sharded"
        # Also when already sharded: a pass interrupted after shardCollection finishes here.
        if spec.zones or chunks.split_points(spec):
            moved = self._place_chunks(host, spec)
            if moved:
                return f"{done}, {moved} chunk(s) moved"
        return done

    def distribution(self, mongos: Mongos, database: str, collection: str) -> Distribution:
        """Documents and chunks per shard for status ($collStats count; config.chunks)."""
        host = self._mongos(mongos)
        namespace = f"{database}.{collection}"
        entry = self._collection_entry(host, namespace)
        try:
            reply = self.command(
                host,
                {
                    "aggregate": collection,
                    "pipeline": [{"$collStats": {"count": {}, "storageStats": {}}}],
                    "cursor": {},
                },
                db=database,
            )
        except MongoAdminError as exc:
            if exc.code == NAMESPACE_NOT_FOUND:
                return Distribution(namespace, sharded=False)
            raise
        counts: dict[str, int] = {}
        sizes: dict[str, int] = {}
        for d in _all_batches(self, host, database, reply):
            shard = str(d.get("shard", "(unsharded)"))
            counts[shard] = counts.get(shard, 0) + int(d.get("count", 0))
            size = _int((d.get("storageStats") or {}).get("size"))
            if size is not None:  # uncompressed data size on that shard
                sizes[shard] = sizes.get(shard, 0) + size
        chunks: dict[str, int] = {}
        if entry is not None:
            match = {"uuid": entry["uuid"]} if "uuid" in entry else {"ns": namespace}
            chunk_reply = self.command(
                host,
                {
                    "aggregate": "chunks",
                    "pipeline": [
                        {"$match": match},
                        {"$group": {"_id": "$shard", "n": {"$sum": 1}}},
                    ],
                    "cursor": {},
                },
                db="config",
            )
            for d in _all_batches(self, host, "config", chunk_reply):
                chunks[str(d["_id"])] = int(d["n"])
        total = sum(counts.values())
        shares = tuple(
            ShardShare(
                shard,
                counts.get(shard, 0),
                chunks.get(shard, 0),
                round(100.0 * counts.get(shard, 0) / total, 1) if total else 0.0,
                sizes.get(shard),
            )
            for shard in sorted(set(counts) | set(chunks))
        )
        return Distribution(namespace, sharded=entry is not None, shards=shares)

    # ---- the profiler and disk use (spec.profiler; planned in profiler.py) ------------------

    def set_profiler(
        self,
        sets: Sequence[ReplicaSetSpec],
        database: str,
        level: int,
        slow_ms: int | Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        """The profiler at `level` on `database` on every set's primary (mongos refuses levels
        1 and 2), with slowms (one value, or per set); returns each set's slowms as it was."""
        before: dict[str, int] = {}
        for rs in sets:
            host = self._primary(rs)
            ms = slow_ms.get(rs.name) if isinstance(slow_ms, Mapping) else slow_ms
            reply = self.command(host, profiler.profile_command(level, ms), db=database)
            was = _int(reply.get("slowms"))
            if was is not None:
                before[rs.name] = was
        return before

    def slow_operations(
        self,
        sets: Sequence[ReplicaSetSpec],
        database: str,
        since: datetime,
        until: datetime | None,
        top: int,
        *,
        sharded: bool,
    ) -> tuple[SlowOperation, ...]:
        """The `top` slowest operations profiled on `database` in [since, until] across the
        sets' primaries (each shard's, named as the shard, when `sharded`)."""
        found: list[SlowOperation] = []
        find = profiler.slow_operations_find(database, since, until, top)
        for rs in sets:
            host = self._primary(rs)
            reply = self.command(host, find, db=database)
            shard = rs.name if sharded else None
            docs = _all_batches(self, host, database, reply)
            found.extend(profiler.slow_operation(d, shard) for d in docs)
        return profiler.slowest(found, top)

    def disk_use(
        self, target: ReplicaSetSpec | Mongos | str, database: str, collection: str
    ) -> CollectionDiskUse:
        """Documents, data, storage and index bytes of the collection ($collStats
        storageStats): per shard through mongos. A collection that does not exist uses none."""
        host = self._target(target)
        namespace = f"{database}.{collection}"
        cmd = {"aggregate": collection, "pipeline": profiler.collstats_pipeline(), "cursor": {}}
        try:
            reply = self.command(host, cmd, db=database)
        except MongoAdminError as exc:
            if exc.code == NAMESPACE_NOT_FOUND:
                return CollectionDiskUse(namespace)
            raise
        return profiler.disk_use(namespace, _all_batches(self, host, database, reply))


def _all_batches(admin: MongoAdmin, host: str, db: str, reply: Doc) -> list[Doc]:
    cursor = reply.get("cursor", {})
    docs = list(cursor.get("firstBatch", []))
    cursor_id = cursor.get("id", 0)
    coll = str(cursor.get("ns", "")).split(".", 1)[-1]
    while cursor_id:
        more = admin.command(host, {"getMore": cursor_id, "collection": coll}, db=db)["cursor"]
        docs.extend(more.get("nextBatch", []))
        cursor_id = more.get("id", 0)
    return docs


def _to_bson(value: Any) -> Any:
    """A planned command with the driver's MinKey/MaxKey where the plan holds Bound values."""
    if value is Bound.MIN:
        return driver.MinKey()
    if value is Bound.MAX:
        return driver.MaxKey()
    if isinstance(value, Mapping):
        return {k: _to_bson(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_bson(v) for v in value]
    return value


def _from_bson(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A bound read from config.chunks, MinKey/MaxKey as Bound values."""
    return {
        k: Bound.MIN
        if isinstance(v, driver.MinKey)
        else Bound.MAX
        if isinstance(v, driver.MaxKey)
        else v
        for k, v in doc.items()
    }


def _find_shard(shards: Sequence[ShardInfo], set_name: str) -> ShardInfo | None:
    return next((s for s in shards if set_name in (s.id, s.set_name)), None)


def _same_members(config: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return {m["host"] for m in config.get("members", [])} == {
        m["host"] for m in wanted.get("members", [])
    }


def _with(status: ReplicaSetStatus, **changes: Any) -> ReplicaSetStatus:
    return replace(status, **changes)


def _json_safe(value: Any) -> Any:
    """A reply as JSON can hold it: BSON's own types (timestamps, ObjectIds, binaries, dates)
    as text."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None
