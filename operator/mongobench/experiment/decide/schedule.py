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
- Paired (order Duet): the two slots of a round start in one decision or not at all, each on
  its own cluster; a slot whose partner already started (an operator restarted between the
  two creates) starts as soon as it can.
- After a group's last slot its cluster is deleted (Delete), kept (Keep) or kept when one of the
  group's slots failed (KeepOnFailure). Kept clusters do not count against maxClusters. While
  adaptive repetitions may still add a round, every cluster stays (`reserved`): a round added
  reuses it rather than deploying it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mongobench.api import BenchmarkExperimentSpec
from mongobench.api.benchmarkexperiment import ClusterPolicy, OnCellFailure
from mongobench.experiment.decide.matrix import Slot, partner
from mongobench.k8s import conditions as cond

# A slot's phase: PHASE_PENDING, RUN_RUNNING, RUN_SUCCEEDED or RUN_FAILED.
SlotPhase = str
DONE = (cond.RUN_SUCCEEDED, cond.RUN_FAILED)


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
    # groups whose cluster stays while more rounds may come (adaptive repetitions): not deleted
    # as "done", though deleted to make room like any idle cluster
    reserved: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Policy:
    """The spec's scheduling fields (their defaults are the spec model's: Policy.of)."""

    max_clusters: int
    clusters_after: ClusterPolicy
    on_cell_failure: OnCellFailure
    cluster_ready_timeout: float
    paired: bool  # order Duet: a round's two slots start together

    @classmethod
    def of(cls, spec: BenchmarkExperimentSpec) -> Policy:
        return cls(
            # A Duet's two clusters live at once, whatever maxClusters says.
            max_clusters=max(spec.max_clusters, 2 if spec.duet else 1),
            clusters_after=spec.cluster_policy,
            on_cell_failure=spec.on_cell_failure,
            cluster_ready_timeout=float(spec.cluster_ready_timeout_seconds),
            paired=spec.duet,
        )


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
    phase: str = cond.RUN_RUNNING  # or RUN_SUCCEEDED, RUN_FAILED
    current: Slot | None = None  # the first running slot, else the next to start


def slot_phase(slot: Slot, observed: Observed) -> SlotPhase:
    if slot in observed.failed:
        return cond.RUN_FAILED
    if slot not in observed.runs:
        return cond.PHASE_PENDING
    phase = observed.runs[slot]
    return phase if phase in DONE and phase is not None else cond.RUN_RUNNING


def decide(
    order: Sequence[Slot], group_of: Mapping[int, int], observed: Observed, policy: Policy
) -> Decision:
    """The next actions. `group_of` maps a cell to its cluster group."""
    phases = {s: slot_phase(s, observed) for s in order}
    actions: list[Action] = _failed_clusters(order, group_of, observed, policy, phases)
    failed_now = {s for a in actions if isinstance(a, FailSlots) for s in a.slots}
    for s in failed_now:
        phases[s] = cond.RUN_FAILED
    stopping = policy.on_cell_failure == "Stop" and cond.RUN_FAILED in phases.values()
    running = [s for s in order if phases[s] == cond.RUN_RUNNING]
    pending = [] if stopping else [s for s in order if phases[s] == cond.PHASE_PENDING]
    busy = {group_of[s.cell] for s in running}
    needed = {group_of[s.cell] for s in pending}
    failed_groups = {group_of[s.cell] for s in order if phases[s] == cond.RUN_FAILED}
    live = _after_policy(observed, policy, busy | needed, failed_groups, actions)
    starts = _starts(pending, group_of, observed, policy, busy=busy, live=live)
    actions += _together(starts, phases) if policy.paired else starts
    current = running[0] if running else (pending[0] if pending else None)
    if running or pending or (failed_now and not stopping):
        return Decision(actions, cond.RUN_RUNNING, current)
    if any(isinstance(a, DeleteCluster) for a in actions) or any(
        c.deleting for c in observed.clusters.values()
    ):
        return Decision(actions, cond.RUN_RUNNING, None)  # finished once the clusters are gone
    return Decision(actions, cond.RUN_FAILED if stopping else cond.RUN_SUCCEEDED, None)


def _together(starts: list[Action], phases: Mapping[Slot, SlotPhase]) -> list[Action]:
    """A Duet's runs: a slot starts with its partner (both in this decision), or after it
    (the partner created already); never alone ahead of it."""
    starting = {a.slot for a in starts if isinstance(a, CreateRun)}
    return [
        a
        for a in starts
        if not isinstance(a, CreateRun)
        or partner(a.slot) in starting
        or phases.get(partner(a.slot), cond.PHASE_PENDING) != cond.PHASE_PENDING
    ]


def _failed_clusters(
    order: Sequence[Slot],
    group_of: Mapping[int, int],
    observed: Observed,
    policy: Policy,
    phases: Mapping[Slot, SlotPhase],
) -> list[Action]:
    """Clusters that failed (or were not Ready in time) fail their group's slots that have not
    started."""
    actions: list[Action] = []
    for group, c in observed.clusters.items():
        broken = c.phase == cond.PHASE_FAILED or (
            c.phase != cond.PHASE_READY and c.age_seconds > policy.cluster_ready_timeout
        )
        if not broken or c.deleting or group in observed.kept:
            continue
        victims = tuple(
            s for s in order if group_of[s.cell] == group and phases[s] == cond.PHASE_PENDING
        )
        if victims:
            why = (
                "its cluster failed"
                if c.phase == cond.PHASE_FAILED
                else f"its cluster was not Ready after {policy.cluster_ready_timeout:.0f}s"
            )
            actions.append(FailSlots(victims, group, why))
    return actions


def _after_policy(
    observed: Observed,
    policy: Policy,
    wanted: set[int],
    failed_groups: set[int],
    actions: list[Action],
) -> set[int]:
    """Clusters with nothing left to run: the policy decides (once), its actions appended.
    Returns the groups whose clusters count against maxClusters (`live`)."""
    live: set[int] = set()
    for g, c in observed.clusters.items():
        if c.deleting:
            live.add(g)
        elif g in observed.kept:
            continue
        elif g in wanted or g in observed.reserved:
            live.add(g)
        elif policy.clusters_after == "Keep" or (
            policy.clusters_after == "KeepOnFailure" and g in failed_groups
        ):
            actions.append(KeepCluster(g))
        else:
            actions.append(DeleteCluster(g, "its cells are done"))
            live.add(g)  # still there until gone
    return live


def _starts(
    pending: Sequence[Slot],
    group_of: Mapping[int, int],
    observed: Observed,
    policy: Policy,
    *,
    busy: set[int],
    live: set[int],
) -> list[Action]:
    """Start what can start, in order: a run on a Ready cluster, a cluster while there is room,
    else room made by deleting an idle cluster (only for the first slot that waits)."""
    actions: list[Action] = []
    starting: set[int] = set()
    waiting = False  # an earlier slot waits for its cluster to become Ready
    for s in pending:
        g = group_of[s.cell]
        if g in busy or g in starting:
            continue
        found = observed.clusters.get(g)
        if found is not None:
            if g in observed.kept:
                starting.add(g)  # a kept cluster (failed group) is not reused
            elif not found.deleting and found.phase == cond.PHASE_READY:
                actions.append(CreateRun(s))
                starting.add(g)
            else:
                waiting = True
            continue
        if len(live) < policy.max_clusters:
            actions.append(CreateCluster(g))
            live.add(g)
            starting.add(g)
            continue
        victim = _room(
            pending, group_of, observed, taken=busy | starting, live=live, waiting=waiting
        )
        if victim is not None:
            actions.append(DeleteCluster(victim, "room for the next cell's cluster"))
        break
    return actions


def _room(
    pending: Sequence[Slot],
    group_of: Mapping[int, int],
    observed: Observed,
    *,
    taken: set[int],
    live: set[int],
    waiting: bool,
) -> int | None:
    """The idle cluster to delete for the next one: needed furthest in the future; None while
    an earlier slot waits for its cluster or a cluster is being deleted."""
    idle = [
        h
        for h, hc in observed.clusters.items()
        if h in live and not hc.deleting and h not in taken and h not in observed.kept
    ]
    deleting = any(observed.clusters[h].deleting for h in live if h in observed.clusters)
    if not idle or waiting or deleting:
        return None
    return max(idle, key=lambda h: _next_use(h, pending, group_of))


def _next_use(group: int, pending: Sequence[Slot], group_of: Mapping[int, int]) -> int:
    for i, s in enumerate(pending):
        if group_of[s.cell] == group:
            return i
    return len(pending)
