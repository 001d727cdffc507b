"""MongoDB side of a MongoCluster: one idempotent pass that moves the wiring one step forward.

Driven by observed state (the pods ready, then what MongoDB answers), each pass initiates or
reconfigures replica sets, creates users and adds shards through mongobench.mongo, and returns
what it saw. The caller re-invokes until `complete`; an interrupted pass (operator killed between
any two steps) simply resumes, since every step checks first.

Order, so every step finds what it needs:
  ReplicaSet:  initiate/reconfig rs0 -> users (operator, admin, benchmark, exporter) on its
               primary; the operator's user first, as __system by keyfile, then the rest by it
  Standalone:  the mongod answers hello (no replica set to initiate) -> the same users on it
  Sharded:     config servers -> cluster users on them -> each shard set -> shard-local users
               (the operator and the exporter sidecars connect to shard members directly) ->
               benchmark user through mongos -> addShard for each shard -> removeShard for a
               shard the spec no longer has (one per pass, re-invoked until drained: shards.py)

Each converged set's primary (and mongos) also answers serverStatus, for the facts in status.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.errors import MongoAdminError, TransientMongoError
from mongobench.mongo.model import (
    DrainingProgress,
    Mongos,
    ReplicaSetStatus,
    ServerFacts,
    UserSpec,
    admin_user,
    benchmark_user,
    cluster_admin_user,
    exporter_user,
)
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.decide.shards import Removals, draining_message, plan_removals
from mongobench.mongocluster.decide.status import Wiring

log = logging.getLogger("mongobench.mongocluster")


@dataclass(frozen=True)
class Passwords:
    """The users' credentials, read from the cluster's Secrets by the caller (never logged)."""

    operator_username: str
    operator: str
    admin_username: str
    admin: str
    benchmark: str
    exporter_username: str
    exporter: str


@dataclass(frozen=True)
class Users:
    """The users a cluster's wiring creates, from the passwords the caller read."""

    operator: UserSpec
    admin: UserSpec
    benchmark: UserSpec
    exporter: tuple[UserSpec, ...]

    @classmethod
    def of(cls, spec: MongoClusterSpec, passwords: Passwords) -> Users:
        return cls(
            cluster_admin_user(passwords.operator_username, passwords.operator),
            admin_user(passwords.admin_username, passwords.admin),
            benchmark_user(
                spec.auth.benchmark_user, passwords.benchmark, spec.auth.benchmark_database
            ),
            (exporter_user(passwords.exporter_username, passwords.exporter),)
            if spec.monitoring.exporter
            else (),
        )

    def on_sets(self) -> list[UserSpec]:
        """Created on every replica set of a sharded cluster (the operator's own first: the
        next ones are created by it, no longer by keyfile)."""
        return [self.operator, self.admin, *self.exporter]


class _Pass:
    """What one pass observed so far, turned into a Wiring by `result`."""

    def __init__(self, admin: MongoAdmin, ready_sets: frozenset[str]) -> None:
        self.admin = admin
        self.ready_sets = ready_sets
        self.statuses: dict[str, ReplicaSetStatus] = {}
        self.server: dict[str, ServerFacts] = {}

    def result(
        self,
        complete: bool,
        message: str,
        shards: frozenset[str] | None = None,
        removal: DrainingProgress | None = None,
        waiting: tuple[str, ...] = (),
    ) -> Wiring:
        return Wiring(
            complete=complete,
            message=message,
            replica_sets={name: st.as_status() for name, st in self.statuses.items()},
            shards=shards or frozenset(),
            config_members={
                name: len(st.members) for name, st in self.statuses.items() if st.initialized
            },
            shards_listed=shards is not None,
            removal=removal,
            removal_waiting=waiting,
            server=dict(self.server),
        )

    def facts(self, key: str, host: str | None) -> None:
        # Informational only: a member that does not answer serverStatus never stops the wiring.
        if host is None:
            return
        try:
            self.server[key] = self.admin.server_facts(host)
        except MongoAdminError as exc:
            log.debug("serverStatus on %s: %s", host, exc)

    def ensure_set(self, rs: ReplicaSetLayout, users: list[UserSpec]) -> str | None:
        """None when the set is converged and its users exist; else what it waits for."""
        if rs.name not in self.ready_sets:
            return f"{rs.name}: waiting for pods"
        status = self.admin.ensure_replica_set(rs.to_spec())
        self.statuses[rs.name] = status
        if not status.converged:
            return f"{rs.name}: {status.action or status.pending or 'converging'}"
        self.admin.ensure_users(rs.to_spec(), users)
        # Observe again so status shows states after the step (e.g. SECONDARY, not STARTUP2).
        self.statuses[rs.name] = self.admin.replica_set_status(rs.to_spec())
        self.facts(rs.name, self.statuses[rs.name].primary)
        return None


def wire(
    admin: MongoAdmin,
    spec: MongoClusterSpec,
    layout: ClusterLayout,
    passwords: Passwords,
    ready_sets: frozenset[str],
    *,
    retiring: Sequence[ReplicaSetLayout] = (),
) -> Wiring:
    """One pass. `ready_sets`: replica sets whose pods are all ready (others are not touched).
    `retiring`: shard sets whose StatefulSets remain after the spec dropped them (observed only).

    Transient conditions (no primary yet, member not reachable) end the pass with complete=False
    and a message; permanent ones raise PermanentMongoError for the caller to report.
    """
    users = Users.of(spec, passwords)
    wiring = _Pass(admin, ready_sets)
    try:
        if not layout.sharded:
            (rs,) = layout.replica_sets
            users_of_set = [users.operator, users.admin, users.benchmark, *users.exporter]
            waiting = wiring.ensure_set(rs, users_of_set)
            done = "mongod and users" if layout.standalone else "replica set and users"
            return wiring.result(waiting is None, waiting or f"{done} configured")
        return _wire_sharded(wiring, layout, users, retiring)
    except TransientMongoError as exc:
        return wiring.result(False, str(exc))


def _wire_sharded(
    wiring: _Pass, layout: ClusterLayout, users: Users, retiring: Sequence[ReplicaSetLayout]
) -> Wiring:
    """Config servers and shards, then (through mongos) the benchmark user and the shards."""
    config = layout.config_server
    assert config is not None
    waiting_for = [
        w
        for w in (
            wiring.ensure_set(config, users.on_sets()),
            *(wiring.ensure_set(shard, users.on_sets()) for shard in layout.shards),
        )
        if w
    ]
    for rs in retiring:  # still listed in status while they drain
        try:
            wiring.statuses[rs.name] = wiring.admin.replica_set_status(rs.to_spec())
        except MongoAdminError as exc:
            log.debug("retiring shard %s: %s", rs.name, exc)
    if waiting_for:
        return wiring.result(False, "; ".join(waiting_for))
    if "mongos" not in wiring.ready_sets:
        return wiring.result(False, "waiting for mongos pods")
    mongos = Mongos((layout.mongos_host,))
    wiring.admin.ensure_users(mongos, [users.benchmark])
    for shard in layout.shards:
        wiring.admin.ensure_shard(mongos, shard.to_spec())
    wiring.facts("mongos", layout.mongos_host)
    shards = wiring.admin.list_shards(mongos)
    listed = frozenset(s.set_name for s in shards)
    missing = [s.name for s in layout.shards if s.name not in listed]
    if missing:
        return wiring.result(False, f"adding shards {', '.join(missing)}", listed)
    removals = plan_removals(layout, shards)
    if removals.current is None:
        return wiring.result(True, "replica sets, shards and users configured", listed)
    return _remove_shard(wiring, layout, mongos, removals, listed)


def _remove_shard(
    wiring: _Pass,
    layout: ClusterLayout,
    mongos: Mongos,
    removals: Removals,
    listed: frozenset[str],
) -> Wiring:
    """One removeShard call for the shard draining now (re-invoked until it completes)."""
    current = removals.current
    assert current is not None
    # Databases whose primary shard is leaving move to the first shard that stays.
    target = next((s.name for s in layout.shards if s.name != current.set_name), None)
    progress = wiring.admin.remove_shard(mongos, current.id, move_primaries_to=target)
    if progress.state == "started":
        log.info("removeShard %s: draining started", progress.shard)
    if progress.completed:
        log.info("removeShard %s: completed", progress.shard)
        listed -= {current.id, current.set_name}
    done = (
        progress.completed
        and not removals.waiting
        and current.set_name not in {s.name for s in layout.shards}
    )
    return wiring.result(
        done,
        f"replica sets, shards and users configured; removed shard {progress.shard}"
        if done
        else draining_message(progress, removals.waiting),
        listed,
        progress,
        removals.waiting,
    )
