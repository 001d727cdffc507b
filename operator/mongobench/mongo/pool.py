"""The operator's MongoDB administration handles, one per cluster, lent out for one piece of
work at a time. Owned by the operator's state (mongobench.state).

A handle is built for the credentials it was lent with: a change of credentials replaces it,
and a deleted cluster's handle is closed. Every pymongo client holds two threads and about
130 KiB, and a cluster needs no client between its reconciles once it is Ready: so at most
``keep_idle`` handles stay open while nobody uses them (the least recently used are closed
first), and a handle is never closed while lent (`lease`), whatever replaced or evicted it.
Across all handles, the clients themselves are bounded too (`budget`, mongo.budget): a handle
lent to a handler thread keeps only the clients it uses now and recently.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mongobench.mongo.budget import MONGO_CLIENTS, ClientBudget
from mongobench.mongo.connect import HostResolver, identity_resolver

if TYPE_CHECKING:  # the pool only keeps what its callers build (the idle operator loads none)
    from mongobench.mongo.admin import MongoAdmin

# Idle handles kept open: enough that a few clusters reconcile without reconnecting, few enough
# that hundreds of clusters do not hold hundreds of clients (threads, sockets, memory). Among
# hundreds of clusters an LRU of 16 was hit rarely anyway, and its idle clients held ~2 MiB of
# objects and ~40 threads (make bench-scale); a reconnect costs a TCP and SCRAM handshake.
KEEP_IDLE = 4


def fingerprint(secrets: Iterable[str]) -> str:
    """A digest of the credentials a handle was built with (the secrets are not kept twice)."""
    digest = hashlib.sha256()
    for value in secrets:
        digest.update(value.encode())
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(eq=False)
class _Handle:
    credentials: str
    admin: MongoAdmin
    users: int = 0
    retired: bool = False  # replaced or forgotten: closed when its last user returns it


class AdminPool:
    def __init__(
        self,
        keep_idle: int = KEEP_IDLE,
        resolver: HostResolver = identity_resolver,
        clients: int = MONGO_CLIENTS,
    ) -> None:
        self.keep_idle = keep_idle
        # The MongoDB clients open at once across every handle: each handle's Connector is
        # built with it (mongocluster.act.reconcile.administration).
        self.budget = ClientBudget(clients)
        # How members' names become addresses, for every handle: built once (outside a pod it
        # is a map of every member, one copy per handle cost ~2 MiB under 200 clusters).
        self.resolver = resolver
        self._handles: OrderedDict[tuple[str, str], _Handle] = OrderedDict()  # LRU first
        self._guard = threading.Lock()

    @contextmanager
    def lease(
        self, namespace: str, name: str, credentials: str, build: Callable[[], MongoAdmin]
    ) -> Iterator[MongoAdmin]:
        """The cluster's handle for `credentials` (a fingerprint) for the duration of the
        block: built on first use or when the credentials changed (the previous handle is
        closed once nobody uses it)."""
        key = (namespace, name)
        retire: list[_Handle] = []
        with self._guard:
            handle = self._handles.get(key)
            if handle is None or handle.credentials != credentials:
                if handle is not None:
                    retire.append(self._retire(key))
                handle = _Handle(credentials, build())
                self._handles[key] = handle
            self._handles.move_to_end(key)
            handle.users += 1
        self._close(retire)
        try:
            yield handle.admin
        finally:
            with self._guard:
                handle.users -= 1
                if not handle.retired:  # recency counts from the end of its last use
                    self._handles.move_to_end(key)
                done = [handle] if handle.retired and handle.users == 0 else []
                done += self._evict()
            self._close(done)

    def forget(self, namespace: str, name: str) -> None:
        """The cluster is gone: close its handle (once its users, if any, return it)."""
        with self._guard:
            handle = self._retire((namespace, name)) if (namespace, name) in self._handles else None
        self._close([handle] if handle is not None else [])

    def release_bootstrap(self, namespace: str, name: str) -> None:
        """The cluster is wired: its bootstrap clients are no longer needed (Connector)."""
        with self._guard:
            handle = self._handles.get((namespace, name))
        if handle is not None:
            handle.admin.connector.release_bootstrap()

    def close(self) -> None:
        """Shutdown: every handle, lent or not."""
        with self._guard:
            handles, self._handles = list(self._handles.values()), OrderedDict()
        for handle in handles:
            handle.admin.connector.close()

    def open_handles(self) -> int:
        """Handles whose clients may be open (kept idle or lent out)."""
        with self._guard:
            return len(self._handles)

    def __len__(self) -> int:
        return self.open_handles()

    # ---- under the guard ----------------------------------------------------------------------

    def _retire(self, key: tuple[str, str]) -> _Handle:
        """Take the handle out of the pool; returned for closing only when nobody uses it."""
        handle = self._handles.pop(key)
        handle.retired = True
        return handle

    def _evict(self) -> list[_Handle]:
        """Idle handles beyond keep_idle, least recently used first."""
        idle = [key for key, handle in self._handles.items() if handle.users == 0]
        return [self._retire(key) for key in idle[: max(0, len(idle) - self.keep_idle)]]

    @staticmethod
    def _close(handles: list[_Handle]) -> None:
        for handle in handles:
            if handle.users == 0:
                handle.admin.connector.close()
