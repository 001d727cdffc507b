"""How many MongoDB clients the operator keeps open at once, across every cluster's handle.

Each pymongo client holds two threads (its server monitor, its cursor reaper), two sockets and
about 75 KiB. A cluster's handle (mongo.pool) opens up to three clients per member: the
unauthenticated one `hello` uses, the bootstrap identity's and the operator user's. Under a burst
of clusters the handles lent to the handler threads and the idle ones kept held about 60 clients
and 120 threads at 100 clusters (make bench-scale). The budget bounds them all at once: beyond
`limit`, the least recently used idle client is closed and its connector forgets it (its next
use reconnects). A client lent out (`Connector.lend`) is never closed by the budget: while more
are lent than the limit allows, the budget is exceeded until they are returned.

What it bounds is clients, not threads at every instant: pymongo's close() does not join its
threads, which exit within about a second, so under churn a closed client's threads linger
briefly. It matters most for clusters of many members (a sharded cluster's pass touches every
member, up to three clients each); bench-scale's one-member clusters are already held near it by
the pool's idle-handle limit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# Enough for every handler thread (MONGOBENCH_WORKERS, 16) to keep two clients between its
# commands (a pass goes hello -> bootstrap -> user on one member): fewer made the handlers
# reconnect, and pay a TCP and SCRAM handshake, within one pass.
MONGO_CLIENTS = 32


@dataclass(eq=False)
class _Entry:
    close: Callable[[], None]  # closes the client and makes its connector forget it
    users: int = 0


class ClientBudget:
    def __init__(self, limit: int = MONGO_CLIENTS) -> None:
        if limit < 1:
            raise ValueError(f"at least one MongoDB client must be allowed, not {limit}")
        self.limit = limit
        self._entries: OrderedDict[int, _Entry] = OrderedDict()  # by id(client), LRU first
        self._clients: dict[int, object] = {}  # keeps each id's client alive while counted
        self._guard = threading.Lock()

    def add(self, client: object, close: Callable[[], None], *, lent: bool) -> None:
        """A client was opened (lent at once when `lent`); `close` closes it for the budget."""
        with self._guard:
            self._entries[id(client)] = _Entry(close, 1 if lent else 0)
            self._clients[id(client)] = client

    def borrow(self, client: object) -> bool:
        """Lend an open client; False when the budget closed it meanwhile (open another)."""
        with self._guard:
            entry = self._entries.get(id(client))
            if entry is None:
                return False
            entry.users += 1
            self._entries.move_to_end(id(client))
            return True

    def borrow_idle(self, client: object) -> bool:
        """An open client used without being lent (`Connector.client`): it counts as recently
        used; False when the budget closed it meanwhile."""
        with self._guard:
            if id(client) not in self._entries:
                return False
            self._entries.move_to_end(id(client))
            return True

    def give_back(self, client: object) -> None:
        """A lent client is returned: it counts as recently used; the idle clients beyond the
        limit are closed."""
        with self._guard:
            entry = self._entries.get(id(client))
            if entry is not None:
                entry.users = max(0, entry.users - 1)
                self._entries.move_to_end(id(client))
        self.settle()

    def drop(self, client: object) -> None:
        """Its connector closed the client (discarded, released, shut down): no longer counted."""
        with self._guard:
            self._entries.pop(id(client), None)
            self._clients.pop(id(client), None)

    def settle(self) -> int:
        """Close the least recently used idle clients beyond the limit; how many were closed."""
        with self._guard:
            over = len(self._entries) - self.limit
            idle = [key for key, entry in self._entries.items() if entry.users == 0][: max(0, over)]
            evicted = [self._entries.pop(key) for key in idle]
            for key in idle:
                self._clients.pop(key)
        for entry in evicted:  # outside the guard: closing takes the connector's lock
            entry.close()
        return len(evicted)

    def open_clients(self) -> int:
        with self._guard:
            return len(self._entries)

    def lent_clients(self) -> int:
        with self._guard:
            return sum(1 for entry in self._entries.values() if entry.users)
