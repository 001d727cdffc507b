"""Conditions and Event reasons of MongoCluster and BenchmarkRun: the one place that says what
each means, and the pure functions that set them (metav1.Condition) in status dicts.

Code writes these constants, never string literals; `kubectl describe` readers and alerting
rules read the same names. `CONDITIONS` documents every condition type with its reasons, and
`EVENT_REASONS` every Event reason; a unit test keeps the constants and the documentation equal.

lastTransitionTime changes only when a condition's status changes, as the API conventions ask,
so a reconcile that observes nothing new writes nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mongobench.clock import rfc3339, wall
from mongobench_results import duet

ConditionStatus = Literal["True", "False", "Unknown"]
TRUE: ConditionStatus = "True"
FALSE: ConditionStatus = "False"
UNKNOWN: ConditionStatus = "Unknown"

# Event types, and an Event the controllers decide to post: (type, reason, message).
EventType = Literal["Normal", "Warning"]
NORMAL: EventType = "Normal"
WARNING: EventType = "Warning"
Event = tuple[EventType, str, str]

# --- condition types -------------------------------------------------------------------------
READY = "Ready"
PROVISIONED = "Provisioned"
CONFIGURED = "Configured"
UPDATED = "Updated"
STORAGE_RESIZED = "StorageResized"
PLACEMENT_FEASIBLE = "PlacementFeasible"
CA_SECRET_WATCHED = "CASecretWatched"  # noqa: S105 - a condition type
SUCCEEDED = "Succeeded"
CLUSTER_READY = "ClusterReady"
SCENARIO_READY = "ScenarioReady"
PROGRESSING = "Progressing"
CPU_COLLECTED = "CPUCollected"
RESOURCES_COMPLETE = "ResourcesComplete"
ARCHIVED = "Archived"
TARGET_MET = "TargetMet"
REGRESSED = "Regressed"
TRIALS_VALID = "TrialsValid"
# A Duet experiment's pairs: ran together, whole, neither side starved (reasons: results.duet).
DUET_VALID = "DuetValid"
QUEUED = "Queued"
PROFILED = "Profiled"

# --- reasons shared by both kinds ---------------------------------------------------------------
INVALID_SPEC = "InvalidSpec"
OBJECT_REJECTED = "ObjectRejected"

# --- MongoCluster reasons -----------------------------------------------------------------------
# Ready's reason is the phase (PHASE_* below) unless the spec was refused.
PHASE_PENDING = "Pending"
PHASE_PROVISIONING = "Provisioning"
PHASE_INITIALIZING = "Initializing"
PHASE_READY = "Ready"
PHASE_DEGRADED = "Degraded"
PHASE_SCALING = "Scaling"
PHASE_DELETING = "Deleting"
PHASE_FAILED = "Failed"
PODS_READY = "PodsReady"
PODS_NOT_READY = "PodsNotReady"
WIRED = "Wired"
WIRING = "Wiring"
CONFIGURATION_FAILED = "Failed"
ROLLING_RESTART = "RollingRestart"
REMOVING_SHARDS = "RemovingShards"
CURRENT = "Current"
SIZE_MATCHES = "SizeMatches"
EXPANDING = "Expanding"
NOT_EXPANDABLE = "NotExpandable"
ENOUGH_NODES = "EnoughNodes"
NOT_ENOUGH_NODES = "NotEnoughNodes"
PODS_PLACED = "Placed"
LABELLED = "Labelled"
LABEL_MISSING = "LabelMissing"

# --- BenchmarkRun reasons -----------------------------------------------------------------------
RUN_SUCCEEDED = "Succeeded"
RUN_FAILED = "Failed"
CLUSTER_IS_READY = "Ready"
CLUSTER_NOT_READY = "NotReady"
CLUSTER_NOT_FOUND = "NotFound"
CLUSTER_DELETED = "ClusterDeleted"
DATABASE_NOT_WRITABLE = "DatabaseNotWritable"
SCENARIO_FOUND = "Found"
SCENARIO_CONFIGMAP_NOT_FOUND = "ConfigMapNotFound"
SCENARIO_KEY_NOT_FOUND = "KeyNotFound"
MONGODB_UNAVAILABLE = "MongoDBUnavailable"
CPU_COLLECTED_ALL = "Collected"
CPU_NOT_CONFIGURED = "NotConfigured"
PROMETHEUS_UNAVAILABLE = "PrometheusUnavailable"
WINDOW_INVALID = "WindowInvalid"
METRICS_COMPLETE = "Complete"
METRICS_MISSING = "MetricsMissing"
TRIALS_ALL_VALID = "AllValid"
TRIALS_SOME_INVALID = "SomeInvalid"
# Profiled (spec.profiler): the slow operations of each measured step.
PROFILER_CAPTURED = "Captured"
PROFILER_UNAVAILABLE = "ProfilerUnavailable"
# Queued (one run at a time on a target, benchmarkrun/decide/queue.py).
QUEUED_TARGET_BUSY = "TargetBusy"
QUEUED_SAME_DATA = "SameData"
QUEUED_TARGET_FREE = "TargetFree"
ARCHIVE_COMPLETE = "Complete"
ARCHIVE_IN_PROGRESS = "InProgress"
ARCHIVE_UPLOAD_FAILED = "UploadFailed"
ARCHIVE_NOT_CONFIGURED = "NotConfigured"
# TargetMet (adaptive repetitions: spec.repeatUntil), BenchmarkRun and BenchmarkExperiment.
TARGET_REACHED = "Reached"
TARGET_NOT_REACHED = "NotReached"
TARGET_MEASURING = "Measuring"
# Regressed (spec.history), BenchmarkExperiment.
REGRESSION_FOUND = "ChangePoint"
NO_REGRESSION = "NoChangePoint"
ACKNOWLEDGED = "Acknowledged"
HISTORY_UNAVAILABLE = "HistoryUnavailable"
# DuetValid (order Duet), BenchmarkExperiment: the results library judges the pairs.
DUET_ALL_PAIRED = duet.ALL_PAIRED
DUET_NOT_PAIRED = duet.NOT_PAIRED
DUET_NOT_TOGETHER = duet.NOT_TOGETHER
DUET_SHORT_SIDE = duet.SHORT_SIDE
DUET_STARVED = duet.STARVED

# --- phases (status.phase) of a BenchmarkRun (and a BenchmarkExperiment: Pending, Running and the
# RUN_SUCCEEDED/RUN_FAILED above), and of a run's steps (status.steps[].phase) -------------------
RUN_QUEUED = "Queued"
RUN_PREPARING = "Preparing"
RUN_LOADING = "Loading"
RUN_RUNNING = "Running"
RUN_COLLECTING = "Collecting"
STEP_PENDING = "Pending"
STEP_RUNNING = "Running"
STEP_SUCCEEDED = "Succeeded"
STEP_FAILED = "Failed"
STEP_SKIPPED = "Skipped"


@dataclass(frozen=True)
class ConditionDoc:
    type: str
    kinds: tuple[str, ...]
    meaning: str  # what True says
    reasons: Mapping[str, str]  # reason -> when it is set


_REFUSED = {
    INVALID_SPEC: (
        "the spec (or metadata.name) cannot be used; the message names the field. The operator "
        "stops working on the object until the spec changes; deletion still works"
    ),
    OBJECT_REJECTED: (
        "the apiserver refused an object the operator built from the spec (HTTP 422); the "
        "message is the apiserver's. Treated like InvalidSpec"
    ),
}

CONDITIONS: tuple[ConditionDoc, ...] = (
    ConditionDoc(
        READY,
        ("MongoCluster",),
        "every member is ready and wired: benchmarks may start",
        {
            PHASE_PENDING: "objects are being created",
            PHASE_PROVISIONING: "waiting for pods",
            PHASE_INITIALIZING: "wiring replica sets, shards and users",
            PHASE_READY: "ready",
            PHASE_DEGRADED: "some members were ready once and are not now",
            PHASE_SCALING: "the cluster's shape is changing",
            PHASE_DELETING: "the cluster is being deleted",
            PHASE_FAILED: "MongoDB refused a configuration step (see Configured)",
            **_REFUSED,
        },
    ),
    ConditionDoc(
        PROVISIONED,
        ("MongoCluster",),
        "every mongod (and mongos) pod is ready",
        {PODS_READY: "all pods ready", PODS_NOT_READY: "the message counts the ready ones"},
    ),
    ConditionDoc(
        CONFIGURED,
        ("MongoCluster",),
        "replica sets, shards and users are configured in MongoDB",
        {
            WIRED: "configured",
            WIRING: "a step is under way or waiting (the message says which)",
            CONFIGURATION_FAILED: "MongoDB refused a step for good; the message is its error",
        },
    ),
    ConditionDoc(
        UPDATED,
        ("MongoCluster",),
        "every member runs the current pod template and the shard count is reached",
        {
            CURRENT: "up to date",
            ROLLING_RESTART: "members restart one at a time, primary last",
            REMOVING_SHARDS: "shards drain before their objects are deleted",
        },
    ),
    ConditionDoc(
        STORAGE_RESIZED,
        ("MongoCluster",),
        "the volume claims were asked to grow to spec.storage.size",
        {
            SIZE_MATCHES: "every claim requests spec.storage.size",
            EXPANDING: "claims asked to grow",
            NOT_EXPANDABLE: "the StorageClass forbids expansion; claims keep their size",
        },
    ),
    ConditionDoc(
        PLACEMENT_FEASIBLE,
        ("MongoCluster",),
        "the nodes can hold the pods the hard placement rules (spec.placement.preset, an "
        "antiAffinity Required) keep apart or together; absent without such rules",
        {
            PODS_PLACED: "every database pod is ready: placed as the rules say",
            ENOUGH_NODES: "enough nodes qualify (by labels, taints, cordons; capacity is the "
            "scheduler's to judge)",
            NOT_ENOUGH_NODES: "fewer nodes qualify than the rules need: the message says how "
            "many of each; the pods stay Pending until nodes are added or the rules relaxed",
        },
    ),
    ConditionDoc(
        CA_SECRET_WATCHED,
        ("MongoCluster",),
        "the operator watches the CA Secret named in spec.tls.caSecretName (it carries the label "
        "mongobench.io/watch=true), so a new CA in it is taken up at once; absent without a CA "
        "Secret",
        {
            LABELLED: "the Secret carries the label",
            LABEL_MISSING: "the Secret lacks the label: it is still read at each sync, but its "
            "changes wake nothing; the message says how to label it (the operator never does)",
        },
    ),
    ConditionDoc(
        SUCCEEDED,
        ("BenchmarkRun", "BenchmarkExperiment"),
        "every step (an experiment: every cell, or every cell the policy went on with) succeeded",
        {
            RUN_SUCCEEDED: "all steps succeeded; an experiment: it ended (failed cells say so "
            "when onCellFailure is Continue)",
            RUN_FAILED: "a step failed; an experiment: a cell failed and onCellFailure is Stop",
            **_REFUSED,
        },
    ),
    ConditionDoc(
        CLUSTER_READY,
        ("BenchmarkRun",),
        "the target MongoCluster is Ready",
        {
            CLUSTER_IS_READY: "Ready",
            CLUSTER_NOT_READY: "not Ready yet; the run waits (or goes on if started)",
            CLUSTER_NOT_FOUND: "no such MongoCluster; the run waits",
            CLUSTER_DELETED: "deleted during the run; the run fails, results so far kept",
            DATABASE_NOT_WRITABLE: "the benchmark user may not write spec.database",
        },
    ),
    ConditionDoc(
        QUEUED,
        ("BenchmarkRun",),
        "the run waits for its target (the MongoCluster, or the uriSecretRef's Secret name and "
        "key): a target runs one run at a time, first created first served (creationTimestamp, "
        "then the name); the message names the run ahead and the place in line, status.queue "
        "holds both; absent for a run that never waited",
        {
            QUEUED_TARGET_BUSY: "a run ahead holds or waits for the target, and it or this run is "
            "concurrency Exclusive",
            QUEUED_SAME_DATA: "both are concurrency Shared but use the same database and "
            "collection: this one waits (is not refused) until the other ends",
            QUEUED_TARGET_FREE: "it waited and started once nothing ahead blocked it (False)",
        },
    ),
    ConditionDoc(
        SCENARIO_READY,
        ("BenchmarkRun",),
        "every user Locust scenario the run uses (load.scenario, workloads[].scenario) is in its "
        "ConfigMap (absent for runs without scenarios)",
        {
            SCENARIO_FOUND: "every scenario's ConfigMap and key exist",
            SCENARIO_CONFIGMAP_NOT_FOUND: (
                "a scenario's ConfigMap does not exist (the message names it and its user): the "
                "run waits for it up to a minute after its creation, then fails; a started run "
                "fails before the step that needs it"
            ),
            SCENARIO_KEY_NOT_FOUND: (
                "the ConfigMap exists without the scenario's key (the message lists its keys); "
                "waits and fails as ConfigMapNotFound"
            ),
        },
    ),
    ConditionDoc(
        PROGRESSING,
        ("BenchmarkRun",),
        "steps advance",
        {MONGODB_UNAVAILABLE: "MongoDB cannot be reached for a data step; retried"},
    ),
    ConditionDoc(
        CPU_COLLECTED,
        ("BenchmarkRun",),
        "per-node CPU was collected for every step so far",
        {
            CPU_COLLECTED_ALL: "collected",
            CPU_NOT_CONFIGURED: "no Prometheus URL is configured",
            PROMETHEUS_UNAVAILABLE: "Prometheus did not answer for a step",
            WINDOW_INVALID: "a step's window cannot be queried",
        },
    ),
    ConditionDoc(
        PROFILED,
        ("BenchmarkRun",),
        "with spec.profiler: MongoDB's profiler recorded every measured step so far on every "
        "data-bearing mongod (status.steps[].slowOperations); never fails a run",
        {
            PROFILER_CAPTURED: "level 1 before each measured step, its slowest operations read",
            PROFILER_UNAVAILABLE: (
                "a server refused the profile command or system.profile (FerretDB has no "
                "profiler; a user without dbAdminAnyDatabase may not), or the run targets a "
                "uriSecretRef (no administrator credentials): the message says which; the "
                "run goes on without slow operations"
            ),
        },
    ),
    ConditionDoc(
        TRIALS_VALID,
        ("BenchmarkRun",),
        "every measured step judged so far is a valid trial (spec.validity): not client-bound, "
        "no noisy node, steady, errors under the threshold, consistent with Little's law; the "
        "message counts the invalid ones and the re-runs; never fails a run",
        {
            TRIALS_ALL_VALID: "every trial judged so far is valid",
            TRIALS_SOME_INVALID: "some trials are invalid (status.steps[].validity says why)",
        },
    ),
    ConditionDoc(
        RESOURCES_COMPLETE,
        ("BenchmarkRun",),
        "every metric of the resource profile (CPU, disk, network, memory, per node and per "
        "mongod container) had series for every step so far; never fails a run",
        {
            METRICS_COMPLETE: "every metric, every step",
            METRICS_MISSING: "a step lacked some series (which ones); stays False once it did",
        },
    ),
    ConditionDoc(
        ARCHIVED,
        ("BenchmarkRun",),
        "the run ended and its steps and final manifest are in the archive (absent when no "
        "archive is configured)",
        {
            ARCHIVE_COMPLETE: "everything uploaded, the final manifest written",
            ARCHIVE_IN_PROGRESS: (
                "uploads follow the steps as they finish; the message says how far"
            ),
            ARCHIVE_UPLOAD_FAILED: (
                "the store could not be reached or refused; the message says why, what is "
                "missing and when the next attempt is due (the run itself goes on)"
            ),
            ARCHIVE_NOT_CONFIGURED: (
                "spec.archive names no bucket and the operator has no default archive"
            ),
        },
    ),
    ConditionDoc(
        TARGET_MET,
        ("BenchmarkRun", "BenchmarkExperiment"),
        "adaptive repetitions (spec.repeatUntil): the confidence interval of the named metric's "
        "mean is narrow enough in every workload (an experiment: every cell's workloads), "
        "counting valid trials only; absent without repeatUntil. status.repetitions has the "
        "figures per workload or cell",
        {
            TARGET_REACHED: "every interval is narrow enough; the message counts the valid "
            "trials each needed",
            TARGET_NOT_REACHED: "no more trials come and some interval stayed wider than asked "
            "(False): maxRepetitions ran out, or the run (a cell) failed first; the message "
            "names the workloads or cells",
            TARGET_MEASURING: "still repeating (Unknown): the message names what is not done",
        },
    ),
    ConditionDoc(
        DUET_VALID,
        ("BenchmarkExperiment",),
        "a Duet experiment ended: whether every pair (a round's measured step on both sides) "
        "is fit for the paired comparison, and the smaller side's share of the pair's CPU; "
        "invalid pairs are left out of status.comparison.duet; absent for other orders",
        {
            DUET_ALL_PAIRED: "every pair ran together, whole and unstarved (True); the message "
            "says the smallest CPU share of a side",
            DUET_NOT_PAIRED: "a side failed or reported no per-second series (False), or no "
            "pair exists yet (Unknown)",
            DUET_NOT_TOGETHER: "the sides' clients started more than 1 s apart (False)",
            DUET_SHORT_SIDE: "one side ran fewer intervals than the other (False): it stopped "
            "early",
            DUET_STARVED: "the smaller side had under a fifth of the pair's CPU (False): the "
            "other side starved it",
        },
    ),
    ConditionDoc(
        REGRESSED,
        ("BenchmarkExperiment",),
        "the experiment ended and, in the history it names (spec.history: an archive and the "
        "series keys), its runs sit after a change for the worse (E-Divisive means, "
        "mongobench_results.history: a lower throughput, a higher latency or cost) that still "
        "holds and that no acknowledgement silences; absent without spec.history. "
        "status.history lists each change, the acknowledged ones apart",
        {
            REGRESSION_FOUND: "the message names the series, the change of the mean and the run "
            "before it (acknowledged changes apart, after 'also')",
            ACKNOWLEDGED: "every change for the worse its runs sit after is acknowledged "
            "(False); the message names each with the reason and who",
            NO_REGRESSION: "no series has a change for the worse at this experiment's runs (False)",
            HISTORY_UNAVAILABLE: "the history could not be judged (Unknown): the archive could "
            "not be read, or this operator lacks the history extra; the message says which",
        },
    ),
)

# What each phase means, by the kind (or part) whose status.phase it is.
# MongoCluster status.rotation.phase (credential rotation, mongocluster/decide/rotation.py).
ROTATION_WAITING = "Waiting"  # asked for: runs hold their next Job; waits for running clients
ROTATION_ROTATING = "Rotating"  # new passwords staged in the Secrets; MongoDB being updated
ROTATION_COMPLETED = "Completed"  # MongoDB and the Secrets hold the new passwords only
ROTATION_REFUSED = "Refused"  # nothing asked for could be rotated (the message says why)

# MongoCluster status.tls.phase (a roll between TLS modes, mongocluster/decide/tls_roll.py).
TLS_ROLLING = "Rolling"  # members restart one --tlsMode step at a time (status.tls.mode)
TLS_ROLLED = "Completed"  # every member runs the spec's mode; clients dial as it needs
# MongoCluster status.tls.caRotation.phase (a new CA without an outage,
# mongocluster/decide/tls_ca.py).
CA_BUNDLING = "Bundling"  # the trust bundle holds the new and the old CA; members restart onto it
CA_REISSUING = "Reissuing"  # leaf certificates reissued from the new CA; members rotate them
CA_PRUNING = "Pruning"  # the old CA leaves the trust bundle; members restart onto the new alone
CA_COMPLETED = "Completed"  # only the new CA is trusted and signs every certificate

# Kubernetes' own phases of a pod that ran to its end (not the operator's words).
POD_ENDED_PHASES = ("Succeeded", "Failed")

PHASES: Mapping[str, Mapping[str, str]] = {
    "MongoCluster": {
        PHASE_PENDING: "none of the cluster's StatefulSets exists yet",
        PHASE_PROVISIONING: "pods not all ready, before the cluster was first Ready",
        PHASE_INITIALIZING: "pods ready; replica sets, shards and users being wired",
        PHASE_READY: "everything ready and wired",
        PHASE_DEGRADED: "pods not all ready after the cluster was Ready",
        PHASE_SCALING: "the cluster's shape is changing after it was Ready",
        PHASE_DELETING: "the object is being deleted",
        PHASE_FAILED: "the spec cannot be used, or MongoDB refused a step for good",
    },
    "BenchmarkRun": {
        PHASE_PENDING: "waiting for its cluster (or a scenario) before the start",
        RUN_QUEUED: "waiting for its target: another run on it is ahead (the Queued condition "
        "says which, and the place in line)",
        RUN_PREPARING: "the collection is being recreated (and sharded)",
        RUN_LOADING: "a load step runs",
        RUN_RUNNING: "a warm-up or a measured run step runs",
        RUN_COLLECTING: "a step's results are collected, or the run cleans up",
        RUN_SUCCEEDED: "every step succeeded",
        RUN_FAILED: "a step failed, or the run could not start",
    },
    "BenchmarkRun step": {
        STEP_PENDING: "not started",
        STEP_RUNNING: "its Job runs",
        STEP_SUCCEEDED: "done, its results collected",
        STEP_FAILED: "failed; the run fails with it",
        STEP_SKIPPED: "not run: repeatUntil's target was met for its workload before it",
    },
    "MongoCluster rotation": {
        ROTATION_WAITING: "asked for: runs start no new step; waits for running clients",
        ROTATION_ROTATING: "new passwords staged in the Secrets; MongoDB being updated",
        ROTATION_COMPLETED: "MongoDB and the Secrets hold the new passwords; the old are refused",
        ROTATION_REFUSED: "nothing asked for could be rotated (the message says why)",
    },
    "MongoCluster tls": {
        TLS_ROLLING: "members restart one --tlsMode step at a time (status.tls.mode)",
        TLS_ROLLED: "every member runs the spec's mode; clients dial as it needs",
    },
    "MongoCluster CA rotation": {
        CA_BUNDLING: "the trust bundle holds the new and the old CA; members restart onto it",
        CA_REISSUING: "leaf certificates reissued from the new CA; members rotate them",
        CA_PRUNING: "the old CA leaves the trust bundle; members restart onto the new alone",
        CA_COMPLETED: "only the new CA is trusted and signs every certificate",
    },
    "BenchmarkExperiment": {
        PHASE_PENDING: "nothing created yet (also a cell none of whose runs started)",
        RUN_RUNNING: "cells run",
        RUN_SUCCEEDED: "every cell done",
        RUN_FAILED: "a cell failed and onCellFailure is Stop",
    },
}

# --- Event reasons (kubectl describe, `kubectl get events`) -------------------------------------
EVENT_PROVISIONING = "Provisioning"
EVENT_READY = "Ready"
EVENT_MONGODB_ERROR = "MongoDBError"
EVENT_NOT_EXPANDABLE = "NotExpandable"
EVENT_NOT_ENOUGH_NODES = "NotEnoughNodes"
EVENT_FCV_SET = "FeatureCompatibilityVersionSet"
EVENT_SHARD_DRAINING = "ShardDraining"
EVENT_SHARD_REMOVED = "ShardRemoved"
EVENT_IN_USE = "InUse"
EVENT_RETAINED = "Retained"
EVENT_DATA_DROPPED = "DataDropped"
EVENT_DATA_NOT_DROPPED = "DataNotDropped"
EVENT_DATA_KEPT = "DataKept"
EVENT_STARTED = "Started"
EVENT_QUEUED = "Queued"
EVENT_PREPARED = "Prepared"
EVENT_STEP_STARTED = "StepStarted"
EVENT_STEP_SUCCEEDED = "StepSucceeded"
EVENT_STEP_FAILED = "StepFailed"
EVENT_DISTRIBUTION = "Distribution"
EVENT_DISTRIBUTION_UNKNOWN = "DistributionUnknown"
EVENT_DISTRIBUTION_NOT_PUBLISHED = "DistributionNotPublished"
EVENT_SLOW_OPERATIONS_UNKNOWN = "SlowOperationsUnknown"
EVENT_PROFILER_NOT_RESET = "ProfilerNotReset"
EVENT_DISK_USE_UNKNOWN = "DiskUseUnknown"
EVENT_CPU_MISSING = "CPUMissing"
EVENT_CPU_RESOLUTION = "CPUResolution"
EVENT_TRIAL_INVALID = "TrialInvalid"
EVENT_ARCHIVED = "Archived"
EVENT_ARCHIVE_FAILED = "ArchiveFailed"
EVENT_ARCHIVE_NOT_CONFIGURED = "ArchiveNotConfigured"
EVENT_CELL_CLUSTER_CREATED = "CellClusterCreated"
EVENT_CELL_CLUSTER_DELETED = "CellClusterDeleted"
EVENT_CELL_CLUSTER_KEPT = "CellClusterKept"
EVENT_CELL_RUN_CREATED = "CellRunCreated"
EVENT_CELL_FAILED = "CellFailed"
EVENT_EXPERIMENT_FINISHED = "ExperimentFinished"
EVENT_REPETITIONS_SKIPPED = "RepetitionsSkipped"
EVENT_ROUND_ADDED = "RoundAdded"
EVENT_ROTATION_REQUESTED = "RotationRequested"
EVENT_ROTATION_STARTED = "RotationStarted"
EVENT_KEYFILE_ROLLING = "KeyfileRolling"
EVENT_EXPORTER_RESTARTING = "ExporterRestarting"
EVENT_CREDENTIALS_ROTATED = "CredentialsRotated"
EVENT_ROTATION_REFUSED = "RotationRefused"
EVENT_TLS_MODE_ROLLING = "TLSModeRolling"
EVENT_TLS_ROLLED = "TLSRolled"
EVENT_CERTIFICATES_ROTATED = "CertificatesRotated"
EVENT_CA_ROTATING = "CARotating"

EVENT_REASONS: Mapping[str, str] = {
    INVALID_SPEC: "Warning, once per distinct message: see the InvalidSpec condition reason",
    OBJECT_REJECTED: "Warning, once per distinct message: see the ObjectRejected reason",
    EVENT_PROVISIONING: "MongoCluster: its objects were created",
    EVENT_READY: "MongoCluster: all members ready and wired",
    EVENT_MONGODB_ERROR: "Warning: MongoDB refused a configuration step",
    EVENT_NOT_EXPANDABLE: "Warning: volume claims cannot grow (StorageClass)",
    EVENT_NOT_ENOUGH_NODES: "Warning: fewer nodes qualify than the placement rules need",
    EVENT_FCV_SET: "featureCompatibilityVersion was set",
    EVENT_SHARD_DRAINING: "removeShard started draining a shard",
    EVENT_SHARD_REMOVED: "a drained shard's objects were deleted",
    EVENT_IN_USE: "Warning: deletion waits for a BenchmarkRun using the cluster",
    EVENT_RETAINED: "deletion kept the volume claims and credential Secrets",
    EVENT_DATA_DROPPED: "BenchmarkRun: the benchmark collection was dropped",
    EVENT_DATA_NOT_DROPPED: "Warning: the collection could not be dropped (the message says why)",
    EVENT_DATA_KEPT: "BenchmarkRun deleted with a spec that does not parse: data left alone",
    EVENT_STARTED: "BenchmarkRun: the plan is made (the message counts its steps)",
    EVENT_QUEUED: "BenchmarkRun: it waits for its target, or its place in line changed (the "
    "message names the run ahead and the place)",
    EVENT_PREPARED: "BenchmarkRun: the collection was recreated (and sharded)",
    EVENT_STEP_STARTED: "BenchmarkRun: a step's Job was created",
    EVENT_STEP_SUCCEEDED: "BenchmarkRun: a step's results were collected (its throughput)",
    EVENT_STEP_FAILED: "Warning: a step failed; the run fails with it",
    RUN_SUCCEEDED: "BenchmarkRun: every step succeeded",
    RUN_FAILED: "Warning: the run failed (the message says which step and why)",
    EVENT_DISTRIBUTION: "BenchmarkRun: documents per shard after a load step",
    EVENT_DISTRIBUTION_UNKNOWN: "Warning: the shard distribution could not be measured",
    EVENT_DISTRIBUTION_NOT_PUBLISHED: "Warning: the distribution could not be written",
    PROFILER_UNAVAILABLE: "Warning: a server refused the profiler (spec.profiler); the run goes on",
    EVENT_SLOW_OPERATIONS_UNKNOWN: "Warning: a step's slow operations could not be read",
    EVENT_PROFILER_NOT_RESET: (
        "Warning: the profiler could not be set back to level 0 (the message says where)"
    ),
    EVENT_DISK_USE_UNKNOWN: "Warning: a step's disk use per collection could not be measured",
    EVENT_CPU_MISSING: "Warning: a step's CPU could not be collected",
    EVENT_CPU_RESOLUTION: (
        "BenchmarkRun: the PodMonitor of its finer CPU resolution was created; Warning: it "
        "could not be (no PodMonitor API), so CPU keeps Prometheus' interval"
    ),
    EVENT_TRIAL_INVALID: "Warning: a measured step is an invalid trial (why; re-run or not)",
    EVENT_ARCHIVED: "BenchmarkRun: every step and the final manifest are in the archive",
    EVENT_ARCHIVE_FAILED: "Warning: an upload to the archive failed (first failure only)",
    EVENT_ARCHIVE_NOT_CONFIGURED: "Warning: the run asks for an archive nobody configured",
    EVENT_CELL_CLUSTER_CREATED: "BenchmarkExperiment: it created a cell's MongoCluster",
    EVENT_CELL_CLUSTER_DELETED: (
        "BenchmarkExperiment: it deleted a cell's MongoCluster (cells done, or room for the next)"
    ),
    EVENT_CELL_CLUSTER_KEPT: "BenchmarkExperiment: clusterPolicy kept a cell's MongoCluster",
    EVENT_CELL_RUN_CREATED: "BenchmarkExperiment: it created a (cell, repetition)'s BenchmarkRun",
    EVENT_CELL_FAILED: "Warning: BenchmarkExperiment: a cell's cluster failed (message: how)",
    EVENT_EXPERIMENT_FINISHED: "BenchmarkExperiment: every cell done (or stopped at a failure)",
    EVENT_REPETITIONS_SKIPPED: (
        "BenchmarkRun: a workload is done (repeatUntil): its remaining repetitions are skipped"
    ),
    EVENT_ROUND_ADDED: (
        "BenchmarkExperiment: repeatUntil added a round (a cell's interval is still too wide)"
    ),
    EVENT_ROTATION_REQUESTED: "MongoCluster: a credential rotation was asked for (annotation)",
    EVENT_ROTATION_STARTED: "MongoCluster: no client runs a step; new credentials are staged",
    EVENT_KEYFILE_ROLLING: "MongoCluster: the keyfile changed its keys; members restart in turn",
    EVENT_EXPORTER_RESTARTING: (
        "MongoCluster: the exporter's password rotated; members restart for their sidecars"
    ),
    EVENT_CREDENTIALS_ROTATED: "MongoCluster: MongoDB and the Secrets hold the new passwords",
    EVENT_ROTATION_REFUSED: "Warning: a rotation asked for something this operator cannot rotate",
    EVENT_TLS_MODE_ROLLING: "MongoCluster: members restart with the next --tlsMode (one step)",
    EVENT_TLS_ROLLED: "MongoCluster: every member runs the spec's --tlsMode",
    EVENT_CERTIFICATES_ROTATED: (
        "MongoCluster: renewed certificates reached the members (rotateCertificates or a restart)"
    ),
    EVENT_CA_ROTATING: "MongoCluster: a new CA moves into the trust bundle, the certificates, out",
}


def now_rfc3339(*, precise: bool = False) -> str:
    """Now in RFC 3339: a condition's lastTransitionTime when its caller passed no `now`."""
    return rfc3339(wall(), precise=precise)


def set_condition(
    conditions: Iterable[Mapping[str, Any]] | None,
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str = "",
    *,
    generation: int | None = None,
    now: str | None = None,
) -> list[dict[str, Any]]:
    """A copy of `conditions` with `type_` set; other conditions keep their order and values."""
    out: list[dict[str, Any]] = []
    found = False
    for existing in conditions or ():
        if existing.get("type") != type_:
            out.append(dict(existing))
            continue
        found = True
        changed = existing.get("status") != status
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": (now or now_rfc3339())
            if changed
            else existing.get("lastTransitionTime") or now or now_rfc3339(),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    if not found:
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now or now_rfc3339(),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    return out


def get_condition(
    conditions: Iterable[Mapping[str, Any]] | None, type_: str
) -> Mapping[str, Any] | None:
    for condition in conditions or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_true(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> bool:
    condition = get_condition(conditions, type_)
    return condition is not None and condition.get("status") == TRUE


def refused(status: Mapping[str, Any], type_: str, generation: int) -> bool:
    """Whether `type_` says this generation's spec was refused (InvalidSpec, ObjectRejected):
    timers stop for it, and nothing retries until the spec changes."""
    condition = get_condition(status.get("conditions"), type_)
    return (
        condition is not None
        and condition.get("reason") in _REFUSED
        and condition.get("observedGeneration") == generation
    )
