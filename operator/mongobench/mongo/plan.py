"""Pure decisions: given what is wanted and what was observed, the next single step.

No I/O here, so every rule (one voting change per reconfig, wait for SECONDARY, primary last in a
rolling restart) is unit-tested without a server.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.mongo.model import ReplicaSetSpec, ReplicaSetStatus, Role, RollingStep, UserSpec

# mongod refuses more than 7 voting members; further members join with votes 0 / priority 0.
MAX_VOTING_MEMBERS = 7
# States a member passes through on its way to SECONDARY: the next voting change waits for them.
CATCHING_UP = frozenset({"STARTUP", "STARTUP2", "RECOVERING", "ROLLBACK"})


def _member_doc(member_id: int, host: str, priority: float, votes: int = 1) -> dict[str, Any]:
    doc: dict[str, Any] = {"_id": member_id, "host": host}
    # Only non-default fields, as a person would write them; the server fills in the rest.
    if priority != 1.0:
        doc["priority"] = int(priority) if float(priority).is_integer() else priority
    if votes != 1:
        doc["votes"] = votes
    return doc


def initiate_document(spec: ReplicaSetSpec) -> dict[str, Any]:
    """The replSetInitiate config: every desired member, ``configsvr: true`` for config servers."""
    doc: dict[str, Any] = {"_id": spec.name}
    if spec.role is Role.CONFIG:
        doc["configsvr"] = True
    members = []
    for i, host in enumerate(spec.members):
        voting = i < MAX_VOTING_MEMBERS
        members.append(
            _member_doc(i, host, spec.priority(host) if voting else 0, 1 if voting else 0)
        )
    doc["members"] = members
    return doc


def shard_seed_list(spec: ReplicaSetSpec) -> str:
    """``addShard``'s argument: ``setName/host1,host2,...``."""
    return f"{spec.name}/{','.join(spec.members)}"


@dataclass(frozen=True)
class ReconfigStep:
    """One reconfig move. ``config`` is the document to send for add/remove/priority."""

    kind: str  # "add" | "remove" | "priority" | "step_down" | "wait"
    host: str | None
    reason: str
    config: dict[str, Any] | None = None


def _next_config(config: Mapping[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    new = copy.deepcopy(dict(config))
    new["version"] = int(config.get("version", 1)) + 1
    # The primary stamps its own term, and newlyAdded is server-managed: sending either back
    # makes replSetReconfig fail on 4.4+.
    new.pop("term", None)
    for m in members:
        m.pop("newlyAdded", None)
    new["members"] = members
    return new


def _newcomer_wait(members: list[dict[str, Any]], status: ReplicaSetStatus) -> ReconfigStep | None:
    """A wait while any member is newly added or still catching up to SECONDARY."""
    for m in members:
        observed = status.member(str(m["host"]))
        if m.get("newlyAdded") or (observed and observed.healthy and observed.state in CATCHING_UP):
            state = observed.state if observed else "newly added"
            return ReconfigStep("wait", str(m["host"]), f"waiting for {m['host']} ({state})")
    return None


def _add_step(
    spec: ReplicaSetSpec, config: Mapping[str, Any], members: list[dict[str, Any]], host: str
) -> ReconfigStep:
    voters = sum(1 for m in members if m.get("votes", 1))
    voting = voters < MAX_VOTING_MEMBERS
    new_id = max((int(m["_id"]) for m in members), default=-1) + 1
    added = [*members, _member_doc(new_id, host, spec.priority(host) if voting else 0, int(voting))]
    return ReconfigStep("add", host, f"adding {host}", _next_config(config, added))


def _remove_step(
    config: Mapping[str, Any],
    members: list[dict[str, Any]],
    extra: list[str],
    status: ReplicaSetStatus,
) -> ReconfigStep:
    # Highest _id first: the last scaled-up pod leaves first, like a StatefulSet scale-down.
    by_id = sorted(
        (m for m in members if m["host"] in extra), key=lambda m: int(m["_id"]), reverse=True
    )
    host = str(by_id[0]["host"])
    if host == status.primary:
        return ReconfigStep("step_down", host, f"stepping down {host} before removing it")
    kept = [m for m in members if m["host"] != host]
    return ReconfigStep("remove", host, f"removing {host}", _next_config(config, kept))


def _priority_step(
    spec: ReplicaSetSpec, config: Mapping[str, Any], members: list[dict[str, Any]]
) -> ReconfigStep | None:
    """The first voting member whose priority differs from the spec, set right."""
    for m in members:
        host = str(m["host"])
        want = spec.priority(host)
        if m.get("votes", 1) == 0 or float(m.get("priority", 1.0)) == want:
            continue
        changed = [dict(x) for x in members]
        for x in changed:
            if x["host"] == host:
                if want == 1.0:
                    x.pop("priority", None)
                else:
                    x["priority"] = int(want) if want.is_integer() else want
        return ReconfigStep(
            "priority", host, f"setting priority {want} on {host}", _next_config(config, changed)
        )
    return None


def next_reconfig(
    spec: ReplicaSetSpec, config: Mapping[str, Any], status: ReplicaSetStatus
) -> ReconfigStep | None:
    """The single next change that moves ``config`` toward ``spec.members``; None when done.

    Adds come before removals (a replacement never lowers the number of voters first), each
    voting change waits until every earlier newcomer is SECONDARY, and a member to be removed
    that is primary is stepped down first.
    """
    members: list[dict[str, Any]] = [dict(m) for m in config.get("members", [])]
    configured = [str(m["host"]) for m in members]
    desired = list(spec.members)
    missing = [h for h in desired if h not in configured]
    extra = [h for h in configured if h not in desired]

    if wait := _newcomer_wait(members, status):
        return wait
    if (missing or extra) and status.primary is None:
        return ReconfigStep("wait", None, "waiting for a primary")
    if missing:
        return _add_step(spec, config, members, missing[0])
    if extra:
        return _remove_step(config, members, extra, status)
    return _priority_step(spec, config, members)


def _rolling_wait(status: ReplicaSetStatus, max_lag_seconds: int) -> RollingStep | None:
    """Why a rolling restart may not take its next step yet; None when it may."""
    if not status.initialized:
        return RollingStep("wait", reason="replica set not initialized")
    for m in status.members:
        if m.votes and not m.serving:
            return RollingStep("wait", m.host, f"waiting for {m.host} ({m.state})")
    if status.primary is None:
        return RollingStep("wait", reason="waiting for a primary")
    primary = status.member(status.primary)
    head = primary.optime_seconds if primary else None
    for m in status.members:
        if m.state == "SECONDARY" and head is not None and m.optime_seconds is not None:
            lag = head - m.optime_seconds
            if lag > max_lag_seconds:
                return RollingStep("wait", m.host, f"waiting for {m.host} to catch up ({lag}s)")
    return None


def _primary_step(status: ReplicaSetStatus, primary: str) -> RollingStep:
    """The primary goes last: stepped down when another member can take over, else restarted."""
    electable = [
        m for m in status.members if m.host != primary and m.votes and m.priority > 0 and m.serving
    ]
    if not electable:
        # A one-member set (or one whose others may not become primary) has nobody to hand
        # over to: replSetStepDown would fail; the restart itself is the unavoidable outage.
        return RollingStep("restart", primary, f"restarting {primary} (no other electable member)")
    return RollingStep("step_down", primary, f"stepping down {primary} last")


def next_rolling_step(
    status: ReplicaSetStatus, needs_restart: Sequence[str], *, max_lag_seconds: int = 10
) -> RollingStep:
    """Rolling restart order: secondaries one at a time, each caught up, the primary last.

    ``needs_restart`` holds the members still running the old version/resources; the caller
    restarts the returned host (deletes its pod) and calls again.
    """
    pending = set(needs_restart)
    if not pending:
        return RollingStep("done")
    if wait := _rolling_wait(status, max_lag_seconds):
        return wait
    secondaries = sorted(
        (m for m in status.members if m.host in pending and m.host != status.primary),
        key=lambda m: m.id,
        reverse=True,
    )
    if secondaries:
        return RollingStep("restart", secondaries[0].host, f"restarting {secondaries[0].host}")
    if status.primary is not None and status.primary in pending:
        return _primary_step(status, status.primary)
    return RollingStep("done")


def _roles_of(doc: Mapping[str, Any]) -> set[tuple[str, str]]:
    return {(str(r["role"]), str(r["db"])) for r in doc.get("roles", [])}


def user_command(user: UserSpec, existing: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """createUser when absent, updateUser when its roles drifted, None when it already matches.

    The returned document holds the password: send it, never log it.
    """
    roles = [{"role": r.role, "db": r.db} for r in user.roles]
    if existing is None:
        return {"createUser": user.username, "pwd": user.password, "roles": roles}
    if _roles_of(existing) != {(r.role, r.db) for r in user.roles}:
        return {"updateUser": user.username, "roles": roles}
    return None


def password_command(username: str, password: str) -> dict[str, Any]:
    """updateUser with a new password only (roles untouched); mongod re-derives the SCRAM
    credentials from it, and the old password no longer authenticates.

    The returned document holds the password: send it, never log it.
    """
    return {"updateUser": username, "pwd": password}
