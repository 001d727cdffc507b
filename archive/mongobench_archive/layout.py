"""The archive layout, pure: keys, canonical bytes, the manifest, the run document.

One run lives under `<root>/<namespace>/<name>/<uid>/`:

    run.json                        the BenchmarkRun (metadata trimmed, spec, status)
    cluster.json                    the cluster snapshot (and the MongoCluster's spec/status)
    provenance.json                 what ran: specs, images by digest, server builds and
                                    options, FCV, node facts, Kubernetes version, seeds
    steps/<NNN>/client-<i>.json     each client's full result document
    steps/<NNN>/merged.json         the merged step document
    steps/<NNN>/resources.json      the step's resource profile (CPU ...)
    manifest.json                   written last: every object above with its sha256 and size

A BenchmarkExperiment's summary lives under `<root>/<namespace>/<name>/<uid>/` too, beside its
runs, with a manifest of its own name (a reader of runs never takes it for a run):

    experiment.json                 the experiment (metadata trimmed, spec, status: its cells,
                                    each cluster deployment's timings, the comparison)
    experiment-manifest.json        written last: experiment.json with its sha256 and size

A reader trusts only objects a manifest lists, so a run whose upload was interrupted before its
first manifest does not exist for readers, and a later manifest never lists a half-written object.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mongobench_archive.errors import ArchiveError

API_VERSION = "mongobench.io/archive/v1"
MANIFEST = "manifest.json"
RUN = "run.json"
CLUSTER = "cluster.json"
PROVENANCE = "provenance.json"
EXPERIMENT = "experiment.json"
EXPERIMENT_MANIFEST = "experiment-manifest.json"

# Annotations that copy the whole object (or the operator's bookkeeping), never the user's intent.
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_DROPPED_ANNOTATION_PREFIXES = ("kopf.zalando.org/",)
_KEPT_METADATA = ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp")

_STEP_KEY = re.compile(r"^steps/(\d{3,})/(client-(\d+)|merged|resources)\.json$")
_SAFE_KEY = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")

Json = dict[str, Any]


def step_folder(index: int) -> str:
    if index < 0:
        raise ValueError(f"step index {index} < 0")
    return f"steps/{index:03d}"


def client_key(index: int, client: int) -> str:
    return f"{step_folder(index)}/client-{client}.json"


def merged_key(index: int) -> str:
    return f"{step_folder(index)}/merged.json"


def resources_key(index: int) -> str:
    return f"{step_folder(index)}/resources.json"


@dataclass(frozen=True)
class StepKey:
    index: int
    kind: str  # "client", "merged" or "resources"
    client: int | None = None


def parse_step_key(key: str) -> StepKey | None:
    m = _STEP_KEY.match(key)
    if m is None:
        return None
    if m.group(3) is not None:
        return StepKey(int(m.group(1)), "client", int(m.group(3)))
    return StepKey(int(m.group(1)), m.group(2))


def check_key(key: str) -> str:
    """A relative, '/'-separated key without empty, '.' or '..' parts (no escape from a run)."""
    if not _SAFE_KEY.match(key) or any(p in (".", "..") for p in key.split("/")):
        raise ArchiveError(f"invalid archive key {key!r}")
    return key


def run_folder(namespace: str, name: str, uid: str) -> str:
    for what, part in (("namespace", namespace), ("name", name), ("uid", uid)):
        if not part or "/" in part or part in (".", ".."):
            raise ArchiveError(f"invalid run {what} {part!r} for an archive folder")
    return f"{namespace}/{name}/{uid}"


def encode(obj: Any) -> bytes:
    """Canonical bytes: the same document always hashes the same (idempotent re-uploads)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def object_entry(key: str, data: bytes) -> Json:
    return {"key": key, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def rfc3339(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def build_manifest(
    namespace: str,
    name: str,
    uid: str,
    *,
    phase: str | None,
    complete: bool,
    updated: datetime,
    objects: Iterable[Json],
) -> Json:
    listed = sorted(objects, key=lambda o: str(o["key"]))
    return {
        "apiVersion": API_VERSION,
        "run": {"namespace": namespace, "name": name, "uid": uid},
        "phase": phase,
        "complete": complete,
        "updated": rfc3339(updated),
        "objects": listed,
    }


def parse_manifest(data: bytes, where: str) -> Json:
    """The manifest at `where` (a URL for messages), checked; ArchiveError when it is not one."""
    try:
        doc = json.loads(data)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise ArchiveError(f"{where}: not a JSON manifest ({_reason(e)})") from None
    if not isinstance(doc, dict):
        raise ArchiveError(f"{where}: not a manifest (a JSON object is expected)")
    if doc.get("apiVersion") != API_VERSION:
        raise ArchiveError(
            f"{where}: apiVersion {doc.get('apiVersion')!r} is not {API_VERSION!r}"
            " (written by another version of mongobench?)"
        )
    run = doc.get("run")
    if not isinstance(run, dict) or not all(
        isinstance(run.get(k), str) and run.get(k) for k in ("namespace", "name", "uid")
    ):
        raise ArchiveError(f"{where}: manifest lacks run namespace/name/uid")
    objects = doc.get("objects")
    if not isinstance(objects, list):
        raise ArchiveError(f"{where}: manifest lacks its object list")
    for o in objects:
        if not (
            isinstance(o, dict)
            and isinstance(o.get("key"), str)
            and isinstance(o.get("sha256"), str)
            and isinstance(o.get("bytes"), int)
        ):
            raise ArchiveError(f"{where}: malformed object entry {o!r}")
        check_key(o["key"])
    return doc


def verify(data: bytes, entry: Mapping[str, Any], where: str) -> None:
    if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ArchiveError(f"{where}: content differs from its manifest entry (changed or corrupt)")


def decode(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as e:
        raise ArchiveError(f"{where}: not JSON ({_reason(e)})") from None


def _reason(e: ValueError) -> str:
    return e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__


def run_document(obj: Mapping[str, Any]) -> Json:
    """The BenchmarkRun (or BenchmarkExperiment) as archived: apiVersion, kind, trimmed
    metadata, spec, status.

    Drops what only repeats the object or serves the operator (last-applied copies, kopf's
    annotations and status bookkeeping, managedFields, resourceVersion)."""
    meta_in = obj.get("metadata") or {}
    meta: Json = {k: meta_in[k] for k in _KEPT_METADATA if meta_in.get(k) is not None}
    annotations = {
        k: v
        for k, v in (meta_in.get("annotations") or {}).items()
        if k not in _DROPPED_ANNOTATIONS and not k.startswith(_DROPPED_ANNOTATION_PREFIXES)
    }
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    status = {k: v for k, v in (obj.get("status") or {}).items() if k != "kopf"}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "spec": obj.get("spec") or {},
        "status": status,
    }


def find_secret(data: bytes, secrets: Iterable[str]) -> bool:
    """True when any non-trivial secret value occurs in `data` (the writer refuses to store it)."""
    return any(len(s) >= 4 and s.encode("utf-8") in data for s in secrets)


@dataclass(frozen=True)
class Location:
    """Where an archive root lives: an S3 bucket and prefix, or a local folder."""

    scheme: str  # "s3" or "file"
    bucket: str = ""
    prefix: str = ""  # S3 key prefix without slashes at either end; "" for the bucket root
    path: str = ""  # local folder

    def url(self, key: str = "") -> str:
        if self.scheme == "s3":
            parts = [p for p in (self.prefix, key) if p]
            return f"s3://{self.bucket}/{'/'.join(parts)}" if parts else f"s3://{self.bucket}"
        return f"{self.path.rstrip('/')}/{key}" if key else self.path


def parse_location(url: str) -> Location:
    """`s3://bucket[/prefix]`, `file:///folder` or a plain folder path."""
    text = url.strip()
    if not text:
        raise ArchiveError("empty archive location: give s3://BUCKET/PREFIX or a folder")
    if "://" not in text:
        return Location("file", path=text)
    parsed = urllib.parse.urlsplit(text)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ArchiveError(f"{url}: a file URL names no host (file:///folder)")
        return Location("file", path=urllib.parse.unquote(parsed.path) or "/")
    if parsed.scheme != "s3":
        raise ArchiveError(f"{url}: unsupported archive URL (use s3://BUCKET/PREFIX or a folder)")
    if not parsed.netloc:
        raise ArchiveError(f"{url}: no bucket in the S3 URL (s3://BUCKET/PREFIX)")
    if parsed.query or parsed.fragment:
        raise ArchiveError(f"{url}: an S3 URL has no query or fragment")
    prefix = "/".join(p for p in parsed.path.split("/") if p)
    return Location("s3", bucket=parsed.netloc, prefix=prefix)
