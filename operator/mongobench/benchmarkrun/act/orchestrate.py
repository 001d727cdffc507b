"""The BenchmarkRun state machine, level-triggered: `advance()` reads the run and the world
(`_Advance.observe`, through the KubeApi it is given), asks the pure `decide.decide` what
to do next, and does it (`_Advance.act`: create a Job, collect results, fail the step or the run
as the action says, finish, clean up) and writes the status.
Called on create/resume, on every event of the run's Jobs, and by a timer until the run ends;
any of them may run again after a restart without duplicating Jobs (names
are deterministic and applied server-side) or losing results (they live in ConfigMaps).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Scenario
from mongobench.api.kinds import BENCHMARKRUN as KIND
from mongobench.benchmarkrun.act import cost
from mongobench.benchmarkrun.build import cpu_monitor, jobs, results
from mongobench.benchmarkrun.decide import (
    knee,
    profiling,
    queue,
    repetitions,
    requeue,
    validity,
)
from mongobench.benchmarkrun.decide.action import (
    CPU_SCRAPE_WAIT_SECONDS,
    TERMINAL,
    Action,
    Observed,
    cleanup_targets,
    collection_problem,
    cpu_conditions,
    decide,
    progress,
    reads_job,
    scenarios_to_check,
)
from mongobench.benchmarkrun.decide.plan import Step, make_plan
from mongobench.benchmarkrun.decide.reruns import with_reruns
from mongobench.benchmarkrun.telemetry.cpu import CpuUnavailable
from mongobench.clock import Clock, age_seconds, parse_rfc3339, rfc3339, seconds_since
from mongobench.config import OperatorConfig
from mongobench.controller import Result
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import Event, get_condition, set_condition
from mongobench.mongo import profiler
from mongobench.mongo.errors import MongoAdminError, TransientMongoError
from mongobench.mongo.model import SlowOperation
from mongobench_results import summary
from mongobench_results.configmaps import assemble
from mongobench_results.merge import merge_documents

__all__ = ["TERMINAL", "Outcome", "advance", "drop_data", "result_configmaps", "snapshot"]

log = logging.getLogger("mongobench.benchmarkrun")


@dataclass
class Outcome:
    """What one advance() did, for the handler to turn into Events."""

    events: list[Event] = field(default_factory=list)
    run: Mapping[str, Any] = field(default_factory=dict)  # the BenchmarkRun, for Events
    phase: str | None = None
    # Its status as this advance left it (what it read, with what it wrote over it).
    status: Mapping[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> Result:
        """When the run looks again, as this advance left it (requeue.ticks): EVENTS_ONLY once
        it ended (its handler stops its ticks and drops what was woken meanwhile)."""
        return requeue.ticks({**self.run, "status": self.status})

    def info(self, reason: str, message: str) -> None:
        self.events.append((cond.NORMAL, reason, message))

    def warn(self, reason: str, message: str) -> None:
        self.events.append((cond.WARNING, reason, message))


@dataclass(frozen=True)
class Target:
    """Where the clients connect, and the cluster (when managed) as observed now."""

    uri_secret: str
    uri_key: str
    cluster: Mapping[str, Any] | None


class DataOps:
    """The MongoDB side of a run (drop, create, shard the collection); see data.py."""

    def prepare(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        raise NotImplementedError

    def drop(self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None) -> str:
        raise NotImplementedError

    def distribution(
        self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """Documents and chunks per shard of the benchmark collection; None if not sharded."""
        return None

    def set_profiler(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        level: int,
        slow_ms: int | Mapping[str, int] | None,
    ) -> dict[str, int]:
        """The profiler at `level` on every data-bearing mongod; each set's slowms before."""
        raise NotImplementedError

    def slow_operations(
        self,
        spec: BenchmarkRunSpec,
        cluster: Mapping[str, Any],
        since: datetime,
        until: datetime | None,
        top: int,
    ) -> tuple[SlowOperation, ...]:
        """The `top` slowest operations profiled in the window, slowest first."""
        raise NotImplementedError

    def disk_use(
        self, spec: BenchmarkRunSpec, cluster: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """The collection's disk use (status.steps[].diskUse); None for an external database."""
        return None


# (run, step entry, start, end) -> the step's resource profile {"cpu": ..., "resources": ...}
# (benchmarkrun.telemetry.cpu_status.cpu_for_step).
CpuQuery = Callable[[Mapping[str, Any], Mapping[str, Any], str, str], dict[str, Any]]
# A fine CPU scrape job's name -> whether Prometheus has its series yet
# (benchmarkrun.telemetry.cpu_status.fine_cpu_scraped).
ScrapeProbe = Callable[[str], bool]


def result_configmaps(
    kube: KubeApi, namespace: str, prefixes: Sequence[str], clients: int
) -> list[dict[str, Any]]:
    """The result ConfigMaps of these steps: one LIST by their result-set label. Every run's
    results in the namespace would be megabytes to decode per step with 200 runs. When a client
    is missing, read them all by the older label too: a runner image from before the result-set
    label (an operator upgraded under a running Job) must not lose its result."""
    found = kube.list("ConfigMap", namespace, results.set_selector(prefixes))
    if results.complete(found, prefixes, clients):
        return found
    return kube.list("ConfigMap", namespace, results.RESULT_OF)


def advance(
    kube: KubeApi,
    namespace: str,
    name: str,
    config: OperatorConfig,
    data: DataOps,
    *,
    cpu: CpuQuery | None = None,
    scraped: ScrapeProbe | None = None,
    lock: AbstractContextManager[Any] | None = None,  # the run's (mongobench.state)
    target_lock: Callable[[str], AbstractContextManager[Any]] | None = None,
    clock: Clock,
) -> Outcome | None:
    """One step of the run's state machine, as of `clock()` read once; None when it is gone,
    going or over. The Events it decided are posted on the run, and returned with its phase.
    `target_lock`: a lock by target (queue.target_of, joined), held by a pass of a run not
    started yet, so two such runs on one target never both read the queue free and start."""
    with lock or nullcontext():
        run = kube.get(KIND, namespace, name)
        if run is None or run["metadata"].get("deletionTimestamp"):
            return None
        status = dict(run.get("status") or {})
        if status.get("phase") in TERMINAL:
            return None
        guard: AbstractContextManager[Any] = nullcontext()
        if target_lock is not None and "startTime" not in status:
            guard = target_lock("/".join(queue.target_of(run.get("spec") or {})))
        with guard:
            outcome = _Advance(
                kube, run, status, config, data, cpu=cpu, scraped=scraped, clock=clock
            ).go()
    for event in outcome.events:  # outside the run's lock: a slow apiserver holds no pass
        kube.event(run, *event)
    return outcome


class _Advance:
    def __init__(
        self,
        kube: KubeApi,
        run: Mapping[str, Any],
        status: dict[str, Any],
        config: OperatorConfig,
        data: DataOps,
        *,
        cpu: CpuQuery | None,
        scraped: ScrapeProbe | None = None,
        clock: Clock,
    ) -> None:
        self.kube = kube
        # Decisions as of the pass's start; stamps (a step's start or end) read `clock` then.
        self.clock = clock
        self.now = clock()
        self.run = run
        self.meta = run["metadata"]
        self.ns = self.meta["namespace"]
        self.name = self.meta["name"]
        self.generation = int(self.meta.get("generation") or 0)
        self.status = status
        self.new: dict[str, Any] = {}
        self.config = config
        self.data = data
        self.cpu = cpu
        self.scraped = scraped
        self.outcome = Outcome(run=run)
        self.spec = BenchmarkRunSpec.parse(dict(run["spec"]))
        planned = knee.with_knee(self.spec, make_plan(self.spec), status)
        self.plan = with_reruns(self.spec, planned, status)
        self.policy = repetitions.policy_of(self.spec)

    # -- status helpers ------------------------------------------------------------------------

    def condition(self, type_: str, value: Any, reason: str, message: str) -> None:
        current = self.new.get("conditions", self.status.get("conditions"))
        self.new["conditions"] = set_condition(
            current,
            type_,
            value,
            reason,
            message,
            generation=self.generation,
            now=rfc3339(self.now),
        )

    def steps(self) -> list[dict[str, Any]]:
        if "steps" not in self.new:
            existing = {s["index"]: s for s in self.status.get("steps") or []}
            self.new["steps"] = [
                dict(
                    existing[step.index]
                    # A re-run inserted into the plan moves the Pending steps after it down.
                    if existing.get(step.index, {}).get("label") == step.label
                    else {
                        "index": step.index,
                        "kind": step.kind,
                        "label": step.label,
                        "workload": step.workload,
                        "repetition": step.repetition,
                        "phase": cond.STEP_PENDING,
                        **({"attempt": step.attempt} if step.attempt > 1 else {}),
                        **({"offeredOpsPerSecond": step.target} if step.target is not None else {}),
                    }
                )
                for step in self.plan
            ]
        return list(self.new["steps"])

    def publish(self) -> None:
        steps = self.new.get("steps", self.status.get("steps") or [])
        # The plan's length is known from the spec, also before the run starts.
        self.new["progress"] = progress(len(self.plan), steps)
        self.new["observedGeneration"] = self.generation
        changed = {k: v for k, v in self.new.items() if self.status.get(k) != v}
        if changed:
            self.kube.patch_status(KIND, self.ns, self.name, changed)

    # -- observe, decide, act -----------------------------------------------------------------

    def observe(self) -> Observed:
        """Read what the decision needs (decide says what): the referenced MongoCluster,
        the current step's Job, the scenario ConfigMaps, and before the start the runs of the
        namespace (its place in the target's queue)."""
        cluster = None
        if self.spec.cluster_ref is not None:
            cluster = self.kube.get("MongoCluster", self.ns, self.spec.cluster_ref.name)
        return replace(self.observe_with(cluster, read_job=True), queue=self.queue_place(cluster))

    def queue_place(self, cluster: Mapping[str, Any] | None) -> queue.Place | None:
        """Where the run waits for its target: from the runs the API holds (one LIST), so a
        restarted operator or another replica finds the same queue; none once started, and
        not read while its MongoCluster is absent or not Ready (it waits for that first)."""
        if "startTime" in self.status:
            return None
        ready = ((cluster or {}).get("status") or {}).get("phase") == cond.PHASE_READY
        if self.spec.cluster_ref is not None and not ready:
            return None
        runs = self.kube.list(KIND, self.ns)
        return queue.place_in_queue(queue.claim(self.run), (queue.claim(r) for r in runs))

    def observe_with(self, cluster: Mapping[str, Any] | None, *, read_job: bool) -> Observed:
        """The pass's view with the run as it stands now (its status and what this pass changed
        in it) and `cluster` as read; the current step's Job read when `read_job`."""
        seen = Observed(self.spec, self.plan, {**self.status, **self.new}, cluster)
        job = None
        if read_job and reads_job(seen):
            assert seen.step is not None
            job = self.kube.get("Job", self.ns, seen.step.job_name(self.name))
        since_start = seconds_since(seen.status.get("startTime"), self.now) or 0.0
        return replace(
            seen,
            job=job,
            scenario_problem=self.scenario_problem(scenarios_to_check(seen, job is not None)),
            age_seconds=age_seconds(self.meta, self.now),
            cpu_scrape_missing=job is None and self.cpu_scrape_missing(seen, since_start),
            since_start_seconds=since_start,
        )

    def cpu_scrape_missing(self, seen: Observed, since_start: float) -> bool:
        """Before a step's Job of a started run that asks a finer CPU resolution, within the
        wait (decide.CPU_SCRAPE_WAIT_SECONDS): whether Prometheus lacks its series yet. Asked
        only then, and not where no PodMonitor API exists (start_cpu_monitor made none)."""
        step = seen.step
        if (
            self.scraped is None
            or self.spec.monitoring.cpu_resolution_seconds is None
            or not seen.started
            or step is None
            or not step.runs_job
            or seen.entry(step.index).get("phase", cond.STEP_PENDING) != cond.STEP_PENDING
            or since_start >= CPU_SCRAPE_WAIT_SECONDS
            or not self.kube.served(*cpu_monitor.API)
        ):
            return False
        return not self.scraped(cpu_monitor.job_label(self.ns, self.name))

    def scenario_problem(self, scenarios: Sequence[tuple[str, Scenario]]) -> tuple[str, str] | None:
        """(reason, message) of the first scenario whose ConfigMap or key is missing."""
        seen: dict[str, Mapping[str, Any] | None] = {}
        for user, scenario in scenarios:
            ref = scenario.config_map_ref
            if ref.name not in seen:
                seen[ref.name] = self.kube.get("ConfigMap", self.ns, ref.name)
            configmap = seen[ref.name]
            if configmap is None:
                return (
                    cond.SCENARIO_CONFIGMAP_NOT_FOUND,
                    f"scenario of {user}: ConfigMap {self.ns}/{ref.name} does not exist",
                )
            keys = sorted({**(configmap.get("data") or {}), **(configmap.get("binaryData") or {})})
            if ref.key not in keys:
                return (
                    cond.SCENARIO_KEY_NOT_FOUND,
                    f"scenario of {user}: ConfigMap {self.ns}/{ref.name} has no key {ref.key} "
                    f"(it has: {', '.join(keys) or 'none'})",
                )
        return None

    def skip_unneeded(self) -> None:
        """Adaptive repetitions: skip what a done workload no longer needs (every pass, so a
        restart between collecting a step and skipping loses nothing)."""
        if not self.policy.adaptive or not self.status.get("steps"):
            return
        skips = repetitions.skipped(self.policy, self.plan, self.steps())
        for step, why in skips:
            self.mark(step, phase=cond.STEP_SKIPPED, message=why)
        for why in dict.fromkeys(why for _, why in skips):
            names = sorted({s.workload or "" for s, w in skips if w == why and s.kind == "run"})
            self.outcome.info(cond.EVENT_REPETITIONS_SKIPPED, f"{', '.join(names)}: {why}")

    def report_repetitions(self) -> None:
        """status.repetitions and TargetMet: how many valid trials each workload needed."""
        if not self.policy.adaptive:
            return
        steps = self.new.get("steps", self.status.get("steps") or [])
        outcomes = repetitions.run_outcomes(self.policy, self.plan, steps)
        if self.new.get("phase") in TERMINAL:  # a failed run repeats nothing more
            outcomes = [
                repetitions.Outcome(o.name, repetitions.finished(o.decision)) for o in outcomes
            ]
        self.new["repetitions"] = repetitions.status(self.policy, outcomes, "workloads")
        self.condition(*repetitions.target_condition(outcomes, "workload"))

    def report_knee_and_cost(self) -> None:
        """status.knee (spec.knee) and status.cost (spec.cost) from the steps as recorded."""
        steps = self.new.get("steps", self.status.get("steps") or [])
        found = knee.status(self.spec, steps)
        if found is not None:
            self.new["knee"] = found
        if self.spec.cost is not None and (costs := cost.status(steps)) is not None:
            self.new["cost"] = costs

    def go(self) -> Outcome:
        self.skip_unneeded()
        observed = self.observe()
        action = decide(observed)
        if action.cluster_condition is not None:
            self.condition(*action.cluster_condition)
        if action.scenario_condition is not None:
            self.condition(*action.scenario_condition)
        try:
            self.act(action, observed)
        except TransientMongoError as exc:  # not reachable yet, election: the timer retries
            self.condition(cond.PROGRESSING, cond.FALSE, cond.MONGODB_UNAVAILABLE, str(exc))
        except MongoAdminError as exc:
            assert action.step is not None  # only the steps talk to MongoDB
            self.fail(action.step, f"{action.step.label}: {exc}")
        else:
            self.chain(action, observed)
        self.report_repetitions()
        self.report_knee_and_cost()
        self.publish()
        self.outcome.phase = self.new.get("phase", self.status.get("phase"))
        self.outcome.status = {**self.status, **self.new}
        return self.outcome

    def chain(self, done: Action, observed: Observed) -> None:
        """A step that ended in this pass (prepared, or its Job's results collected) leads
        straight to the next action, in the same pass, when that action is to start the next
        step's Job or to clean up: without it the pass wrote the status, and the next one read
        the run, its cluster and the absent Job again a tick later (~4.5 API requests per object
        under make bench-scale). The next Job is not read (its name is new to this run: it
        exists only if a pass applied it and then lost its status write, and applying it again
        changes nothing: create_job takes its start from it). Anything else, a plan that changes
        with the result (a re-run, the knee's next probe, repetitions no longer needed) or a
        failure of the chained action, is left to the next pass, as before."""
        if done.kind not in ("Prepare", "Collect") or done.step is None:
            return
        if self.new.get("phase") in TERMINAL or self.policy.adaptive or self.spec.knee:
            return
        if self.steps()[done.step.index].get("phase") != cond.STEP_SUCCEEDED:
            return
        merged = {**self.status, **self.new}
        if with_reruns(self.spec, make_plan(self.spec), merged) != self.plan:
            return
        following = self.observe_with(observed.cluster, read_job=False)
        action = decide(following)
        if action.kind not in ("CreateJob", "CleanUp") or action.fails or action.start:
            return
        before, told = dict(self.new), len(self.outcome.events)
        try:
            self.act(action, following)
        except Exception as exc:  # the next pass carries it out again, and reports it then
            self.new, self.outcome.events[told:] = before, []
            log.warning(
                "%s/%s: %s after %s left to the next pass: %s",
                self.ns,
                self.name,
                action.kind,
                done.kind,
                exc,
            )

    def act(self, action: Action, observed: Observed) -> None:
        if action.phase is not None:
            self.new["phase"] = action.phase
        if action.fails is not None:
            self.fail_as(action)
            return
        if action.kind in ("WaitForCluster", "WaitForScenario", "WaitForRotation"):
            return

        if action.queue is not None:
            self.queued(action.queue)
            return
        target = self.target(observed.cluster)
        if action.start:
            self.left_queue()
            self.new["startTime"] = rfc3339(self.clock())
            self.new["clusterSnapshot"] = snapshot(self.kube, target.cluster, self.ns)
            self.new["resultsRef"] = f"{results.RESULT_OF} (ConfigMaps of run {self.name})"
            self.outcome.info(cond.EVENT_STARTED, f"{len(self.plan)} steps")
            self.start_cpu_monitor()
        self.steps()
        if action.kind == "WaitForCpuScrape":  # the next pass asks Prometheus again
            return
        step = action.step
        if action.kind == "Finish" or step is None:
            self.finish(cond.RUN_SUCCEEDED, action.message)
            return
        if action.adopt:  # the Job exists, created just before a restart
            job = observed.job or {}
            started = (job.get("metadata") or {}).get("creationTimestamp") or rfc3339(self.clock())
            self.mark(
                step, phase=cond.STEP_RUNNING, job=step.job_name(self.name), startTime=started
            )
        carry_out = {
            "Prepare": self.prepare,
            "CleanUp": self.clean_up,
            "RecoverLostJob": self.recover_lost_job,
            "CreateJob": self.create_job,
            "Collect": self.collect_step,
            "CollectFailed": self.collect_failed,
        }.get(action.kind)
        if carry_out is not None:  # WaitForJob: nothing to do until the Job ends
            carry_out(step, action, observed, target)

    def queued(self, place: queue.Place) -> None:
        """Queued, and status.queue; an Event when it enters the line or its place changes."""
        before = get_condition(self.status.get("conditions"), cond.QUEUED) or {}
        self.condition(cond.QUEUED, cond.TRUE, place.reason, place.message)
        self.new["queue"] = place.status()
        if before.get("status") != cond.TRUE or before.get("message") != place.message:
            self.outcome.info(cond.EVENT_QUEUED, place.message)

    def left_queue(self) -> None:
        """At the start of a run that waited: Queued turns False, status.queue goes."""
        if get_condition(self.status.get("conditions"), cond.QUEUED) is None:
            return
        self.condition(cond.QUEUED, cond.FALSE, cond.QUEUED_TARGET_FREE, "nothing ahead blocks it")
        self.new["queue"] = None

    def fail_as(self, action: Action) -> None:
        """A failure as decided: of the current step (then the run), or of the run alone."""
        step = action.step
        if action.fails == "step" and step is not None:
            self.fail(step, f"{step.label}: {action.message}")
            return
        if action.kind == "ClusterGone":
            for entry in self.steps():
                if entry["phase"] == cond.STEP_RUNNING:
                    self.mark(
                        self.plan[entry["index"]],
                        phase=cond.STEP_FAILED,
                        message=f"{action.message} (deleted during this step)",
                    )
            self.cleanup(success=False)
            self.finish(
                cond.RUN_FAILED, f"{action.message} (deleted during the run); results so far kept"
            )
            return
        self.finish(cond.RUN_FAILED, action.message)

    def prepare(self, step: Step, _action: Action, _observed: Observed, target: Target) -> None:
        skipped = self.spec.load.skip
        message = "load skipped" if skipped else self.data.prepare(self.spec, target.cluster)
        self.mark(
            step, phase=cond.STEP_SUCCEEDED, message=message, completionTime=rfc3339(self.clock())
        )
        self.outcome.info(cond.EVENT_PREPARED, message)

    def clean_up(self, step: Step, _action: Action, _observed: Observed, _target: Target) -> None:
        self.cleanup(success=True)
        self.mark(step, phase=cond.STEP_SUCCEEDED, completionTime=rfc3339(self.clock()))
        self.finish(cond.RUN_SUCCEEDED, "all steps succeeded")

    def recover_lost_job(
        self, step: Step, _action: Action, _observed: Observed, target: Target
    ) -> None:
        # It existed and is gone (deleted by hand?): its results may still be there.
        entry = self.steps()[step.index]
        if self.collect(step, self.run_ref(target), entry) is not None:
            job_name = step.job_name(self.name)
            self.fail(step, f"{step.label}: Job {job_name} disappeared before finishing")

    def create_job(self, step: Step, _action: Action, _observed: Observed, target: Target) -> None:
        ref = self.run_ref(target)
        if step.reset:
            self.data.prepare(self.spec, target.cluster)
        if profiling.profiles(self.spec.profiler, step, {**self.status, **self.new}):
            self.profiler_on(step, target)
        if self.grants_with(step):
            for obj in jobs.build_client_rbac(ref, [s for s in self.plan if s.runs_job]):
                self.kube.apply(obj)
        if jobs.uses_barrier(self.spec, ref, step):
            self.kube.apply(jobs.build_barrier(self.spec, step, ref))
        applied = self.kube.apply(jobs.build_job(self.spec, step, ref))
        job_name = step.job_name(self.name)
        # A Job that ran already (applied by a pass whose status write was lost) says when.
        started = (applied.get("status") or {}).get("startTime") or rfc3339(self.clock())
        self.mark(step, phase=cond.STEP_RUNNING, job=job_name, startTime=started)
        self.outcome.info(cond.EVENT_STEP_STARTED, f"{step.label}: Job {job_name}")

    def grants_with(self, step: Step) -> bool:
        """Whether the clients' ServiceAccount, Role and RoleBinding are applied with this
        step's Job: with the run's first Job (owned by the run, they name every planned step's
        start barrier), and with every Job of a run whose plan grows as it goes (re-runs of
        invalid trials, the knee's probes: barriers not planned before). Three writes per Job
        were a tenth of a run's requests under make bench-scale."""
        if self.spec.knee is not None or self.spec.validity.rerun_invalid:
            return True
        return not any(e.get("job") for e in self.steps() if e["index"] < step.index)

    def collect_step(self, step: Step, _action: Action, observed: Observed, target: Target) -> None:
        entry = self.steps()[step.index]
        problem = self.collect(step, self.run_ref(target), entry, observed.job)
        if step.kind in profiling.MEASURED:
            self.record_slow_operations(step, target)
        if problem is not None:
            self.fail(step, f"{step.label}: {problem}")
            return
        if step.kind in profiling.DISK_STEPS:
            self.record_disk_use(step, target)
        if step.kind == "load":
            self.record_distribution(step, target)

    def collect_failed(
        self, step: Step, action: Action, observed: Observed, target: Target
    ) -> None:
        entry = self.steps()[step.index]
        self.collect(step, self.run_ref(target), entry, observed.job, failed=True)
        job_name = step.job_name(self.name)
        self.fail(step, f"{step.label}: Job {job_name} failed: {action.message}")

    def target(self, cluster: Mapping[str, Any] | None) -> Target:
        ref = self.spec.cluster_ref
        if ref is None:
            secret = self.spec.uri_secret_ref
            assert secret is not None
            return Target(secret.name, secret.key, None)
        connection = ((cluster or {}).get("status") or {}).get(
            "connectionSecret"
        ) or f"{ref.name}-connection"
        return Target(connection, "uri", cluster)

    def run_ref(self, target: Target) -> jobs.RunRef:
        image = self.spec.image or (
            self.config.locust_image if self.spec.driver == "locust" else self.config.ycsb_image
        )
        return jobs.RunRef(
            self.name,
            self.ns,
            self.meta["uid"],
            target.uri_secret,
            target.uri_key,
            self.spec.cluster_ref.name if self.spec.cluster_ref else None,
            image,
            self.config.result_part_bytes,
            start_barrier=(self.meta.get("annotations") or {}).get(jobs.START_BARRIER_ANNOTATION)
            != "disabled",
            tls_ca_secret=jobs.cluster_ca_secret(target.cluster),
            duet=self.spec.duet,
        )

    def mark(self, step: Step, **fields: Any) -> None:
        steps = self.steps()
        steps[step.index] = {**steps[step.index], **fields}
        self.new["steps"] = steps

    def collect(
        self,
        step: Step,
        ref: jobs.RunRef,
        entry: Mapping[str, Any],
        job: Mapping[str, Any] | None = None,
        failed: bool = False,
    ) -> str | None:
        """Merge the clients' documents into the step; None when it succeeded, else why not.
        Whatever was reported is kept, also when the step failed."""
        prefix, clients = jobs.result_prefix(ref, step), self.spec.clients.parallelism
        found = result_configmaps(self.kube, self.ns, [prefix], clients)
        got = assemble(found, prefix, clients)
        if not got.documents:  # nothing to keep
            return collection_problem(0, got.missing, {}, failed)
        merged = merge_documents(got.documents)
        start, end = self.step_times(entry, job)
        entry = {**entry, "startTime": start}
        jobs_in_plan = sum(1 for s in self.plan if s.runs_job)
        fields: dict[str, Any] = {
            "result": summary.step_result(
                merged,
                per_client=jobs_in_plan * self.spec.clients.parallelism
                <= summary.PER_CLIENT_BUDGET,
                series=self.spec.duet is not None,
            ),
            "job": step.job_name(self.name),
            "startTime": start,
            "completionTime": end,
            "clientsReported": len(got.documents),
        }
        fields.update(self.step_cpu(step, entry, end))
        if self.spec.knee is not None and step.target is not None:
            fields.update(knee.measured_fields(fields["result"], self.spec.knee))
        if self.spec.cost is not None and step.kind in ("probe", "run"):
            fields["cost"] = self.step_cost(step, {**entry, **fields})
        problem = collection_problem(len(got.documents), got.missing, merged, failed)
        if problem is None and step.kind == "run":
            fields.update(self.judge(step, merged, fields))
        fields["phase"] = cond.STEP_FAILED if problem else cond.STEP_SUCCEEDED
        if got.missing:
            fields["missingClients"] = got.missing
        self.mark(step, **fields)
        self.trials_condition()
        if problem is None:
            self.announce_measured(step, {**entry, **fields})
        return problem

    def step_times(
        self, entry: Mapping[str, Any], job: Mapping[str, Any] | None
    ) -> tuple[str, str]:
        """A collected step's start and end: its Job's, else as recorded, else now."""
        job_status = (job or {}).get("status") or {}
        end = job_status.get("completionTime") or rfc3339(self.clock())
        # A restart between creating the Job and recording it leaves no startTime in status:
        # the Job itself knows when it started.
        start = (
            entry.get("startTime")
            or job_status.get("startTime")
            or (job or {}).get("metadata", {}).get("creationTimestamp")
            or end
        )
        return start, end

    def announce_measured(self, step: Step, entry: Mapping[str, Any]) -> None:
        """The Event of a measured step collected whole: a run's throughput, a probe's verdict."""
        if step.kind == "run":
            self.outcome.info(
                cond.EVENT_STEP_SUCCEEDED, f"{step.label}: {entry['result']['throughput']} ops/s"
            )
        if step.kind == "probe" and self.spec.knee is not None:
            message = knee.probe_message(step, entry, self.spec.knee.latency.percentile)
            self.outcome.info(cond.EVENT_STEP_SUCCEEDED, message)

    def step_cost(self, step: Step, entry: Mapping[str, Any]) -> dict[str, Any]:
        """The step's cost entry: its nodes' hours at the run's prices (benchmarkrun.act.cost)."""
        prices = cost.prices(self.kube, self.ns, self.spec)
        snapshot = self.new.get("clusterSnapshot", self.status.get("clusterSnapshot"))
        try:
            types = cost.step_instance_types(self.kube, self.ns, step.job_name(self.name), snapshot)
        except ApiError as exc:  # a run does not fail for want of its cost
            return {"error": f"nodes of {step.label}: {exc.reason}"}
        return cost.step_cost(prices, types, entry)

    def judge(
        self, step: Step, merged: Mapping[str, Any], fields: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The trial's verdict (benchmarkrun.decide.validity) for its status entry; an Event when it
        is invalid, saying whether it is run again."""
        policy = self.spec.validity
        profile = fields if fields.get("cpu") is not None else None
        verdict = validity.judge_step(
            policy,
            merged,
            profile,
            limit_cores=validity.client_limit_cores(self.spec),
            attempt=step.attempt,
        )
        if not verdict.valid:
            why = "; ".join(f"{r.reason}: {r.message}" for r in verdict.reasons)
            if step.attempt <= policy.rerun_invalid:
                then = f"re-running (attempt {step.attempt + 1} of {policy.rerun_invalid + 1})"
            elif policy.rerun_invalid:
                then = f"no re-run left ({step.attempt} attempts)"
            else:
                then = "kept (validity.rerunInvalid is 0)"
            self.outcome.warn(
                cond.EVENT_TRIAL_INVALID,
                f"{step.label}: {why}; {then}; to change: {validity.advice_text(verdict)}",
            )
        return {"validity": verdict.to_dict(), "attempt": step.attempt}

    def trials_condition(self) -> None:
        steps = self.new.get("steps", self.status.get("steps") or [])
        if not any(s.get("validity") for s in steps):
            return
        ok, message = validity.condition_message(steps)
        reason = cond.TRIALS_ALL_VALID if ok else cond.TRIALS_SOME_INVALID
        self.condition(cond.TRIALS_VALID, cond.TRUE if ok else cond.FALSE, reason, message)

    def record_distribution(self, step: Step, target: Target) -> None:
        """After a (re)load of a sharded cluster: the per-shard balance, with the step and on
        the MongoCluster. Best effort: a run does not fail for want of it."""
        try:
            dist = self.data.distribution(self.spec, target.cluster)
        except MongoAdminError as exc:
            self.outcome.warn(cond.EVENT_DISTRIBUTION_UNKNOWN, f"{step.label}: {exc}")
            return
        if dist is None:
            return
        self.mark(step, distribution=dist)
        shares = ", ".join(f"{s['shard']} {s['percent']:.1f}%" for s in dist["shards"])
        self.outcome.info(cond.EVENT_DISTRIBUTION, f"{step.label}: {dist['collection']} {shares}")
        if self.spec.cluster_ref is not None:
            try:
                self.kube.patch_status(
                    "MongoCluster", self.ns, self.spec.cluster_ref.name, {"distribution": dist}
                )
            except ApiError as exc:  # the cluster went away meanwhile: the step keeps it
                self.outcome.warn(
                    cond.EVENT_DISTRIBUTION_NOT_PUBLISHED, f"{step.label}: {exc.reason}"
                )

    # -- the profiler and disk use (benchmarkrun.decide.profiling)
    # -----------------------------------

    def profiler_state(self) -> Mapping[str, Any]:
        return {**self.status, **self.new}

    def profiler_unavailable(self, message: str) -> None:
        """A server refused the profiler: said once, and the run goes on without it."""
        assert self.spec.profiler is not None
        self.new["profiler"] = profiling.unavailable(self.spec.profiler.slow_ms, message)
        self.condition(cond.PROFILED, cond.FALSE, cond.PROFILER_UNAVAILABLE, message)
        self.outcome.warn(cond.PROFILER_UNAVAILABLE, message)

    def profiler_on(self, step: Step, target: Target) -> None:
        """Level 1 with spec.profiler.slowMs before a measured step. A refusal (permanent) is
        ProfilerUnavailable; a transient error fails the pass before the Job exists."""
        assert self.spec.profiler is not None
        slow_ms = self.spec.profiler.slow_ms
        if target.cluster is None:
            self.profiler_unavailable(
                "uriSecretRef: the operator has no administrator credentials to profile with"
            )
            return
        try:
            found = self.data.set_profiler(self.spec, target.cluster, profiler.SLOW_ONLY, slow_ms)
        except TransientMongoError:
            raise
        except MongoAdminError as exc:
            self.profiler_unavailable(f"{step.label}: {exc}")
            return
        now = rfc3339(self.clock(), precise=True)
        self.new["profiler"] = profiling.switched_on(self.profiler_state(), slow_ms, found, now)

    def profiler_off(self, cluster: Mapping[str, Any] | None) -> None:
        """Level 0 and the slowms found, where this run set level 1; best effort (Event)."""
        state = self.profiler_state()
        if not profiling.needs_reset(state) or cluster is None:
            return
        current = dict(state.get("profiler") or {})
        try:
            self.data.set_profiler(
                self.spec, cluster, profiler.OFF, current.get("restoreSlowMs") or None
            )
        except MongoAdminError as exc:
            self.outcome.warn(cond.EVENT_PROFILER_NOT_RESET, str(exc))
            return
        self.new["profiler"] = {**current, "state": profiling.OFF}

    def record_slow_operations(self, step: Step, target: Target) -> None:
        """After a measured step: its slowest operations from system.profile, then level 0."""
        if self.spec.profiler is None or not profiling.needs_reset(self.profiler_state()):
            return
        assert target.cluster is not None  # profiler_on refused external targets
        entry = self.steps()[step.index]
        top = self.spec.profiler.top
        try:
            state = self.profiler_state().get("profiler") or {}
            since = parse_rfc3339(str(profiling.window_start(state, entry.get("startTime"))))
            # No end: level 1 lasts this step alone (set before its Job, 0 right after this
            # read), and the Job's completionTime, in whole seconds, would cut its last second.
            ops = self.data.slow_operations(self.spec, target.cluster, since, None, top)
        except (ValueError, TransientMongoError) as exc:  # unreadable window, or unreachable
            self.outcome.warn(cond.EVENT_SLOW_OPERATIONS_UNKNOWN, f"{step.label}: {exc}")
            ops = None
        except MongoAdminError as exc:
            self.profiler_off(target.cluster)
            self.profiler_unavailable(f"{step.label}: {exc}")
            return
        self.profiler_off(target.cluster)
        if ops is None:
            return
        kept = profiling.kept_per_step(top, self.plan)
        self.mark(
            step,
            slowOperations=profiling.slow_operations_status(ops, self.spec.profiler.slow_ms, kept),
        )
        self.condition(
            cond.PROFILED,
            cond.TRUE,
            cond.PROFILER_CAPTURED,
            f"{step.label}: {len(ops)} operation(s) over {self.spec.profiler.slow_ms} ms",
        )

    def record_disk_use(self, step: Step, target: Target) -> None:
        """After a load or measured step: the collection's disk use. Best effort (Event)."""
        try:
            use = self.data.disk_use(self.spec, target.cluster)
        except MongoAdminError as exc:
            self.outcome.warn(cond.EVENT_DISK_USE_UNKNOWN, f"{step.label}: {exc}")
            return
        if use is not None:
            self.mark(step, diskUse=use)

    def step_cpu(self, step: Step, entry: Mapping[str, Any], end: str) -> dict[str, Any]:
        """CPU, disk, network and memory of the step's window ({"cpu", "resources"}); a run
        without them still succeeds, with the CPUCollected and ResourcesComplete conditions."""
        profile: dict[str, Any] | None = None
        failure: tuple[str, str] | None = None
        if self.cpu is not None:
            job = {**entry, "job": step.job_name(self.name)}
            try:
                profile = self.cpu(self.run, job, str(entry.get("startTime")), end)
            except CpuUnavailable as exc:
                failure = (cond.PROMETHEUS_UNAVAILABLE, exc.reason)
            except ValueError as exc:  # e.g. a window the timestamps cannot express: never stall
                failure = (cond.WINDOW_INVALID, str(exc))
        conditions = self.new.get("conditions", self.status.get("conditions"))
        for update in cpu_conditions(profile, failure, conditions, step.label):
            self.condition(*update)
        if failure is not None:
            self.outcome.warn(cond.EVENT_CPU_MISSING, f"{step.label}: {failure[1]}")
        return profile if profile is not None else {"cpu": None}

    def fail(self, step: Step, message: str) -> None:
        """The step failed, and the run with it."""
        self.mark(step, phase=cond.STEP_FAILED, message=message)
        self.outcome.warn(cond.EVENT_STEP_FAILED, message)
        self.cleanup(success=False)
        self.finish(cond.RUN_FAILED, message)

    def start_cpu_monitor(self) -> None:
        """The run's finer CPU resolution (cpu_monitor): its PodMonitor, before the first step,
        so a Prometheus Operator has loaded it by the time a window opens."""
        seconds = self.spec.monitoring.cpu_resolution_seconds
        if seconds is None or not self.config.prometheus_url:
            return
        name = cpu_monitor.monitor_name(self.name)
        if not self.kube.served(*cpu_monitor.API):
            self.outcome.warn(
                cond.EVENT_CPU_RESOLUTION,
                f"no PodMonitor API (Prometheus Operator): CPU at Prometheus' own interval, "
                f"not {seconds} s",
            )
            return
        self.kube.apply(
            cpu_monitor.build_cpu_monitor(
                self.run,
                seconds,
                exporter_namespace=self.config.node_exporter_namespace,
                exporter_selector=dict(self.config.node_exporter_selector),
                exporter_port=self.config.node_exporter_port,
                node_label=(
                    self.config.prometheus_node_label
                    if self.config.prometheus_node_mapping == "label"
                    else None
                ),
                labels=dict(self.config.monitor_labels),
            )
        )
        self.outcome.info(
            cond.EVENT_CPU_RESOLUTION,
            f"PodMonitor {name}: node-exporter every {seconds} s; the first step waits up to "
            f"{CPU_SCRAPE_WAIT_SECONDS:g} s for Prometheus to scrape it",
        )

    def finish(self, phase: str, message: str) -> None:
        if self.spec.monitoring.cpu_resolution_seconds is not None:
            # Every end passes here: the fine scrape lasts the run's window, no longer.
            try:
                self.kube.delete("PodMonitor", self.ns, cpu_monitor.monitor_name(self.name))
            except ApiError as exc:  # the owner reference removes it with the run
                self.outcome.warn(cond.EVENT_CPU_RESOLUTION, f"PodMonitor not deleted: {exc}")
        self.new["phase"] = phase
        self.new["completionTime"] = rfc3339(self.clock())
        steps = self.new.get("steps", self.status.get("steps") or [])
        replaced = validity.superseded(steps)  # invalid attempts a re-run replaced
        self.new["summary"] = summary.summarise(s for s in steps if s.get("index") not in replaced)
        ok = phase == cond.RUN_SUCCEEDED
        self.condition(cond.SUCCEEDED, cond.TRUE if ok else cond.FALSE, phase, message)
        self.outcome.info(phase, message) if ok else self.outcome.warn(phase, message)

    def cleanup(self, success: bool) -> None:
        if profiling.needs_reset(self.profiler_state()) and self.spec.cluster_ref is not None:
            self.profiler_off(self.kube.get("MongoCluster", self.ns, self.spec.cluster_ref.name))
        policy = self.spec.cleanup
        delete_jobs, drop = cleanup_targets(policy.jobs, policy.data, success)
        if delete_jobs:
            for job in self.kube.list("Job", self.ns, f"{jobs.RUN_LABEL}={self.name}"):
                self.kube.delete("Job", self.ns, job["metadata"]["name"])
        if drop:
            try:
                dropped = drop_data(self.kube, self.data, self.spec, self.ns)
                self.outcome.info(cond.EVENT_DATA_DROPPED, dropped)
            except (MongoAdminError, ApiError) as exc:
                self.outcome.warn(cond.EVENT_DATA_NOT_DROPPED, str(exc))


def drop_data(kube: KubeApi, data: DataOps, spec: BenchmarkRunSpec, namespace: str) -> str:
    """Drop the benchmark collection (cleanup.data); what happened, for an Event."""
    if spec.cluster_ref is None:
        return data.drop(spec, None)
    cluster = kube.get("MongoCluster", namespace, spec.cluster_ref.name)
    if cluster is None:
        return f"MongoCluster {spec.cluster_ref.name} is gone: no data to drop"
    return data.drop(spec, cluster)


def reset_profiler(
    kube: KubeApi,
    data: DataOps,
    spec: BenchmarkRunSpec,
    namespace: str,
    status: Mapping[str, Any],
) -> None:
    """Level 0 and the slowms found, for a run deleted while a step was profiled."""
    if spec.cluster_ref is None or not profiling.needs_reset(status):
        return
    cluster = kube.get("MongoCluster", namespace, spec.cluster_ref.name)
    if cluster is not None:
        restore = (status.get("profiler") or {}).get("restoreSlowMs") or None
        data.set_profiler(spec, cluster, profiler.OFF, restore)


def snapshot(kube: KubeApi, cluster: Mapping[str, Any] | None, namespace: str) -> dict[str, Any]:
    """The target as it was at the start: comparisons stay valid after the cluster changes."""
    if cluster is None:
        return {"external": True}
    spec = cluster.get("spec") or {}
    status = cluster.get("status") or {}
    pods = kube.list("Pod", namespace, f"{jobs.CLUSTER_LABEL}={cluster['metadata']['name']}")
    node_names = sorted({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")})
    nodes = []
    for node_name in node_names:
        try:
            node = kube.get("Node", None, node_name)
        except ApiError:
            continue
        if node is None:
            continue
        labels = node["metadata"].get("labels") or {}
        nodes.append(
            {
                "name": node_name,
                "instanceType": labels.get("node.kubernetes.io/instance-type"),
                "zone": labels.get("topology.kubernetes.io/zone"),
            }
        )
    return {
        "name": cluster["metadata"]["name"],
        "version": spec.get("version"),
        "topology": spec.get("topology"),
        "storage": spec.get("storage"),
        "platform": status.get("platform"),
        "replicaSets": [
            {"name": rs.get("name"), "role": rs.get("role"), "members": rs.get("members")}
            for rs in status.get("replicaSets") or []
        ],
        "nodes": nodes,
    }
