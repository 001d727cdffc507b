"""Pure: one BenchmarkRun at a time on a target (issue 37). A run not started yet asks, from the
runs the API holds in its namespace (never from memory, so a restart or another replica sees the
same queue), whether it may start or waits, behind which run and at which place in line.

The target is a MongoCluster (spec.clusterRef) or an external database (spec.uriSecretRef: the
same Secret name and key). First created, first served: creationTimestamp, then the name. Two
runs on one target conflict unless both are `concurrency: Shared` with distinct data (database
and collection); a Shared run whose data another Shared run uses queues behind it, like an
Exclusive one (queued rather than refused: it can run once the other is done). A run waits while
a conflicting run is ahead of it in line and not finished (Succeeded, Failed, being deleted or
gone), or has started whatever its place (an older run that started before the queue existed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, ClusterRef, Concurrency, UriSecretRef
from mongobench.api.schema import field_of
from mongobench.k8s import conditions as cond

# The run a queued run waits behind, and its place: ("2nd in line behind run x").
ORDINAL_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


@dataclass(frozen=True)
class Claim:
    """A run as the queue sees it, from its stored body."""

    name: str
    created: str  # metadata.creationTimestamp (RFC 3339, UTC: sorts as text)
    target: tuple[str, ...]
    exclusive: bool
    data: tuple[str, str]  # (database, collection)
    started: bool
    done: bool  # Succeeded, Failed or being deleted: it holds nothing

    @property
    def order(self) -> tuple[str, str]:
        return (self.created, self.name)

    @property
    def target_text(self) -> str:
        return {"cluster": "MongoCluster", "uri": "Secret"}[self.target[0]] + " " + self.target[1]


@dataclass(frozen=True)
class Place:
    """A queued run's place: it waits behind `behind` (the nearest conflicting run ahead of it)
    at `place`: 1 + the conflicting runs ahead of it that wait too (1: next once it is free)."""

    behind: str
    place: int
    reason: str  # cond.QUEUED_TARGET_BUSY or cond.QUEUED_SAME_DATA
    message: str

    def status(self) -> dict[str, Any]:
        """status.queue (the printer column shows its message)."""
        return {"place": self.place, "behind": self.behind, "message": self.message}


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else ORDINAL_SUFFIXES.get(n % 10, "th")
    return f"{n}{suffix}"


def target_of(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The target a run's (raw) spec names: ("cluster", name) or ("uri", secret, key)."""
    ref: ClusterRef | None = field_of(BenchmarkRunSpec, spec, "cluster_ref")
    if ref is not None:
        return ("cluster", ref.name)
    secret: UriSecretRef | None = field_of(BenchmarkRunSpec, spec, "uri_secret_ref")
    if secret is None:  # admission requires a target; a spec stored before may lack one
        return ("uri", "None", UriSecretRef.key)
    return ("uri", secret.name, secret.key)


def claim(run: Mapping[str, Any]) -> Claim:
    """A stored BenchmarkRun as the queue sees it: only the fields it needs are read (another
    run's spec the operator refuses for some other field still holds its place), and the
    model's defaults fill what an object stored before a field existed lacks."""
    meta, spec = run["metadata"], run.get("spec") or {}
    status = run.get("status") or {}
    concurrency: Concurrency = field_of(BenchmarkRunSpec, spec, "concurrency")
    return Claim(
        name=meta["name"],
        created=str(meta.get("creationTimestamp") or ""),
        target=target_of(spec),
        exclusive=concurrency != "Shared",
        data=(
            field_of(BenchmarkRunSpec, spec, "database"),
            field_of(BenchmarkRunSpec, spec, "collection"),
        ),
        started="startTime" in status,
        done=status.get("phase") in (cond.RUN_SUCCEEDED, cond.RUN_FAILED)
        or bool(meta.get("deletionTimestamp")),
    )


def conflicts(a: Claim, b: Claim) -> bool:
    """Whether two runs on one target may not run together."""
    return a.exclusive or b.exclusive or a.data == b.data


def place_in_queue(me: Claim, runs: Iterable[Claim]) -> Place | None:
    """Where `me` (not started) waits, from every run in its namespace; None: it may start."""
    rivals = [
        r
        for r in runs
        if r.name != me.name and r.target == me.target and not r.done and conflicts(me, r)
    ]
    ahead = sorted((r for r in rivals if r.started or r.order < me.order), key=lambda r: r.order)
    if not ahead:
        return None
    queued = [r for r in ahead if not r.started]
    nearest = queued[-1] if queued else ahead[0]
    place = len(queued) + 1
    where = f"{ordinal(place)} in line behind run {nearest.name} on {me.target_text}"
    if me.exclusive or nearest.exclusive:
        who = "this run" if me.exclusive else f"run {nearest.name}"
        return Place(
            nearest.name,
            place,
            cond.QUEUED_TARGET_BUSY,
            f"{where} ({who} is concurrency Exclusive)",
        )
    database, collection = me.data
    return Place(
        nearest.name,
        place,
        cond.QUEUED_SAME_DATA,
        f"{where} (both Shared, both use {database}.{collection}: give one another "
        "database or collection to run them together)",
    )
