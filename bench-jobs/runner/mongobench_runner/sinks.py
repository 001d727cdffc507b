"""Where the result document goes: a file, stdout, or ConfigMaps through the in-cluster API.

`--output file:PATH` (default), `--output stdout`, `--output configmap:NAMESPACE/NAME`.
The ConfigMap sink uses only the standard library: the pod's service-account token and CA, the
API server from KUBERNETES_SERVICE_HOST/PORT. The document is split into parts of at most 900 KiB
(NAME-p0, NAME-p1, ...; a ConfigMap holds at most 1 MiB), each labelled with the result name, its
index and the part count (the format: mongobench_results.configmaps), owned by
MONGOBENCH_OWNER_REF (JSON) when set, and created or replaced so a retried pod overwrites its own
parts.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mongobench_results import configmaps

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TERMINATION_LOG = Path("/dev/termination-log")
TERMINATION_LIMIT = 4000  # the kubelet keeps at most 4096 bytes
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})  # overloaded or starting apiserver


class SinkError(RuntimeError):
    pass


class Sink(Protocol):
    def write(self, document: dict[str, Any]) -> str:
        """Stores the document; returns a human description of where it went."""
        ...


@dataclass
class FileSink:
    path: Path

    def write(self, document: dict[str, Any]) -> str:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(configmaps.serialise(document), encoding="utf-8")
        os.replace(tmp, self.path)  # atomic: a reader never sees half a document
        return f"file {self.path}"


class StdoutSink:
    def write(self, document: dict[str, Any]) -> str:
        sys.stdout.write(configmaps.serialise(document))
        sys.stdout.flush()
        return "stdout"


@dataclass
class KubeApi:
    base_url: str
    token_path: Path
    ca_path: Path | None
    timeout_s: float = 30.0
    unavailable_s: float = 120.0  # how long an unreachable or overloaded apiserver is retried
    retry_pause_s: float = 0.5  # first pause between tries, doubled up to 10x

    @classmethod
    def in_cluster(cls) -> KubeApi:
        base = os.environ.get("MONGOBENCH_KUBE_API")
        if not base:
            host = os.environ.get("KUBERNETES_SERVICE_HOST")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise SinkError(
                    "configmap output needs the in-cluster API: KUBERNETES_SERVICE_HOST is unset"
                )
            if ":" in host:
                host = f"[{host}]"
            base = f"https://{host}:{port}"
        sa = Path(os.environ.get("MONGOBENCH_SA_DIR", str(SA_DIR)))
        return cls(base_url=base.rstrip("/"), token_path=sa / "token", ca_path=sa / "ca.crt")

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any]]:
        token = self.token_path.read_text().strip()  # re-read: projected tokens rotate
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(  # noqa: S310 - URL built from the cluster's own env
            self.base_url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "Content-Type": content_type,
            },
        )
        context = None
        if self.base_url.startswith("https://"):
            context = ssl.create_default_context(
                cafile=str(self.ca_path) if self.ca_path and self.ca_path.exists() else None
            )
        # The apiserver can be away for a while (a control-plane upgrade or crash) exactly when
        # a client that ran for an hour reports: keep trying rather than lose the result.
        deadline = time.monotonic() + self.unavailable_s
        pause = self.retry_pause_s
        while True:
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s, context=context) as resp:  # noqa: S310
                    return resp.status, json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as e:
                raw = e.read()
                try:
                    payload = json.loads(raw or b"{}")
                except ValueError:
                    payload = {"message": raw.decode(errors="replace")[:500]}
                if e.code not in RETRIED_STATUSES or time.monotonic() > deadline:
                    return e.code, payload
            except (OSError, http.client.HTTPException):  # refused, reset, TLS cut, short read
                if time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 10 * self.retry_pause_s)


@dataclass
class ConfigMapSink:
    namespace: str
    name: str
    api: KubeApi
    owner_ref: dict[str, Any] | None = None
    part_bytes: int = configmaps.PART_BYTES

    def manifests(self, document: dict[str, Any]) -> list[dict[str, Any]]:
        return configmaps.manifests(
            document, self.namespace, self.name, self.owner_ref, self.part_bytes
        )

    def write(self, document: dict[str, Any]) -> str:
        collection = f"/api/v1/namespaces/{self.namespace}/configmaps"
        manifests = self.manifests(document)
        for cm in manifests:
            name = cm["metadata"]["name"]
            status, body = self.api.request("POST", collection, cm)
            if status == 409:  # ours from an earlier attempt of this pod: replace it
                status, body = self.api.request("PUT", f"{collection}/{name}", cm)
            if status not in (200, 201):
                raise SinkError(
                    f"writing ConfigMap {self.namespace}/{name}: HTTP {status}: "
                    f"{body.get('message', body)}"
                )
        return f"{len(manifests)} ConfigMap(s) {self.namespace}/{self.name}-p*"


def parse_output(spec: str) -> Sink:
    kind, sep, rest = spec.partition(":")
    if spec == "stdout":
        return StdoutSink()
    if kind == "file" and sep and rest:
        return FileSink(Path(rest))
    if kind == "configmap" and sep:
        namespace, slash, name = rest.partition("/")
        if not (slash and namespace and name):
            raise ValueError(f"--output {spec!r}: expected configmap:NAMESPACE/NAME")
        owner = os.environ.get("MONGOBENCH_OWNER_REF")
        owner_ref = None
        if owner:
            try:
                owner_ref = json.loads(owner)
            except ValueError as e:
                raise ValueError(f"MONGOBENCH_OWNER_REF is not JSON: {e}") from e
            if not isinstance(owner_ref, dict):
                raise ValueError("MONGOBENCH_OWNER_REF must be a JSON object")
        # Smaller parts for API servers configured below etcd's default request limit.
        limit = os.environ.get("MONGOBENCH_RESULT_PART_BYTES", "")
        if limit and not (limit.isdigit() and 1024 <= int(limit) <= configmaps.PART_BYTES):
            raise ValueError(
                f"MONGOBENCH_RESULT_PART_BYTES={limit!r}: "
                f"expected 1024..{configmaps.PART_BYTES} bytes"
            )
        part_bytes = int(limit) if limit else configmaps.PART_BYTES
        return ConfigMapSink(namespace, name, KubeApi.in_cluster(), owner_ref, part_bytes)
    raise ValueError(f"--output {spec!r}: expected file:PATH, stdout or configmap:NAMESPACE/NAME")


def write_termination_log(text: str, path: Path | None = None) -> bool:
    """Writes the summary where the kubelet picks it up (only when that file exists)."""
    target = path or Path(os.environ.get("MONGOBENCH_TERMINATION_LOG", str(TERMINATION_LOG)))
    if not target.exists():
        return False
    data = text.encode()[:TERMINATION_LIMIT]
    target.write_bytes(data)
    return True
