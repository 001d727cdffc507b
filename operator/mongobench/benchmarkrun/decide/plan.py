"""Pure: a BenchmarkRun's deterministic list of steps.

    prepare                      drop the old data, create (and shard) the collection
    load [#r]                    insert recordCount records (skipped with load.skip);
                                 load.repetitions times, each after the first from empty
    warmup <w>                   unrecorded run before the first repetition of each workload
    run <w> #r                   the measured runs, `repetitions` times each (with repeatUntil:
                                 up to its maxRepetitions, those a workload no longer needs
                                 are skipped: benchmarkrun.decide.repetitions)
    probe <w> #1                 with spec.knee instead of the runs: the first probe of the
                                 knee search; benchmarkrun.decide.knee adds the next probes and the
                                 runs at the knee as the probes are measured
    reset + load                 reload the data where dataReset asks (the reset is the load
                                 step's `reset` flag: drop and recreate before inserting)
    cleanup                      drop the collection when cleanup.data asks; delete Jobs

Ordering rule for workloads that insert (d, e and custom ones with insertproportion > 0), as
dataReset.insertingWorkloads says: RunLast (default, the YCSB recommendation) moves them after
the others so the read/update workloads see the loaded data set; Reload keeps the written order
and reloads the data before each of them (and before the workload after one); AsWritten keeps
the order and reloads nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Workload

StepKind = Literal["prepare", "load", "warmup", "probe", "run", "cleanup"]
INSERTING_STANDARD = frozenset({"d", "e"})
MAX_JOB_NAME = 52  # a Job's pods get `<job>-<index>-<5 chars>` names and a job-name label


@dataclass(frozen=True)
class Step:
    index: int  # 0-based position in the plan
    kind: StepKind
    workload: str | None = None
    repetition: int | None = None  # 1-based
    reset: bool = False  # load: drop and recreate the collection first
    attempt: int = 1  # run: 2, 3, ... re-run an invalid trial (reruns.py)
    # probe, and run at the knee: the offered load (ops/s over all clients;
    # benchmarkrun.decide.knee)
    target: int | None = None

    @property
    def runs_job(self) -> bool:
        return self.kind in ("load", "warmup", "probe", "run")

    @property
    def label(self) -> str:
        """How progress and events name the step, e.g. 'run b #2'."""
        if self.kind == "run":
            again = f" (attempt {self.attempt})" if self.attempt > 1 else ""
            return f"run {self.workload} #{self.repetition}{again}"
        if self.kind == "probe":
            return f"probe {self.workload} #{self.repetition} ({self.target} ops/s)"
        if self.kind == "warmup":
            return f"warmup {self.workload}"
        if self.kind == "load" and self.repetition:
            return f"load #{self.repetition}"
        if self.kind == "load" and self.reset:
            return "reload"
        return self.kind

    def job_name(self, run: str) -> str:
        suffix = f"{self.index:02d}-{self.kind}"
        if self.workload:
            suffix += f"-{self.workload}"
        if self.repetition:
            suffix += f"-r{self.repetition}"
        if self.attempt > 1:
            suffix += f"-a{self.attempt}"
        name = f"{run}-{suffix}"
        if len(name) <= MAX_JOB_NAME:
            return name
        # Long run names: keep them recognisable and unique.
        digest = hashlib.sha256(run.encode()).hexdigest()[:6]
        keep = MAX_JOB_NAME - len(suffix) - len(digest) - 2
        return f"{run[:keep].rstrip('-')}-{digest}-{suffix}"


def inserts(workload: Workload) -> bool:
    if workload.standard in INSERTING_STANDARD and "insertproportion" not in workload.properties:
        return True
    try:
        return float(workload.properties.get("insertproportion", "0")) > 0
    except ValueError:
        return False


def ordered_workloads(spec: BenchmarkRunSpec) -> list[Workload]:
    workloads = list(spec.workloads)
    if spec.data_reset.inserting_workloads == "RunLast":
        return [w for w in workloads if not inserts(w)] + [w for w in workloads if inserts(w)]
    return workloads


def measured_loads(
    spec: BenchmarkRunSpec,
) -> list[tuple[StepKind, str | None, int | None, bool]]:
    """The load steps before the first workload: one, or load.repetitions numbered ones, each
    after the first reloading from empty (its `reset` drops and recreates the collection)."""
    n = spec.load.repetitions
    if n <= 1:
        return [("load", None, None, False)]
    return [("load", None, rep, rep > 1) for rep in range(1, n + 1)]


def make_plan(spec: BenchmarkRunSpec) -> list[Step]:
    steps: list[tuple[StepKind, str | None, int | None, bool]] = [("prepare", None, None, False)]
    loaded = not spec.load.skip
    if loaded:
        steps.extend(measured_loads(spec))
    dirty = False  # the data set differs from what the load produced
    policy = spec.data_reset
    for n, workload in enumerate(ordered_workloads(spec)):
        reload_before = loaded and (
            (policy.between == "Workloads" and n > 0)
            or (policy.between == "Repetitions" and n > 0)
            or (policy.inserting_workloads == "Reload" and dirty)
            or (policy.inserting_workloads == "Reload" and inserts(workload) and n > 0)
        )
        if reload_before:
            steps.append(("load", None, None, True))
            dirty = False
        if spec.warmup is not None:
            steps.append(("warmup", workload.name, None, False))
            dirty = dirty or inserts(workload)
        if spec.knee is not None:  # the search adds the probes and the knee's runs (knee.py)
            steps.append(("probe", workload.name, 1, False))
            continue
        for rep in range(1, spec.max_repetitions + 1):
            if rep > 1 and loaded and policy.between == "Repetitions":
                steps.append(("load", None, None, True))
                dirty = False
            steps.append(("run", workload.name, rep, False))
            dirty = dirty or inserts(workload)
    steps.append(("cleanup", None, None, False))
    start = spec.knee.start_ops_per_second if spec.knee is not None else None
    return [
        Step(i, kind, wl, rep, reset, target=start if kind == "probe" else None)
        for i, (kind, wl, rep, reset) in enumerate(steps)
    ]
