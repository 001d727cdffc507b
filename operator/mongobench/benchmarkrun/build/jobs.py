"""Pure builders: the Job of one benchmark step, and the client ServiceAccount with its Role.

One Indexed Job per step: `parallelism` client pods; each takes its index from
JOB_COMPLETION_INDEX (the Job controller sets it) to split the key space, and writes its result
document into ConfigMaps `<job>-c<index>-p<part>` owned by the BenchmarkRun, so results outlive
the pods and the Jobs. Pods start whenever they are scheduled and pulled, so parallel clients
meet at a start barrier, the ConfigMap `<job>-barrier` (one key per client: its ready instant),
and all begin their measured phase at one instant (the runner's barrier module). The two runs of
a duet (spec.duet) share each step's barrier, `<pair>-<step>-barrier` (B's client keys after
A's), so both sides start at one instant, and each client pod joins the node of the partner's
client of its index (a required pod affinity). A step that runs a
user Locust scenario mounts its ConfigMap read-only at SCENARIO_DIR and names the file to the
runner (`--scenario`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec, Clients, Duet, Scenario
from mongobench.api.mongocluster import TLS, MongoClusterSpec
from mongobench.api.schema import field_of
from mongobench.benchmarkrun.decide.plan import Step, inserts
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.tls import client_secret_name

COMPONENT_LABEL = lbl.CLIENT_COMPONENT_LABEL
CLIENT_COMPONENT = lbl.CLIENT_COMPONENT
RUN_LABEL = "mongobench.io/run"
STEP_LABEL = "mongobench.io/step"
# A duet's client pods (both runs'): the pair's name; the partner's pods are found by it.
DUET_LABEL = "mongobench.io/duet"
JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
CLUSTER_LABEL = lbl.CLUSTER
# The cluster's pods that hold no data (clients.besideDatabase keeps off them); whatever
# component holds data (a replica set's, a shard's members) is beside's target.
NOT_DATA_BEARING: tuple[lbl.Component, ...] = ("configsvr", "mongos")
# Diagnostic switch (annotation on the BenchmarkRun): "disabled" lets parallel clients start as
# their pods happen to start, to measure what the barrier is worth. Not for real studies.
START_BARRIER_ANNOTATION = "mongobench.io/start-barrier"

# Where a step's scenario ConfigMap is mounted in the client container.
SCENARIO_DIR = "/etc/mongobench/scenario"
SCENARIO_VOLUME = "scenario"
# The runner's name for it (mongobench_runner.tls.CA_FILE_ENV); the runner never imports this.
TLS_CA_FILE_ENV = "MONGOBENCH_TLS_CA_FILE"
TLS_CA_DIR = "/etc/mongobench-tls"
TLS_CA_VOLUME = "cluster-ca"

# Key numbers set aside for one step's inserts: 2^40, far more than any run inserts, and
# 2^63 / 2^40 steps before a key number overflows.
INSERT_RANGE = 1 << 40

WRITE_CONCERNS = {
    "unacknowledged": "unacknowledged",
    "acknowledged": "acknowledged",
    "journaled": "journaled",
    "majority": "majority",
}


def cluster_ca_secret(cluster: Mapping[str, Any] | None) -> str | None:
    """The Secret holding a TLS MongoCluster's CA (its client certificate's, see
    mongocluster.build.tls.client_secret); None for a cluster without TLS or no cluster."""
    if not cluster:
        return None
    tls: TLS = field_of(MongoClusterSpec, cluster.get("spec"), "tls")
    if not tls.enabled:
        return None
    return client_secret_name(cluster["metadata"]["name"])


@dataclass(frozen=True)
class RunRef:
    """The BenchmarkRun a Job belongs to, and where its clients connect."""

    name: str
    namespace: str
    uid: str
    uri_secret: str  # Secret holding the connection URI
    uri_key: str
    cluster: str | None  # MongoCluster name (None for an external URI)
    image: str
    result_part_bytes: int | None = None  # passed to the clients' ConfigMap sink
    start_barrier: bool = True  # parallel clients start together (see START_BARRIER_ANNOTATION)
    # The Secret whose ca.crt the clients verify a TLS cluster with (None: no TLS, or an
    # external URI whose CA the URI's own options handle).
    tls_ca_secret: str | None = None
    duet: Duet | None = None  # spec.duet: the pair this run is one side of

    @property
    def owner_reference(self) -> dict[str, Any]:
        return {
            "apiVersion": "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    @property
    def service_account(self) -> str:
        return f"{self.name}-client"[:63]


def result_prefix(run: RunRef, step: Step) -> str:
    """ConfigMaps of this step's results are named `<prefix>-c<index>[-p<part>]`."""
    return step.job_name(run.name)


def paired(run: RunRef, step: Step) -> Duet | None:
    """The duet whose barrier the step shares: its first attempt's. A re-run of an invalid
    trial has no partner step to meet, so it starts on its own."""
    return run.duet if step.attempt <= 1 else None


def barrier_name(run: RunRef, step: Step) -> str:
    duet = paired(run, step)
    return f"{step.job_name(duet.name if duet else run.name)}-barrier"


def uses_barrier(spec: BenchmarkRunSpec, run: RunRef, step: Step) -> bool:
    return run.start_barrier and (spec.clients.parallelism > 1 or paired(run, step) is not None)


def build_barrier(spec: BenchmarkRunSpec, step: Step, run: RunRef) -> dict[str, Any]:
    """The step's start barrier, created empty with the Job; each client adds its key."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": barrier_name(run, step),
            "namespace": run.namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "mongobench",
                RUN_LABEL: run.name,
                STEP_LABEL: str(step.index),
            },
            "ownerReferences": [run.owner_reference],
        },
    }


def step_scenario(spec: BenchmarkRunSpec, step: Step) -> Scenario | None:
    """The user scenario a step runs: load.scenario for a load, the workload's for its warm-up
    and runs; None for YCSB's own workloads."""
    if step.kind == "load":
        return spec.load.scenario
    if step.kind in ("warmup", "probe", "run"):
        return next(w for w in spec.workloads if w.name == step.workload).scenario
    return None


def ycsb_properties(spec: BenchmarkRunSpec, step: Step) -> list[tuple[str, str]]:
    """YCSB -p properties of a step: core knobs from the spec, then the passthroughs."""
    props: list[tuple[str, str]] = [
        # The database prepare/cleanup work on, whatever database the connection URI names.
        ("mongodb.database", spec.database),
        ("table", spec.collection),
        ("recordcount", str(spec.load.record_count)),
        ("fieldcount", str(spec.run.field_count)),
        ("fieldlength", str(spec.run.field_length)),
        ("insertorder", spec.load.insert_order),
        ("mongodb.writeConcern", WRITE_CONCERNS[spec.mongo.write_concern]),
        ("mongodb.readPreference", spec.mongo.read_preference),
        ("mongodb.upsert", str(spec.mongo.upsert).lower()),
        ("status.interval", str(spec.run.status_interval_seconds)),
    ]
    if spec.clients.connection_per_thread:
        # the runner's name for it (mongobench_runner.client_options.CONNECTION_PER_THREAD)
        props.append(("mongobench.connectionPerThread", "true"))
    if step.kind == "load":
        props.append(("batchsize", str(spec.load.batch_size)))
        props.extend(sorted(spec.load.properties.items()))
        return props
    run = spec.run
    count = spec.warmup.operation_count if step.kind == "warmup" and spec.warmup else None
    duration = spec.warmup.duration_seconds if step.kind == "warmup" and spec.warmup else None
    if step.kind in ("probe", "run"):
        count, duration = run.operation_count, run.duration_seconds
        if run.warmup_seconds:
            # The binding's name for it (ClientWarmup.SECONDS).
            props.append(("mongobench.warmupseconds", str(run.warmup_seconds)))
    # Duration-only runs: maxexecutiontime, counted from the clients' common start; no count (0).
    props.append(("operationcount", str(count if count is not None else 0)))
    if duration is not None:
        props.append(("maxexecutiontime", str(duration)))
    if step.target is not None:
        # The knee's offered load is the total over the clients: each paces its share.
        share = step.target / spec.clients.parallelism
        props.append(("target", str(max(1, round(share)))))
    elif run.target_ops_per_second is not None:
        props.append(("target", str(run.target_ops_per_second)))
    if run.request_distribution is not None:
        props.append(("requestdistribution", run.request_distribution))
    workload = next(w for w in spec.workloads if w.name == step.workload)
    if inserts(workload) or workload.scenario is not None:
        # YCSB numbers new keys from recordcount in every client and every run: each step's
        # inserts get a range of their own (the clients interleave inside it), so neither
        # parallel clients nor a later inserting step collide on _id. Whether a scenario
        # inserts is its own business: it gets a range anyway.
        props.append(("mongobench.insertoffset", str(step.index * INSERT_RANGE)))
    props.extend(sorted(workload.properties.items()))
    props.extend(sorted(run.properties.items()))
    return props


def runner_args(spec: BenchmarkRunSpec, step: Step, run: RunRef) -> list[str]:
    scenario = step_scenario(spec, step)
    workload = "a"
    threads = spec.load.threads
    if step.kind != "load":
        w = next(w for w in spec.workloads if w.name == step.workload)
        workload = w.name if scenario else (w.standard or "a")
        threads = spec.run.threads
    elif scenario is not None:
        workload = scenario.config_map_ref.key.removesuffix(".py")
    args = [
        spec.driver,
        "--phase",
        "load" if step.kind == "load" else "run",
        "--workload",
        workload,
        "--threads",
        str(threads),
        "--client-index",
        "$(JOB_COMPLETION_INDEX)",
        "--clients",
        str(spec.clients.parallelism),
        "--output",
        f"configmap:{run.namespace}/{result_prefix(run, step)}-c$(JOB_COMPLETION_INDEX)",
        "--label",
        f"run={run.name}",
        "--label",
        f"step={step.label}",
        "--metrics-port",
        "9100",
    ]
    if scenario is not None:
        args += ["--scenario", f"{SCENARIO_DIR}/{scenario.config_map_ref.key}"]
    if spec.clients.jvm_options and spec.driver == "ycsb":
        # One "--java-opts=..." word: a separate value starting with "-" is read as an option.
        args.append(f"--java-opts={' '.join(spec.clients.jvm_options)}")
    if uses_barrier(spec, run, step):
        args += [
            "--barrier",
            f"configmap:{run.namespace}/{barrier_name(run, step)}",
            "--barrier-timeout",
            str(spec.clients.start_timeout_seconds),
        ]
        if duet := paired(run, step):
            mine = spec.clients.parallelism
            args += [
                "--barrier-offset",
                str(duet.offset),
                "--barrier-clients",
                str(mine + duet.peer_parallelism),
            ]
    for key, value in ycsb_properties(spec, step):
        args += ["-p", f"{key}={value}"]
    for key, value in sorted(spec.labels.items()):
        args += ["--label", f"{key}={value}"]
    return args


def client_affinity(clients: Clients, step: Step, run: RunRef) -> dict[str, Any]:
    """The client pods' affinity: their node pool, beside or apart from the database, and apart
    from each other; empty when nothing is asked."""
    affinity: dict[str, Any] = {}
    if clients.node_affinity is not None and (node := clients.node_affinity.to_k8s()):
        affinity["nodeAffinity"] = node
    if clients.beside_database and run.cluster:
        # Required: the study asked for the database's own node (its CPU shared by design).
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_beside_database(run.cluster)]
        }
    if clients.apart_from_database and run.cluster:
        # Preferred, not required: a small cluster whose every node holds a member would
        # otherwise leave the clients Pending forever. Where nodes allow, CPU stays apart.
        affinity |= {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {CLUSTER_LABEL: run.cluster}},
                        },
                    }
                ]
            }
        }
    if duet := paired(run, step):
        affinity.setdefault("podAffinity", {}).setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", []
        ).append(_beside_duet_partner(duet, step))
    if clients.anti_affinity in ("Required", "Preferred"):
        _spread_step_pods(affinity, clients.anti_affinity == "Required", step, run)
    return affinity


def _beside_database(cluster: str) -> dict[str, Any]:
    """Any node with a data-bearing mongod of the cluster (not a config server's or a
    mongos')."""
    return {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {
            "matchLabels": {CLUSTER_LABEL: cluster},
            "matchExpressions": [
                {"key": lbl.COMPONENT, "operator": "Exists"},
                {"key": lbl.COMPONENT, "operator": "NotIn", "values": list(NOT_DATA_BEARING)},
            ],
        },
    }


def _beside_duet_partner(duet: Duet, step: Step) -> dict[str, Any]:
    """Client i of A and client i of B on one node (the pair's same step): whichever is
    scheduled first goes where it fits (a pod matching its own term may), the other joins."""
    return {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {DUET_LABEL: duet.name, STEP_LABEL: str(step.index)}},
        "matchLabelKeys": [JOB_INDEX_LABEL],
    }


def _spread_step_pods(affinity: dict[str, Any], required: bool, step: Step, run: RunRef) -> None:
    """A step's own pods apart from each other, by the labels only its Job's pods carry."""
    own = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {RUN_LABEL: run.name, STEP_LABEL: str(step.index)}},
    }
    anti = affinity.setdefault("podAntiAffinity", {})
    if required:
        anti["requiredDuringSchedulingIgnoredDuringExecution"] = [own]
    else:
        anti.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": 100, "podAffinityTerm": own}
        )


def build_job(spec: BenchmarkRunSpec, step: Step, run: RunRef) -> dict[str, Any]:
    labels = _job_labels(step, run)
    clients = spec.clients
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": step.job_name(run.name),
            "namespace": run.namespace,
            "labels": labels,
            "ownerReferences": [run.owner_reference],
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": clients.parallelism,
            "parallelism": clients.parallelism,
            "backoffLimit": clients.backoff_limit,
            "activeDeadlineSeconds": clients.deadline_seconds,
            "template": {"metadata": {"labels": labels}, "spec": _client_pod_spec(spec, step, run)},
        },
    }


def _job_labels(step: Step, run: RunRef) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "mongobench-client",
        "app.kubernetes.io/managed-by": "mongobench",
        COMPONENT_LABEL: CLIENT_COMPONENT,
        RUN_LABEL: run.name,
        STEP_LABEL: str(step.index),
        # The cluster's NetworkPolicy admits its clients by this label.
        **(lbl.client_labels(run.cluster) if run.cluster else {}),
        **({DUET_LABEL: duet.name} if (duet := paired(run, step)) else {}),
    }


def _client_pod_spec(spec: BenchmarkRunSpec, step: Step, run: RunRef) -> dict[str, Any]:
    clients = spec.clients
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": run.service_account,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_client_container(spec, step, run)],
    }
    if run.tls_ca_secret is not None:
        _mount_tls_ca(pod_spec, run.tls_ca_secret)
    scenario = step_scenario(spec, step)
    if scenario is not None:
        _mount_scenario(pod_spec, scenario)
    if clients.node_selector:
        pod_spec["nodeSelector"] = dict(sorted(clients.node_selector.items()))
    if clients.tolerations:
        pod_spec["tolerations"] = [t.to_k8s() for t in clients.tolerations]
    if affinity := client_affinity(clients, step, run):
        pod_spec["affinity"] = affinity
    return pod_spec


def _client_container(spec: BenchmarkRunSpec, step: Step, run: RunRef) -> dict[str, Any]:
    part_bytes = (
        [{"name": "MONGOBENCH_RESULT_PART_BYTES", "value": str(run.result_part_bytes)}]
        if run.result_part_bytes
        else []
    )
    return {
        "name": "client",
        "image": run.image,
        "command": ["mongobench-runner"],
        "args": runner_args(spec, step, run),
        "env": [
            {
                "name": "MONGOBENCH_URI",
                "valueFrom": {"secretKeyRef": {"name": run.uri_secret, "key": run.uri_key}},
            },
            {"name": "MONGOBENCH_OWNER_REF", "value": json.dumps(run.owner_reference)},
            *part_bytes,
        ],
        "ports": [{"name": "metrics", "containerPort": 9100}],
        "resources": spec.clients.resources.to_k8s(),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def _mount_tls_ca(pod_spec: dict[str, Any], secret: str) -> None:
    """Only the CA of the cluster's client certificate Secret: clients present no
    certificate."""
    container = pod_spec["containers"][0]
    container["env"].append({"name": TLS_CA_FILE_ENV, "value": f"{TLS_CA_DIR}/ca.crt"})
    container.setdefault("volumeMounts", []).append(
        {"name": TLS_CA_VOLUME, "mountPath": TLS_CA_DIR, "readOnly": True}
    )
    pod_spec.setdefault("volumes", []).append(
        {
            "name": TLS_CA_VOLUME,
            "secret": {
                "secretName": secret,
                "defaultMode": 0o444,
                "items": [{"key": "ca.crt", "path": "ca.crt"}],
            },
        }
    )


def _mount_scenario(pod_spec: dict[str, Any], scenario: Scenario) -> None:
    """The whole ConfigMap, read-only: the scenario may import its other keys."""
    pod_spec["containers"][0].setdefault("volumeMounts", []).append(
        {"name": SCENARIO_VOLUME, "mountPath": SCENARIO_DIR, "readOnly": True}
    )
    pod_spec.setdefault("volumes", []).append(
        {
            "name": SCENARIO_VOLUME,
            "configMap": {"name": scenario.config_map_ref.name, "defaultMode": 0o444},
        }
    )


def build_client_rbac(run: RunRef, steps: Sequence[Step] = ()) -> list[dict[str, Any]]:
    """The clients' identity: it may create and replace ConfigMaps in this namespace (the
    result sink; Kubernetes cannot restrict `create` by name), and read and patch exactly the
    start barriers of the run's steps, nothing else."""
    meta: Mapping[str, Any] = {
        "namespace": run.namespace,
        "labels": {"app.kubernetes.io/managed-by": "mongobench", RUN_LABEL: run.name},
        "ownerReferences": [run.owner_reference],
    }
    name = run.service_account
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, **meta}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, **meta},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]},
                *(
                    [
                        {
                            "apiGroups": [""],
                            "resources": ["configmaps"],
                            "verbs": ["get", "patch"],
                            "resourceNames": [barrier_name(run, step) for step in steps],
                        }
                    ]
                    if steps
                    else []
                ),
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": run.namespace}],
        },
    ]
