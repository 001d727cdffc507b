"""Writing one run's folder: objects first, the manifest last.

Keys are deterministic and bytes canonical, so writing the same run again (an operator restarted
mid-upload, a retried step) overwrites objects with identical content and skips those the
previous manifest already lists with the same checksum. Each manifest lists every object written
so far, by this writer or, per the manifest it found, by an earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from mongobench_archive import layout
from mongobench_archive.errors import ArchiveError
from mongobench_archive.stores import Store


class RunWriter:
    def __init__(
        self,
        store: Store,
        namespace: str,
        name: str,
        uid: str,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        self.store = store
        self.namespace, self.name, self.uid = namespace, name, uid
        self.folder = layout.run_folder(namespace, name, uid)
        # Values that must never be stored (e.g. the S3 secret key, database passwords):
        # a document containing one is refused, not written.
        self._secrets = tuple(s for s in secrets if s)
        # An unreachable store fails here (a manifest written without the previous one's
        # objects would drop them); a corrupt manifest is rewritten from what is uploaded now.
        data = store.get(f"{self.folder}/{layout.MANIFEST}")
        try:
            previous = layout.parse_manifest(data, self.location) if data is not None else None
        except ArchiveError:
            previous = None
        self.previous: dict[str, Any] | None = previous
        self._listed: dict[str, dict[str, Any]] = {
            o["key"]: o for o in (previous or {}).get("objects", [])
        }
        self.written: list[str] = []  # keys put by this writer (skipped ones excluded)

    @property
    def location(self) -> str:
        return self.store.location.url(self.folder)

    def listed(self) -> dict[str, dict[str, Any]]:
        """Objects the next manifest will list: {key: {key, sha256, bytes}}."""
        return dict(self._listed)

    def get_json(self, key: str) -> Any:
        """A listed object as a previous writer stored it (verified); None when not listed or
        unreadable: documents built up across uploads start again from what is known now."""
        entry = self._listed.get(key)
        if entry is None:
            return None
        data = self.store.get(f"{self.folder}/{key}")
        try:
            if data is None:
                return None
            layout.verify(data, entry, self.location)
            return layout.decode(data, self.location)
        except ArchiveError:
            return None

    def put_bytes(self, key: str, data: bytes) -> dict[str, Any]:
        layout.check_key(key)
        if key == layout.MANIFEST:
            raise ArchiveError(f"{self.location}: the manifest is written by put_manifest only")
        if layout.find_secret(data, self._secrets):
            raise ArchiveError(
                f"{self.store.location.url(f'{self.folder}/{key}')}: refused: the document "
                "contains a secret value"
            )
        entry = layout.object_entry(key, data)
        if self._listed.get(key) != entry:
            self.store.put(f"{self.folder}/{key}", data)
            self.written.append(key)
        self._listed[key] = entry
        return entry

    def put_json(self, key: str, obj: Any) -> dict[str, Any]:
        return self.put_bytes(key, layout.encode(obj))

    def put_manifest(
        self,
        run_obj: Mapping[str, Any],
        phase: str | None,
        complete: bool,
        *,
        updated: datetime | None = None,
    ) -> dict[str, Any]:
        """Write run.json (from the BenchmarkRun object) and then the manifest listing it and
        every object written so far. Returns the manifest."""
        self.put_json(layout.RUN, layout.run_document(run_obj))
        manifest = layout.build_manifest(
            self.namespace,
            self.name,
            self.uid,
            phase=phase,
            complete=complete,
            updated=updated or datetime.now(UTC),
            objects=self._listed.values(),
        )
        self.store.put(f"{self.folder}/{layout.MANIFEST}", layout.encode(manifest))
        self.previous = manifest
        return manifest


def write_experiment(
    store: Store,
    obj: Mapping[str, Any],
    *,
    secrets: Iterable[str] = (),
    updated: datetime | None = None,
) -> dict[str, Any]:
    """A BenchmarkExperiment's summary in its folder: experiment.json (refused when it holds a
    secret value), then its manifest, last. Returns the manifest."""
    meta = obj.get("metadata") or {}
    writer = RunWriter(
        store, str(meta.get("namespace")), str(meta.get("name")), str(meta.get("uid")),
        secrets=secrets,
    )  # fmt: skip
    writer.put_json(layout.EXPERIMENT, layout.run_document(obj))
    phase = (obj.get("status") or {}).get("phase")
    manifest = layout.build_manifest(
        writer.namespace, writer.name, writer.uid,
        phase=phase, complete=phase in ("Succeeded", "Failed"),
        updated=updated or datetime.now(UTC), objects=writer.listed().values(),
    )  # fmt: skip
    store.put(f"{writer.folder}/{layout.EXPERIMENT_MANIFEST}", layout.encode(manifest))
    return manifest
