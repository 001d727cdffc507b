"""The operator process: configure kopf, start metrics and probes, register the handlers."""

from __future__ import annotations

import asyncio
import logging
from importlib.metadata import version
from typing import Any

import aiohttp
import kopf

import mongobench.handlers  # noqa: F401 - importing registers the handlers
from mongobench import memory
from mongobench.config import OperatorConfig
from mongobench.handlers.mongocluster import SECRETS_SELECTED
from mongobench.k8s.api import REPORTING_COMPONENT
from mongobench.k8s.credentials import CredentialsError
from mongobench.observability import logs, metrics
from mongobench.runtime.peering import PauseRelay, relayed
from mongobench.runtime.wakeups import Backoff
from mongobench.state import OperatorState, state_of

log = logging.getLogger("mongobench")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config = OperatorConfig.current()
    settings.execution.max_workers = config.workers
    # Everything that outlives one handler call (API client, locks, MongoDB clients); every
    # handler receives the memo, a shallow copy of this one. Work a child's event queues runs on
    # kopf's handler threads; it posts Events with the operator's own client (k8s.api).
    try:
        memo.state = OperatorState.create(
            executor=settings.execution.executor,
            # Failed wake-ups and ticks: from half a second, doubling, up to a handler's retry.
            retries=Backoff(min(0.5, config.retry_backoff), config.retry_backoff),
            mongo_clients=config.mongo_clients,
            config=config,
        )
    except CredentialsError as exc:
        raise kopf.PermanentError(str(exc)) from None
    # Peering pauses the ticker and the wake-ups with kopf's watches (runtime.peering, set up by
    # run).
    pauses = getattr(memo, "pauses", None)
    if isinstance(pauses, PauseRelay):
        pauses.subscribe(memo.state)
    # Progress and the last-handled spec live in annotations, so a restarted operator resumes
    # where it stopped without a status field of kopf's own.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="mongobench.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="mongobench.io", key="last-handled-configuration"
    )
    settings.persistence.finalizer = "mongobench.io/finalizer"
    settings.execution.default_backoff = config.retry_backoff
    settings.networking.error_backoffs = (0.5, 1, 2, 3, 5)
    # kopf's own Events (a handler's failure); the operator's come from k8s.api.
    settings.posting.reporting_component = REPORTING_COMPONENT
    settings.posting.event_name_prefix = "mongobench-"
    settings.peering.name = config.peering
    settings.peering.priority = config.priority
    settings.peering.lifetime = config.peering_lifetime
    settings.peering.stealth = True
    # kopf keeps a worker per object for this long after its last event, holding that event's
    # whole body (managedFields too): under a burst, every child's (Secrets, StatefulSets,
    # Jobs) for 5 s by default. A worker started again costs a task, not a request.
    settings.queueing.idle_timeout = QUEUE_IDLE_SECONDS
    # Secrets: only the labelled ones are listed and watched (handlers.mongocluster says why).
    secrets, selector = SECRETS_SELECTED
    settings.watching.label_selectors[secrets] = selector
    settings.watching.server_timeout = 270
    settings.watching.client_timeout = 300
    # kopf's own requests (patches, Events) time out too, as mongobench.k8s.client's do.
    settings.networking.connect_timeout = 5
    settings.networking.request_timeout = 30


# Seconds kopf's per-object worker idles after its last event before it exits (kopf: 5).
QUEUE_IDLE_SECONDS = 0.5


# kopf holds one connection per watch stream: 7 resources (MongoCluster, BenchmarkRun,
# BenchmarkExperiment, StatefulSet, Deployment, Job, Secret) plus its CRD, namespace and peering
# watches, per watched namespace.
WATCH_STREAMS_PER_NAMESPACE = 10


def connection_limit(config: OperatorConfig) -> int:
    """kopf's connections at most: its watch streams and as many requests as handler threads.
    Each TLS connection holds asyncio's read buffer (256 KiB): kopf's own default is unlimited,
    and a burst of 200 runs' status patches opened ~400 connections; twice the handler threads
    still held 32 of them (8 MiB) under 200 clusters and 200 runs. Namespace patterns match an
    unknown number of namespaces: no limit then (a watch must never wait for a connection)."""
    if any(c in n for n in config.namespaces for c in "*?[!"):
        return 0
    return WATCH_STREAMS_PER_NAMESPACE * max(1, len(config.namespaces)) + config.workers


@kopf.on.login()
async def login(memo: kopf.Memo, **_: Any) -> kopf.AiohttpSession:
    """kopf's connection uses the operator client's credentials, renewed (kopf logs in again on
    a 401: a rotated token, an expired exec-plugin credential), over a bounded pool."""
    creds = await asyncio.to_thread(state_of(memo).api.renewed_credentials)
    info = kopf.ConnectionInfo(
        server=creds.server,
        ca_data=creds.ca_data,
        insecure=creds.insecure or None,
        token=creds.token,
        certificate_data=creds.cert_data,
        private_key_data=creds.key_data,
        username=creds.username,
        password=creds.password,
    )
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=connection_limit(state_of(memo).config), ssl=info.as_ssl_context()
        ),
        headers=info.as_http_headers(),
        proxy=creds.proxy_url,
    )
    return kopf.AiohttpSession(
        server=creds.server,
        default_namespace=creds.namespace,
        expiration=creds.expiration,
        aiohttp_session=session,
    )


@kopf.on.startup()
async def return_freed_memory(**_: Any) -> None:
    """After start-up and every reconcile burst, freed memory goes back to the system (the
    idle operator's RSS fell by 0.7 MiB; make bench-memory)."""
    memory.trim_periodically(asyncio.get_running_loop())


@kopf.on.cleanup()
def close(memo: kopf.Memo, **_: Any) -> None:
    state_of(memo).close()


@kopf.on.probe(id="metrics")
def probe_metrics(**_: Any) -> str:
    return "ok"


def run(config: OperatorConfig) -> None:
    config.make_current()
    logs.configure(json_logs=config.json_logs, verbose=config.verbose)
    metrics.serve(config.metrics_port, version("mongobench"))
    log.info(
        "starting mongobench operator",
        extra={"namespaces": list(config.namespaces) or "all", "peering": config.peering},
    )
    # kopf's peering pause reaches the operator's own scheduler through the relay (configure
    # subscribes the state to it).
    memory.smaller_tls_read_buffers()  # before kopf opens its first connection
    pauses = PauseRelay()
    with relayed(pauses):
        kopf.run(
            memo=kopf.Memo(pauses=pauses),
            clusterwide=not config.namespaces,
            namespaces=config.namespaces,
            liveness_endpoint=f"http://0.0.0.0:{config.probe_port}/healthz",
            # Several replicas (the Helm chart's setting) peer through a mandatory peering
            # object; a single one runs standalone, without peering keep-alive writes every
            # minute.
            peering_name=config.peering if config.peering_mandatory else None,
            standalone=not config.peering_mandatory,
            priority=config.priority,
        )
