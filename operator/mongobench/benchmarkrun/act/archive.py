"""Results that leave the cluster: a BenchmarkRun's documents uploaded to its archive.

After each step the run's client documents (read back from their ConfigMaps), the merged step
document, the step's resource profile (the CPU figures of status and the raw per-node series
behind them, fetched again from Prometheus), the cluster snapshot and the run's provenance
(benchmarkrun.build.provenance: what ran, observed again at each upload) go to
`<root>/<namespace>/<name>/<uid>/` (layout: mongobench_archive.layout), then the manifest, last.
The archive never makes a run fail or wait: a failed upload sets `Archived=False` with the reason
and what is missing, and is tried again with a doubling backoff; deleting a run never waits for
it. Idempotent across operator restarts: keys are deterministic, objects a manifest lists are
skipped, a step counts as archived only once a written manifest lists it.

The planning is pure (settings, pending steps, documents, status); `sync` does the I/O.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mongobench.api.benchmarkrun import Archive, BenchmarkRunSpec, cluster_of
from mongobench.api.schema import SpecError, from_dict
from mongobench.benchmarkrun.act import facts, orchestrate
from mongobench.benchmarkrun.build import jobs, provenance
from mongobench.benchmarkrun.decide.action import TERMINAL
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.benchmarkrun.decide.reruns import with_reruns
from mongobench.benchmarkrun.telemetry.cpu import CpuUnavailable, node_series
from mongobench.benchmarkrun.telemetry.cpu_status import node_mapping
from mongobench.clock import Clock, parse_rfc3339, rfc3339
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import ConditionStatus, set_condition
from mongobench_archive import ArchiveError, Root, RunWriter, layout, open_root
from mongobench_results.configmaps import assemble
from mongobench_results.merge import merge_documents
from mongobench_results.provenance import summary as provenance_summary

if TYPE_CHECKING:  # the pool is the caller's
    from mongobench.mongo.pool import AdminPool

log = logging.getLogger("mongobench.archive")

ARCHIVED_KINDS = ("load", "warmup", "probe", "run")  # steps with client documents
FINISHED = (cond.STEP_SUCCEEDED, cond.STEP_FAILED)
# Step fields that describe the resources it used: cpu, and disk, network and memory (resources),
# the CPU of its nodes' other pods (neighbours); and the verdict on the trial they support.
RESOURCE_KEYS = ("cpu", "resources", "neighbours", "validity")
STEP_FIELDS = (
    *("index", "kind", "label", "workload", "repetition", "attempt", "phase", "job"),
    *("startTime", "completionTime"),
)
CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
# One attempt per sync, short timeouts: retries are the backoff's job, and a slow store must not
# hold a handler thread for long.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0


class NotConfigured(Exception):
    """The run asks for an archive that names no bucket, and there is no default."""


@dataclass(frozen=True)
class Settings:
    """Where one run's archive goes, resolved from spec.archive and the operator default."""

    url: str  # the root: s3://BUCKET/PREFIX or a folder
    endpoint: str | None = None
    region: str | None = None
    credentials_secret: str | None = None
    # The operator's own credentials (environment) go only to the operator's default store.
    operator_credentials: bool = True


def resolve(spec: Mapping[str, Any], config: OperatorConfig) -> Settings | None:
    """Pure: the run's archive settings; None when it has none. NotConfigured when the spec
    asks for one that names no bucket and the operator has no default."""
    try:
        own = from_dict(Archive, spec.get("archive"), "spec.archive") if "archive" in spec else None
    except SpecError as exc:
        raise NotConfigured(str(exc)) from None
    if own is not None and not own.enabled:
        return None
    default = layout.parse_location(config.archive_url) if config.archive_url else None
    if own is None:
        if default is None:
            return None
        return Settings(config.archive_url or "", config.archive_endpoint, config.archive_region)
    endpoint = own.endpoint or config.archive_endpoint
    region = own.region or config.archive_region
    if own.bucket is None and (default is None or default.scheme != "s3"):
        if default is None:
            raise NotConfigured(
                "spec.archive names no bucket and the operator has no default archive "
                "(MONGOBENCH_ARCHIVE_URL)"
            )
        # A folder default (development): a prefix is a subfolder.
        folder = default.url(own.prefix or "")
        return Settings(folder, None, None, own.credentials_secret, True)
    bucket = own.bucket or (default.bucket if default else "")
    prefix = own.prefix if own.prefix is not None else (default.prefix if default else "")
    url = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
    same_store = (
        default is not None
        and default.scheme == "s3"
        and default.bucket == bucket
        and endpoint == config.archive_endpoint
    )
    return Settings(url, endpoint, region, own.credentials_secret, same_store)


# --- what is pending (pure) --------------------------------------------------------------------


def finished_steps(status: Mapping[str, Any]) -> list[int]:
    """Indices of the finished steps that have documents to archive."""
    return [
        int(s["index"])
        for s in status.get("steps") or []
        if s.get("kind") in ARCHIVED_KINDS and s.get("phase") in FINISHED
    ]


def pending(spec: Mapping[str, Any], status: Mapping[str, Any], config: OperatorConfig) -> bool:
    """Pure, cheap (a timer filter): is there something to upload for this run?"""
    try:
        settings = resolve(spec, config)
    except NotConfigured:
        return _condition_reason(status) != cond.ARCHIVE_NOT_CONFIGURED  # say so once
    if settings is None or not status:
        return False
    record = status.get("archive") or {}
    uploaded = set(record.get("uploadedSteps") or [])
    if set(finished_steps(status)) - uploaded:
        return True
    return status.get("phase") in TERMINAL and not record.get("complete")


def due(status: Mapping[str, Any], now: datetime) -> bool:
    """Pure: is a backoff after a failed attempt over?"""
    nxt = (status.get("archive") or {}).get("nextAttempt")
    return not nxt or parse_rfc3339(nxt) <= now


def backoff(attempts: int, config: OperatorConfig) -> float:
    """Seconds before attempt `attempts + 1`, doubling from the base up to the maximum."""
    return float(
        min(config.archive_retry_max, config.archive_retry_base * 2 ** max(0, attempts - 1))
    )


def _condition_reason(status: Mapping[str, Any]) -> str | None:
    for c in status.get("conditions") or []:
        if c.get("type") == cond.ARCHIVED:
            return str(c.get("reason"))
    return None


def describe_steps(indices: Sequence[int]) -> str:
    """'steps 0-3, 5' for messages."""
    if not indices:
        return "no steps"
    ranges: list[str] = []
    ordered = sorted(indices)
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        ranges.append(f"{start}" if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ("step " if len(ordered) == 1 else "steps ") + ", ".join(ranges)


# --- the documents (pure) ----------------------------------------------------------------------


def cluster_document(
    status: Mapping[str, Any], cluster: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The target as it was at the start (status.clusterSnapshot) and, for a MongoCluster, its
    spec and status as of the first upload. Only Secret names ever appear in either."""
    doc: dict[str, Any] = {"snapshot": status.get("clusterSnapshot")}
    if cluster is not None:
        meta = cluster.get("metadata") or {}
        doc["mongoCluster"] = {
            "apiVersion": cluster.get("apiVersion"),
            "kind": cluster.get("kind"),
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "generation", "labels", "creationTimestamp")
                if k in meta
            },
            "spec": cluster.get("spec") or {},
            "status": cluster.get("status") or {},
        }
    return doc


def resources_document(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The step's resource profile as kept on the step, with the step's identity and window.
    Written for every archived step, last of its objects: it marks the step as archived."""
    doc: dict[str, Any] = {"step": {k: entry[k] for k in STEP_FIELDS if k in entry}}
    for key in RESOURCE_KEYS:
        doc[key] = entry.get(key)
    return doc


def archived_steps(listed: Mapping[str, Any]) -> set[int]:
    """Steps a manifest lists completely (their resources.json, written last, is listed)."""
    return {
        s.index
        for key in listed
        if (s := layout.parse_step_key(key)) is not None and s.kind == "resources"
    }


@dataclass
class Result:
    """One sync's outcome, turned into status by `status_patch`."""

    url: str
    uploaded: list[int] = field(default_factory=list)
    complete: bool = False
    error: str | None = None
    not_configured: bool = False
    provenance: dict[str, Any] | None = None  # its summary, for status


def status_patch(
    status: Mapping[str, Any],
    result: Result,
    now: datetime,
    config: OperatorConfig,
    generation: int | None = None,
) -> tuple[dict[str, Any], list[cond.Event]]:
    """Pure: the status patch (archive record, Archived condition) and the Events to emit."""
    before = dict(status.get("archive") or {})
    events: list[cond.Event] = []
    record: dict[str, Any] = {**before, "url": result.url}
    conditions = status.get("conditions")
    if result.not_configured:
        condition: tuple[ConditionStatus, str, str] = (
            cond.FALSE,
            cond.ARCHIVE_NOT_CONFIGURED,
            result.error or "",
        )
        record = {}
        events.append((cond.WARNING, cond.EVENT_ARCHIVE_NOT_CONFIGURED, result.error or ""))
    elif result.error is not None:
        attempts = int(before.get("attempts") or 0) + 1
        wait = backoff(attempts, config)
        record.update(attempts=attempts, nextAttempt=rfc3339(now + timedelta(seconds=wait)))
        # What is missing and whether the final manifest is due, both from the status this
        # patch is written against: the sync's own snapshot may predate the run's last steps.
        done = set(before.get("uploadedSteps") or [])
        missing = describe_steps([i for i in finished_steps(status) if i not in done])
        terminal = status.get("phase") in TERMINAL
        what = f"{missing} and the final manifest" if terminal else missing
        message = f"{result.error}; not archived: {what}; next attempt in {wait:g}s"
        condition = (cond.FALSE, cond.ARCHIVE_UPLOAD_FAILED, message)
        if attempts == 1:
            events.append((cond.WARNING, cond.EVENT_ARCHIVE_FAILED, message))
    else:
        record.update(
            uploadedSteps=sorted(result.uploaded),
            complete=result.complete,
            lastUpload=rfc3339(now),
            attempts=0,
            nextAttempt=None,  # merge patch: removes it
        )
        if result.complete:
            message = f"{describe_steps(result.uploaded)} and the final manifest at {result.url}"
            condition = (cond.TRUE, cond.ARCHIVE_COMPLETE, message)
            events.append((cond.NORMAL, cond.EVENT_ARCHIVED, message))
        else:
            message = f"{describe_steps(result.uploaded)} at {result.url}; more as steps finish"
            condition = (cond.FALSE, cond.ARCHIVE_IN_PROGRESS, message)
    status_, reason, message = condition
    new_conditions = set_condition(
        conditions, cond.ARCHIVED, status_, reason, message, generation=generation
    )
    patch: dict[str, Any] = {"conditions": new_conditions}
    if not result.not_configured:
        patch["archive"] = record
    if result.provenance is not None:
        patch["provenance"] = result.provenance
    return patch, events


# --- I/O ---------------------------------------------------------------------------------------


def _secret_credentials(kube: KubeApi, namespace: str, name: str) -> dict[str, str]:
    try:
        secret = kube.get("Secret", namespace, name)
    except ApiError as exc:
        raise ArchiveError(f"credentials Secret {name}: {exc.reason}") from None
    if secret is None:
        raise ArchiveError(f"credentials Secret {name} does not exist in namespace {namespace}")
    data = secret.get("data") or {}
    values = {k: base64.b64decode(data[k]).decode().strip() for k in CREDENTIAL_KEYS if k in data}
    for key in CREDENTIAL_KEYS[:2]:
        if not values.get(key):
            raise ArchiveError(f"credentials Secret {name} has no key {key}")
    return values


def open_archive(kube: KubeApi, settings: Settings, namespace: str) -> tuple[Root, list[str]]:
    """The archive root and the secret values that must never be stored in it."""
    own = [os.environ.get("AWS_SECRET_ACCESS_KEY", ""), os.environ.get("AWS_SESSION_TOKEN", "")]
    common: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "read_timeout": READ_TIMEOUT,
        "max_attempts": 1,
    }
    if settings.credentials_secret:
        creds = _secret_credentials(kube, namespace, settings.credentials_secret)
        root = open_root(
            settings.url,
            settings.endpoint,
            settings.region,
            access_key_id=creds["AWS_ACCESS_KEY_ID"],
            secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
            session_token=creds.get("AWS_SESSION_TOKEN"),
            **common,
        )
        secrets = [creds["AWS_SECRET_ACCESS_KEY"], creds.get("AWS_SESSION_TOKEN", ""), *own]
        return root, [s for s in secrets if s]
    root = open_root(
        settings.url,
        settings.endpoint,
        settings.region,
        anonymous=not settings.operator_credentials,
        **common,
    )
    return root, [s for s in own if s]


def cpu_series(entry: Mapping[str, Any], config: OperatorConfig) -> dict[str, Any]:
    """The raw per-node CPU series of the step's window, fetched again from Prometheus (status
    keeps only the figures). {} without Prometheus or CPU figures; the reason when it failed."""
    cpu = entry.get("cpu") or {}
    window = cpu.get("window") or {}
    nodes = [n["name"] for n in cpu.get("nodes") or [] if n.get("name")]
    if not config.prometheus_url or not window or not nodes:
        return {}
    try:
        # At the resolution the step's figures had (a run's own finer scrape: its job).
        interval = float(cpu.get("resolutionSeconds") or config.prometheus_scrape_interval)
        series = node_series(
            config.prometheus_url,
            window["start"],
            window["end"],
            float(window.get("stepSeconds") or interval),
            nodes=nodes,
            scrape_interval=interval,
            mapping=node_mapping(config),
            job=str(cpu.get("job") or ""),
        )
    except CpuUnavailable as exc:
        return {"cpuSeries": None, "cpuSeriesMissing": exc.reason}
    except (ValueError, KeyError) as exc:
        return {"cpuSeries": None, "cpuSeriesMissing": str(exc)}
    return {"cpuSeries": series}


def step_prefix(spec: BenchmarkRunSpec, run: Mapping[str, Any], index: int) -> str:
    """The result prefix of the run's step `index` (its clients' ConfigMaps)."""
    meta = run["metadata"]
    ref = jobs.RunRef(meta["name"], meta["namespace"], meta["uid"], "", "", None, "")
    # The plan as the run has it: re-runs of invalid trials (reruns.py) are steps too.
    plan = with_reruns(spec, make_plan(spec), run.get("status") or {})
    return jobs.result_prefix(ref, plan[index])


def _upload_step(
    writer: RunWriter,
    spec: BenchmarkRunSpec,
    run: Mapping[str, Any],
    entry: Mapping[str, Any],
    configmaps: list[dict[str, Any]],
    *,
    config: OperatorConfig,
) -> None:
    index = int(entry["index"])
    clients = spec.clients.parallelism
    got = assemble(configmaps, step_prefix(spec, run, index), clients)
    reported = [i for i in range(clients) if i not in got.missing]
    for client, doc in zip(reported, got.documents, strict=True):
        writer.put_json(layout.client_key(index, client), doc)
    if got.documents:
        try:
            writer.put_json(layout.merged_key(index), merge_documents(got.documents))
        except (ValueError, KeyError, TypeError) as exc:  # the client documents stay archived
            log.warning("step %s of %s/%s: no merged document: %s", index, *meta_ns(run), exc)
    writer.put_json(
        layout.resources_key(index), {**resources_document(entry), **cpu_series(entry, config)}
    )


def meta_ns(run: Mapping[str, Any]) -> tuple[str, str]:
    return run["metadata"]["namespace"], run["metadata"]["name"]


def upload(
    kube: KubeApi,
    run: Mapping[str, Any],
    settings: Settings,
    config: OperatorConfig,
    admins: AdminPool | None = None,
) -> Result:
    """Upload what the run's archive lacks, then the manifest. ArchiveError/ApiError out."""
    namespace, name = meta_ns(run)
    status = run.get("status") or {}
    root, secrets = open_archive(kube, settings, namespace)
    writer = root.writer(namespace, name, run["metadata"]["uid"], secrets=secrets)
    result = Result(writer.location)
    finished = finished_steps(status)
    todo = [i for i in finished if i not in archived_steps(writer.listed())]
    ref = cluster_of(run.get("spec"))
    cluster = kube.get("MongoCluster", namespace, ref) if ref else None
    if layout.CLUSTER not in writer.listed():
        writer.put_json(layout.CLUSTER, cluster_document(status, cluster))
    # What ran, at every upload: the pods of finished steps are still there to be seen.
    previous = writer.get_json(layout.PROVENANCE)
    document = provenance.build(
        facts.collect(kube, run, cluster, config, admins=admins, previous=previous)
    )
    writer.put_json(layout.PROVENANCE, document)
    result.provenance = provenance_summary(document)
    if todo:
        spec = BenchmarkRunSpec.parse(dict(run["spec"]))
        entries = {int(s["index"]): s for s in status.get("steps") or []}
        prefixes = [step_prefix(spec, run, index) for index in todo]
        configmaps = orchestrate.result_configmaps(
            kube, namespace, prefixes, spec.clients.parallelism
        )
        for index in todo:
            _upload_step(writer, spec, run, entries[index], configmaps, config=config)
    result.uploaded = sorted(archived_steps(writer.listed()) & set(finished))
    terminal = status.get("phase") in TERMINAL
    result.complete = terminal and set(finished) <= set(result.uploaded)
    writer.put_manifest(run, status.get("phase"), result.complete)
    return result


def sync(
    kube: KubeApi,
    namespace: str,
    name: str,
    config: OperatorConfig,
    *,
    upload_lock: threading.Lock,
    run_lock: threading.Lock,
    clock: Clock,
    admins: AdminPool | None = None,
) -> list[cond.Event]:
    """Bring the run's archive up to date; the Events posted. Never raises for the store: a
    failure is recorded in status for the next attempt. A sync already under way for the run
    (another handler thread, holding `upload_lock`) makes this one return at once; status is
    written under `run_lock`, the state machine's (both from mongobench.state); `clock` dates
    the attempt when it ends (its backoff)."""
    lock = upload_lock
    if not lock.acquire(blocking=False):
        return []
    try:
        run = kube.get("BenchmarkRun", namespace, name)
        if run is None or run["metadata"].get("deletionTimestamp"):
            return []
        status = run.get("status") or {}
        spec = run.get("spec") or {}
        try:
            settings = resolve(spec, config)
        except NotConfigured as exc:
            result = Result("", error=str(exc), not_configured=True)
        else:
            if settings is None or not pending(spec, status, config):
                return []
            try:
                result = upload(kube, run, settings, config, admins)
            except (ArchiveError, ApiError, SpecError) as exc:
                reason = exc.reason if isinstance(exc, ApiError) else str(exc)
                result = Result(settings.url, error=str(reason))
                log.warning("archive of %s/%s: %s", namespace, name, reason)
        return _record(kube, namespace, name, result, config=config, run_lock=run_lock, clock=clock)
    finally:
        lock.release()


def _record(
    kube: KubeApi,
    namespace: str,
    name: str,
    result: Result,
    *,
    config: OperatorConfig,
    run_lock: threading.Lock,
    clock: Clock,
) -> list[cond.Event]:
    """Write one sync's result into the run's status and post its Events. Status writes of one
    run are serialised with the state machine's (conditions are one list: two writers could
    drop each other's)."""
    with run_lock:
        fresh = kube.get("BenchmarkRun", namespace, name)
        if fresh is None or fresh["metadata"].get("deletionTimestamp"):
            return []
        generation = int(fresh["metadata"].get("generation") or 0)
        patch, events = status_patch(fresh.get("status") or {}, result, clock(), config, generation)
        try:
            kube.patch_status("BenchmarkRun", namespace, name, patch)
        except ApiError as exc:
            if exc.status == 404:  # deleted meanwhile: nothing to record
                return []
            raise
    for event in events:
        kube.event(fresh, *event)
    return events
