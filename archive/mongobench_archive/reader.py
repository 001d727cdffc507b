"""Reading archived runs: only what a manifest lists, each object checked against it."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mongobench_archive import layout
from mongobench_archive.errors import ArchiveError
from mongobench_archive.stores import Store


class ArchivedRun:
    """One run as its manifest describes it. Objects are read lazily and verified (sha256)."""

    def __init__(self, store: Store, folder: str, manifest: dict[str, Any]) -> None:
        self.store = store
        self.folder = folder  # relative to the root; "" when the root is the run's folder
        self.manifest = manifest
        self._entries: dict[str, dict[str, Any]] = {o["key"]: o for o in manifest["objects"]}

    def __repr__(self) -> str:
        return f"ArchivedRun({self.location!r})"

    @property
    def namespace(self) -> str:
        return str(self.manifest["run"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.manifest["run"]["name"])

    @property
    def uid(self) -> str:
        return str(self.manifest["run"]["uid"])

    @property
    def phase(self) -> str | None:
        phase = self.manifest.get("phase")
        return str(phase) if phase is not None else None

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    @property
    def location(self) -> str:
        """The run folder's URL (for messages and for opening it again)."""
        return self.store.location.url(self.folder)

    def keys(self) -> list[str]:
        """Every key the manifest lists, relative to the run folder."""
        return sorted(self._entries)

    def _full(self, key: str) -> str:
        return f"{self.folder}/{key}" if self.folder else key

    def read_bytes(self, key: str) -> bytes | None:
        """The listed object's bytes (verified); None when the manifest does not list `key`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        where = self.store.location.url(self._full(key))
        data = self.store.get(self._full(key))
        if data is None:
            raise ArchiveError(f"{where}: listed in the manifest but missing")
        layout.verify(data, entry, where)
        return data

    def get_json(self, key: str) -> Any:
        data = self.read_bytes(key)
        if data is None:
            return None
        return layout.decode(data, self.store.location.url(self._full(key)))

    @cached_property
    def run(self) -> dict[str, Any]:
        doc = self.get_json(layout.RUN)
        if not isinstance(doc, dict):
            raise ArchiveError(f"{self.location}: the manifest lists no run.json")
        return doc

    @cached_property
    def cluster(self) -> dict[str, Any] | None:
        doc = self.get_json(layout.CLUSTER)
        return doc if isinstance(doc, dict) else None

    @cached_property
    def provenance(self) -> dict[str, Any] | None:
        """provenance.json (what ran); None for a run archived before it existed."""
        doc = self.get_json(layout.PROVENANCE)
        return doc if isinstance(doc, dict) else None

    def step_indices(self) -> list[int]:
        """Indices of the steps with at least one archived object."""
        return sorted({s.index for k in self._entries if (s := layout.parse_step_key(k))})

    def step_documents(self, index: int) -> list[dict[str, Any]]:
        """The step's client documents, ordered by client index; [] when none are archived."""
        clients = sorted(
            (s.client or 0, k)
            for k in self._entries
            if (s := layout.parse_step_key(k)) and s.index == index and s.kind == "client"
        )
        return [self.get_json(k) for _, k in clients]

    def merged(self, index: int) -> dict[str, Any] | None:
        doc = self.get_json(layout.merged_key(index))
        return doc if isinstance(doc, dict) else None

    def resources(self, index: int) -> dict[str, Any] | None:
        doc = self.get_json(layout.resources_key(index))
        return doc if isinstance(doc, dict) else None


def load_manifest(store: Store, folder: str) -> dict[str, Any] | None:
    """The manifest of the run folder (relative to the root); None when there is none."""
    key = f"{folder}/{layout.MANIFEST}" if folder else layout.MANIFEST
    data = store.get(key)
    if data is None:
        return None
    return layout.parse_manifest(data, store.location.url(key))


def find_runs(store: Store) -> list[ArchivedRun]:
    """Every run under the root that has a manifest (at any depth), ordered by folder.

    ArchiveError when there is none: an empty location, or objects of an upload that never
    reached its manifest (which readers must not trust)."""
    keys = store.keys()
    folders = sorted(
        k[: -len(layout.MANIFEST)].rstrip("/")
        for k in keys
        if k == layout.MANIFEST or k.endswith("/" + layout.MANIFEST)
    )
    runs: list[ArchivedRun] = []
    for folder in folders:
        manifest = load_manifest(store, folder)
        if manifest is not None:
            runs.append(ArchivedRun(store, folder, manifest))
    if not runs:
        where = store.location.url()
        if keys:
            raise ArchiveError(
                f"{where}: {len(keys)} object(s) but no manifest.json: an upload still under "
                "way or interrupted (readers trust only runs with a manifest)"
            )
        raise ArchiveError(f"{where}: no archived run here (empty)")
    return runs


def find_experiments(store: Store) -> list[dict[str, Any]]:
    """Every experiment summary under the root whose manifest lists it (verified), ordered by
    folder; [] when there is none."""
    out = []
    for key in sorted(store.keys()):
        if key != layout.EXPERIMENT_MANIFEST and not key.endswith("/" + layout.EXPERIMENT_MANIFEST):
            continue
        folder = key[: -len(layout.EXPERIMENT_MANIFEST)].rstrip("/")
        where = store.location.url(key)
        manifest = layout.parse_manifest(store.get(key) or b"", where)
        doc = ArchivedRun(store, folder, manifest).get_json(layout.EXPERIMENT)
        if not isinstance(doc, dict):
            raise ArchiveError(f"{where}: the manifest lists no {layout.EXPERIMENT}")
        out.append(doc)
    return out
