"""One reconcile of a BenchmarkExperiment: observe its clusters and runs (through the KubeApi it
is given), let schedule.decide choose, act, write status and post the Events. Names are
deterministic (objects.cluster_name/run_name), so an operator restarted mid-experiment finds
what it made and creates nothing twice."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mongobench.api import BenchmarkExperimentSpec, SpecError
from mongobench.api.kinds import BENCHMARKEXPERIMENT as KIND
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.benchmarkrun.decide import repetitions as reps
from mongobench.clock import age_seconds, rfc3339
from mongobench.config import OperatorConfig
from mongobench.experiment.act import archive as summary_archive
from mongobench.experiment.act import history
from mongobench.experiment.build import objects
from mongobench.experiment.decide import matrix as mx
from mongobench.experiment.decide import schedule as sched
from mongobench.experiment.decide.requeue import TERMINAL
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench_results import compare, duet, records, stats, summary
from mongobench_results.adaptive import Policy


@dataclass
class Outcome:
    phase: str
    events: list[cond.Event] = field(default_factory=list)


def plan(
    body: Mapping[str, Any], spec: BenchmarkExperimentSpec, rounds: int | None = None
) -> tuple[mx.Matrix, list[mx.Slot], int | None]:
    """The matrix, the slots of `rounds` rounds (default: as many as status.rounds says, else
    spec.repetitions) in their order, and the seed of a random order."""
    status = body.get("status") or {}
    matrix = mx.expand(spec)
    seed = status.get("seed")
    if mx.seeded(spec.order) and seed is None:
        seed = mx.default_seed(body["metadata"]["uid"]) if spec.seed is None else spec.seed
    first = spec.repetitions
    rounds = rounds or int(status.get("rounds") or first)
    slots = mx.slots(matrix, min(first, rounds), spec.order, seed)
    # Rounds that adaptive repetitions added: each in its own order (a random order draws a
    # fresh one per round), so adding one never reorders what ran; a Duet's pair stays A, B.
    extra = spec.order if spec.order in ("Interleaved", mx.DUET) else "RandomizedRounds"
    for r in range(first + 1, rounds + 1):
        slots += mx.slots(matrix, r, extra, seed, first=r)
    return matrix, slots, seed


def validate(
    kube: KubeApi, meta: Mapping[str, Any], spec: BenchmarkExperimentSpec, matrix: mx.Matrix
) -> None:
    """Every cell's cluster and run as the apiserver would take them on their own (dry run,
    strict fields: a dimension naming a field that does not exist is refused with its name)."""
    seen: set[str] = set()
    for group in range(len(matrix.groups)):
        _dry_run(kube, objects.cluster(meta, spec, matrix, group), f"cluster of group {group}")
    for cell in matrix.cells:
        obj = objects.run(meta, spec, matrix, mx.Slot(cell.index, 1))
        key = json.dumps(obj["spec"], sort_keys=True)
        if key not in seen:
            seen.add(key)
            _dry_run(kube, obj, f"run of cell {matrix.label(cell.index)}")


def _dry_run(kube: KubeApi, obj: Mapping[str, Any], what: str) -> None:
    try:
        kube.create(obj, dry_run=True)
    except ApiError as exc:
        if exc.status == 409:  # exists already: validated when it was created
            return
        if exc.status in (400, 422):
            raise SpecError(f"the {what} would be refused: {exc.message}") from exc
        raise


def advance(
    kube: KubeApi, namespace: str, name: str, now: datetime, config: OperatorConfig
) -> Outcome | None:
    """One reconcile as of `now`, its Events posted; None when the experiment is gone or over."""
    body = kube.get(KIND, namespace, name)
    if body is None or body["metadata"].get("deletionTimestamp"):
        return None
    status = dict(body.get("status") or {})
    if status.get("phase") in TERMINAL:
        return None
    spec = BenchmarkExperimentSpec.parse(body["spec"])
    matrix, order, seed = plan(body, spec)
    generation = _validated(kube, body, spec, matrix, status)
    clusters, runs = _children(kube, namespace, name)
    failed = _failed_slots(status)
    kept = set(status.get("keptGroups") or ())
    policy = sched.Policy.of(spec)
    adaptive = reps.policy_of(spec)
    observed = _observed(clusters, runs, failed, kept, now)
    matrix, order, seed, observed, events = _rounds(
        body,
        spec,
        (matrix, order, seed),
        runs=runs,
        failed=failed,
        observed=observed,
        policy=policy,
    )
    rounds = len(order) // len(matrix.cells)
    decision = sched.decide(order, {c.index: c.group for c in matrix.cells}, observed, policy)
    outcome = Outcome(decision.phase, events)
    deployments = {int(k): list(v) for k, v in (status.get("deployments") or {}).items()}
    _record_deployments(clusters, deployments)
    for action in decision.actions:
        _act(kube, action, body["metadata"], spec, matrix, failed, kept, outcome)
    running = decision.phase == cond.RUN_RUNNING
    status |= {
        "phase": cond.PHASE_PENDING if running and not (runs or clusters) else decision.phase,
        "observedGeneration": generation,
        "failedSlots": _failed_slots_status(failed),
        "keptGroups": sorted(kept),
        "deployments": {str(g): d for g, d in sorted(deployments.items())},
        "order": [objects.run_name(name, s) for s in order],
        "rounds": rounds,
        **({"seed": seed} if seed is not None else {}),
    }
    status |= _cells_status(body, matrix, order, runs, failed, deployments, decision, now)
    if adaptive.adaptive:
        status |= _target(adaptive, matrix, order, runs, failed, status, over=not running)
    if running:
        status.setdefault("startTime", rfc3339(now))
    else:
        ended = _Ended(matrix, runs, failed, decision.phase, generation, now, policy.paired)
        _conclude(kube, body, spec, status, outcome=outcome, e=ended, config=config)
    kube.patch_status(KIND, namespace, name, status)
    for event in outcome.events:
        kube.event(body, *event)
    return outcome


def _validated(
    kube: KubeApi,
    body: Mapping[str, Any],
    spec: BenchmarkExperimentSpec,
    matrix: mx.Matrix,
    status: dict[str, Any],
) -> int:
    """The experiment's generation, validated once (recorded in `status`)."""
    generation = int(body["metadata"].get("generation") or 0)
    if status.get("validatedGeneration") != generation:
        validate(kube, body["metadata"], spec, matrix)
        status["validatedGeneration"] = generation
    return generation


def _failed_slots(status: Mapping[str, Any]) -> dict[mx.Slot, str]:
    """status.failedSlots as recorded: each failed slot and why."""
    return {
        mx.Slot(int(f["cell"]), int(f["repetition"])): f.get("message", "")
        for f in status.get("failedSlots") or ()
    }


def _failed_slots_status(failed: Mapping[mx.Slot, str]) -> list[dict[str, Any]]:
    return [
        {"cell": s.cell, "repetition": s.repetition, "message": m}
        for s, m in sorted(failed.items(), key=lambda i: (i[0].cell, i[0].repetition))
    ]


@dataclass(frozen=True)
class _Ended:
    """What an ended experiment's final status is made of."""

    matrix: mx.Matrix
    runs: Mapping[mx.Slot, Mapping[str, Any]]
    failed: Mapping[mx.Slot, str]
    phase: str
    generation: int
    now: datetime
    paired: bool


def _conclude(
    kube: KubeApi,
    body: dict[str, Any],
    spec: BenchmarkExperimentSpec,
    status: dict[str, Any],
    *,
    outcome: Outcome,
    e: _Ended,
    config: OperatorConfig,
) -> None:
    """An ended experiment's status (results, history), its Event, and its summary archived."""
    status |= _finished(
        status,
        e.matrix,
        e.runs,
        e.failed,
        phase=e.phase,
        generation=e.generation,
        now=e.now,
        paired=e.paired,
    )
    _judge_history(kube, body, spec, e.runs, status=status, generation=e.generation, config=config)
    outcome.events.append(_finished_event(e.phase, status))
    status.setdefault("startTime", rfc3339(e.now))
    # The summary with its final status, deploy timings included.
    status |= summary_archive.upload(kube, body | {"status": status}, spec, config)


def _judge_history(
    kube: KubeApi,
    body: Mapping[str, Any],
    spec: BenchmarkExperimentSpec,
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    *,
    status: dict[str, Any],
    generation: int,
    config: OperatorConfig,
) -> None:
    """status.history and the Regressed condition of an ended experiment, where it names a
    history."""
    judged = history.judge(kube, body["metadata"], spec.history, list(runs.values()), config)
    if judged is not None:
        status["history"] = judged[0]
        status["conditions"] = cond.set_condition(
            status.get("conditions"), cond.REGRESSED, *judged[1], generation=generation
        )


def _finished_event(phase: str, status: Mapping[str, Any]) -> cond.Event:
    return (
        cond.NORMAL if phase == cond.RUN_SUCCEEDED else cond.WARNING,
        cond.EVENT_EXPERIMENT_FINISHED,
        f"{phase}: {status['progress']['summary']} cells done",
    )


def cell_outcomes(
    policy: Policy,
    matrix: mx.Matrix,
    order: Sequence[mx.Slot],
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
) -> list[reps.Outcome]:
    """Per cell: adaptive repetitions' decision over its runs' valid trials, every workload
    and metric at once (a cell is done when each of its workloads is). A cell with a failed
    slot is done: more rounds would not mend it."""
    out = []
    for cell in matrix.cells:
        mine = [s for s in order if s.cell == cell.index]
        views = [
            v
            for s in mine
            if s in runs and (runs[s].get("status") or {}).get("phase") == cond.RUN_SUCCEEDED
            for v in records.steps(runs[s])
        ]
        values = {
            f"{w} {metric}": v
            for w in dict.fromkeys(str(v.workload) for v in views if v.kind == "run")
            for metric, v in reps.valid_values(
                [x for x in views if x.workload == w], str(policy.metric or "throughput")
            ).items()
        }
        decision = reps.decide(policy, values)
        if any(s in failed or _run_phase(runs.get(s)) == cond.RUN_FAILED for s in mine):
            decision = reps.finished(decision)
        out.append(reps.Outcome(matrix.label(cell.index), decision))
    return out


def _run_phase(run: Mapping[str, Any] | None) -> str | None:
    return None if run is None else (run.get("status") or {}).get("phase")


def _stopping(order: Sequence[mx.Slot], observed: sched.Observed, policy: sched.Policy) -> bool:
    """A slot failed and onCellFailure is Stop: no round is added, no cluster reserved."""
    return policy.on_cell_failure == "Stop" and any(
        sched.slot_phase(s, observed) == cond.RUN_FAILED for s in order
    )


def _target(  # noqa: PLR0917 - one reconcile's working set
    adaptive: Policy,
    matrix: mx.Matrix,
    order: Sequence[mx.Slot],
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
    status: Mapping[str, Any],
    *,
    over: bool,
) -> dict[str, Any]:
    """status.repetitions and TargetMet: how many valid trials each cell needed, whether its
    target was met (`over`: no round comes any more, what is not done ran out of rounds)."""
    outcomes = cell_outcomes(adaptive, matrix, order, runs, failed)
    if over:
        outcomes = [reps.Outcome(o.name, reps.finished(o.decision)) for o in outcomes]
    rounds = max(s.repetition for s in order)
    return {
        "repetitions": reps.status(adaptive, outcomes, "cells") | {"rounds": rounds},
        "conditions": cond.set_condition(
            status.get("conditions"),
            *reps.target_condition(outcomes, "cell"),
            generation=int(status.get("observedGeneration") or 0),
        ),
    }


def more_rounds(
    policy: Policy,
    order: Sequence[mx.Slot],
    observed: sched.Observed,
    outcomes: Sequence[reps.Outcome],
    schedule: sched.Policy,
) -> bool:
    """Adaptive repetitions add a round when every slot so far ended, a cell is not done and
    maxRepetitions allows one more (never after a failure that stops the experiment)."""
    rounds = max((s.repetition for s in order), default=0)
    if not policy.adaptive or rounds >= policy.max or _stopping(order, observed, schedule):
        return False
    if any(sched.slot_phase(s, observed) not in sched.DONE for s in order):
        return False
    return not all(o.decision.done for o in outcomes)


Planned = tuple[mx.Matrix, list[mx.Slot], int | None]


def _rounds(
    body: Mapping[str, Any],
    spec: BenchmarkExperimentSpec,
    planned: Planned,
    *,
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
    observed: sched.Observed,
    policy: sched.Policy,
) -> tuple[mx.Matrix, list[mx.Slot], int | None, sched.Observed, list[cond.Event]]:
    """Adaptive repetitions before the schedule decides: add a round when one is due (with
    its Event), and while one may still come keep every cluster (`reserved`)."""
    adaptive = reps.policy_of(spec)
    matrix, order, seed = planned
    if not adaptive.adaptive:
        return matrix, order, seed, observed, []
    outcomes = cell_outcomes(adaptive, matrix, order, runs, failed)
    rounds = max(s.repetition for s in order)
    if more_rounds(adaptive, order, observed, outcomes, policy):
        matrix, order, seed = plan(body, spec, rounds + 1)
        going = ", ".join(o.name for o in outcomes if not o.decision.done)
        event = (cond.NORMAL, cond.EVENT_ROUND_ADDED, f"round {rounds + 1}: {going} not done")
        return matrix, order, seed, observed, [event]
    if (
        rounds < adaptive.max
        and not _stopping(order, observed, policy)
        and not all(o.decision.done for o in outcomes)
    ):
        observed = replace(observed, reserved=frozenset(range(len(matrix.groups))))
    return matrix, order, seed, observed, []


def _children(
    kube: KubeApi, namespace: str, name: str
) -> tuple[dict[int, dict[str, Any]], dict[mx.Slot, dict[str, Any]]]:
    """The experiment's MongoClusters by group and BenchmarkRuns by slot (their labels)."""
    selector = f"{objects.EXPERIMENT_LABEL}={name}"
    clusters = {
        int(c["metadata"]["labels"][objects.GROUP_LABEL]): c
        for c in kube.list("MongoCluster", namespace, selector)
    }
    runs = {
        mx.Slot(
            int(r["metadata"]["labels"][objects.CELL_LABEL]),
            int(r["metadata"]["labels"][objects.REPETITION_LABEL]),
        ): r
        for r in kube.list("BenchmarkRun", namespace, selector)
    }
    return clusters, runs


def _observed(
    clusters: Mapping[int, Mapping[str, Any]],
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
    kept: set[int],
    now: datetime,
) -> sched.Observed:
    return sched.Observed(
        clusters={
            g: sched.ObservedCluster(
                (c.get("status") or {}).get("phase"),
                bool(c["metadata"].get("deletionTimestamp")),
                age_seconds(c["metadata"], now),
            )
            for g, c in clusters.items()
        },
        runs={
            s: (r.get("status") or {}).get("phase") or cond.PHASE_PENDING for s, r in runs.items()
        },
        failed=frozenset(failed),
        kept=frozenset(kept),
    )


def _finished(
    status: Mapping[str, Any],
    matrix: mx.Matrix,
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
    *,
    phase: str,
    generation: int,
    now: datetime,
    paired: bool = False,
) -> dict[str, Any]:
    """The status fields of an experiment that ended: its completion, the comparison against
    the baseline cell and the Succeeded condition; `paired` (order Duet): the duet's paired
    comparison too, and the DuetValid condition."""
    comparison = _comparison(matrix, runs, failed)
    conditions = cond.set_condition(
        status.get("conditions"),
        cond.SUCCEEDED,
        cond.TRUE if phase == cond.RUN_SUCCEEDED else cond.FALSE,
        phase,
        status["progress"]["summary"] + " cells done",
        generation=generation,
    )
    if paired:
        result = duet.compare(
            runs.values(), matrix.label(0), matrix.label(1), confidence=_confidence(comparison)
        )
        comparison["comparison"]["duet"] = result.to_dict()
        conditions = cond.set_condition(
            conditions, cond.DUET_VALID, *duet.validity_condition(result), generation=generation
        )
    return {"completionTime": rfc3339(now), **comparison, "conditions": conditions}


def _confidence(comparison: Mapping[str, Any]) -> float:
    return float(comparison["comparison"].get("confidence") or stats.DEFAULT_CONFIDENCE)


def _record_deployments(
    clusters: Mapping[int, Mapping[str, Any]], deployments: dict[int, list[dict[str, Any]]]
) -> None:
    """Each Ready cluster's deploy timings once per created cluster (its uid)."""
    for g, c in clusters.items():
        cstatus = c.get("status") or {}
        timings = cstatus.get("timings") or {}
        if cstatus.get("phase") != cond.PHASE_READY or "readySeconds" not in timings:
            continue
        uid = c["metadata"]["uid"]
        known = deployments.setdefault(g, [])
        if not any(d.get("uid") == uid for d in known):
            known.append(
                {
                    "uid": uid,
                    "cluster": c["metadata"]["name"],
                    "created": c["metadata"].get("creationTimestamp"),
                    **_pods(c),
                    **{
                        k: timings[k]
                        for k in ("provisionedSeconds", "configuredSeconds", "readySeconds")
                        if k in timings
                    },
                }
            )


def _pods(cluster: Mapping[str, Any]) -> dict[str, int]:
    """How many pods the deployment made (mongod members, config servers, mongos): the x of
    the deploy-time-against-nodes table. Empty when the spec does not parse."""
    try:
        layout = cluster_layout(
            cluster["metadata"]["name"],
            cluster["metadata"].get("namespace", ""),
            MongoClusterSpec.parse(cluster.get("spec") or {}),
        )
    except SpecError:
        return {}
    return {"pods": sum(rs.members for rs in layout.replica_sets) + layout.mongos_replicas}


def _act(  # noqa: PLR0917 - one reconcile's working set
    kube: KubeApi,
    action: sched.Action,
    meta: Mapping[str, Any],
    spec: BenchmarkExperimentSpec,
    matrix: mx.Matrix,
    failed: dict[mx.Slot, str],
    kept: set[int],
    outcome: Outcome,
) -> None:
    namespace, name = meta["namespace"], meta["name"]
    if isinstance(action, sched.CreateCluster):
        obj = objects.cluster(meta, spec, matrix, action.group)
        kube.create(obj)
        outcome.events.append(
            (
                cond.NORMAL,
                cond.EVENT_CELL_CLUSTER_CREATED,
                f"MongoCluster {obj['metadata']['name']}",
            )
        )
    elif isinstance(action, sched.DeleteCluster):
        cluster = objects.cluster_name(name, action.group)
        if kube.delete("MongoCluster", namespace, cluster):
            outcome.events.append(
                (
                    cond.NORMAL,
                    cond.EVENT_CELL_CLUSTER_DELETED,
                    f"MongoCluster {cluster}: {action.why}",
                )
            )
    elif isinstance(action, sched.KeepCluster):
        kept.add(action.group)
        cluster = objects.cluster_name(name, action.group)
        outcome.events.append(
            (cond.NORMAL, cond.EVENT_CELL_CLUSTER_KEPT, f"MongoCluster {cluster}")
        )
    elif isinstance(action, sched.CreateRun):
        obj = objects.run(meta, spec, matrix, action.slot)
        try:
            kube.create(obj)
        except ApiError as exc:
            if exc.status != 409:  # created by an earlier reconcile whose list missed it
                raise
        outcome.events.append(
            (
                cond.NORMAL,
                cond.EVENT_CELL_RUN_CREATED,
                f"BenchmarkRun {obj['metadata']['name']} ({matrix.label(action.slot.cell)}, "
                f"repetition {action.slot.repetition})",
            )
        )
    elif isinstance(action, sched.FailSlots):
        for s in action.slots:
            failed[s] = action.message
        cells = sorted({matrix.label(s.cell) for s in action.slots})
        outcome.events.append(
            (cond.WARNING, cond.EVENT_CELL_FAILED, f"{'; '.join(cells)}: {action.message}")
        )


def _slot_phase(
    slot: mx.Slot, runs: Mapping[mx.Slot, Mapping[str, Any]], failed: Mapping[mx.Slot, str]
) -> str:
    if slot in failed:
        return cond.RUN_FAILED
    if slot in runs:
        return str((runs[slot].get("status") or {}).get("phase") or cond.PHASE_PENDING)
    return cond.PHASE_PENDING


def cell_phase(phases: Sequence[str]) -> str:
    """A cell's phase from its slots': Failed when one failed, Succeeded when all did, Pending
    when none started (a run Queued behind another on its target has not), else Running."""
    if any(p == cond.RUN_FAILED for p in phases):
        return cond.RUN_FAILED
    if all(p == cond.RUN_SUCCEEDED for p in phases):
        return cond.RUN_SUCCEEDED
    if all(p in (cond.PHASE_PENDING, cond.RUN_QUEUED) for p in phases):
        return cond.PHASE_PENDING
    return cond.RUN_RUNNING


def _cells_status(  # noqa: PLR0917 - one reconcile's working set
    body: Mapping[str, Any],
    matrix: mx.Matrix,
    order: list[mx.Slot],
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
    deployments: Mapping[int, list[dict[str, Any]]],
    decision: sched.Decision,
    now: datetime,
) -> dict[str, Any]:
    name = body["metadata"]["name"]
    repetitions = len(order) // max(len(matrix.cells), 1)  # the rounds planned so far
    cells = []
    done_cells = 0
    for cell in matrix.cells:
        mine = [s for s in order if s.cell == cell.index]
        phases = [_slot_phase(s, runs, failed) for s in mine]
        phase = cell_phase(phases)
        if all(p in TERMINAL for p in phases):
            done_cells += 1
        cell_runs = [runs[s] for s in mine if s in runs]
        record: dict[str, Any] = {
            "name": cell.name,
            "label": matrix.label(cell.index),
            "values": dict(cell.values),
            "baseline": cell.index == matrix.baseline,
            "cluster": objects.cluster_name(name, cell.group),
            "runs": [
                _slot_status(name, s, p, runs, failed) for s, p in zip(mine, phases, strict=True)
            ],
            "phase": phase,
            "deployments": [
                {k: v for k, v in d.items() if k != "uid"} for d in deployments.get(cell.group, ())
            ],
        }
        if cell_runs:
            record["summary"] = summary.workload_summary(cell_runs)
        cells.append(record)
    current = ""
    if decision.current is not None:
        current = (
            f"{matrix.label(decision.current.cell)} rep {decision.current.repetition}/{repetitions}"
        )
    return {
        "cells": cells,
        "progress": {
            "done": done_cells,
            "total": len(matrix.cells),
            "summary": f"{done_cells}/{len(matrix.cells)}",
            "current": current,
        },
    }


def _slot_status(
    experiment: str,
    slot: mx.Slot,
    phase: str,
    runs: Mapping[mx.Slot, Mapping[str, Any]],
    failed: Mapping[mx.Slot, str],
) -> dict[str, Any]:
    """A cell's run in status.cells: its name, phase, start, and why it failed."""
    return {
        "name": objects.run_name(experiment, slot),
        "repetition": slot.repetition,
        "phase": phase,
        **(
            {"startTime": runs[slot]["status"]["startTime"]}
            if slot in runs and (runs[slot].get("status") or {}).get("startTime")
            else {}
        ),
        **({"message": failed[slot]} if slot in failed else {}),
    }


def _comparison(
    matrix: mx.Matrix, runs: Mapping[mx.Slot, Mapping[str, Any]], failed: Mapping[mx.Slot, str]
) -> dict[str, Any]:
    """Every cell against the baseline, by the code of `mongobench compare` (pure Python: no
    statistics package stays resident in the operator, see mongobench_results.stats)."""
    inputs = [
        compare.RunInput(r["metadata"]["name"], r)
        for s, r in sorted(runs.items(), key=lambda i: (i[0].cell, i[0].repetition))
        if (r.get("status") or {}).get("phase") == cond.RUN_SUCCEEDED
    ]
    base = matrix.label(matrix.baseline)
    try:
        if not any(i.run["spec"]["labels"][objects.CELL_SPEC_LABEL] == base for i in inputs):
            raise compare.ComparisonError(f"the baseline cell {base} has no succeeded run")
        # The run fields the dimensions set differ between cells by design.
        varied = [d.field for d in matrix.dimensions if d.target == "run"]
        result = compare.compare(
            inputs, baseline=base, group_by=objects.CELL_SPEC_LABEL, varied=varied
        )
    except compare.ComparisonError as exc:
        return {"comparison": {"baseline": base, "error": str(exc)}}
    out = result.to_dict()
    return {
        "comparison": {
            "baseline": out["baseline"],
            "groupBy": objects.CELL_SPEC_LABEL,
            "alpha": out["alpha"],
            "confidence": out["confidence"],
            "test": out["test"],
            # The verdicts are from p-values adjusted across the table (Holm by default).
            "adjust": out["adjust"],
            "family": out["family"],
            "intervalMethod": out["intervalMethod"],
            "incomparable": out["incomparable"],
            "notes": out["notes"],
            # The answer in a sentence per cell, as `mongobench compare` prints it first.
            "headlines": compare.headlines(result),
            "rows": summary.compact_rows(out["rows"]),
        }
    }
