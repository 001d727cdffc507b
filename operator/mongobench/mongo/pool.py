"""One MongoDB administration handle (and its clients) per cluster, for the credentials it was
built with: a change of credentials replaces it and closes the old clients, and a deleted
cluster's handle is closed. Owned by the operator's state (mongobench.state)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable

from mongobench.mongo.admin import MongoAdmin


def fingerprint(secrets: Iterable[str]) -> str:
    """A digest of the credentials a handle was built with (the secrets are not kept twice)."""
    digest = hashlib.sha256()
    for value in secrets:
        digest.update(value.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class AdminPool:
    def __init__(self) -> None:
        self._admins: dict[tuple[str, str], tuple[str, MongoAdmin]] = {}
        self._guard = threading.Lock()

    def get(
        self, namespace: str, name: str, credentials: str, build: Callable[[], MongoAdmin]
    ) -> MongoAdmin:
        """The cluster's handle for `credentials` (a fingerprint), built on first use or when
        the credentials changed (the previous handle's clients are closed)."""
        with self._guard:
            found = self._admins.get((namespace, name))
            if found is not None and found[0] == credentials:
                return found[1]
            admin = build()
            self._admins[(namespace, name)] = (credentials, admin)
        if found is not None:
            found[1].connector.close()
        return admin

    def forget(self, namespace: str, name: str) -> None:
        with self._guard:
            found = self._admins.pop((namespace, name), None)
        if found is not None:
            found[1].connector.close()

    def release_bootstrap(self, namespace: str, name: str) -> None:
        """The cluster is wired: its bootstrap clients are no longer needed (Connector)."""
        with self._guard:
            found = self._admins.get((namespace, name))
        if found is not None:
            found[1].connector.release_bootstrap()

    def close(self) -> None:
        with self._guard:
            admins, self._admins = list(self._admins.values()), {}
        for _, admin in admins:
            admin.connector.close()

    def __len__(self) -> int:
        with self._guard:
            return len(self._admins)
