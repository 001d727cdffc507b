"""The experiment's scheduling decision (pure): from what the operator observes (its clusters,
its runs, the slots already failed) to what it does next.

Rules, in order:
- One run at a time per cluster; at most `maxClusters` clusters exist at once (a cluster being
  deleted still counts: its pods still load the nodes).
- Slots start in their order (matrix.slots); a slot whose cluster is busy waits, and a later slot
  on another live cluster may start meanwhile (only when maxClusters > 1).
- A slot needs its group's cluster Ready. When it does not exist and the limit is reached, an
  idle cluster is deleted: first one with nothing left to run, else the one needed furthest in
  the future. A cluster deleted this way is created again when its next slot comes (a fresh
  deployment per repetition is what interleaving across cluster variants costs).
- A cluster that fails (phase Failed, or not Ready within the timeout) fails every slot of its
  group that has not started; a failed run fails its slot.
- onCellFailure Stop: after a failure no slot starts; the experiment ends Failed when nothing
  runs. Continue: the other cells go on; the experiment ends Succeeded, its failed cells say so.
- After a group's last slot its cluster is deleted (Delete), kept (Keep) or kept when one of the
  group's slots failed (KeepOnFailure). Kept clusters do not count against maxClusters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from mongobench.experiment.matrix import Slot

SlotPhase = Literal["Pending", "Running", "Succeeded", "Failed"]
DONE = ("Succeeded", "Failed")


@dataclass(frozen=True)
class ObservedCluster:
    phase: str | None  # status.phase
    deleting: bool
    age_seconds: float  # since creation


@dataclass(frozen=True)
class Observed:
    clusters: Mapping[int, ObservedCluster]  # group -> its cluster (absent: does not exist)
    runs: Mapping[Slot, str | None]  # slot -> run phase (absent: no run)
    failed: frozenset[Slot] = frozenset()  # slots failed without a run (their cluster failed)
    kept: frozenset[int] = frozenset()  # groups whose cluster the policy already kept


@dataclass(frozen=True)
class Policy:
    max_clusters: int = 1
    clusters_after: Literal["Delete", "Keep", "KeepOnFailure"] = "Delete"
    on_cell_failure: Literal["Stop", "Continue"] = "Stop"
    cluster_ready_timeout: float = 900.0


@dataclass(frozen=True)
class CreateCluster:
    group: int


@dataclass(frozen=True)
class DeleteCluster:
    group: int
    why: str


@dataclass(frozen=True)
class KeepCluster:
    group: int


@dataclass(frozen=True)
class CreateRun:
    slot: Slot


@dataclass(frozen=True)
class FailSlots:
    slots: tuple[Slot, ...]
    group: int
    message: str


Action = CreateCluster | DeleteCluster | KeepCluster | CreateRun | FailSlots


@dataclass(frozen=True)
class Decision:
    actions: list[Action] = field(default_factory=list)
    phase: Literal["Running", "Succeeded", "Failed"] = "Running"
    current: Slot | None = None  # the first running slot, else the next to start


def slot_phase(slot: Slot, observed: Observed) -> SlotPhase:
    if slot in observed.failed:
        return "Failed"
    phase = observed.runs.get(slot, "absent")
    if phase == "absent":
        return "Pending"
    if phase in DONE:
        return phase  # type: ignore[return-value]
    return "Running"


def decide(
    order: Sequence[Slot], group_of: Mapping[int, int], observed: Observed, policy: Policy
) -> Decision:
    """The next actions. `group_of` maps a cell to its cluster group."""
    phases = {s: slot_phase(s, observed) for s in order}
    actions: list[Action] = []
    failed_now: set[Slot] = set()
    # Clusters that failed fail their group's slots that have not started.
    for group, c in observed.clusters.items():
        broken = c.phase == "Failed" or (
            c.phase != "Ready" and not c.deleting and c.age_seconds > policy.cluster_ready_timeout
        )
        if not broken or c.deleting or group in observed.kept:
            continue
        victims = tuple(s for s in order if group_of[s.cell] == group and phases[s] == "Pending")
        if victims:
            why = (
                "its cluster failed"
                if c.phase == "Failed"
                else f"its cluster was not Ready after {policy.cluster_ready_timeout:.0f}s"
            )
            actions.append(FailSlots(victims, group, why))
            failed_now.update(victims)
    for s in failed_now:
        phases[s] = "Failed"
    stopping = policy.on_cell_failure == "Stop" and any(p == "Failed" for p in phases.values())
    running = [s for s in order if phases[s] == "Running"]
    pending = [] if stopping else [s for s in order if phases[s] == "Pending"]
    busy = {group_of[s.cell] for s in running}
    needed = {group_of[s.cell] for s in pending}

    def group_failed(g: int) -> bool:
        return any(phases[s] == "Failed" for s in order if group_of[s.cell] == g)

    # Clusters with nothing left to run: the policy decides (once).
    live: set[int] = set()
    for g, c in observed.clusters.items():
        if c.deleting:
            live.add(g)
            continue
        if g in busy or g in needed or g in observed.kept:
            if g not in observed.kept:
                live.add(g)
            continue
        keep = policy.clusters_after == "Keep" or (
            policy.clusters_after == "KeepOnFailure" and group_failed(g)
        )
        if keep:
            actions.append(KeepCluster(g))
        else:
            actions.append(DeleteCluster(g, "its cells are done"))
            live.add(g)  # still there until gone
    # Start what can start, in order.
    starting: set[int] = set()
    waiting = False  # an earlier slot waits for its cluster to become Ready
    for s in pending:
        g = group_of[s.cell]
        if g in busy or g in starting:
            continue
        found = observed.clusters.get(g)
        if found is not None:
            if not found.deleting and found.phase == "Ready" and g not in observed.kept:
                actions.append(CreateRun(s))
                starting.add(g)
            elif g in observed.kept:
                starting.add(g)  # a kept cluster (failed group) is not reused
            else:
                waiting = True
            continue
        if len(live) < policy.max_clusters:
            actions.append(CreateCluster(g))
            live.add(g)
            starting.add(g)
            continue
        # Make room: only for the first slot that waits for a cluster, and only by an idle one.
        idle = [
            h
            for h, hc in observed.clusters.items()
            if h in live
            and not hc.deleting
            and h not in busy
            and h not in starting
            and h not in observed.kept
        ]
        deleting = any(observed.clusters[h].deleting for h in live if h in observed.clusters)
        if idle and not waiting and not deleting:
            victim = max(idle, key=lambda h: _next_use(h, pending, group_of))
            actions.append(DeleteCluster(victim, "room for the next cell's cluster"))
        break
    current = running[0] if running else (pending[0] if pending else None)
    if running or pending or (failed_now and not stopping):
        return Decision(actions, "Running", current)
    if any(isinstance(a, DeleteCluster) for a in actions) or any(
        c.deleting for c in observed.clusters.values()
    ):
        return Decision(actions, "Running", None)  # finished once the clusters are gone
    return Decision(actions, "Failed" if stopping else "Succeeded", None)


def _next_use(group: int, pending: Sequence[Slot], group_of: Mapping[int, int]) -> int:
    for i, s in enumerate(pending):
        if group_of[s.cell] == group:
            return i
    return len(pending)
