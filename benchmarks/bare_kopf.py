"""The bare-kopf reference of make bench-scale: kopf alone, watching the operator's two kinds
(MongoCluster, BenchmarkRun) with handlers that do nothing, in the same process set-up as the
operator (`kubernetes` not importable, two malloc arenas, TLS read buffers of 32 KiB, the same
persistence, 16 handler threads). Whatever memory and threads it takes under the same apply is
kopf's own share of the operator's figures; the rest is the operator's.

Its handlers are the operator's kinds of handlers: create/resume/update/delete (kopf writes its
progress and last-handled annotations and its finalizer, as for the operator) and an event
handler each. They run on kopf's thread pool, as the operator's do.

    python benchmarks/bare_kopf.py NAMESPACE PROBE_PORT     (KUBECONFIG: the plane's)
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Any

sys.modules.setdefault("kubernetes", None)  # type: ignore[arg-type]  # as the operator does

GROUP, VERSION = "mongobench.io", "v1alpha1"
KINDS = ("mongoclusters", "benchmarkruns")


def _fewer_arenas() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(-8, 2)  # M_ARENA_MAX, before any thread starts


_fewer_arenas()

import kopf  # noqa: E402 - after the arenas are capped, as mongobench.__main__ does
import yaml  # noqa: E402

for _plural in KINDS:
    for _on in (kopf.on.create, kopf.on.resume, kopf.on.update, kopf.on.delete):

        @_on(GROUP, VERSION, _plural, id=f"{_on.__name__}-{_plural}")
        def _nothing(**_: Any) -> None:
            return None

    @kopf.on.event(GROUP, VERSION, _plural, id=f"event-{_plural}")
    def _no_event(**_: Any) -> None:
        return None


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.execution.max_workers = 16
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="mongobench.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="mongobench.io", key="last-handled-configuration"
    )
    settings.persistence.finalizer = "mongobench.io/finalizer"
    settings.posting.enabled = False


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """The plane's kubeconfig (embedded CA and client certificate) as kopf's connection."""
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    return kopf.ConnectionInfo(
        server=cluster["server"],
        ca_data=base64.b64decode(cluster["certificate-authority-data"]),
        certificate_data=base64.b64decode(user["client-certificate-data"]),
        private_key_data=base64.b64decode(user["client-key-data"]),
    )


def main() -> None:
    from asyncio import sslproto

    sslproto.SSLProtocol.max_size = 32 * 1024  # as mongobench.memory
    namespace, probe_port = sys.argv[1], int(sys.argv[2])
    kopf.run(
        namespaces=[namespace],
        standalone=True,
        liveness_endpoint=f"http://127.0.0.1:{probe_port}/healthz",
    )


if __name__ == "__main__":
    main()
