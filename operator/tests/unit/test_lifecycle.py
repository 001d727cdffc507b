"""Unit tier: what outlives a handler call is owned by the operator's state and released with
the resource: MongoDB clients closed on deletion and on a change of credentials, locks
forgotten, the API client closed at shutdown (its requests' timeouts: protocol/test_api_client);
no module keeps a mutable cache of its own.

The Connector below records close() instead of holding sockets (no MongoDB here); the state,
pool and locks are the product's own.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import mongobench
from mongobench.config import OperatorConfig
from mongobench.k8s import client as kube
from mongobench.k8s.api import KubeClient
from mongobench.k8s.credentials import Credentials
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.connect import Connector
from mongobench.mongo.pool import AdminPool, fingerprint
from mongobench.runtime.locks import ResourceLocks
from mongobench.state import OperatorState, state_of

pytestmark = pytest.mark.unit


class RecordingConnector(Connector):
    closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


def admin() -> MongoAdmin:
    return MongoAdmin(RecordingConnector())


def closes(handle: MongoAdmin) -> int:
    connector = handle.connector
    assert isinstance(connector, RecordingConnector)
    return connector.closed


def lend(pool: AdminPool, name: str, credentials: str = "fp") -> MongoAdmin:
    """A lease taken and returned at once: the handle as the pool lent it."""
    with pool.lease("ns", name, credentials, admin) as handle:
        return handle


def test_a_clusters_handle_is_reused_until_its_credentials_change() -> None:
    pool = AdminPool()
    first = lend(pool, "c", fingerprint(["pw", "key"]))
    assert lend(pool, "c", fingerprint(["pw", "key"])) is first
    second = lend(pool, "c", fingerprint(["new-pw", "key"]))
    assert second is not first
    assert closes(first) == 1 and closes(second) == 0  # the old clients are closed
    assert len(pool) == 1


def test_a_handle_in_use_is_closed_only_when_returned() -> None:
    """A BenchmarkRun drops its collection while the cluster's credentials change, or while
    the cluster is deleted: its clients stay open until it is done (pymongo refuses to run
    on a closed client)."""
    pool = AdminPool()
    with pool.lease("ns", "c", "old", admin) as busy:
        replaced = lend(pool, "c", "new")
        assert replaced is not busy and closes(busy) == 0
        with pool.lease("ns", "d", "fp", admin) as deleted:
            pool.forget("ns", "d")
            assert closes(deleted) == 0
        assert closes(deleted) == 1
    assert closes(busy) == 1 and closes(replaced) == 0


def test_a_deleted_clusters_clients_are_closed_and_forgotten() -> None:
    pool = AdminPool()
    handle = lend(pool, "c")
    other = lend(pool, "d")
    pool.forget("ns", "c")
    assert closes(handle) == 1 and closes(other) == 0
    assert len(pool) == 1
    pool.forget("ns", "c")  # twice: nothing more to close
    assert closes(handle) == 1
    pool.close()
    assert closes(other) == 1 and len(pool) == 0


def test_hundreds_of_clusters_keep_only_the_recent_handles_open() -> None:
    """Every client holds threads and memory: beyond keep_idle, the least recently used idle
    handles are closed; a lent one never is, and a closed cluster's next lease reconnects."""
    pool = AdminPool(keep_idle=2)
    with pool.lease("ns", "busy", "fp", admin) as busy:
        handles = [lend(pool, f"c{i}") for i in range(5)]
        assert [closes(h) for h in handles] == [1, 1, 1, 0, 0]
        assert closes(busy) == 0 and pool.open_handles() == 3
    # Returned, busy is now the most recently used: the oldest idle one goes instead.
    assert closes(busy) == 0 and [closes(h) for h in handles[3:]] == [1, 0]
    again = lend(pool, "c0")
    assert again is not handles[0] and closes(again) == 0  # rebuilt, not the closed one
    assert pool.open_handles() == 2


def test_fingerprints_keep_no_secret() -> None:
    digest = fingerprint(["s3cret-password", "keyfile"])
    assert "s3cret" not in digest
    assert digest != fingerprint(["s3cret-passwordkeyfile"])  # fields stay apart


def test_locks_are_per_resource_and_forgotten_with_it() -> None:
    locks = ResourceLocks()
    lock = locks.lock("MongoCluster", "ns", "c")
    assert locks.lock("MongoCluster", "ns", "c") is lock
    assert locks.lock("BenchmarkRun", "ns", "c") is not lock
    locks.forget("MongoCluster", "ns", "c")
    assert len(locks) == 1
    assert locks.lock("MongoCluster", "ns", "c") is not lock


class RecordingApi(kube.ApiClient):
    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


def test_the_state_owns_the_api_client_and_closes_it() -> None:
    api = RecordingApi(Credentials(server="http://127.0.0.1:9"))  # never asked: no request here
    state = OperatorState.create(api)
    try:
        # One client for every controller, handed to them (no module keeps one of its own).
        assert isinstance(state.kube, KubeClient) and state.kube.api is api
        assert state.cluster_data.kube is state.kube
        handle = lend(state.admins, "c")
        state.locks.lock("MongoCluster", "ns", "c")
        state.ticker.schedule(("MongoCluster", "ns", "c"), True, 60, lambda: None)
        state.wakeups.wake(("MongoCluster", "ns", "c"), lambda: 1 / 0)  # retried after a backoff
        assert state.wakeups.idle(timeout=5)
        assert state.wakeups.retrying(("MongoCluster", "ns", "c")) is not None
        state.forget("MongoCluster", "ns", "c")
        assert closes(handle) == 1 and len(state.locks) == 0
        assert not len(state.ticker) and not len(state.wakeups)  # nor ticked, nor retried
        assert state.cluster_data.admins is state.admins  # one pool for clusters and runs
    finally:
        state.close()
    assert api.closed


def test_a_closed_api_client_refuses_requests_before_the_mongodb_clients_close() -> None:
    """A sync still running when the operator stops writes no status from MongoDB clients
    closed under it: the API client closes first, and refuses from then on."""
    api = kube.ApiClient(Credentials(server="http://127.0.0.1:9"))
    state = OperatorState.create(api)
    order: list[str] = []

    def close_admins() -> None:
        with pytest.raises(kube.ClientClosed):
            api.request("GET", "/version")
        order.append("admins")

    state.admins.close = close_admins  # type: ignore[method-assign]
    state.close()
    assert order == ["admins"]
    with pytest.raises(kube.ClientClosed, match="the operator is stopping"):
        api.request("PATCH", "/apis/mongobench.io/v1alpha1/namespaces/ns/mongoclusters/c/status")


def test_handlers_find_the_state_in_kopfs_memo() -> None:
    class Memo:
        pass

    memo: Any = Memo()
    with pytest.raises(RuntimeError, match="state is missing"):
        state_of(memo)
    memo.state = OperatorState.create(kube.ApiClient(Credentials(server="http://127.0.0.1:9")))
    try:
        assert state_of(memo) is memo.state
    finally:
        memo.state.close()


# --- no module-level mutable caches -------------------------------------------------------------

# Module-level bindings that are not caches: each holds one thing set at start-up.
BINDINGS = {
    ("config.py", "_current"): "the process's configuration, set once by `mongobench run`",
}


def _mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "list", "set", "defaultdict", "OrderedDict")
    )


def test_no_module_keeps_mutable_state_of_its_own() -> None:
    root = Path(mongobench.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.parse(path.read_text()).body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            for target in targets:
                # Upper-case names are constants (never mutated); __all__ is the export list.
                name = getattr(target, "id", "__all__")
                if not name.isupper() and name != "__all__" and _mutable(value):
                    found.append((rel, name))
    assert sorted(set(found) - set(BINDINGS)) == []
    assert set(BINDINGS) <= set(found), "a binding listed here no longer exists: drop it"


# --- kopf's connections ---------------------------------------------------------------------


def test_kopfs_connections_cover_its_watches_and_each_handler_thread() -> None:
    """A watch stream holds a connection for good: the bound must leave room for every watch
    (a watch waiting for a connection would stall the operator) and for the requests."""
    import kopf

    from mongobench import main

    registry = kopf.get_default_registry()
    watched = {
        handler.selector
        for handlers in (registry._watching, registry._changing, registry._spawning)
        for handler in handlers.get_all_handlers()
    }
    # Plus kopf's CRD, namespace and peering watches.
    assert len(watched) + 3 <= main.WATCH_STREAMS_PER_NAMESPACE
    config = OperatorConfig(namespaces=("lab-a", "lab-b"), workers=16)
    assert main.connection_limit(config) == 2 * main.WATCH_STREAMS_PER_NAMESPACE + 16
    assert (
        main.connection_limit(replace(config, namespaces=()))
        == main.WATCH_STREAMS_PER_NAMESPACE + 16
    )
    assert main.connection_limit(replace(config, namespaces=("lab-*",))) == 0  # unknown: unbounded


def test_configure_bounds_the_mongodb_clients_and_kopfs_idle_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MONGOBENCH_MONGO_CLIENTS reaches the pool every cluster's handle is built from, and
    kopf's per-object workers exit soon after their last event (each holds that event's body)."""
    import kopf

    from mongobench import main

    create = OperatorState.create
    api = RecordingApi(Credentials(server="http://127.0.0.1:9"))  # never asked
    monkeypatch.setattr(OperatorState, "create", staticmethod(lambda **kw: create(api, **kw)))
    replace(OperatorConfig.current(), mongo_clients=7).make_current()
    settings, memo = kopf.OperatorSettings(), kopf.Memo()
    try:
        main.configure(settings=settings, memo=memo)
        assert state_of(memo).admins.budget.limit == 7
        assert settings.queueing.idle_timeout == main.QUEUE_IDLE_SECONDS < 5
    finally:
        OperatorConfig().make_current()
        if hasattr(memo, "state"):
            state_of(memo).close()
