"""Scripted MongoDB wire peers (mockupdb) on loopback, reached through the module's resolver.

Each peer autoresponds to hello/isMaster (what it claims to be is set per test) and queues every
other command, so a test receives the exact document pymongo sent and scripts the reply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from mockupdb import MockupDB

from mongobench.mongo import Connector, MappedResolver, MongoAdmin
from mongobench.mongo.model import Credentials

# Keys pymongo adds to every command; tests compare what the module chose to send.
_DRIVER_KEYS = {"$db", "lsid", "$clusterTime", "$readPreference", "apiVersion"}


def body(request: Any) -> dict[str, Any]:
    return {k: v for k, v in request.doc.items() if k not in _DRIVER_KEYS}


class Peer:
    """One scripted mongod/mongos answering as ``name`` (a cluster DNS name)."""

    def __init__(self, name: str, hello: dict[str, Any] | None = None) -> None:
        self.name = name
        self.hello: dict[str, Any] = hello if hello is not None else {"isWritablePrimary": True}
        self.reject_auth = False
        self.auto: list[Any] = []  # autoresponded non-hello requests (e.g. saslStart), in order
        # command name (lower case) -> reply document, answered without the test receiving it
        self.canned: dict[str, dict[str, Any]] = {}
        self.server = MockupDB(auto_ismaster=False, request_timeout=10)
        self.server.autoresponds(self._respond)
        self.port = self.server.run()

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    def _respond(self, request: Any) -> bool:
        name = (request.command_name or "").lower()
        if name in ("hello", "ismaster"):
            reply = {"minWireVersion": 0, "maxWireVersion": 21, "maxBsonObjectSize": 16777216}
            reply.update(self.hello)
            reply.setdefault("ismaster", reply.get("isWritablePrimary", False))
            return bool(request.ok(reply))
        if name in ("saslstart", "authenticate") and self.reject_auth:
            self.auto.append(request)
            return bool(
                request.command_err(18, "Authentication failed.", codeName="AuthenticationFailed")
            )
        if name in self.canned:
            self.auto.append(request)
            return bool(request.ok(self.canned[name]))
        return False

    def receives(self, timeout: float = 10) -> Any:
        return self.server.receives(timeout=timeout)

    def assert_silent(self, within: float = 0.3) -> None:
        """Nothing but scripted traffic arrived: the module sent no (mutating) command."""
        with pytest.raises(AssertionError, match="got nothing"):
            self.server.receives(timeout=within)

    def stop(self) -> None:
        self.server.stop()


class Cluster:
    """Peers plus a MongoAdmin whose resolver maps the DNS names onto them."""

    def __init__(self) -> None:
        self.peers: dict[str, Peer] = {}
        self._connectors: list[Connector] = []

    def peer(self, name: str, hello: dict[str, Any] | None = None) -> Peer:
        self.peers[name] = Peer(name, hello)
        return self.peers[name]

    def admin(
        self,
        credentials: Credentials | None = None,
        timeout: float = 2.0,
        bootstrap: Credentials | None = None,
    ) -> MongoAdmin:
        resolver = MappedResolver({n: p.address for n, p in self.peers.items()})
        connector = Connector(
            credentials, bootstrap_credentials=bootstrap, resolver=resolver, timeout_seconds=timeout
        )
        self._connectors.append(connector)
        return MongoAdmin(connector)

    def close(self) -> None:
        for c in self._connectors:
            c.close()
        for p in self.peers.values():
            p.stop()


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """Start an admin call in the background; calling the result joins it (re-raising as is)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def join() -> Any:
        thread.join(15)
        if thread.is_alive():
            raise AssertionError(f"{fn.__name__} still running after 15 s")
        if "error" in box:
            raise box["error"]
        return box["result"]

    return join
