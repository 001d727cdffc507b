"""What the scenarios ask MongoDB itself, with plain pymongo commands (not the operator's code).

Members are reached by their DNS names through the backend's `reach` (the local backend: the wire
model's loopback peers; kind: a `kubectl port-forward` to the pod). Members are inspected as
`__system@local` with the cluster's keyfile (the only identity every member, shards included,
accepts); mongos as the cluster's admin user, as a person would. The data path (`data`) is the
backend's: mongos on kind, FerretDB on the local plane, where the model holds no documents.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from pymongo import MongoClient
from pymongo.errors import AutoReconnect, ConnectionFailure, OperationFailure, PyMongoError

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build.layout import ClusterLayout, cluster_layout

Doc = dict[str, Any]
Client = MongoClient[Doc]
# The document the operator's rolling restart sends (mongobench.mongo.admin.step_down).
STEP_DOWN = {"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 10}


class MongoView:
    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        reach: Callable[[str], str],
        *,
        data: Callable[[ClusterLayout], Client] | None = None,
        forget: Callable[[str], None] = lambda host: None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.reach = reach  # member DNS name -> host:port this process can dial
        self.forget = forget  # that address went stale (e.g. a pod restarted)
        self._data = data  # None: the cluster's own mongos
        self._clients: dict[tuple[str, str], Client] = {}

    # ---- plumbing ---------------------------------------------------------------------------

    def layout(self, cluster: str) -> ClusterLayout:
        obj = k8s.CustomObjectsApi(self.api).get_namespaced_custom_object(
            "mongobench.io", "v1alpha1", self.namespace, "mongoclusters", cluster
        )
        return cluster_layout(cluster, self.namespace, MongoClusterSpec.parse(obj["spec"]))

    def _secret(self, name: str) -> dict[str, str]:
        secret = k8s.CoreV1Api(self.api).read_namespaced_secret(name, self.namespace)
        return {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}

    def _client(self, host: str, layout: ClusterLayout, *, router: bool) -> Client:
        key = (host, "router" if router else "member")
        if key not in self._clients:
            if router:
                admin = self._secret(layout.admin_secret)
                creds = {"username": admin["username"], "password": admin["password"]}
            else:
                keyfile = self._secret(layout.keyfile_secret)["keyfile"]
                creds = {"username": "__system", "password": "".join(keyfile.split())}
                creds["authSource"] = "local"
            self._clients[key] = MongoClient(
                self.reach(host),
                directConnection=True,
                serverSelectionTimeoutMS=5000,
                connectTimeoutMS=5000,
                socketTimeoutMS=60000,
                retryWrites=False,
                appname="mongobench-e2e",
                **creds,
            )
        return self._clients[key]

    def command(
        self, host: str, cmd: Doc, layout: ClusterLayout, *, db: str = "admin", router: bool = False
    ) -> Doc:
        """One command; a stale connection (a restarted pod) is dialled again once."""
        for attempt in (1, 2):
            try:
                try:
                    client = self._client(host, layout, router=router)
                except RuntimeError as exc:  # no address yet (kind: the pod is not running)
                    raise ConnectionFailure(str(exc)) from exc
                reply: Doc = client[db].command(cmd)
                return reply
            except (ConnectionFailure, AutoReconnect):
                if attempt == 2:
                    raise
                self._drop(host)
        raise AssertionError("unreachable")

    def _drop(self, host: str) -> None:
        for key in [k for k in self._clients if k[0] == host]:
            self._clients.pop(key).close()
        self.forget(host)

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    # ---- replica sets ----------------------------------------------------------------------

    def _set(self, cluster: str, rs: str) -> tuple[ClusterLayout, tuple[str, ...]]:
        layout = self.layout(cluster)
        hosts = next(s.hosts for s in layout.replica_sets if s.name == rs)
        return layout, hosts

    def states(self, cluster: str, rs: str, members: int | None = None) -> dict[str, str]:
        """member host -> stateStr, as the first member that answers sees it ({} if none).
        `members` names how many ordinals to ask (e.g. more than the spec while scaling down)."""
        layout, hosts = self._set(cluster, rs)
        if members is not None:
            base = next(s for s in layout.replica_sets if s.name == rs)
            hosts = tuple(base.member_host(i) for i in range(members))
        for host in hosts:
            try:
                reply = self.command(host, {"replSetGetStatus": 1}, layout)
            except PyMongoError:
                continue
            return {m["name"]: m["stateStr"] for m in reply["members"]}
        return {}

    def primary(self, cluster: str, rs: str) -> str | None:
        layout, hosts = self._set(cluster, rs)
        if layout.standalone:  # no replica-set state to ask: its one mongod takes the writes
            return hosts[0]
        return next((h for h, s in self.states(cluster, rs).items() if s == "PRIMARY"), None)

    def config(self, cluster: str, rs: str) -> Doc:
        """The replica set's config as its primary holds it."""
        layout, _ = self._set(cluster, rs)
        primary = self.primary(cluster, rs)
        if primary is None:
            raise LookupError(f"{rs} has no primary")
        config: Doc = self.command(primary, {"replSetGetConfig": 1}, layout)["config"]
        return config

    def users(self, cluster: str, rs: str, names: list[str]) -> dict[str, list[str]]:
        """user (in admin) -> its roles, for those of `names` that exist."""
        layout, _ = self._set(cluster, rs)
        primary = self.primary(cluster, rs) or ""
        out = {}
        for name in names:
            reply = self.command(primary, {"usersInfo": {"user": name, "db": "admin"}}, layout)
            for user in reply["users"]:
                out[user["user"]] = sorted(r["role"] for r in user["roles"])
        return out

    def fcv(self, cluster: str, rs: str) -> str | None:
        """featureCompatibilityVersion on the primary; None while there is none to ask."""
        layout, _ = self._set(cluster, rs)
        primary = self.primary(cluster, rs)
        if primary is None:
            return None
        try:
            cmd = {"getParameter": 1, "featureCompatibilityVersion": 1}
            reply = self.command(primary, cmd, layout)
        except PyMongoError:
            return None
        return str(reply["featureCompatibilityVersion"]["version"])

    def step_down(self, cluster: str, rs: str) -> str:
        """Step the primary down as the operator's rolling restart does; the old primary."""
        layout, _ = self._set(cluster, rs)
        primary = self.primary(cluster, rs)
        assert primary, f"{rs} has no primary to step down"
        with contextlib.suppress(AutoReconnect):  # servers may drop connections stepping down
            self.command(primary, STEP_DOWN, layout)
        return primary

    def elected_after(
        self, cluster: str, rs: str, old: str, timeout: float
    ) -> tuple[str, float] | None:
        """Polls until a member other than `old` is PRIMARY: (it, seconds waited), or None."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            primary = self.primary(cluster, rs)
            if primary and primary != old:
                return primary, time.monotonic() - start
            time.sleep(0.1)
        return None

    # ---- sharding --------------------------------------------------------------------------

    def _router(self, cluster: str, cmd: Doc, db: str = "admin") -> Doc:
        layout = self.layout(cluster)
        return self.command(layout.mongos_host, cmd, layout, db=db, router=True)

    def shards(self, cluster: str) -> list[str]:
        """listShards through mongos (draining shards included)."""
        return sorted(s["_id"] for s in self._router(cluster, {"listShards": 1})["shards"])

    def chunks(self, cluster: str, namespace: str) -> dict[str, int]:
        """shard -> chunks of a sharded collection (config.chunks, by the collection's uuid)."""
        found = self._router(
            cluster, {"find": "collections", "filter": {"_id": namespace}}, db="config"
        )["cursor"]["firstBatch"]
        if not found:
            return {}
        match = {"uuid": found[0]["uuid"]} if "uuid" in found[0] else {"ns": namespace}
        pipeline = [{"$match": match}, {"$group": {"_id": "$shard", "n": {"$sum": 1}}}]
        reply = self._router(
            cluster, {"aggregate": "chunks", "pipeline": pipeline, "cursor": {}}, db="config"
        )
        return {str(d["_id"]): int(d["n"]) for d in reply["cursor"]["firstBatch"]}

    def shard_collection(self, cluster: str, namespace: str, primary_shard: str) -> None:
        """A hashed-`_id` collection whose database's primary shard is `primary_shard`."""
        database = namespace.split(".", 1)[0]
        try:
            self._router(cluster, {"enableSharding": database})
        except OperationFailure as exc:
            if exc.code != 23:  # AlreadyInitialized (servers before 6.0)
                raise
        try:
            self._router(cluster, {"movePrimary": database, "to": primary_shard})
        except OperationFailure as exc:
            if "already" not in str(exc):  # it is the primary already
                raise
        self._router(cluster, {"shardCollection": namespace, "key": {"_id": "hashed"}})

    def _collection(self, cluster: str, namespace: str) -> Any:
        database, collection = namespace.split(".", 1)
        layout = self.layout(cluster)
        if self._data is not None:
            client = self._data(layout)
        else:
            client = self._client(layout.mongos_host, layout, router=True)
        return client[database][collection]

    def insert(self, cluster: str, namespace: str, documents: int) -> None:
        docs = [{"_id": f"doc{i:06d}", "n": i} for i in range(documents)]
        self._collection(cluster, namespace).insert_many(docs)

    def count(self, cluster: str, namespace: str) -> int:
        return int(self._collection(cluster, namespace).count_documents({}))
