"""How the operator reaches members: a resolver (DNS name -> address) and short-timeout clients.

In the cluster a member's StatefulSet DNS name is dialled as is. Outside it (``make dev``) those
names do not resolve, so ``MONGOBENCH_HOST_MAP`` maps each to a loopback port-forward, e.g.::

    kubectl -n bench port-forward pod/rs0-0 27017:27017 &
    export MONGOBENCH_HOST_MAP='rs0-0.rs0-hl.bench.svc.cluster.local:27017=127.0.0.1:27017,...'

An unmapped name outside the cluster fails at once with a message naming the host and the
variable, instead of waiting for a DNS timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mongobench.mongo import driver
from mongobench.mongo.errors import HostUnresolvable
from mongobench.mongo.model import X509

if TYPE_CHECKING:
    from mongobench.mongo.budget import ClientBudget
    from mongobench.mongo.driver import MongoClient
    from mongobench.mongo.model import Credentials

HOST_MAP_ENV = "MONGOBENCH_HOST_MAP"
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"

HostResolver = Callable[[str], str]


def identity_resolver(host: str) -> str:
    return host


def parse_host_map(text: str) -> dict[str, str]:
    """``name=addr`` pairs separated by commas or whitespace."""
    mapping: dict[str, str] = {}
    for item in text.replace("\n", ",").replace(" ", ",").split(","):
        if not item.strip():
            continue
        name, sep, addr = item.strip().partition("=")
        if not sep or not name or not addr:
            raise ValueError(f"{HOST_MAP_ENV} entry {item!r} is not of the form name=host:port")
        mapping[name] = addr
    return mapping


@dataclass(frozen=True)
class MappedResolver:
    """An explicit map, for running outside the cluster; unknown names are a clear error."""

    mapping: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, host: str) -> str:
        try:
            return self.mapping[host]
        except KeyError:
            raise HostUnresolvable(
                host,
                f"the operator runs outside the cluster and {HOST_MAP_ENV} has no entry for "
                f"{host}; port-forward the member and add '{host}=127.0.0.1:<port>'",
            ) from None


def resolver_from_env(env: Mapping[str, str]) -> HostResolver:
    """Identity in a pod; the explicit map when given; otherwise a resolver that says what to do."""
    if env.get(HOST_MAP_ENV):
        return MappedResolver(parse_host_map(env[HOST_MAP_ENV]))
    if env.get(IN_CLUSTER_ENV):
        return identity_resolver
    return MappedResolver({})


def split_host(address: str, default_port: int = 27017) -> tuple[str, int]:
    if address.startswith("["):  # [::1]:27017
        host, _, rest = address[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    host, sep, port = address.rpartition(":")
    if not sep:
        return address, default_port
    return host, int(port)


class Connector:
    """Builds (and caches) one direct-connection client per member, never one that can hang.

    Every client is ``directConnection=True``: the module discovers the primary itself from
    ``hello``, so replica-set discovery never needs the members' DNS names to resolve locally.

    With a ``budget`` (mongo.budget, shared by every cluster's connector) the clients count
    against the operator's limit: an idle one may be closed by it and is then reopened on its
    next use; one lent out (``lend``) is not closed by it.
    """

    def __init__(
        self,
        credentials: Credentials | None = None,
        *,
        bootstrap_credentials: Credentials | None = None,
        bootstrap_fallbacks: Sequence[Credentials] = (),
        resolver: HostResolver = identity_resolver,
        timeout_seconds: float = 3.0,
        socket_timeout_seconds: float = 30.0,
        tls: bool = False,
        tls_ca_file: str | None = None,
        tls_certificate_key_file: str | None = None,
        app_name: str = "mongobench-operator",
        budget: ClientBudget | None = None,
    ) -> None:
        self.credentials = credentials
        # Used only while no user exists yet (see MongoAdmin.command); never for day-2 work.
        self.bootstrap_credentials = bootstrap_credentials
        # The keyfile's other keys (a rotation's old one), tried in turn when it is refused.
        self.bootstrap_fallbacks = tuple(bootstrap_fallbacks)
        self.resolver = resolver
        self.timeout_ms = int(timeout_seconds * 1000)
        self.socket_timeout_ms = int(socket_timeout_seconds * 1000)
        self.tls = tls
        self.tls_ca_file = tls_ca_file
        self.tls_certificate_key_file = tls_certificate_key_file
        self.app_name = app_name
        self.budget = budget
        self._clients: dict[tuple[str, str | None], MongoClient[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def lend(
        self, host: str, *, authenticate: bool = True, bootstrap: bool = False
    ) -> Iterator[MongoClient[dict[str, Any]]]:
        """``client`` for the block: the budget closes it only once the block has ended."""
        if self.budget is None:  # nothing closes it behind the caller's back
            yield self.client(host, authenticate=authenticate, bootstrap=bootstrap)
            return
        client = self._client(host, authenticate=authenticate, bootstrap=bootstrap, lent=True)
        try:
            yield client
        finally:
            self.budget.give_back(client)

    def client(
        self, host: str, *, authenticate: bool = True, bootstrap: bool = False
    ) -> MongoClient[dict[str, Any]]:
        """A client for one member (by its DNS name).

        As the configured user by default; unauthenticated when asked or without credentials;
        with ``bootstrap``, as the bootstrap identity (unauthenticated when there is none).
        Not lent: with a budget, it may be closed as soon as other clients need the room.
        """
        client = self._client(host, authenticate=authenticate, bootstrap=bootstrap, lent=False)
        if self.budget is not None:
            self.budget.settle()
        return client

    def _client(
        self, host: str, *, authenticate: bool, bootstrap: bool, lent: bool
    ) -> MongoClient[dict[str, Any]]:
        address = self.resolver(host)
        if bootstrap:
            creds = self.bootstrap_credentials
        else:
            creds = self.credentials if authenticate else None
        key = (address, None if creds is None else f"{creds.source}.{creds.username}")
        with self._lock:
            existing = self._clients.get(key)
            # One the budget closed a moment ago (its closer waits for this lock) is replaced.
            if existing is not None and self._counted(existing, lent=lent):
                return existing
            client = self._build(address, creds)
            self._clients[key] = client
            if self.budget is not None:
                self.budget.add(client, lambda: self._evicted(key, client), lent=lent)
            return client

    def _counted(self, client: MongoClient[dict[str, Any]], *, lent: bool) -> bool:
        """Whether the budget still counts the client as open (lent now, when `lent`)."""
        if self.budget is None:
            return True
        return self.budget.borrow(client) if lent else self.budget.borrow_idle(client)

    def _evicted(self, key: tuple[str, str | None], client: MongoClient[dict[str, Any]]) -> None:
        """The budget closes an idle client: forget it here, so its next use reopens one."""
        with self._lock:
            if self._clients.get(key) is client:
                del self._clients[key]
        client.close()

    def _build(self, address: str, creds: Credentials | None) -> MongoClient[dict[str, Any]]:
        name, port = split_host(address)
        options: dict[str, Any] = {
            "directConnection": True,
            "serverSelectionTimeoutMS": self.timeout_ms,
            "connectTimeoutMS": self.timeout_ms,
            "socketTimeoutMS": self.socket_timeout_ms,
            "appname": self.app_name,
            "retryWrites": False,
            "maxPoolSize": 4,
            # One monitor thread per client, no round-trip-time thread beside it (the
            # streaming protocol's): the operator selects no server by latency, and each
            # client of hundreds of clusters wiring at once held three threads.
            "serverMonitoringMode": "poll",
            "tls": self.tls,
        }
        if self.tls_ca_file:
            options["tlsCAFile"] = self.tls_ca_file
        if self.tls_certificate_key_file:
            options["tlsCertificateKeyFile"] = self.tls_certificate_key_file
        if creds is not None and creds.mechanism == X509:
            # The certificate is the identity (tlsCertificateKeyFile): no name, no password.
            options["authMechanism"] = X509
            options["authSource"] = creds.source
        elif creds is not None:
            options["username"] = creds.username
            options["password"] = creds.password
            options["authSource"] = creds.source
        client: MongoClient[dict[str, Any]] = driver.MongoClient(name, port, **options)
        return client

    def discard(self, host: str) -> None:
        """Drop cached clients for a member (e.g. after it restarted or its address changed)."""
        address = self.resolver(host)
        with self._lock:
            gone = [self._clients.pop(k) for k in [k for k in self._clients if k[0] == address]]
        self._close(gone)

    def release_bootstrap(self) -> int:
        """Close the bootstrap identity's clients: once the users exist they only idle, each
        with its monitor threads and sockets (hundreds of clusters add up). A later bootstrap
        command builds a new one. Returns how many were closed."""
        creds = self.bootstrap_credentials
        if creds is None:  # the bootstrap client is the unauthenticated one: still in use
            return 0
        tag = f"{creds.source}.{creds.username}"
        with self._lock:
            idle = [self._clients.pop(k) for k in [k for k in self._clients if k[1] == tag]]
        self._close(idle)
        return len(idle)

    def fall_back(self) -> bool:
        """Bootstrap with the next key from now on (the current one was refused): False when
        there is none left. Sticky: during a keyfile rotation the key that a member not yet
        restarted accepts is accepted by the restarted ones too."""
        if not self.bootstrap_fallbacks:
            return False
        self.release_bootstrap()
        self.bootstrap_credentials, *rest = self.bootstrap_fallbacks
        self.bootstrap_fallbacks = tuple(rest)
        return True

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        self._close(clients)

    def _close(self, clients: list[MongoClient[dict[str, Any]]]) -> None:
        for c in clients:
            if self.budget is not None:
                self.budget.drop(c)
            c.close()

    def __enter__(self) -> Connector:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
