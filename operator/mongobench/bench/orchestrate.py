"""The BenchmarkRun state machine, level-triggered: `advance()` reads the run and the world and
takes the next step. Called on create/resume, on every event of the run's Jobs, and by a timer
until the run ends; any of them may run again after a restart without duplicating Jobs (names
are deterministic and applied server-side) or losing results (they live in ConfigMaps).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.bench import jobs, results
from mongobench.bench.cpu import CpuUnavailable
from mongobench.bench.plan import Step, make_plan
from mongobench.config import OperatorConfig
from mongobench.k8s import client as kube
from mongobench.k8s.conditions import get_condition, now_rfc3339, set_condition
from mongobench.mongo.errors import MongoAdminError, TransientMongoError

log = logging.getLogger("mongobench.bench")

TERMINAL = ("Succeeded", "Failed")
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


CpuQuery = Callable[[Mapping[str, Any], Mapping[str, Any], str, str], dict[str, Any]]

_locks: dict[tuple[str, str], threading.Lock] = {}
_guard = threading.Lock()


def _lock(namespace: str, name: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((namespace, name), threading.Lock())


def advance(
    namespace: str,
    name: str,
    config: OperatorConfig,
    data: DataOps,
    cpu: CpuQuery | None = None,
) -> Outcome | None:
    with _lock(namespace, name):
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

    # -- the state machine ---------------------------------------------------------------------

    def go(self) -> Outcome:
        target = self.target()
        if target is None:
            self.publish()
            self.outcome.phase = self.new.get("phase", self.status.get("phase"))
            return self.outcome
        if "startTime" not in self.status:
            self.new["startTime"] = now_rfc3339()
            self.new["clusterSnapshot"] = snapshot(target.cluster, self.ns)
            self.new["resultsRef"] = f"{results.RESULT_OF} (ConfigMaps of run {self.name})"
            self.outcome.info("Started", f"{len(self.plan)} steps")
        steps = self.steps()
        index = next((s["index"] for s in steps if s["phase"] != "Succeeded"), None)
        if index is None:
            self.finish("Succeeded", "all steps succeeded")
        else:
            step = self.plan[index]
            self.new["phase"] = PHASE_OF_STEP[step.kind]
            try:
                self.execute(step, target)
            except TransientMongoError as exc:  # not reachable yet, election: the timer retries
                self.condition("Progressing", "False", "MongoDBUnavailable", str(exc))
            except MongoAdminError as exc:
                self.fail(step, f"{step.label}: {exc}")
        self.publish()
        self.outcome.phase = self.new.get("phase", self.status.get("phase"))
        return self.outcome

    def target(self) -> Target | None:
        ref = self.spec.cluster_ref
        if ref is None:
            secret = self.spec.uri_secret_ref
            assert secret is not None
            return Target(secret.name, secret.key, None)
        cluster = kube.get("MongoCluster", self.ns, ref.name)
        started = "startTime" in self.status
        if cluster is None:
            message = f"MongoCluster {ref.name} does not exist"
            if started:
                self.condition("ClusterReady", "False", "ClusterDeleted", message)
                for entry in self.steps():
                    if entry["phase"] == "Running":
                        self.mark(
                            self.plan[entry["index"]],
                            phase="Failed",
                            message=f"{message} (deleted during this step)",
                        )
                self.cleanup(success=False)
                self.finish("Failed", f"{message} (deleted during the run); results so far kept")
                return None
            self.new["phase"] = "Pending"
            self.condition("ClusterReady", "False", "NotFound", message)
            return None
        phase = (cluster.get("status") or {}).get("phase")
        writable = ((cluster.get("spec") or {}).get("auth") or {}).get("benchmarkDatabase", "ycsb")
        if writable != self.spec.database and not started:
            message = (
                f"database {self.spec.database}: the benchmark user of MongoCluster {ref.name} "
                f"may write only to {writable} (its spec.auth.benchmarkDatabase)"
            )
            self.condition("ClusterReady", "False", "DatabaseNotWritable", message)
            self.finish("Failed", message)
            return None
        if phase != "Ready" and not started:
            self.new["phase"] = "Pending"
            self.condition(
                "ClusterReady", "False", "NotReady", f"MongoCluster {ref.name} is {phase}; waiting"
            )
            return None
        if phase == "Ready":
            self.condition("ClusterReady", "True", "Ready", f"MongoCluster {ref.name} is Ready")
        else:  # started: the steps go on (a Job fails if MongoDB is really gone); say so
            self.condition(
                "ClusterReady", "False", "NotReady", f"MongoCluster {ref.name} is {phase}"
            )
        connection = (cluster.get("status") or {}).get(
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
        )

    def mark(self, step: Step, **fields: Any) -> None:
        steps = self.steps()
        steps[step.index] = {**steps[step.index], **fields}
        self.new["steps"] = steps

    def execute(self, step: Step, target: Target) -> None:
        entry = self.steps()[step.index]
        if step.kind == "prepare":
            message = (
                self.data.prepare(self.spec, target.cluster)
                if not self.spec.load.skip
                else "load skipped"
            )
            self.mark(step, phase="Succeeded", message=message, completionTime=now_rfc3339())
            self.outcome.info("Prepared", message)
            return
        if step.kind == "cleanup":
            self.cleanup(success=True)
            self.mark(step, phase="Succeeded", completionTime=now_rfc3339())
            self.finish("Succeeded", "all steps succeeded")
            return
        ref = self.run_ref(target)
        job_name = step.job_name(self.name)
        job = kube.get("Job", self.ns, job_name)
        if job is None:
            if entry["phase"] == "Running":
                # It existed and is gone (deleted by hand?): its results may still be there.
                if self.collect(step, ref, entry) is None:
                    return
                self.fail(step, f"{step.label}: Job {job_name} disappeared before finishing")
                return
            if step.reset:
                self.data.prepare(self.spec, target.cluster)
            for obj in jobs.build_client_rbac(ref):
                kube.apply(obj)
            kube.apply(jobs.build_job(self.spec, step, ref))
            self.mark(step, phase="Running", job=job_name, startTime=now_rfc3339())
            self.outcome.info("StepStarted", f"{step.label}: Job {job_name}")
            return
        if entry["phase"] == "Pending":  # created just before a restart, not yet recorded
            self.mark(
                step,
                phase="Running",
                job=job_name,
                startTime=job["metadata"].get("creationTimestamp") or now_rfc3339(),
            )
        conditions = {c["type"]: c for c in (job.get("status") or {}).get("conditions") or []}
        if conditions.get("Complete", {}).get("status") == "True":
            self.new["phase"] = "Collecting"
            problem = self.collect(step, ref, entry, job)
            if problem is not None:
                self.fail(step, f"{step.label}: {problem}")
            elif step.kind == "load":
                self.record_distribution(step, target)
            return
        if conditions.get("Failed", {}).get("status") == "True":
            self.collect(step, ref, entry, job, failed=True)
            reason = conditions["Failed"].get("message") or conditions["Failed"].get("reason")
            self.fail(step, f"{step.label}: Job {job_name} failed: {reason}")

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
        configmaps = kube.list_objects("ConfigMap", self.ns, results.RESULT_OF)
        got = results.assemble(
            configmaps, jobs.result_prefix(ref, step), self.spec.clients.parallelism
        )
        if not got.documents:
            return "no client reported a result"
        merged = results.merge(got.documents)
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
        fields: dict[str, Any] = {
            "result": results.step_result(merged),
            "job": step.job_name(self.name),
            "startTime": start,
            "completionTime": end,
            "clientsReported": len(got.documents),
        }
        fields["cpu"] = self.step_cpu(step, entry, end)
        problem = None
        if got.missing:
            problem = f"clients {got.missing} reported no result"
        elif merged.get("status") != "Succeeded":
            problem = str(merged.get("error") or "a client failed")
        elif failed:
            problem = "the Job failed"
        fields["phase"] = "Failed" if problem else "Succeeded"
        if got.missing:
            fields["missingClients"] = got.missing
        self.mark(step, **fields)
        if problem is None and step.kind == "run":
            self.outcome.info(
                "StepSucceeded", f"{step.label}: {fields['result']['throughput']} ops/s"
            )
        return problem

    def record_distribution(self, step: Step, target: Target) -> None:
        """After a (re)load of a sharded cluster: the per-shard balance, with the step and on
        the MongoCluster. Best effort: a run does not fail for want of it."""
        try:
            dist = self.data.distribution(self.spec, target.cluster)
        except MongoAdminError as exc:
            self.outcome.warn("DistributionUnknown", f"{step.label}: {exc}")
            return
        if dist is None:
            return
        self.mark(step, distribution=dist)
        shares = ", ".join(f"{s['shard']} {s['percent']:.1f}%" for s in dist["shards"])
        self.outcome.info("Distribution", f"{step.label}: {dist['collection']} {shares}")
        if self.spec.cluster_ref is not None:
            try:
                kube.patch_status(
                    "MongoCluster", self.ns, self.spec.cluster_ref.name, {"distribution": dist}
                )
            except ApiException as exc:  # the cluster went away meanwhile: the step keeps it
                self.outcome.warn("DistributionNotPublished", f"{step.label}: {exc.reason}")

    def step_cpu(self, step: Step, entry: Mapping[str, Any], end: str) -> dict[str, Any] | None:
        """CPU of the step's window; a run without it still succeeds, with a condition."""
        if self.cpu is None:
            self.condition(
                "CPUCollected", "False", "NotConfigured", "no Prometheus URL is configured"
            )
            return None
        job_name = step.job_name(self.name)
        try:
            cpu = self.cpu(self.run, {**entry, "job": job_name}, str(entry.get("startTime")), end)
        except CpuUnavailable as exc:
            self.condition("CPUCollected", "False", "PrometheusUnavailable", exc.reason)
            self.outcome.warn("CPUMissing", f"{step.label}: {exc.reason}")
            return None
        except ValueError as exc:  # e.g. a window the timestamps cannot express: never stall
            self.condition("CPUCollected", "False", "WindowInvalid", str(exc))
            self.outcome.warn("CPUMissing", f"{step.label}: {exc}")
            return None
        previous = get_condition(
            self.new.get("conditions", self.status.get("conditions")), "CPUCollected"
        )
        if previous is None or previous.get("status") == "True":  # a gap, once, stays visible
            self.condition("CPUCollected", "True", "Collected", "CPU collected for every step")
        return cpu

    def fail(self, step: Step, message: str) -> None:
        self.mark(step, phase="Failed", message=message)
        self.outcome.warn("StepFailed", message)
        self.cleanup(success=False)
        self.finish("Failed", message)

    def finish(self, phase: str, message: str) -> None:
        self.new["phase"] = phase
        self.new["completionTime"] = now_rfc3339()
        steps = self.new.get("steps", self.status.get("steps") or [])
        self.new["summary"] = results.summarise(steps)
        self.condition("Succeeded", "True" if phase == "Succeeded" else "False", phase, message)
        self.outcome.info(phase, message) if phase == "Succeeded" else self.outcome.warn(
            phase, message
        )

    def cleanup(self, success: bool) -> None:
        policy = self.spec.cleanup
        if policy.jobs == "Always" or (policy.jobs == "OnSuccess" and success):
            for job in kube.list_objects("Job", self.ns, f"{jobs.RUN_LABEL}={self.name}"):
                kube.delete("Job", self.ns, job["metadata"]["name"])
        if policy.data == "Always" or (policy.data == "OnSuccess" and success):
            try:
                self.outcome.info("DataDropped", drop_data(self.data, self.spec, self.ns))
            except (MongoAdminError, ApiException) as exc:
                self.outcome.warn("DataNotDropped", str(exc))


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
        except ApiException:
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
