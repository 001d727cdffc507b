"""Pure: removing shards when `spec.topology.sharded.shards` shrinks.

The shards removed are the highest-numbered ones (``<cluster>-shard<i>`` with i >= shards). A
removed shard keeps its StatefulSet, Service and PodDisruptionBudget until MongoDB has drained it
(``removeShard`` said completed, ``listShards`` no longer lists it): its data lives there until
then. MongoDB drains one shard at a time, so the others wait, highest first.

Only shards named like this cluster's own are ever removed: a shard someone added by hand is
left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.mongo.model import DrainingProgress, Role, ShardInfo
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout


def shard_index(layout: ClusterLayout, name: str) -> int | None:
    """i for ``<cluster>-shard<i>``, else None (not one of this cluster's shards)."""
    match = re.fullmatch(re.escape(layout.name) + r"-shard(0|[1-9][0-9]*)", name)
    return int(match.group(1)) if match else None


def _beyond_spec(layout: ClusterLayout, name: str) -> bool:
    index = shard_index(layout, name)
    return layout.sharded and index is not None and index >= len(layout.shards)


def retiring_shards(
    layout: ClusterLayout, statefulsets: Mapping[str, int]
) -> tuple[ReplicaSetLayout, ...]:
    """Shard StatefulSets (name -> replicas) the spec no longer has, highest-numbered first."""
    names = sorted(
        (n for n in statefulsets if _beyond_spec(layout, n)),
        key=lambda n: shard_index(layout, n) or 0,
        reverse=True,
    )
    return tuple(
        ReplicaSetLayout(n, Role.SHARD, statefulsets[n], "shard", layout.namespace) for n in names
    )


@dataclass(frozen=True)
class Removals:
    """What this pass does about shards to remove: call removeShard on `current`, the rest wait."""

    current: ShardInfo | None
    waiting: tuple[str, ...] = ()


def plan_removals(layout: ClusterLayout, listed: Sequence[ShardInfo]) -> Removals:
    """The shard to (continue to) drain now, and the ones queued behind it.

    A shard already draining goes first, even one the spec wants again (scaled back up while it
    drained): MongoDB cannot stop a drain, so it finishes and the shard is then added again.
    """
    ours = [s for s in listed if shard_index(layout, s.set_name) is not None]
    leaving = sorted(
        (s for s in ours if _beyond_spec(layout, s.set_name)),
        key=lambda s: shard_index(layout, s.set_name) or 0,
        reverse=True,
    )
    draining = [s for s in ours if s.draining]
    current = draining[0] if draining else (leaving[0] if leaving else None)
    waiting = tuple(s.set_name for s in leaving if s is not current)
    return Removals(current, waiting)


def draining_status(
    progress: DrainingProgress | None, waiting: Sequence[str]
) -> list[dict[str, Any]]:
    """status.draining: the shard draining now (with what is left), then those queued."""
    out: list[dict[str, Any]] = []
    if progress is not None:
        entry: dict[str, Any] = {
            "shard": progress.shard,
            "state": "Completed" if progress.completed else "Draining",
        }
        # Only an "ongoing" reply counts what is left; "started" has not counted yet.
        if progress.state == "ongoing":
            entry["remainingChunks"] = progress.remaining_chunks
            entry["remainingDatabases"] = progress.remaining_dbs
            if progress.jumbo_chunks:
                entry["jumboChunks"] = progress.jumbo_chunks
        if progress.message:
            entry["message"] = progress.message
        out.append(entry)
    out.extend(
        {"shard": name, "state": "Pending", "message": "waits: MongoDB drains one shard at a time"}
        for name in waiting
    )
    return out


def draining_message(progress: DrainingProgress | None, waiting: Sequence[str]) -> str:
    """One line for the Configured condition."""
    parts: list[str] = []
    if progress is not None and not progress.completed:
        left = (
            f": {progress.remaining_chunks} chunks and {progress.remaining_dbs} databases left"
            if progress.state == "ongoing"
            else ": draining started"
        )
        parts.append(f"removing shard {progress.shard}{left}")
    elif progress is not None:
        parts.append(f"shard {progress.shard} removed")
    if waiting:
        parts.append(f"then {', '.join(waiting)}")
    return "; ".join(parts)
