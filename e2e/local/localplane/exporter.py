"""The real mongodb_exporter, pointed at scripted mongod/mongos peers that answer with a real
mongod's documents.

Test support only (never imported by the product). No mongod can run on the build machines and,
against FerretDB, the exporter exports only mongodb_up and its version. So the dashboards test
runs the exporter binary (hack/build-tools.sh builds it, with the pod's flags) against mockupdb
peers that answer every command it sends. getDiagnosticData, serverStatus and replSetGetStatus
come from the document of a real mongod 4.2 replica-set member that mongodb_exporter's own tests
use (exporter/testdata/get_diagnostic_data.json, copied beside the binary), with the BSON types
its JSON dump lost restored (dates were strings, timestamps {T, I}): the exporter then derives
its metric names and labels exactly as it does from a real server.

What the peers make up, and the exporter therefore cannot prove: each member's identity (set
name, host, state, lag behind its primary), counters that grow between scrapes (so rate() has
something to show), and the small answers the documents lack, shaped as MongoDB documents them:
dbStats, top, listDatabases, the oplog's first and last entries, config.chunks/changelog counts
on mongos, system.profile counts. Commands nobody scripted get CommandNotFound, as an old server
would answer them.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bson import Int64, ObjectId, Timestamp
from mockupdb import MockupDB

from localplane import procs
from localplane.net import free_port, wait_for_port
from localplane.tools import binary, cache_dir, versions

WIRE = {  # mongod 4.2 (the testdata's version)
    "minWireVersion": 0,
    "maxWireVersion": 8,
    "maxBsonObjectSize": 16777216,
    "maxMessageSizeBytes": 48000000,
    "maxWriteBatchSize": 100000,
    "logicalSessionTimeoutMinutes": 30,
}
_ISO_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)$")
# serverStatus counters that grow between scrapes (per second), by path.
_GROWING = (
    ("opcounters", 40.0),
    ("opcountersRepl", 20.0),
    ("network", 5000.0),
    ("metrics.document", 30.0),
    ("opLatencies", 25.0),
    ("connections.totalCreated", 0.5),
)
_CACHE_GROWING = ("bytes read into cache", "bytes written from cache", "pages read into cache")


def testdata_dir() -> Path:
    return cache_dir() / f"mongodb_exporter-{versions()['MONGODB_EXPORTER_VERSION']}-testdata"


def _restore_types(value: Any) -> Any:
    """The BSON types the testdata's JSON dump turned into strings and {T, I} objects."""
    if isinstance(value, dict):
        if set(value) == {"T", "I"}:
            return Timestamp(int(value["T"]), int(value["I"]))
        return {k: _restore_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_types(v) for v in value]
    if isinstance(value, str) and _ISO_DATE.match(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def load_diagnostic_data() -> dict[str, Any]:
    path = testdata_dir() / "get_diagnostic_data.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make setup` (hack/build-tools.sh)")
    doc: dict[str, Any] = _restore_types(json.loads(path.read_text()))
    return doc


def _command_reply(section: Mapping[str, Any]) -> dict[str, Any]:
    """A getDiagnosticData section as its command answers it: without the start/end times that
    diagnostic data adds to every section."""
    return {k: v for k, v in section.items() if k not in ("start", "end")}


def _grow(doc: dict[str, Any], path: str, per_second: float, elapsed: float) -> None:
    """Add ``per_second * elapsed`` to every number under ``path`` (a dotted key path)."""
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node.get(key, {})
    if last not in node:
        return

    def add(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: add(x) for k, x in v.items()}
        if isinstance(v, bool) or not isinstance(v, int | float):
            return v
        return type(v)(v + per_second * elapsed)

    node[last] = add(node[last])


@dataclass
class Member:
    # Its name in the replica set config (host:port). Make it the peer's own loopback address:
    # the exporter's PBM collector connects to the set by these names.
    host: str
    state: str = "SECONDARY"  # PRIMARY, SECONDARY, ...
    lag_seconds: float = 0.0  # behind the primary's optime


@dataclass
class ReplicaSet:
    name: str
    cluster_role: str  # "" (plain replica set), "shardsvr" or "configsvr"
    members: list[Member]
    oplog_window_seconds: float = 3600.0
    replica_set_id: ObjectId = field(default_factory=ObjectId)


@dataclass
class ShardedCluster:
    """What a mongos reports about its cluster: chunks per shard and recent migrations."""

    cluster_id: ObjectId
    config_db: str  # the config servers' connection string
    chunks: Mapping[str, int]  # shard -> chunks of ycsb.usertable
    migrations: int = 3  # moveChunk.commit events in the changelog's last 10 minutes


class ScriptedMongod:
    """One mockupdb peer: a member of ``replset`` (``member`` its index) or, without one, a mongos
    of ``sharded``."""

    def __init__(
        self,
        documents: Mapping[str, Any],
        *,
        replset: ReplicaSet | None = None,
        member: int = 0,
        sharded: ShardedCluster | None = None,
        port: int | None = None,
    ) -> None:
        if (replset is None) == (sharded is None):
            raise ValueError("a member of a replica set, or a mongos of a sharded cluster")
        self.documents = documents
        self.replset = replset
        self.member = member
        self.sharded = sharded
        self.started = time.monotonic()
        self.commands: list[str] = []  # every command name received, for the test to inspect
        self.server = MockupDB(port=port, auto_ismaster=False, request_timeout=int(1e6))
        self.server.autoresponds(self._respond)
        self.port = self.server.run()

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/admin"

    def stop(self) -> None:
        self.server.stop()

    # -- answers ---------------------------------------------------------------------------

    def _respond(self, request: Any) -> bool:
        name = (request.command_name or "").lower()
        self.commands.append(name)
        answer = getattr(self, f"_cmd_{name}", None)
        if answer is None:
            return bool(
                request.command_err(59, f"no such command: '{name}'", codeName="CommandNotFound")
            )
        reply = answer(request)
        if reply is None:
            return bool(
                request.command_err(59, f"not scripted: {request.doc}", codeName="CommandNotFound")
            )
        return bool(request.ok(reply))

    def _me(self) -> Member:
        assert self.replset is not None
        return self.replset.members[self.member]

    def _cmd_ismaster(self, _: Any) -> dict[str, Any]:
        now = {"localTime": datetime.now(UTC), **WIRE}
        if self.replset is None:
            return {"ismaster": True, "msg": "isdbgrid", **now}
        rs, me = self.replset, self._me()
        primary = next((m.host for m in rs.members if m.state == "PRIMARY"), None)
        return {
            "ismaster": me.state == "PRIMARY",
            "secondary": me.state == "SECONDARY",
            "setName": rs.name,
            "hosts": [m.host for m in rs.members],
            "me": me.host,
            **({"primary": primary} if primary else {}),
            **now,
        }

    _cmd_hello = _cmd_ismaster

    def _cmd_ping(self, _: Any) -> dict[str, Any]:
        return {}

    def _cmd_endsessions(self, _: Any) -> dict[str, Any]:
        return {}

    def _cmd_buildinfo(self, _: Any) -> dict[str, Any]:
        version = str(self.documents["serverStatus"]["version"])
        numbers = [int(x) for x in version.split(".")]
        return {"version": version, "versionArray": [*numbers, 0], "modules": [], "bits": 64}

    def _cmd_getcmdlineopts(self, _: Any) -> dict[str, Any]:
        if self.replset is None:
            assert self.sharded is not None
            return {
                "argv": ["mongos"],
                "parsed": {"sharding": {"configDB": self.sharded.config_db}},
            }
        parsed: dict[str, Any] = {"replication": {"replSet": self.replset.name}}
        if self.replset.cluster_role:
            parsed["sharding"] = {"clusterRole": self.replset.cluster_role}
        return {"argv": ["mongod"], "parsed": parsed}

    def _cmd_getparameter(self, _: Any) -> dict[str, Any]:
        version = str(self.documents["serverStatus"]["version"]).rsplit(".", 1)[0]
        return {"featureCompatibilityVersion": {"version": version}}

    def _cmd_replsetgetconfig(self, _: Any) -> dict[str, Any] | None:
        if self.replset is None:
            return None
        rs = self.replset
        members = [{"_id": i, "host": m.host} for i, m in enumerate(rs.members)]
        config = {"_id": rs.name, "version": 1, "members": members}
        return {"config": {**config, "settings": {"replicaSetId": rs.replica_set_id}}}

    def _replset_status(self) -> dict[str, Any]:
        """The testdata's replSetGetStatus, with this set's members, states and optimes."""
        assert self.replset is not None
        base = _command_reply(self.documents["replSetGetStatus"])
        template = base["members"][0]
        now = datetime.now(UTC).replace(microsecond=0)
        members = []
        for i, m in enumerate(self.replset.members):
            optime = now - timedelta(seconds=m.lag_seconds)
            members.append(
                {
                    **template,
                    "_id": i,
                    "name": m.host,
                    "state": {"PRIMARY": 1, "SECONDARY": 2}.get(m.state, 8),
                    "stateStr": m.state,
                    "health": 1,
                    "self": i == self.member,
                    "optime": {"ts": Timestamp(int(optime.timestamp()), 1), "t": 1},
                    "optimeDate": optime,
                    **({"lastHeartbeat": now, "pingMs": 1} if i != self.member else {}),
                }
            )
        state = members[self.member]["state"]
        return {**base, "set": self.replset.name, "date": now, "myState": state, "members": members}

    def _cmd_replsetgetstatus(self, _: Any) -> dict[str, Any] | None:
        return None if self.replset is None else self._replset_status()

    def _server_status(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self.started
        status = _command_reply(copy.deepcopy(self.documents["serverStatus"]))
        for path, per_second in _GROWING:
            _grow(status, path, per_second, elapsed)
        cache = status.get("wiredTiger", {}).get("cache", {})
        for key in _CACHE_GROWING:
            _grow(cache, key, 1000.0, elapsed)
        if self.replset is None:  # a mongos has no storage engine
            for key in ("wiredTiger", "storageEngine", "repl", "opcountersRepl"):
                status.pop(key, None)
            status["process"] = "mongos"
        return dict(status)

    def _cmd_serverstatus(self, _: Any) -> dict[str, Any]:
        return self._server_status()

    def _cmd_getdiagnosticdata(self, _: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "start": datetime.now(UTC),
            "serverStatus": self._server_status(),
            "end": datetime.now(UTC),
        }
        if self.replset is not None:
            data["replSetGetStatus"] = self._replset_status()
            data["local.oplog.rs.stats"] = self.documents["local.oplog.rs.stats"]
            data["systemMetrics"] = self.documents["systemMetrics"]
        return {"data": data}

    def _cmd_currentop(self, _: Any) -> dict[str, Any]:
        """One operation running for 90 s (the exporter asks for those over a minute)."""
        op = {
            "opid": 4242,
            "active": True,
            "op": "update",
            "ns": "ycsb.usertable",
            "desc": "conn42",
            "microsecs_running": Int64(90_000_000),
        }
        return {"inprog": [op] if self.replset is not None else []}

    def _cmd_listdatabases(self, _: Any) -> dict[str, Any]:
        names = ["admin", "config", "ycsb"] + (["local"] if self.replset else [])
        dbs = [{"name": n, "sizeOnDisk": 40960, "empty": False} for n in names]
        return {"databases": dbs, "totalSize": 40960 * len(names)}

    def _cmd_dbstats(self, request: Any) -> dict[str, Any]:
        return {
            "db": request.doc.get("$db", "admin"),
            "collections": 1,
            "views": 0,
            "objects": 1000,
            "avgObjSize": 1100,
            "dataSize": 1100000,
            "storageSize": 600000,
            "indexes": 1,
            "indexSize": 40000,
            "totalSize": 640000,
            "scaleFactor": 1,
            "fsUsedSize": 41 * 2**30,
            "fsTotalSize": 50 * 2**30,
        }

    def _cmd_top(self, _: Any) -> dict[str, Any]:
        elapsed = int(time.monotonic() - self.started)
        usage = {"time": 1000 + 500 * elapsed, "count": 10 + 5 * elapsed}
        kinds = ("total", "readLock", "writeLock", "queries", "getmore", "insert", "update")
        return {
            "totals": {
                "note": "all times in microseconds",
                "ycsb.usertable": dict.fromkeys(kinds, usage),
            }
        }

    def _cmd_listcollections(self, request: Any) -> dict[str, Any]:
        db = request.doc.get("$db")
        batch = [{"name": "usertable", "type": "collection"}] if db == "ycsb" else []
        return {"cursor": {"id": Int64(0), "ns": f"{db}.$cmd.listCollections", "firstBatch": batch}}

    def _cmd_find(self, request: Any) -> dict[str, Any]:
        db, coll = request.doc.get("$db"), request.doc["find"]
        batch: list[dict[str, Any]] = []
        if (db, coll) == ("local", "oplog.rs") and self.replset is not None:
            newest = int(time.time())
            oldest = newest - int(self.replset.oplog_window_seconds)
            newest_first = (request.doc.get("sort") or {}).get("$natural") == -1
            batch = [{"ts": Timestamp(newest if newest_first else oldest, 1), "op": "n"}]
        elif (db, coll) == ("config", "version") and self.sharded is not None:
            batch = [{"_id": 1, "clusterId": self.sharded.cluster_id}]
        elif (db, coll) == ("config", "collections") and self.sharded is not None:
            # The exporter asks database by database: {_id: {$regex: "^<db>."}}.
            pattern = ((request.doc.get("filter") or {}).get("_id") or {}).get("$regex", "")
            if re.match(pattern, "ycsb.usertable"):
                batch = [{"_id": "ycsb.usertable", "uuid": self.sharded.cluster_id}]
        return {"cursor": {"id": Int64(0), "ns": f"{db}.{coll}", "firstBatch": batch}}

    def _cmd_aggregate(self, request: Any) -> dict[str, Any]:
        db, coll = request.doc.get("$db"), request.doc["aggregate"]
        pipeline: Sequence[Mapping[str, Any]] = request.doc.get("pipeline") or []
        stages = [next(iter(stage)) for stage in pipeline]
        batch: list[dict[str, Any]] = []
        group: Mapping[str, Any] = next((s["$group"] for s in pipeline if "$group" in s), {})
        if self.sharded is not None and (db, coll) == ("config", "chunks"):
            if "$project" in stages:  # per collection: {shard, nChunks}
                batch = [{"shard": s, "nChunks": n} for s, n in sorted(self.sharded.chunks.items())]
            elif group.get("_id") == "$shard":  # per shard: {_id: shard, count}
                batch = [{"_id": s, "count": n} for s, n in sorted(self.sharded.chunks.items())]
            else:
                batch = [{"_id": 1, "n": sum(self.sharded.chunks.values())}]
        elif self.sharded is not None and (db, coll) == ("config", "changelog"):
            batch = [{"_id": {"event": "moveChunk.commit"}, "count": self.sharded.migrations}]
        elif self.sharded is not None and db == "config":  # countDocuments on databases, shards
            batch = [{"_id": 1, "n": len(self.sharded.chunks)}]
        elif coll == "system.profile":  # countDocuments: operations slower than slowms
            batch = [{"_id": 1, "n": 2}]
        return {"cursor": {"id": Int64(0), "ns": f"{db}.{coll}", "firstBatch": batch}}


@dataclass
class Exporter:
    name: str
    port: int
    proc: procs.Proc
    popen: subprocess.Popen[bytes]

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        procs.terminate([self.proc], {self.proc.pid: self.popen})


def start_exporter(name: str, args: Sequence[str], uri: str, workdir: Path) -> Exporter:
    """mongodb_exporter with ``args`` (the pod's), its URI and listen address replaced."""
    port = free_port()
    keep = [a for a in args if not a.startswith(("--mongodb.uri=", "--web.listen-address="))]
    cmd = [
        str(binary("mongodb_exporter")),
        *keep,
        f"--mongodb.uri={uri}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    log = workdir / f"exporter-{name}.log"
    proc, popen = procs.spawn(f"exporter-{name}", cmd, log, detached=False, cwd=workdir)
    exporter = Exporter(name, port, proc, popen)
    try:
        wait_for_port(port, timeout=30)
    except TimeoutError:
        exporter.stop()
        raise RuntimeError(f"mongodb_exporter {name} did not start:\n{procs.tail(log)}") from None
    return exporter
