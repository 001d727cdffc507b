"""The BenchmarkRun state machine, level-triggered: `advance()` reads the run and the world
(`_Advance.observe`), asks the pure `bench.decide.decide` what to do next, and does it
(`_Advance.act`: create a Job, collect results, fail, finish, clean up) and writes the status.
Called on create/resume, on every event of the run's Jobs, and by a timer until the run ends;
any of them may run again after a restart without duplicating Jobs (names
are deterministic and applied server-side) or losing results (they live in ConfigMaps).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Scenario
from mongobench.bench import jobs, results
from mongobench.bench.cpu import CpuUnavailable
from mongobench.bench.decide import (
    Action,
    Observed,
    cleanup_targets,
    collection_problem,
    cpu_conditions,
    current_step,
    decide,
)
from mongobench.bench.plan import Step, make_plan
from mongobench.config import OperatorConfig
from mongobench.k8s import client as kube
from mongobench.k8s import conditions as cond
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import now_rfc3339, set_condition
from mongobench.mongo.errors import MongoAdminError, TransientMongoError
from mongobench_results import summary
from mongobench_results.configmaps import assemble
from mongobench_results.merge import merge_documents

log = logging.getLogger("mongobench.bench")

TERMINAL = (cond.RUN_SUCCEEDED, cond.RUN_FAILED)
PHASE_OF_STEP = {
    "prepare": "Preparing",
    "load": "Loading",
    "warmup": "Running",
    "run": "Running",
    "cleanup": "Collecting",
}


@dataclass
class Outcome:
    """What one advance() did, for the handler to turn into Events."""

    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    run: Mapping[str, Any] = field(default_factory=dict)  # the BenchmarkRun, for Events
    phase: str | None = None

    def info(self, reason: str, message: str) -> None:
        self.events.append(("Normal", reason, message))

    def warn(self, reason: str, message: str) -> None:
        self.events.append(("Warning", reason, message))


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


# (run, step entry, start, end) -> the step's resource profile {"cpu": ..., "resources": ...}
# (bench.cpu_status.cpu_for_step).
CpuQuery = Callable[[Mapping[str, Any], Mapping[str, Any], str, str], dict[str, Any]]


def result_configmaps(
    namespace: str, prefixes: Sequence[str], clients: int
) -> list[dict[str, Any]]:
    """The result ConfigMaps of these steps: one LIST by their result-set label. Every run's
    results in the namespace would be megabytes to decode per step with 200 runs. When a client
    is missing, read them all by the older label too: a runner image from before the result-set
    label (an operator upgraded under a running Job) must not lose its result."""
    found = kube.list_objects("ConfigMap", namespace, results.set_selector(prefixes))
    if results.complete(found, prefixes, clients):
        return found
    return kube.list_objects("ConfigMap", namespace, results.RESULT_OF)


def advance(
    namespace: str,
    name: str,
    config: OperatorConfig,
    data: DataOps,
    cpu: CpuQuery | None = None,
    *,
    lock: AbstractContextManager[Any] | None = None,  # the run's (mongobench.state)
) -> Outcome | None:
    with lock or nullcontext():
        run = kube.get("BenchmarkRun", namespace, name)
        if run is None or run["metadata"].get("deletionTimestamp"):
            return None
        status = dict(run.get("status") or {})
        if status.get("phase") in TERMINAL:
            return None
        return _Advance(run, status, config, data, cpu).go()


class _Advance:
    def __init__(
        self,
        run: Mapping[str, Any],
        status: dict[str, Any],
        config: OperatorConfig,
        data: DataOps,
        cpu: CpuQuery | None,
    ) -> None:
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
        self.outcome = Outcome(run=run)
        self.spec = BenchmarkRunSpec.parse(dict(run["spec"]))
        self.plan = make_plan(self.spec)

    # -- status helpers ------------------------------------------------------------------------

    def condition(self, type_: str, value: Any, reason: str, message: str) -> None:
        current = self.new.get("conditions", self.status.get("conditions"))
        self.new["conditions"] = set_condition(
            current, type_, value, reason, message, generation=self.generation
        )

    def steps(self) -> list[dict[str, Any]]:
        if "steps" not in self.new:
            existing = {s["index"]: s for s in self.status.get("steps") or []}
            self.new["steps"] = [
                dict(
                    existing.get(
                        step.index,
                        {
                            "index": step.index,
                            "kind": step.kind,
                            "label": step.label,
                            "workload": step.workload,
                            "repetition": step.repetition,
                            "phase": "Pending",
                        },
                    )
                )
                for step in self.plan
            ]
        return list(self.new["steps"])

    def publish(self) -> None:
        steps = self.new.get("steps", self.status.get("steps") or [])
        total = len(self.plan)  # known from the spec, also before the run starts
        done = sum(1 for s in steps if s.get("phase") == "Succeeded")
        current = next((s for s in steps if s.get("phase") != "Succeeded"), None)
        last = next(
            (s for s in reversed(steps) if s.get("result") and s.get("kind") == "run"), None
        )
        label = current["label"] if current else ("done" if steps else "waiting to start")
        progress = {
            "step": min(done + 1, total) if steps else 0,
            "steps": total,
            "percent": int(100 * done / total),
            "summary": f"{min(done + 1, total) if steps else 0}/{total}",
            "current": label,
        }
        if last:
            progress["lastThroughput"] = f"{last['result']['throughput']:.0f} ops/s"
        self.new["progress"] = progress
        self.new["observedGeneration"] = self.generation
        changed = {k: v for k, v in self.new.items() if self.status.get(k) != v}
        if changed:
            kube.patch_status("BenchmarkRun", self.ns, self.name, changed)

    # -- observe, decide, act -----------------------------------------------------------------

    def observe(self) -> Observed:
        """Read what the decision needs: the referenced MongoCluster, the current step's Job,
        and the scenario ConfigMaps: all of them before the start, then the step's own before
        its Job is created."""
        cluster = None
        if self.spec.cluster_ref is not None:
            cluster = kube.get("MongoCluster", self.ns, self.spec.cluster_ref.name)
        step = current_step(self.plan, self.status)
        job = None
        reachable = cluster is not None or self.spec.cluster_ref is None
        if step is not None and step.runs_job and reachable:
            job = kube.get("Job", self.ns, step.job_name(self.name))
        scenarios: list[tuple[str, Scenario]] = []
        if "startTime" not in self.status:
            phase = ((cluster or {}).get("status") or {}).get("phase")
            if self.spec.cluster_ref is None or phase == cond.PHASE_READY:
                scenarios = self.spec.scenarios()
        elif step is not None and step.runs_job and reachable and job is None:
            scenario = jobs.step_scenario(self.spec, step)
            recorded: Mapping[str, Any] = next(
                (s for s in self.status.get("steps") or () if s.get("index") == step.index), {}
            )
            if scenario is not None and recorded.get("phase") != "Running":  # not created yet
                scenarios = [(step.label, scenario)]
        return Observed(
            self.spec,
            self.plan,
            self.status,
            cluster,
            job,
            scenario_problem=self.scenario_problem(scenarios),
            age_seconds=age_seconds(self.meta.get("creationTimestamp")),
        )

    def scenario_problem(self, scenarios: Sequence[tuple[str, Scenario]]) -> tuple[str, str] | None:
        """(reason, message) of the first scenario whose ConfigMap or key is missing."""
        seen: dict[str, Mapping[str, Any] | None] = {}
        for user, scenario in scenarios:
            ref = scenario.config_map_ref
            if ref.name not in seen:
                seen[ref.name] = kube.get("ConfigMap", self.ns, ref.name)
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

    def go(self) -> Outcome:
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
        self.publish()
        self.outcome.phase = self.new.get("phase", self.status.get("phase"))
        return self.outcome

    def act(self, action: Action, observed: Observed) -> None:
        kind, step = action.kind, action.step
        if kind == "WaitForCluster":
            self.new["phase"] = cond.PHASE_PENDING
            return
        if kind == "WaitForScenario":
            self.new["phase"] = cond.PHASE_PENDING
            return
        if kind == "Refuse":
            self.finish(cond.RUN_FAILED, action.message)
            return
        if kind == "ScenarioMissing":
            if step is not None and step.runs_job and observed.started:
                self.fail(step, f"{step.label}: {action.message}")
            else:
                self.finish(cond.RUN_FAILED, action.message)
            return
        if kind == "ClusterGone":
            for entry in self.steps():
                if entry["phase"] == "Running":
                    self.mark(
                        self.plan[entry["index"]],
                        phase="Failed",
                        message=f"{action.message} (deleted during this step)",
                    )
            self.cleanup(success=False)
            self.finish(
                cond.RUN_FAILED, f"{action.message} (deleted during the run); results so far kept"
            )
            return
        target = self.target(observed.cluster)
        if action.start:
            self.new["startTime"] = now_rfc3339()
            self.new["clusterSnapshot"] = snapshot(target.cluster, self.ns)
            self.new["resultsRef"] = f"{results.RESULT_OF} (ConfigMaps of run {self.name})"
            self.outcome.info(cond.EVENT_STARTED, f"{len(self.plan)} steps")
        self.steps()
        if kind == "Finish" or step is None:
            self.finish(cond.RUN_SUCCEEDED, action.message)
            return
        self.new["phase"] = PHASE_OF_STEP[step.kind]
        entry = self.steps()[step.index]
        job_name = step.job_name(self.name)
        if kind == "Prepare":
            message = (
                self.data.prepare(self.spec, target.cluster)
                if not self.spec.load.skip
                else "load skipped"
            )
            self.mark(step, phase="Succeeded", message=message, completionTime=now_rfc3339())
            self.outcome.info(cond.EVENT_PREPARED, message)
        elif kind == "CleanUp":
            self.cleanup(success=True)
            self.mark(step, phase="Succeeded", completionTime=now_rfc3339())
            self.finish(cond.RUN_SUCCEEDED, "all steps succeeded")
        elif kind == "RecoverLostJob":
            # It existed and is gone (deleted by hand?): its results may still be there.
            if self.collect(step, self.run_ref(target), entry) is not None:
                self.fail(step, f"{step.label}: Job {job_name} disappeared before finishing")
        elif kind == "CreateJob":
            ref = self.run_ref(target)
            if step.reset:
                self.data.prepare(self.spec, target.cluster)
            for obj in jobs.build_client_rbac(ref, [s for s in self.plan if s.runs_job]):
                kube.apply(obj)
            if jobs.uses_barrier(self.spec, ref):
                kube.apply(jobs.build_barrier(self.spec, step, ref))
            kube.apply(jobs.build_job(self.spec, step, ref))
            self.mark(step, phase="Running", job=job_name, startTime=now_rfc3339())
            self.outcome.info(cond.EVENT_STEP_STARTED, f"{step.label}: Job {job_name}")
        else:  # the Job exists
            job = observed.job
            assert job is not None
            if action.adopt:
                self.mark(
                    step,
                    phase="Running",
                    job=job_name,
                    startTime=job["metadata"].get("creationTimestamp") or now_rfc3339(),
                )
            if kind == "Collect":
                self.new["phase"] = "Collecting"
                problem = self.collect(step, self.run_ref(target), entry, job)
                if problem is not None:
                    self.fail(step, f"{step.label}: {problem}")
                elif step.kind == "load":
                    self.record_distribution(step, target)
            elif kind == "CollectFailed":
                self.collect(step, self.run_ref(target), entry, job, failed=True)
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
        got = assemble(result_configmaps(self.ns, [prefix], clients), prefix, clients)
        if not got.documents:  # nothing to keep
            return collection_problem(0, got.missing, {}, failed)
        merged = merge_documents(got.documents)
        job_status = (job or {}).get("status") or {}
        end = job_status.get("completionTime") or now_rfc3339()
        # A restart between creating the Job and recording it leaves no startTime in status:
        # the Job itself knows when it started.
        start = (
            entry.get("startTime")
            or job_status.get("startTime")
            or (job or {}).get("metadata", {}).get("creationTimestamp")
            or end
        )
        entry = {**entry, "startTime": start}
        jobs_in_plan = sum(1 for s in self.plan if s.runs_job)
        fields: dict[str, Any] = {
            "result": summary.step_result(
                merged,
                per_client=jobs_in_plan * self.spec.clients.parallelism
                <= summary.PER_CLIENT_BUDGET,
            ),
            "job": step.job_name(self.name),
            "startTime": start,
            "completionTime": end,
            "clientsReported": len(got.documents),
        }
        fields.update(self.step_cpu(step, entry, end))
        problem = collection_problem(len(got.documents), got.missing, merged, failed)
        fields["phase"] = "Failed" if problem else "Succeeded"
        if got.missing:
            fields["missingClients"] = got.missing
        self.mark(step, **fields)
        if problem is None and step.kind == "run":
            self.outcome.info(
                cond.EVENT_STEP_SUCCEEDED, f"{step.label}: {fields['result']['throughput']} ops/s"
            )
        return problem

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
                kube.patch_status(
                    "MongoCluster", self.ns, self.spec.cluster_ref.name, {"distribution": dist}
                )
            except ApiError as exc:  # the cluster went away meanwhile: the step keeps it
                self.outcome.warn(
                    cond.EVENT_DISTRIBUTION_NOT_PUBLISHED, f"{step.label}: {exc.reason}"
                )

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
        self.mark(step, phase="Failed", message=message)
        self.outcome.warn(cond.EVENT_STEP_FAILED, message)
        self.cleanup(success=False)
        self.finish("Failed", message)

    def finish(self, phase: str, message: str) -> None:
        self.new["phase"] = phase
        self.new["completionTime"] = now_rfc3339()
        steps = self.new.get("steps", self.status.get("steps") or [])
        self.new["summary"] = summary.summarise(steps)
        ok = phase == cond.RUN_SUCCEEDED
        self.condition(cond.SUCCEEDED, cond.TRUE if ok else cond.FALSE, phase, message)
        self.outcome.info(phase, message) if ok else self.outcome.warn(phase, message)

    def cleanup(self, success: bool) -> None:
        policy = self.spec.cleanup
        delete_jobs, drop = cleanup_targets(policy.jobs, policy.data, success)
        if delete_jobs:
            for job in kube.list_objects("Job", self.ns, f"{jobs.RUN_LABEL}={self.name}"):
                kube.delete("Job", self.ns, job["metadata"]["name"])
        if drop:
            try:
                self.outcome.info(cond.EVENT_DATA_DROPPED, drop_data(self.data, self.spec, self.ns))
            except (MongoAdminError, ApiError) as exc:
                self.outcome.warn(cond.EVENT_DATA_NOT_DROPPED, str(exc))


def age_seconds(created: str | None) -> float:
    """Seconds since an RFC 3339 creationTimestamp (0 when unknown)."""
    if not created:
        return 0.0
    when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    return max((datetime.now(UTC) - when).total_seconds(), 0.0)


def drop_data(data: DataOps, spec: BenchmarkRunSpec, namespace: str) -> str:
    """Drop the benchmark collection (cleanup.data); what happened, for an Event."""
    if spec.cluster_ref is None:
        return data.drop(spec, None)
    cluster = kube.get("MongoCluster", namespace, spec.cluster_ref.name)
    if cluster is None:
        return f"MongoCluster {spec.cluster_ref.name} is gone: no data to drop"
    return data.drop(spec, cluster)


def snapshot(cluster: Mapping[str, Any] | None, namespace: str) -> dict[str, Any]:
    """The target as it was at the start: comparisons stay valid after the cluster changes."""
    if cluster is None:
        return {"external": True}
    spec = cluster.get("spec") or {}
    status = cluster.get("status") or {}
    pods = kube.list_objects(
        "Pod", namespace, f"{jobs.CLUSTER_LABEL}={cluster['metadata']['name']}"
    )
    node_names = sorted({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")})
    nodes = []
    for node_name in node_names:
        try:
            node = kube.request("GET", f"/api/v1/nodes/{node_name}")
        except ApiError:
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
