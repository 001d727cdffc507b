"""The mongobench run archive: a BenchmarkRun's documents in an S3-compatible bucket or a folder.

    root = open_root("s3://bucket/prefix", endpoint_url=None, region=None)  # or a folder path
    for r in root.runs():              # every run with a manifest, at any depth below the root
        r.run, r.cluster, r.step_documents(0), r.merged(0), r.resources(0)
    w = root.writer(namespace, name, uid)
    w.put_json("steps/000/merged.json", doc)
    w.put_manifest(run_obj, phase, complete)  # last
    root.write_experiment(experiment_obj)  # an experiment's summary, its manifest last
    root.experiments()                 # every experiment summary under the root

Every failure is an `ArchiveError` whose message is one line. The layout is in `layout`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mongobench_archive import layout
from mongobench_archive.errors import ArchiveError
from mongobench_archive.layout import Location, parse_location
from mongobench_archive.reader import ArchivedRun, find_experiments, find_runs, load_manifest
from mongobench_archive.stores import LocalStore, S3Store, Store
from mongobench_archive.writer import RunWriter, write_experiment

__all__ = [
    "ArchiveError",
    "ArchivedRun",
    "Root",
    "RunWriter",
    "Store",
    "layout",
    "open_root",
]


class Root:
    """An archive root: `s3://BUCKET/PREFIX` or a local folder."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def location(self) -> Location:
        return self.store.location

    @property
    def url(self) -> str:
        return self.store.location.url()

    def __repr__(self) -> str:
        return f"Root({self.url!r})"

    def runs(self) -> list[ArchivedRun]:
        """Every run with a manifest under the root; ArchiveError when there is none."""
        return find_runs(self.store)

    def run(self, namespace: str, name: str, uid: str) -> ArchivedRun:
        folder = layout.run_folder(namespace, name, uid)
        manifest = load_manifest(self.store, folder)
        if manifest is None:
            raise ArchiveError(f"{self.store.location.url(folder)}: no manifest.json (no such run)")
        return ArchivedRun(self.store, folder, manifest)

    def writer(
        self, namespace: str, name: str, uid: str, *, secrets: Iterable[str] = ()
    ) -> RunWriter:
        return RunWriter(self.store, namespace, name, uid, secrets=secrets)

    def experiments(self) -> list[dict[str, Any]]:
        """Every BenchmarkExperiment summary under the root (verified); [] when none."""
        return find_experiments(self.store)

    def write_experiment(
        self, obj: Mapping[str, Any], *, secrets: Iterable[str] = ()
    ) -> dict[str, Any]:
        """The experiment's summary (experiment.json, then its manifest)."""
        return write_experiment(self.store, obj, secrets=secrets)


def open_root(
    url: str,
    endpoint_url: str | None = None,
    region: str | None = None,
    *,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    session_token: str | None = None,
    connect_timeout: float = 5.0,
    read_timeout: float = 30.0,
    max_attempts: int = 3,
    anonymous: bool = False,
) -> Root:
    """Open an archive root. Nothing is read until asked; S3 credentials come from the
    arguments or boto3's usual chain (environment, profile), and the endpoint from the argument
    or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL. `anonymous` sends unsigned requests and ignores
    the environment's credentials (the operator never lends its own to a store a user chose)."""
    location = parse_location(url)
    if location.scheme == "file":
        return Root(LocalStore(location))
    return Root(
        S3Store(
            location,
            endpoint_url=endpoint_url or None,
            region=region or None,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=session_token,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_attempts=max_attempts,
            anonymous=anonymous,
        )
    )
