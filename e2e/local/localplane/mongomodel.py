"""An in-memory model of mongod/mongos replica-set and sharding state, served over the wire.

Test support only (never imported by the product): no real mongod can be installed on the build
machines, so the cluster tier points the operator's host resolver at these loopback peers.
Each member is one mockupdb server on its own port; members of a set share one state object, so
they agree on config, primary and users. Rules of the model (not of MongoDB in full):

- the primary is the first configured member; replSetStepDown hands it to the next one;
- a member added by replSetInitiate/replSetReconfig is STARTUP2 for ``catch_up_seconds``, then
  SECONDARY; a configured member with no running peer is DOWN;
- replSetReconfig must go to the primary (else NotWritablePrimary 10107), carry a higher version
  and change at most one voting member (else NewReplicaSetConfigurationIncompatible 103);
- a ``standalone`` mongod (no --replSet) answers hello without setName and always writable,
  replSetInitiate with NoReplicationEnabled 76 "This node was not started with replication
  enabled." and the other replSet commands with 76 "not running with --replSet" (MongoDB's
  repl_set_commands.cpp); its users and collections are its own;
- every member and mongos runs with a keyfile and the operator is never on their loopback, so
  no localhost exception: commands other than hello/ping/authentication need an authenticated
  connection (else Unauthorized 13). SCRAM-SHA-256 authenticates the users a set (or, through
  mongos, the cluster) has, and __system@local with the keyfile's contents (``keyfile``: the
  text, or a function of the member's name returning it, e.g. read from the pod's Secret).
  A connection is known by its client port; authorization (roles) is not enforced;
- with ``hold_after_write``, one write command (WRITE_COMMANDS) is admitted, then every other
  one is refused with ShutdownInProgress (91, transient) until ``held`` is reset;
- a mongos answers addShard/listShards/removeShard (draining takes ``drain_calls`` calls, then
  waits while the shard is still a database's primary: ``sharded.primaries``, set by
  enableSharding or by hand, moved by movePrimary), enableSharding/shardCollection,
  config.collections/config.chunks and $collStats counts;
- a ranged (or compound ranged) collection has real chunks: one [MinKey, MaxKey) chunk on the
  database's primary shard after shardCollection, ``split`` at a full shard key value (a
  boundary already there is refused with the server's "boundary" message), ``moveChunk`` by
  exact bounds (``moveRange`` by min and max from 6.0: unknown to older ``server_version``) to
  an active shard, refused when the chunk lies in a zone the target shard is not in;
  ``shardCollection`` with ``presplitHashedZones`` is refused unless the key is hashed and the
  namespace has zone ranges already (recorded in ``presplit``);
  ``addShardToZone``/``updateZoneKeyRange`` record zones (a range needs a zone with a shard);
  ``createIndexes``/``listIndexes`` record indexes per collection (``create`` of a sharded one is
  NamespaceExists 48). A hashed key has no chunk records (two per active shard are reported),
  except after ``presplitHashedZones``, which creates each zone's chunks on its shards;
  Documents (``sharded.documents``, set by the test as the load) spread over a ranged
  collection's chunks evenly, over shards otherwise;
- the profiler (MongoDB's db/commands/profile.idl, profile_common.cpp): ``profile`` on a member
  sets the database's level and the process's global ``slowms`` and answers the settings as they
  were (``was``, ``slowms``, ``sampleRate``); mongos refuses levels 1 and 2 with BadValue (2), as
  s/commands/cluster_profile_cmd.cpp does. The benchmark's operations reach FerretDB, never the
  model, so what the clients ran is said by the test (``profiled_operations``: system.profile
  entries as a mongod of ``server_version`` writes them, with ``planCacheShapeHash`` from 8.0
  and ``queryHash`` before); while a database is at level 1 on a set's primary, those slower than
  its slowms are recorded once into that member's ``system.profile`` (``profiles``) with ``ts``
  midway between the level 1 and the first read (or the level 0), and a ``find`` on
  ``system.profile`` answers them with the filter's ``ts`` bounds and ``ns`` ``$ne``, ``sort``
  on ``millis`` and ``limit``; ``profile_calls`` records (member, db, level, slowms);
- ``$collStats`` ``storageStats`` {count, size, storageSize, totalIndexSize}: through mongos one
  document per shard (with ``shard``), on a set's primary one for the set, of the documents the
  test says were loaded (``sharded.documents``, or ``SetState.documents`` for a set); sizes
  ``DOCUMENT_BYTES`` per document, a third of that on disk, ``INDEX_BYTES`` per document;
- serverStatus on members and mongos reports ``server_version`` and, on members, the
  wiredTiger engine with ``cache_bytes`` configured, plus uptime/connections/opcounters that
  change on every call (as a real server's do);
- buildInfo (before authentication too, as mongod answers it) reports ``server_version`` with
  ``git_version``; getCmdLineOpts reports the options the operator's StatefulSet starts a member
  with (replSet, keyFile, the cache as ``cache_bytes`` in GB) or a mongos with (configdb), plus
  ``extra_options`` (``--setParameter name=value`` pairs, verbatim: a test's secret goes there);
- what each release refuses (localplane/wire_rules.py, the conformance table in
  e2e/local/README.md): commands unknown to the process kind or release (59), unknown fields of
  strict commands (40415), recorded in ``refusals``; shardCollection's presplitHashedZones
  rules (31387-31412) and hashed zone bounds that are not NumberLong/MinKey/MaxKey (72);
  ``numInitialChunks`` honoured before 7.2 and ignored from 7.2 (``sharded.initial_chunks``);
  drop of a missing collection: ok through mongos, NamespaceNotFound (26) on mongod before 7.0;
  getParameter featureCompatibilityVersion on mongos: InvalidOptions (72) on 5.0 and 8.3+, the
  routers' own series on 6.0-8.2;
- one featureCompatibilityVersion for the whole model (``fcv``): getParameter reads it,
  setFeatureCompatibilityVersion sets it and is recorded in ``fcv_history``; as binaries of
  ``server_version`` answer: ``confirm: true`` required from 7.0, an unknown field (40415) before.
  A new model's FCV is its ``server_version``'s MAJOR.MINOR.
- with ``tls`` (member name -> the PEM its pod mounts, key and certificate), every peer speaks
  TLS only, as a mongod with ``--tlsMode requireTLS``: a peer reads its certificate at its first
  handshake (its Secret may be written after the peer started) and again on
  ``rotateCertificates`` (``rotations``); connections whose handshake fails (a client without
  TLS, or one that does not trust the CA) are closed. ``tls_connections`` counts handshakes
  per peer. With ``tls_mode`` (member name -> its --tlsMode, e.g. read from its pod's
  arguments once per pod start: ``keyfiles.tls_mode_from_pods``) each peer answers as its
  mode says: none (``disabled``) serves plain connections only, allowTLS and preferTLS both,
  requireTLS TLS only; a peer tells a TLS handshake from a wire message by the first byte.
  ``plain_connections`` counts plain connections served, ``refused`` the ones closed and why
  (a TLS handshake that failed too: a certificate one side does not trust). With ``started``
  (member name -> what identifies its process's start, e.g. its pod's uid:
  ``keyfiles.pod_start_from_pods``) a member reads its certificate and CA again once restarted,
  as mongod reads the files at start; without it, at its first handshake only.
  With ``tls_ca`` (member name -> its ca.crt) a peer asks clients for a certificate and verifies
  one given; ``authenticate`` with MONGODB-X509 logs in as ``__system`` a certificate whose O and
  OU are the member's own (MongoDB's member identity), recorded in ``x509_logins``. With
  ``cluster_auth`` (member name -> its --clusterAuthMode) an ``x509`` member refuses the keyfile.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from bson import Binary, Int64, MaxKey, MinKey
from cryptography import x509
from cryptography.x509.oid import NameOID
from mockupdb import MockupDB

from localplane import wire_rules
from localplane.keyfiles import keyfile_keys
from localplane.scram import ScramServer

WIRE: dict[str, Any] = {"minWireVersion": 0, "maxWireVersion": 21, "maxBsonObjectSize": 16777216}
# What $collStats reports as storageStats.size per document (YCSB's 10 fields of 100 bytes),
# storageSize as a third of it (compressed), and totalIndexSize per document (the _id index).
DOCUMENT_BYTES = 1100
INDEX_BYTES = 40
DEFAULT_SLOW_MS = 100  # mongod's slowms until a profile command sets it
# Commands that change cluster state: the steps of the operator's wiring.
WRITE_COMMANDS = frozenset(
    {
        "replsetinitiate",
        "replsetreconfig",
        "replsetstepdown",
        "createuser",
        "updateuser",
        "addshard",
        "removeshard",
        "moveprimary",
        "enablesharding",
        "shardcollection",
        "setfeaturecompatibilityversion",
        "split",
        "movechunk",
        "moverange",
        "addshardtozone",
        "updatezonekeyrange",
        "createindexes",
    }
)
# What a mongod with --keyFile answers before authentication.
OPEN_COMMANDS = frozenset(
    {
        "hello",
        "ismaster",
        "ping",
        "buildinfo",
        "saslstart",
        "saslcontinue",
        "authenticate",
        "endsessions",
    }
)


TLS_HANDSHAKE = b"\x16"  # the first byte of a TLS record carrying a handshake
DISABLED = "disabled"  # mongod without --tlsMode


def _organization(subject: x509.Name) -> tuple[str, str]:
    def first(oid: x509.ObjectIdentifier) -> str:
        found = subject.get_attributes_for_oid(oid)
        return str(found[0].value) if found else ""

    return first(NameOID.ORGANIZATION_NAME), first(NameOID.ORGANIZATIONAL_UNIT_NAME)


def _organization_of_peer(peer: Mapping[str, Any]) -> tuple[str, str]:
    """(O, OU) of a certificate as ssl's getpeercert() gives its subject."""
    fields = {key: value for rdn in peer.get("subject", ()) for key, value in rdn}
    return fields.get("organizationName", ""), fields.get("organizationalUnitName", "")


def _err(request: Any, code: int, name: str, msg: str) -> bool:
    return bool(request.command_err(code, msg, codeName=name))


_Users = dict[tuple[str, str], dict[str, Any]]  # (user, db) -> its document


@dataclass
class SetState:
    config: dict[str, Any]
    primary: str
    joined: dict[str, float] = field(default_factory=dict)
    users: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    collections: set[str] = field(default_factory=set)  # namespaces created on the set
    documents: dict[str, int] = field(default_factory=dict)  # namespace -> loaded (test's word)


@dataclass
class Sharded:
    documents: dict[str, int]  # namespace -> documents the benchmark "loaded"
    shards: dict[str, dict[str, Any]] = field(default_factory=dict)
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    drain_left: dict[str, int] = field(default_factory=dict)
    users: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    primaries: dict[str, str] = field(default_factory=dict)  # database -> its primary shard
    # namespace -> its chunks {min, max, shard} (ranged keys only), in key order
    chunks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    zones: dict[str, set[str]] = field(default_factory=dict)  # shard -> its zones
    zone_ranges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # ns -> ranges
    indexes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # ns -> createIndexes
    moves: list[tuple[str, str]] = field(default_factory=list)  # (ns, to) of every move
    moved_by: list[str] = field(default_factory=list)  # moveChunk or moveRange, per move
    presplit: list[str] = field(default_factory=list)  # namespaces presplitHashedZones made
    created: set[str] = field(default_factory=set)  # unsharded namespaces created via mongos
    # namespace -> numInitialChunks as the release took it: honoured (before 7.2) or ignored
    initial_chunks: dict[str, tuple[int, bool]] = field(default_factory=dict)


class _TLSPeer(MockupDB):  # type: ignore[misc]
    """A peer that answers as a mongod of its member's --tlsMode: it tells a TLS handshake from
    a plain wire message by the connection's first byte (a TLS record starts with 0x16, as
    mongod's listener tells them apart), serves each as the mode allows and closes the rest."""

    def __init__(self, model: MongoModel, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model = model
        self._name = name

    def _server_loop(self, client: Any, client_addr: Any) -> None:
        mode = self._model.mode_of(self._name)
        try:
            first = client.recv(1, socket.MSG_PEEK)
        except OSError:
            client.close()
            return
        handshake = first == TLS_HANDSHAKE
        if not handshake:
            if mode == "requireTLS" or not first:
                self._model.refuse(self._name, "plain connection refused: requireTLS")
                client.close()
                return
            self._model.count(self._model.plain_connections, self._name)
            super()._server_loop(client, client_addr)
            return
        if mode == DISABLED:
            self._model.refuse(self._name, "TLS handshake refused: TLS is off")
            client.close()
            return
        context = self._model.tls_context(self._name)
        if context is None:  # no certificate yet: a real member would not have started
            client.close()
            return
        try:
            wrapped = context.wrap_socket(client, server_side=True)
        except ssl.SSLError as exc:
            self._model.refuse(self._name, f"TLS handshake failed: {exc.reason}")
            client.close()
            return
        except OSError:
            client.close()
            return
        self._server_socks[wrapped] = None  # stop() shuts it down too
        super()._server_loop(wrapped, client_addr)


class MongoModel:
    """Start peers with ``member``/``mongos``; hand ``host_map`` to the operator's resolver."""

    def __init__(
        self,
        *,
        keyfile: str | Callable[[str], str | None],
        catch_up_seconds: float = 0.3,
        drain_calls: int = 2,
        fcv: str = "7.0",
        tls: Callable[[str], str | None] | None = None,
        tls_mode: Callable[[str], str | None] | None = None,
        tls_ca: Callable[[str], str | None] | None = None,
        cluster_auth: Callable[[str], str | None] | None = None,
        started: Callable[[str], str | None] | None = None,
    ) -> None:
        self.keyfile = keyfile
        self.started = started
        self.tls = tls
        self.tls_mode = tls_mode
        self.tls_ca = tls_ca
        self.cluster_auth = cluster_auth
        self._subjects: dict[str, tuple[str, str]] = {}  # member -> (O, OU) of its certificate
        self.x509_logins: list[str] = []  # members where a member certificate logged in
        # member -> (its start, the context it loaded then)
        self._tls_contexts: dict[str, tuple[str | None, ssl.SSLContext]] = {}
        self.tls_connections: dict[str, int] = {}  # TLS handshakes begun, per peer
        self.plain_connections: dict[str, int] = {}  # plain connections served, per peer
        self.refused: list[tuple[str, str]] = []  # (peer, why) of connections closed at once
        self.rotations: list[str] = []  # rotateCertificates answered, by peer
        self.catch_up_seconds = catch_up_seconds
        self.fcv = fcv
        self.fcv_history: list[str] = []  # setFeatureCompatibilityVersion calls, in order
        self.drain_calls = drain_calls
        self.server_version = "7.0.14"  # what serverStatus reports
        self.cache_bytes = 256 * 1024 * 1024  # wiredTiger "maximum bytes configured"
        self.git_version = "3e8d3b6f2c9f3bd23b8be0e1b84fc6ce1a5a2b55"  # buildInfo.gitVersion
        self.extra_options: dict[str, str] = {}  # --setParameter name=value, as given
        self.server_status_calls = 0
        self.host_map: dict[str, str] = {}
        self.sets: dict[str, SetState] = {}
        self.node_set: dict[str, str] = {}  # member name -> set it belongs to
        # standalone mongod name -> its users and collections (the SetState of no set)
        self.standalones: dict[str, SetState] = {}
        self.no_replication: list[str] = []  # replSet commands a standalone refused (76)
        self.sharded = Sharded(documents={})
        self._servers: list[MockupDB] = []
        self._lock = threading.RLock()
        self._scram = ScramServer()
        self._conversing: dict[int, str] = {}  # SCRAM conversationId -> user
        self._authed: dict[tuple[str, int], str] = {}  # (peer, client port) -> user
        self.unauthorized: list[str] = []  # commands refused for want of authentication
        # hold_after_write: after one write, refuse the next ones (transient ShutdownInProgress)
        # until the test resets `held`, so it can kill the writer between any two steps.
        self.hold_after_write = False
        self.held = False
        self.writes: list[str] = []  # write commands admitted while holding, in order
        self.dropped: list[str] = []  # namespaces dropped, in order (drop commands)
        self.sharded_history: list[tuple[str, dict[str, Any]]] = []  # shardCollection calls
        self.refusals: list[str] = []  # "code message" of every command wire_rules refused
        # The profiler: what the clients ran (system.profile entries, set by the test), each
        # member's system.profile, levels per (member, db), slowms per member, and the calls.
        self.profiled_operations: list[dict[str, Any]] = []
        self.profiles: dict[str, list[dict[str, Any]]] = {}
        self._levels: dict[tuple[str, str], tuple[int, float]] = {}  # -> (level, since)
        self._slow_ms: dict[str, int] = {}
        self.profile_calls: list[tuple[str, str, int, int | None]] = []

    # ---- lifecycle --------------------------------------------------------------------------

    def _serve(self, name: str, handler: Any, process: str) -> str:
        server = (
            _TLSPeer(self, name, auto_ismaster=False, request_timeout=int(1e6))
            if self.tls is not None or self.tls_mode is not None
            else MockupDB(auto_ismaster=False, request_timeout=int(1e6))
        )

        def respond(request: Any) -> bool:
            with self._lock:
                cmd = (request.command_name or "").lower()
                if cmd not in OPEN_COMMANDS and (name, request.client_port) not in self._authed:
                    self.unauthorized.append(f"{cmd} on {name}")
                    return _err(
                        request, 13, "Unauthorized", f"command {cmd} requires authentication"
                    )
                # As the release parses it: unknown on this process or release, unknown fields
                refused = wire_rules.check(
                    request.command_name or "",
                    request.doc,
                    process=process,
                    version=self.server_version,
                )
                if refused is not None:
                    self.refusals.append(f"{refused.code} {refused.message}")
                    return _err(request, refused.code, refused.code_name, refused.message)
                if cmd == "rotatecertificates":
                    return self._rotate_certificates(name, request)
                if cmd in WRITE_COMMANDS and self.hold_after_write:
                    if self.held:  # the test has not yet killed the writer: nothing more
                        return _err(request, 91, "ShutdownInProgress", "model: held")
                    self.held = True
                    arg = request.doc.get(request.command_name)
                    self.writes.append(f"{cmd} {arg if isinstance(arg, str) else ''} on {name}")
                return bool(handler(name, request))

        server.autoresponds(respond)
        port = server.run()
        self._servers.append(server)
        self.host_map[name] = f"127.0.0.1:{port}"
        return self.host_map[name]

    # ---- TLS --------------------------------------------------------------------------------

    def _load_tls(self, name: str) -> ssl.SSLContext | None:
        pem = self.tls(name) if self.tls is not None else None
        if not pem:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:  # it reads files only
            f.write(pem)
            f.flush()
            context.load_cert_chain(f.name)
        authority = self.tls_ca(name) if self.tls_ca is not None else None
        if authority:
            # --tlsCAFile with --tlsAllowConnectionsWithoutCertificates: a certificate is asked
            # for, verified when given, and names its holder (MONGODB-X509).
            context.load_verify_locations(cadata=authority)
            context.verify_mode = ssl.CERT_OPTIONAL
        self._subjects[name] = _organization(x509.load_pem_x509_certificate(pem.encode()).subject)
        return context

    def mode_of(self, name: str) -> str:
        """The member's --tlsMode: from ``tls_mode`` (e.g. its pod's arguments, read once per
        pod start), else requireTLS with ``tls`` and none without."""
        if self.tls_mode is not None:
            return self.tls_mode(name) or DISABLED
        return "requireTLS" if self.tls is not None else DISABLED

    def count(self, counts: dict[str, int], name: str) -> None:
        with self._lock:
            counts[name] = counts.get(name, 0) + 1

    def refuse(self, name: str, why: str) -> None:
        with self._lock:
            self.refused.append((name, why))

    def tls_context(self, name: str) -> ssl.SSLContext | None:
        with self._lock:
            start = self.started(name) if self.started is not None else None
            loaded = self._tls_contexts.get(name)
            if loaded is not None and loaded[0] == start:
                context: ssl.SSLContext | None = loaded[1]
            else:  # not loaded yet, or the member restarted since: the files read again
                context = self._load_tls(name)
            if context is not None:
                self._tls_contexts[name] = (start, context)
                self.tls_connections[name] = self.tls_connections.get(name, 0) + 1
            return context

    def _rotate_certificates(self, name: str, request: Any) -> bool:
        if self.tls is None:
            return _err(request, 2, "BadValue", "rotateCertificates: TLS is not enabled")
        try:
            context = self._load_tls(name)
        except (ssl.SSLError, OSError) as exc:
            context, why = None, str(exc)
        else:
            why = "no certificate to load"
        if context is None:  # the certificate in use stays
            return _err(request, 2, "BadValue", f"rotateCertificates: {why}")
        start = self.started(name) if self.started is not None else None
        self._tls_contexts[name] = (start, context)
        self.rotations.append(name)
        return bool(request.ok())

    def member(self, name: str) -> str:
        """A mongod started with --replSet, known by its DNS ``name``; returns its address."""
        return self._serve(name, self._member, wire_rules.MONGOD)

    def mongos(self, name: str) -> str:
        return self._serve(name, self._router, wire_rules.MONGOS)

    def standalone(self, name: str) -> str:
        """A mongod started without --replSet, known by its DNS ``name``; returns its address."""
        self.standalones[name] = SetState({"members": [{"_id": 0, "host": name}]}, primary=name)
        return self._serve(name, self._standalone, wire_rules.MONGOD)

    def stop(self) -> None:
        # All at once: a mockupdb server's stop waits out its accept loop's 1 s select, so one
        # after the other a sharded model took seconds to stop.
        stopping = [threading.Thread(target=s.stop, daemon=True) for s in self._servers]
        for t in stopping:
            t.start()
        for t in stopping:
            t.join()

    def __enter__(self) -> MongoModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- replica set ------------------------------------------------------------------------

    def state_of(self, name: str) -> str:
        rs = self.sets.get(self.node_set.get(name, ""))
        if rs is None:
            return "REMOVED"
        if name not in self.host_map:
            return "DOWN"
        if name == rs.primary:
            return "PRIMARY"
        caught_up = time.monotonic() - rs.joined.get(name, 0) >= self.catch_up_seconds
        return "SECONDARY" if caught_up else "STARTUP2"

    def _voters(self, config: dict[str, Any]) -> set[str]:
        return {m["host"] for m in config["members"] if m.get("votes", 1)}

    def _join(self, rs_name: str, hosts: list[str]) -> None:
        rs = self.sets[rs_name]
        for h in hosts:
            self.node_set[h] = rs_name
            rs.joined[h] = time.monotonic()

    def _passwords(self, users: dict[tuple[str, str], dict[str, Any]]) -> dict[str, str]:
        return {
            u: info["pwd"] for (u, db), info in users.items() if db == "admin" and "pwd" in info
        }

    def _internal_passwords(self, name: str) -> tuple[str, ...]:
        keyfile = self.keyfile(name) if callable(self.keyfile) else self.keyfile
        return () if keyfile is None else keyfile_keys(keyfile)

    def _auth(
        self,
        name: str,
        request: Any,
        cmd: str,
        passwords: Mapping[str, str | tuple[str, ...]],
    ) -> bool | None:
        """saslStart/saslContinue (SCRAM-SHA-256) and authenticate (MONGODB-X509); None when
        `cmd` is not an auth command."""
        doc = request.doc
        if cmd == "authenticate":
            return self._x509(name, request)
        if cmd == "saslstart":
            if doc.get("$db") == "local":  # the internal user, authenticated by the keyfile
                internal = () if self._x509_members(name) else self._internal_passwords(name)
                passwords = {"__system": internal} if internal else {}
            started = self._scram.start(bytes(doc["payload"]), passwords)
            if started is None:
                return _err(request, 18, "AuthenticationFailed", "Authentication failed.")
            cid, payload = started
            self._conversing[cid] = self._scram.user_of(cid)
            return bool(request.ok(conversationId=cid, done=False, payload=Binary(payload)))
        if cmd == "saslcontinue":
            cid = int(doc["conversationId"])
            final = self._scram.finish(cid, bytes(doc["payload"]))
            user = self._conversing.pop(cid, None)
            if final is None or user is None:
                return _err(request, 18, "AuthenticationFailed", "Authentication failed.")
            self._authed[(name, request.client_port)] = user
            return bool(request.ok(conversationId=cid, done=True, payload=Binary(final)))
        return None

    def _x509_members(self, name: str) -> bool:
        """--clusterAuthMode x509: members log in with certificates, the keyfile is refused."""
        return self.cluster_auth is not None and self.cluster_auth(name) == "x509"

    def _x509(self, name: str, request: Any) -> bool:
        """MONGODB-X509 as mongod judges it: a verified client certificate whose subject's O and
        OU are the member's own certificate's is a member (``__system``); anything else is
        refused (the model keeps no $external users)."""
        if request.doc.get("mechanism") != "MONGODB-X509":
            return _err(request, 2, "BadValue", "model: only MONGODB-X509 is authenticated here")
        peer = getattr(request._client, "getpeercert", lambda: None)()
        subject = _organization_of_peer(peer) if peer else None
        own = self._subjects.get(name)
        if subject is None or own is None or subject != own or not all(own):
            return _err(request, 18, "AuthenticationFailed", "No verified subject name available")
        self._authed[(name, request.client_port)] = "__system"
        self.x509_logins.append(name)
        return bool(request.ok(user="__system", dbname="$external"))

    @staticmethod
    def _hello(request: Any, reply: dict[str, Any]) -> bool:
        if "saslSupportedMechs" in request.doc:
            reply["saslSupportedMechs"] = ["SCRAM-SHA-256"]
        return bool(request.ok(reply))

    def _member(self, name: str, request: Any) -> bool:
        cmd = (request.command_name or "").lower()
        rs = self.sets.get(self.node_set.get(name) or "")
        answered = self._auth(name, request, cmd, self._passwords(rs.users) if rs else {})
        if answered is not None:
            return answered
        if cmd in ("hello", "ismaster"):
            return self._member_hello(name, request, rs)
        if cmd in ("serverstatus", "buildinfo", "getcmdlineopts"):  # what it is, set or not
            return self._describe(cmd, name, request, rs)
        if cmd == "replsetinitiate":
            return self._initiate(name, request, rs)
        if rs is None:
            if cmd in ("replsetgetstatus", "replsetgetconfig"):
                return _err(request, 94, "NotYetInitialized", "no replset config has been received")
            return _err(request, 59, "CommandNotFound", f"model: {cmd} needs an initialized set")
        handler = self._SET_COMMANDS.get(cmd)
        if handler is not None:  # answered by any member
            return handler(self, name, request, rs)
        if name != rs.primary:
            return _err(request, 10107, "NotWritablePrimary", "not primary")
        if cmd in ("replsetreconfig", "create", "drop", "listcollections", "find", "aggregate"):
            return self._on_primary(cmd, name, request, rs)
        return self._users(rs.users, request, cmd)

    # ---- the profiler and $collStats on a set's members --------------------------------------

    def _profile(self, name: str, request: Any, rs: SetState) -> bool:
        db = request.doc.get("$db", "test")
        level = int(request.doc["profile"])
        slow_ms = request.doc.get("slowms")
        was, since = self._levels.get((name, db), (0, 0.0))
        before = self._slow_ms.get(name, DEFAULT_SLOW_MS)
        self.profile_calls.append((name, db, level, slow_ms))
        if was >= 1 and level != was:
            self._record_profile(name, db)
        if level >= 0:
            self._levels[(name, db)] = (level, time.time() if level != was else since)
        if slow_ms is not None:
            self._slow_ms[name] = int(slow_ms)
        return bool(request.ok(was=was, slowms=before, sampleRate=1.0))

    def _record_profile(self, name: str, db: str) -> None:
        """What ran on `db` while it was at level 1, once: the test's operations slower than
        slowms, stamped midway through the period."""
        level, since = self._levels.get((name, db), (0, 0.0))
        if level < 1 or since == 0.0:
            return
        now = time.time()
        stamp = datetime.fromtimestamp((since + now) / 2, UTC)
        threshold = self._slow_ms.get(name, DEFAULT_SLOW_MS)
        release = wire_rules.release_of(self.server_version)
        for op in self.profiled_operations:
            if not str(op.get("ns", "")).startswith(f"{db}.") or op.get("millis", 0) <= threshold:
                continue
            entry = {**op, "ts": stamp}
            shape_hash = entry.pop("planCacheShapeHash", None) or entry.get("queryHash")
            if shape_hash is not None and release >= (8, 0):
                entry["planCacheShapeHash"] = shape_hash
            self.profiles.setdefault(name, []).append(entry)
        self._levels[(name, db)] = (level, 0.0)  # recorded: a later read adds nothing

    def _find_profile(self, name: str, request: Any) -> bool:
        doc = request.doc
        db = doc.get("$db", "test")
        self._record_profile(name, db)
        flt = doc.get("filter") or {}
        window = flt.get("ts") or {}
        not_ns = (flt.get("ns") or {}).get("$ne")

        def wanted(e: dict[str, Any]) -> bool:
            ts = e["ts"]
            return (
                str(e.get("ns", "")).startswith(f"{db}.")
                and e.get("ns") != not_ns
                and ("$gte" not in window or ts >= _aware(window["$gte"]))
                and ("$lte" not in window or ts <= _aware(window["$lte"]))
            )

        batch = [e for e in self.profiles.get(name, []) if wanted(e)]
        if (doc.get("sort") or {}).get("millis") == -1:
            batch.sort(key=lambda e: -int(e.get("millis", 0)))
        if doc.get("limit"):
            batch = batch[: int(doc["limit"])]
        return bool(request.ok(cursor={"id": 0, "ns": f"{db}.system.profile", "firstBatch": batch}))

    def _set_coll_stats(self, request: Any, rs: SetState) -> bool:
        doc = request.doc
        db, coll = doc["$db"], doc["aggregate"]
        ns = f"{db}.{coll}"
        stages = doc.get("pipeline") or [{}]
        if "$collStats" not in stages[0]:
            return _err(request, 59, "CommandNotFound", "model: only $collStats on a member")
        if ns not in rs.collections:
            return _err(request, 26, "NamespaceNotFound", f"ns {ns} does not exist")
        n = rs.documents.get(ns, 0)
        batch = [{"ns": ns, "host": rs.primary, "storageStats": _storage_stats(n)}]
        return bool(request.ok(cursor={"id": 0, "ns": ns, "firstBatch": batch}))

    def _standalone(self, name: str, request: Any) -> bool:
        """As a mongod without --replSet: writable, no replica-set state at all."""
        cmd = (request.command_name or "").lower()
        state = self.standalones[name]
        answered = self._auth(name, request, cmd, self._passwords(state.users))
        if answered is not None:
            return answered
        if cmd in ("hello", "ismaster"):
            return self._hello(request, {**WIRE, "isWritablePrimary": True, "ismaster": True})
        if cmd in ("serverstatus", "buildinfo", "getcmdlineopts"):
            return self._describe(cmd, name, request, None, standalone=True)
        if cmd.startswith("replset"):
            self.no_replication.append(f"{request.command_name} on {name}")
            message = (
                "This node was not started with replication enabled."
                if cmd == "replsetinitiate"
                else "not running with --replSet"
            )
            return _err(request, 76, "NoReplicationEnabled", message)
        if cmd in ("create", "drop", "listcollections"):
            return self._set_collections(cmd, request, state)
        if cmd == "profile":  # a standalone mongod profiles as a set's primary does
            return self._profile(name, request, state)
        if cmd in ("find", "aggregate"):
            return self._on_primary(cmd, name, request, state)
        return self._users(state.users, request, cmd)

    def _on_primary(self, cmd: str, name: str, request: Any, rs: SetState) -> bool:
        if cmd == "replsetreconfig":
            return self._reconfig(name, request, rs)
        if cmd == "find":
            if request.doc.get("find") != "system.profile":
                return self._users(rs.users, request, cmd)
            return self._find_profile(name, request)
        if cmd == "aggregate":
            return self._set_coll_stats(request, rs)
        return self._set_collections(cmd, request, rs)

    def _set_collections(self, cmd: str, request: Any, rs: SetState) -> bool:
        """create/drop/listCollections on a set's primary. A drop of a collection that does
        not exist is NamespaceNotFound (26) before 7.0 and ok from 7.0 (SERVER-43894)."""
        db = request.doc.get("$db", "test")
        if cmd == "listcollections":
            return _list_collections(request, db, rs.collections)
        ns = f"{db}.{request.doc[request.command_name]}"
        if cmd == "create":
            if ns in rs.collections:
                return _err(request, 48, "NamespaceExists", f"Collection {ns} already exists.")
            rs.collections.add(ns)
            return bool(request.ok())
        self.dropped.append(ns)
        if ns not in rs.collections and wire_rules.release_of(self.server_version) < (7, 0):
            return _err(request, 26, "NamespaceNotFound", "ns not found")
        rs.collections.discard(ns)
        return bool(request.ok())

    def _member_hello(self, name: str, request: Any, rs: SetState | None) -> bool:
        if rs is None:
            return self._hello(request, {**WIRE, "isWritablePrimary": False, "isreplicaset": True})
        state = self.state_of(name)
        reply = {
            **WIRE,
            "setName": self.node_set[name],
            "isWritablePrimary": state == "PRIMARY",
            "secondary": state == "SECONDARY",
            "hosts": [m["host"] for m in rs.config["members"]],
            "primary": rs.primary,
            "me": name,
        }
        if rs.config.get("configsvr"):
            reply["configsvr"] = 2
        return self._hello(request, reply)

    def _initiate(self, name: str, request: Any, rs: SetState | None) -> bool:
        if rs is not None:
            return _err(request, 23, "AlreadyInitialized", "already initialized")
        config = dict(request.doc["replSetInitiate"])
        hosts = [m["host"] for m in config["members"]]
        absent = [h for h in hosts if h not in self.host_map or h in self.node_set]
        if absent or name not in hosts:
            return _err(request, 74, "NodeNotFound", f"quorum check failed: {absent}")
        config.update(version=1, term=1)
        self.sets[config["_id"]] = SetState(config, primary=hosts[0])
        self._join(config["_id"], hosts)
        self.sets[config["_id"]].joined[hosts[0]] = 0.0
        return bool(request.ok())

    def _set_status(self, name: str, request: Any, rs: SetState) -> bool:
        members = []
        for m in rs.config["members"]:
            state = self.state_of(m["host"])
            code = {"PRIMARY": 1, "SECONDARY": 2, "STARTUP2": 5, "DOWN": 8}.get(state, 6)
            members.append(
                {
                    "_id": m["_id"],
                    "name": m["host"],
                    "health": 0 if state == "DOWN" else 1,
                    "state": code,
                    "stateStr": state,
                }
            )
        return bool(request.ok(set=self.node_set[name], members=members))

    def _set_config(self, name: str, request: Any, rs: SetState) -> bool:
        return bool(request.ok(config=rs.config))

    def _step_down(self, name: str, request: Any, rs: SetState) -> bool:
        if name != rs.primary:
            return _err(request, 10107, "NotWritablePrimary", "not primary")
        hosts = [m["host"] for m in rs.config["members"] if m["host"] != name]
        successor = next((h for h in hosts if self.state_of(h) == "SECONDARY"), None)
        if successor is None:
            return _err(request, 262, "ExceededTimeLimit", "No electable secondaries caught up")
        rs.primary = successor
        return bool(request.ok())

    _SET_COMMANDS: ClassVar[dict[str, Callable[[MongoModel, str, Any, SetState], bool]]] = {
        "profile": _profile,
        "replsetgetstatus": _set_status,
        "replsetgetconfig": _set_config,
        "replsetstepdown": _step_down,
    }

    def _reconfig(self, name: str, request: Any, rs: SetState) -> bool:
        new = dict(request.doc["replSetReconfig"])
        if new.get("version", 0) <= rs.config["version"]:
            return _err(request, 103, "NewReplicaSetConfigurationIncompatible", "version")
        if any("newlyAdded" in m for m in new["members"]):
            return _err(request, 93, "InvalidReplicaSetConfig", "newlyAdded is server-only")
        if len(self._voters(new) ^ self._voters(rs.config)) > 1:
            return _err(
                request,
                103,
                "NewReplicaSetConfigurationIncompatible",
                "only one voting member may be added or removed at a time",
            )
        old = {m["host"] for m in rs.config["members"]}
        now = {m["host"] for m in new["members"]}
        new["term"] = rs.config.get("term", 1)
        rs.config = new
        self._join(self.node_set[name], sorted(now - old))
        for h in old - now:
            self.node_set.pop(h, None)
        return bool(request.ok())

    # ---- users (per set or per cluster) -----------------------------------------------------

    def _users(self, users: dict[tuple[str, str], dict[str, Any]], request: Any, cmd: str) -> bool:
        handler = self._USER_COMMANDS.get(cmd)
        if handler is None:
            return _err(request, 59, "CommandNotFound", f"no such command: '{cmd}' (model)")
        return handler(self, users, request)

    def _users_info(self, users: _Users, request: Any) -> bool:
        q = request.doc["usersInfo"]
        found = users.get((q["user"], q["db"]))
        public = {k: v for k, v in found.items() if k != "pwd"} if found else None
        return bool(request.ok(users=[public] if public else []))

    def _create_user(self, users: _Users, request: Any) -> bool:
        doc = request.doc
        db = doc.get("$db", "admin")
        key = (doc["createUser"], db)
        if key in users:
            return _err(request, 51003, "Location51003", f'User "{key[0]}@{db}" already exists')
        users[key] = {"user": key[0], "db": db, "roles": list(doc["roles"]), "pwd": doc.get("pwd")}
        return bool(request.ok())

    def _update_user(self, users: _Users, request: Any) -> bool:
        """As mongod: roles and/or pwd; a new pwd replaces the SCRAM credentials, so the old
        password fails from the next authentication on (sessions already open stay)."""
        doc = request.doc
        db = doc.get("$db", "admin")
        found = users.get((doc["updateUser"], db))
        if found is None:
            return _err(
                request,
                11,
                "UserNotFound",
                f'Could not find user "{doc["updateUser"]}" for db "{db}"',
            )
        if "roles" not in doc and "pwd" not in doc:
            return _err(
                request,
                9,
                "FailedToParse",
                "Must specify at least one field to update in updateUser",
            )
        if "roles" in doc:
            found["roles"] = list(doc["roles"])
        if "pwd" in doc:
            found["pwd"] = doc["pwd"]
        return bool(request.ok())

    def _get_parameter(self, users: _Users, request: Any) -> bool:
        if "featureCompatibilityVersion" not in request.doc:
            return _err(request, 59, "CommandNotFound", "no such command: 'getparameter' (model)")
        return bool(request.ok(featureCompatibilityVersion={"version": self.fcv}))

    def _set_fcv(self, users: _Users, request: Any) -> bool:
        # As mongod of `server_version` answers: the binaries decide whether `confirm` is
        # required (7.0+) or an unknown field (before). One server_version for every host: an
        # upgrade across 7.0 (6.0 binaries to 7.0) is not modelled.
        doc = request.doc
        version = str(doc["setFeatureCompatibilityVersion"])
        major = int(self.server_version.split(".", maxsplit=1)[0])
        if major < 7 and "confirm" in doc:
            return _err(
                request,
                40415,
                "Location40415",
                "BSON field 'setFeatureCompatibilityVersion.confirm' is an unknown field.",
            )
        if major >= 7 and doc.get("confirm") is not True:
            return _err(
                request,
                7369100,
                "Location7369100",
                "Once you have upgraded to the new FCV, you will not be able to downgrade "
                "without support assistance. Please re-run this command with 'confirm: true'",
            )
        self.fcv = version
        self.fcv_history.append(version)
        return bool(request.ok())

    def _acknowledge(self, users: _Users, request: Any) -> bool:
        return bool(request.ok())

    _USER_COMMANDS: ClassVar[dict[str, Callable[[MongoModel, _Users, Any], bool]]] = {
        "usersinfo": _users_info,
        "createuser": _create_user,
        "updateuser": _update_user,
        "endsessions": _acknowledge,
        "ping": _acknowledge,
        "getparameter": _get_parameter,
        "setfeaturecompatibilityversion": _set_fcv,
    }

    # ---- mongos -----------------------------------------------------------------------------

    def _router(self, name: str, request: Any) -> bool:
        cmd = (request.command_name or "").lower()
        doc = request.doc
        # mongos authenticates against the cluster's users (kept on the config servers).
        cluster_users = dict(self.sharded.users)
        for config_set in self.sets.values():
            if config_set.config.get("configsvr"):
                cluster_users.update(config_set.users)
        answered = self._auth(name, request, cmd, self._passwords(cluster_users))
        if answered is not None:
            return answered
        handler = self._ROUTER_COMMANDS.get(cmd)
        if handler is not None:
            return handler(self, request)
        if cmd == "find" and doc.get("$db") == "config" and doc["find"] == "chunks":
            return self._find_chunks(request)
        if cmd == "find" and doc.get("$db") == "config" and doc["find"] == "collections":
            entry = self.sharded.collections.get(doc.get("filter", {}).get("_id", ""))
            batch = [entry] if entry else []
            return bool(
                request.ok(cursor={"id": 0, "ns": "config.collections", "firstBatch": batch})
            )
        return self._users(self.sharded.users, request, cmd)

    def _router_get_parameter(self, request: Any) -> bool:
        """mongos keeps no FCV document: a 5.0 router does not know the parameter
        (SERVER-59158), 6.0-8.2 routers answer with their own binaries' series whatever the
        shards hold (SERVER-118760), 8.3 refuses it again."""
        release = wire_rules.release_of(self.server_version)
        if "featureCompatibilityVersion" not in request.doc or not (6, 0) <= release < (8, 3):
            return _err(request, 72, "InvalidOptions", "no option found to get")
        return bool(
            request.ok(featureCompatibilityVersion={"version": f"{release[0]}.{release[1]}"})
        )

    def _router_list_collections(self, request: Any) -> bool:
        sh = self.sharded
        return _list_collections(
            request, request.doc.get("$db", "test"), sh.created | set(sh.collections)
        )

    def _router_hello(self, request: Any) -> bool:
        return self._hello(request, {**WIRE, "isWritablePrimary": True, "msg": "isdbgrid"})

    def _list_shards(self, request: Any) -> bool:
        return bool(request.ok(shards=list(self.sharded.shards.values())))

    def _router_status(self, request: Any) -> bool:
        return self._server_status(request, "mongos")

    def _router_build_info(self, request: Any) -> bool:
        return self._build_info(request)

    def _router_cmd_line_opts(self, request: Any) -> bool:
        return self._cmd_line_opts(request, None, None)

    def _add_shard(self, request: Any) -> bool:
        doc, sh = request.doc, self.sharded
        set_name, _, seeds = str(doc["addShard"]).partition("/")
        rs = self.sets.get(set_name)
        if rs is None or not set(seeds.split(",")) <= {m["host"] for m in rs.config["members"]}:
            return _err(request, 96, "OperationFailed", f"cannot reach {doc['addShard']}")
        shard_id = doc.get("name", set_name)
        for s in sh.shards.values():
            if s["_id"] != shard_id and s["host"].startswith(set_name + "/"):
                return _err(
                    request, 20, "IllegalOperation", f"already a member of shard {s['_id']}"
                )
        sh.shards[shard_id] = {"_id": shard_id, "host": doc["addShard"], "state": 1}
        return bool(request.ok(shardAdded=shard_id))

    def _remove_shard(self, request: Any) -> bool:
        sh = self.sharded
        shard_id = request.doc["removeShard"]
        if shard_id not in sh.shards:
            return _err(request, 70, "ShardNotFound", f"Shard {shard_id} not found")
        if sh.shards[shard_id].get("draining"):
            return self._drain(request, shard_id)
        if any(s.get("draining") for s in sh.shards.values()):
            return _err(
                request,
                117,
                "ConflictingOperationInProgress",
                "Can't have more than one draining shard at a time",
            )
        sh.shards[shard_id]["draining"] = True
        sh.drain_left[shard_id] = self.drain_calls
        return bool(request.ok(msg="draining started successfully", state="started"))

    def _drain(self, request: Any, shard_id: str) -> bool:
        """removeShard on a draining shard: one call's worth of draining, or the removal."""
        sh = self.sharded
        sh.drain_left[shard_id] = max(sh.drain_left[shard_id] - 1, 0)
        # Chunks move by themselves; databases whose primary it is wait for movePrimary.
        dbs = sorted(db for db, primary in sh.primaries.items() if primary == shard_id)
        if sh.drain_left[shard_id] > 0 or dbs:
            left = sh.drain_left[shard_id]
            return bool(
                request.ok(
                    msg="draining ongoing",
                    state="ongoing",
                    remaining={"chunks": left, "dbs": len(dbs), "jumboChunks": 0},
                    dbsToMove=dbs,
                )
            )
        del sh.shards[shard_id]
        return bool(request.ok(msg="removeshard completed successfully", state="completed"))

    def _enable_sharding(self, request: Any) -> bool:
        active = self._active_shards()
        if active:
            self.sharded.primaries.setdefault(str(request.doc["enableSharding"]), active[0])
        return bool(request.ok())

    def _move_primary(self, request: Any) -> bool:
        sh = self.sharded
        target = str(request.doc.get("to", ""))
        if target not in sh.shards or sh.shards[target].get("draining"):
            return _err(request, 70, "ShardNotFound", f"Shard {target} not found")
        sh.primaries[str(request.doc["movePrimary"])] = target
        return bool(request.ok())

    def _router_drop(self, request: Any) -> bool:
        ns = f"{request.doc.get('$db', 'test')}.{request.doc['drop']}"
        self.dropped.append(ns)
        sh = self.sharded
        for kept in (sh.collections, sh.chunks, sh.indexes, sh.zone_ranges):
            kept.pop(ns, None)
        sh.created.discard(ns)
        return bool(request.ok())  # also when it did not exist: mongos says ok (SERVER-36317)

    def _shard_collection(self, request: Any) -> bool:
        doc, sh = request.doc, self.sharded
        ns = doc["shardCollection"]
        if ns in sh.collections:
            return _err(request, 23, "AlreadyInitialized", "already sharded")
        key = dict(doc["key"])
        hashed = [f for f, kind in key.items() if kind == "hashed"]
        if len(hashed) > 1:
            return _err(
                request, 2, "BadValue", "A compound shard key may contain at most one hashed field"
            )
        refused = _shard_collection_refusal(doc, key, sh.zone_ranges.get(ns, []))
        if refused is not None:
            return _err(request, *refused)
        if doc.get("presplitHashedZones"):
            sh.presplit.append(ns)
        if "numInitialChunks" in doc:
            # Honoured for a hashed key before 7.2; from 7.2 parsed and ignored (SERVER-74747,
            # SERVER-82611): the server places one chunk per shard itself.
            honoured = wire_rules.release_of(self.server_version) < (7, 2)
            sh.initial_chunks[ns] = (int(doc["numInitialChunks"]), honoured)
        sh.created.discard(ns)
        sh.collections[ns] = {"_id": ns, "key": key, "uuid": Binary(ns.encode())}
        if not hashed:
            primary = sh.primaries.get(ns.split(".", 1)[0]) or (self._active_shards() or [""])[0]
            sh.chunks[ns] = [
                {
                    "min": {f: MinKey() for f in key},
                    "max": {f: MaxKey() for f in key},
                    "shard": primary,
                }
            ]
        if doc.get("presplitHashedZones"):
            sh.chunks[ns] = self._zone_chunks(key, sh.zone_ranges[ns])
        self.sharded_history.append((ns, key))
        return bool(request.ok(collectionsharded=ns))

    def _zone_chunks(self, key: dict[str, Any], ranges: list[dict[str, Any]]) -> list[Any]:
        """The chunks presplitHashedZones creates (PresplitHashedZonesSplitPolicy): each zone's
        range split into chunks on every shard of the zone (one per shard from FCV 8.0, two
        before: gOneChunkPerShardEmptyCollectionWithHashedShardKey), the holes between zones
        round-robin over the active shards. Split points stand in for the hash values."""
        hashed = next(f for f, kind in key.items() if kind == "hashed")
        per = 1 if wire_rules.release_of(self.fcv) >= (8, 0) else 2
        active = self._active_shards()
        full = [{f: r[b].get(f, MinKey()) for f in key} for r in ranges for b in ("min", "max")]
        bounds = {id(r): (full[2 * i], full[2 * i + 1]) for i, r in enumerate(ranges)}
        chunks: list[dict[str, Any]] = []
        last: dict[str, Any] = {f: MinKey() for f in key}
        for r in sorted(ranges, key=lambda z: _order(tuple(bounds[id(z)][0].values()))):
            low, high = bounds[id(r)]
            if _order(tuple(low.values())) > _order(tuple(last.values())):
                chunks.append({"min": last, "max": low, "shard": active[len(chunks) % len(active)]})
            owners = [s for s in sorted(self.sharded.zones) if r["zone"] in self.sharded.zones[s]]
            owners = [s for s in owners for _ in range(per)]
            points = [low, *({**low, hashed: Int64(i)} for i in range(1, len(owners))), high]
            chunks.extend(
                {"min": lo, "max": hi, "shard": owner}
                for (lo, hi), owner in zip(itertools.pairwise(points), owners, strict=True)
            )
            last = high
        if any(not isinstance(v, MaxKey) for v in last.values()):
            top = {f: MaxKey() for f in key}
            chunks.append({"min": last, "max": top, "shard": active[len(chunks) % len(active)]})
        return chunks

    def _full_key(self, ns: str, value: Any) -> tuple[Any, ...] | None:
        """A shard key value in key order, or None unless it names exactly the key's fields."""
        key = list(self.sharded.collections[ns]["key"])
        if not isinstance(value, dict) or list(value) != key:
            return None
        return _order(tuple(value[f] for f in key))

    def _split(self, request: Any) -> bool:
        ns, sh = request.doc["split"], self.sharded
        if ns not in sh.chunks:
            return _err(request, 20, "IllegalOperation", f"{ns} has no ranged chunks to split")
        middle = request.doc.get("middle")
        at = self._full_key(ns, middle)
        if at is None:
            return _err(request, 2, "BadValue", f"split key {middle} is not a full shard key")
        key = list(sh.collections[ns]["key"])
        for i, chunk in enumerate(sh.chunks[ns]):
            lo = _order(tuple(chunk["min"][f] for f in key))
            hi = _order(tuple(chunk["max"][f] for f in key))
            if lo == at:
                return _err(
                    request, 2, "BadValue", f"new split key {middle} is a boundary key of a chunk"
                )
            if lo < at < hi:
                upper = {**chunk, "min": dict(middle)}
                sh.chunks[ns][i : i + 1] = [{**chunk, "max": dict(middle)}, upper]
                return bool(request.ok())
        return _err(request, 2, "BadValue", f"no chunk holds {middle}")

    def _move_chunk(self, request: Any) -> bool:
        doc = request.doc
        bounds = doc.get("bounds", [None, None])
        return self._move(request, "moveChunk", doc["moveChunk"], bounds, str(doc.get("to", "")))

    def _move_range(self, request: Any) -> bool:
        # A 6.0 command: binaries before it do not know it.
        if int(self.server_version.split(".", maxsplit=1)[0]) < 6:
            return _err(request, 59, "CommandNotFound", "no such command: 'moveRange'")
        doc = request.doc
        bounds = [doc.get("min"), doc.get("max")]
        return self._move(request, "moveRange", doc["moveRange"], bounds, str(doc.get("toShard")))

    def _move(self, request: Any, verb: str, ns: str, bounds: list[Any], to: str) -> bool:
        """One chunk, named by its exact bounds, to shard ``to`` (zones respected)."""
        sh = self.sharded
        if ns not in sh.chunks:
            return _err(request, 20, "IllegalOperation", f"{ns} has no ranged chunks to move")
        if to not in self._active_shards():
            return _err(request, 70, "ShardNotFound", f"Shard {to} not found")
        lo, hi = (self._full_key(ns, b) for b in bounds)
        key = list(sh.collections.get(ns, {}).get("key", {}))
        for chunk in sh.chunks.get(ns, []):
            if (
                _order(tuple(chunk["min"][f] for f in key)),
                _order(tuple(chunk["max"][f] for f in key)),
            ) != (lo, hi):
                continue
            for zone in sh.zone_ranges.get(ns, []):
                zlo, zhi = self._full_key(ns, zone["min"]), self._full_key(ns, zone["max"])
                inside = None not in (zlo, zhi, lo, hi) and zlo <= lo and hi <= zhi  # type: ignore[operator]
                if inside and zone["zone"] not in sh.zones.get(to, set()):
                    return _err(
                        request,
                        20,
                        "IllegalOperation",
                        f"chunk is in zone {zone['zone']}, which shard {to} is not in",
                    )
            chunk["shard"] = to
            sh.moves.append((ns, to))
            sh.moved_by.append(verb)
            return bool(request.ok())
        return _err(request, 2, "BadValue", f"no chunk with bounds {bounds}")

    def _add_shard_to_zone(self, request: Any) -> bool:
        shard, zone = str(request.doc["addShardToZone"]), str(request.doc["zone"])
        if shard not in self.sharded.shards:
            return _err(request, 70, "ShardNotFound", f"Shard {shard} not found")
        self.sharded.zones.setdefault(shard, set()).add(zone)
        return bool(request.ok())

    def _update_zone_key_range(self, request: Any) -> bool:
        doc, sh = request.doc, self.sharded
        ns, zone = doc["updateZoneKeyRange"], str(doc["zone"])
        if not any(zone in zs for zs in sh.zones.values()):
            return _err(request, 2, "BadValue", f"zone {zone} does not exist")
        key = sh.collections.get(ns, {}).get("key")
        if key is not None and _untyped_hashed_bound(key, doc["min"], doc["max"]):
            return _err(request, 72, "InvalidOptions", _HASHED_TYPES)
        ranges = [r for r in sh.zone_ranges.get(ns, []) if r["min"] != doc["min"]]
        sh.zone_ranges[ns] = [
            *ranges,
            {"min": dict(doc["min"]), "max": dict(doc["max"]), "zone": zone},
        ]
        return bool(request.ok())

    def _create_indexes(self, request: Any) -> bool:
        ns = f"{request.doc['$db']}.{request.doc['createIndexes']}"
        known = self.sharded.indexes.setdefault(ns, [])
        names = {ix["name"] for ix in known}
        known.extend(dict(ix) for ix in request.doc["indexes"] if ix["name"] not in names)
        return bool(request.ok(numIndexesAfter=len(known) + 1))

    def _router_create(self, request: Any) -> bool:
        ns = f"{request.doc['$db']}.{request.doc['create']}"
        if ns in self.sharded.collections or ns in self.sharded.created:
            return _err(request, 48, "NamespaceExists", f"Collection {ns} already exists.")
        self.sharded.created.add(ns)
        return bool(request.ok())

    def _list_indexes(self, request: Any) -> bool:
        ns = f"{request.doc['$db']}.{request.doc['listIndexes']}"
        batch = [{"v": 2, "key": {"_id": 1}, "name": "_id_"}, *self.sharded.indexes.get(ns, [])]
        return bool(request.ok(cursor={"id": 0, "ns": ns, "firstBatch": batch}))

    def _find_chunks(self, request: Any) -> bool:
        uuid = request.doc.get("filter", {}).get("uuid")
        ns = next(
            (
                n
                for n, c in self.sharded.collections.items()
                if bytes(c["uuid"]) == bytes(uuid or b"")
            ),
            "",
        )
        batch = [dict(c) for c in self.sharded.chunks.get(ns, [])]
        return bool(request.ok(cursor={"id": 0, "ns": "config.chunks", "firstBatch": batch}))

    def _server_status(self, request: Any, process: str) -> bool:
        self.server_status_calls += 1
        n = self.server_status_calls
        reply: dict[str, Any] = {
            "version": self.server_version,
            "process": process,
            "uptime": float(n),
            "connections": {"current": 2 + n % 5, "available": 838_000},
            "opcounters": {"insert": 0, "query": n, "update": 0, "delete": 0, "command": 3 * n},
            "mem": {"resident": 120 + n % 7},
        }
        if process == "mongod":
            reply["storageEngine"] = {"name": "wiredTiger"}
            reply["wiredTiger"] = {
                "cache": {
                    "maximum bytes configured": self.cache_bytes,
                    "bytes currently in the cache": 4096 * n,
                }
            }
        return bool(request.ok(reply))

    def _describe(
        self, cmd: str, name: str, request: Any, rs: SetState | None, *, standalone: bool = False
    ) -> bool:
        if cmd == "serverstatus":
            return self._server_status(request, "mongod")
        if cmd == "buildinfo":
            return self._build_info(request)
        return self._cmd_line_opts(request, name, rs, standalone=standalone)

    def _build_info(self, request: Any) -> bool:
        parts = [int(p) for p in self.server_version.split(".")]
        return bool(
            request.ok(
                version=self.server_version,
                gitVersion=self.git_version,
                versionArray=[*parts, 0],
                modules=[],
                allocator="tcmalloc",
                javascriptEngine="mozjs",
                sysInfo="deprecated",
                openssl={"running": "OpenSSL 3.0.2 15 Mar 2022", "compiled": "OpenSSL 3.0.2"},
                buildEnvironment={
                    "distmod": "ubuntu2204",
                    "distarch": "x86_64",
                    "target_arch": "x86_64",
                    "target_os": "linux",
                },
                bits=64,
                debug=False,
                maxBsonObjectSize=WIRE["maxBsonObjectSize"],
                storageEngines=["devnull", "wiredTiger"],
            )
        )

    def _cmd_line_opts(
        self, request: Any, name: str | None, rs: SetState | None, *, standalone: bool = False
    ) -> bool:
        """The options the operator's pods start with: a member (replSet, keyFile, cache), a
        standalone (the same without replSet) or a mongos (configdb), and the test's extra
        --setParameter pairs."""
        keyfile = "/etc/mongodb-keyfile/keyfile"
        cache_gb = self.cache_bytes / 1024**3
        if name is None:
            argv = ["mongos", "--configdb", "cfg/cfg-0:27017", "--bind_ip_all"]
            parsed: dict[str, Any] = {"sharding": {"configDB": "cfg/cfg-0:27017"}}
        else:
            set_name = self.node_set.get(name, "rs0") if rs is not None else "rs0"
            argv = ["mongod", "--replSet", set_name, "--bind_ip_all"]
            argv += ["--wiredTigerCacheSizeGB", f"{cache_gb:g}"]
            parsed = {
                "replication": {"replSet": set_name},
                "storage": {
                    "dbPath": "/data/db",
                    "wiredTiger": {"engineConfig": {"cacheSizeGB": cache_gb}},
                },
            }
            if standalone:
                argv[1:3] = []
                del parsed["replication"]
        argv += ["--keyFile", keyfile]
        parsed["net"] = {"bindIpAll": True, "port": 27017}
        parsed["security"] = {"keyFile": keyfile, "authorization": "enabled"}
        for key, value in self.extra_options.items():
            argv += ["--setParameter", f"{key}={value}"]
        if self.extra_options:
            parsed["setParameter"] = dict(self.extra_options)
        return bool(request.ok(argv=argv, parsed=parsed))

    def _active_shards(self) -> list[str]:
        return sorted(sh for sh, s in self.sharded.shards.items() if not s.get("draining"))

    def _aggregate(self, request: Any) -> bool:
        doc = request.doc
        db, coll = doc["$db"], doc["aggregate"]
        shards = self._active_shards() or ["(none)"]
        if db == "config" and coll == "chunks":
            match = (doc.get("pipeline") or [{}])[0].get("$match", {})
            ns = next(
                (
                    n
                    for n, c in self.sharded.collections.items()
                    if bytes(c["uuid"]) == bytes(match.get("uuid") or b"")
                ),
                "",
            )
            if ns in self.sharded.chunks:
                held = [c["shard"] for c in self.sharded.chunks[ns]]
                batch = [{"_id": s, "n": held.count(s)} for s in sorted(set(held))]
            else:  # two chunks per active shard, whatever the collection
                batch = [{"_id": s, "n": 2} for s in shards]
            return bool(request.ok(cursor={"id": 0, "ns": "config.chunks", "firstBatch": batch}))
        ns = f"{db}.{coll}"
        if ns not in self.sharded.documents:
            return _err(request, 26, "NamespaceNotFound", f"ns {ns} does not exist")
        total = self.sharded.documents[ns]
        # documents spread evenly over the chunks (ranged) or the shards, remainder on the first
        owners = [c["shard"] for c in self.sharded.chunks.get(ns, [])] or shards
        per = [total // len(owners)] * len(owners)
        per[0] += total - sum(per)
        counts: dict[str, int] = {}
        for owner, n in zip(owners, per, strict=True):
            counts[owner] = counts.get(owner, 0) + n
        batch = [
            {"ns": ns, "shard": s, "count": n, "storageStats": _storage_stats(n)}
            for s, n in sorted(counts.items())
        ]
        return bool(request.ok(cursor={"id": 0, "ns": ns, "firstBatch": batch}))

    def _router_profile(self, request: Any) -> bool:
        """A router has no system.profile: levels 1 and 2 refused (cluster_profile_cmd.cpp)."""
        if int(request.doc["profile"]) not in (-1, 0):
            return _err(
                request,
                2,
                "BadValue",
                "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change "
                "'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current "
                "values",
            )
        return bool(request.ok(was=0, slowms=DEFAULT_SLOW_MS, sampleRate=1.0))

    _ROUTER_COMMANDS: ClassVar[dict[str, Callable[[MongoModel, Any], bool]]] = {
        "hello": _router_hello,
        "profile": _router_profile,
        "ismaster": _router_hello,
        "listshards": _list_shards,
        "serverstatus": _router_status,
        "buildinfo": _router_build_info,
        "getcmdlineopts": _router_cmd_line_opts,
        "addshard": _add_shard,
        "removeshard": _remove_shard,
        "enablesharding": _enable_sharding,
        "moveprimary": _move_primary,
        "drop": _router_drop,
        "getparameter": _router_get_parameter,
        "listcollections": _router_list_collections,
        "shardcollection": _shard_collection,
        "aggregate": _aggregate,
        "split": _split,
        "movechunk": _move_chunk,
        "moverange": _move_range,
        "addshardtozone": _add_shard_to_zone,
        "updatezonekeyrange": _update_zone_key_range,
        "create": _router_create,
        "createindexes": _create_indexes,
        "listindexes": _list_indexes,
    }


def _storage_stats(documents: int) -> dict[str, Any]:
    size = documents * DOCUMENT_BYTES
    return {
        "count": documents,
        "size": size,
        "storageSize": size // 3,
        "totalIndexSize": documents * INDEX_BYTES,
        "nindexes": 1,
    }


def _aware(value: Any) -> Any:
    """A date from BSON (pymongo decodes it naive, in UTC) comparable with the model's stamps."""
    naive = isinstance(value, datetime) and value.tzinfo is None
    return value.replace(tzinfo=UTC) if naive else value


def _list_collections(request: Any, db: str, namespaces: set[str]) -> bool:
    wanted = (request.doc.get("filter") or {}).get("name")
    names = sorted(ns.split(".", 1)[1] for ns in namespaces if ns.split(".", 1)[0] == db)
    batch = [{"name": n, "type": "collection"} for n in names if wanted in (None, n)]
    return bool(
        request.ok(cursor={"id": 0, "ns": f"{db}.$cmd.listCollections", "firstBatch": batch})
    )


_HASHED_TYPES = (
    "there exists a field in the range not of type NumberLong, MinKey, or MaxKey which "
    "corresponds to a hashed field in the shard key pattern"
)


def _untyped_hashed_bound(
    key: Mapping[str, Any], low: Mapping[str, Any], high: Mapping[str, Any]
) -> bool:
    """A hashed field's bound that is not NumberLong, MinKey or MaxKey (pymongo sends a small
    int as int32; checkHashedShardKeyRange refuses it, and strings)."""
    hashed = [f for f, kind in key.items() if kind == "hashed"]
    return any(
        f in bound and not isinstance(bound[f], Int64 | MinKey | MaxKey)
        for f in hashed
        for bound in (low, high)
    )


Refused = tuple[int, str, str]  # code, codeName, message


def _shard_collection_refusal(
    doc: Mapping[str, Any], key: dict[str, Any], ranges: list[dict[str, Any]]
) -> Refused | None:
    """shardCollection's refusals on an empty collection, as the IDL's types, the hashed
    bounds' check and initial_split_policy.cpp (PresplitHashedZonesSplitPolicy::_validate)
    state them."""
    for name, kind in (("numInitialChunks", int), ("presplitHashedZones", bool)):
        value = doc.get(name)
        if value is not None and type(value) is not kind and not isinstance(value, Int64):
            return 14, "TypeMismatch", f"BSON field 'shardCollection.{name}' is the wrong type"
    hashed = [i for i, f in enumerate(key) if key[f] == "hashed"]
    if hashed and any(_untyped_hashed_bound(key, r["min"], r["max"]) for r in ranges):
        return 72, "InvalidOptions", "cannot do hash sharding: a zone's " + _HASHED_TYPES
    if not doc.get("presplitHashedZones"):
        return None
    if not hashed or not ranges:
        return (
            31387,
            "Location31387",
            "'presplitHashedZones' is only supported when the collection is empty, zones are "
            "set up and shard key pattern has a hashed field",
        )
    if hashed[0] == 0:
        return _hashed_prefix_refusal(list(key), ranges)
    return next((r for z in ranges if (r := _ranged_prefix_refusal(list(key), hashed[0], z))), None)


def _hashed_prefix_refusal(fields: list[str], ranges: list[dict[str, Any]]) -> Refused | None:
    whole = len(ranges) == 1 and all(
        isinstance(ranges[0]["min"].get(f), MinKey) and isinstance(ranges[0]["max"].get(f), MaxKey)
        for f in fields
    )
    if whole:
        return None
    return (
        31412,
        "Location31412",
        "For hashed prefix shard keys, 'presplitHashedZones' is only supported when there is "
        "a single zone defined which covers entire shard key range",
    )


def _ranged_prefix_refusal(fields: list[str], at: int, zone: dict[str, Any]) -> Refused | None:
    """One zone against the rules for a ranged prefix before the hashed field ``at``."""
    low = [zone["min"].get(f, MinKey()) for f in fields]
    high = [zone["max"].get(f, MinKey()) for f in fields]
    name = zone["zone"]
    if any(isinstance(v, MinKey | MaxKey) for v in low[:at]):
        why = (31388, "Cannot have MinKey or MaxKey in the lower bound for fields preceding the")
        return why[0], f"Location{why[0]}", f"{why[1]} hashed field, for zone {name}"
    if _order(tuple(low[:at])) == _order(tuple(high[:at])):
        text = "The value preceding hashed field of the upper bound should be greater than that"
        return 31390, "Location31390", f"{text} of lower bound, for zone {name}"
    if not isinstance(low[at], MinKey):
        text = "The hashed field value for lower bound must be MinKey"
        return 31389, "Location31389", f"{text}, for zone {name}"
    if any(not isinstance(v, MinKey) for v in low[at + 1 :]):
        text = "The fields after the hashed field must have MinKey value"
        return 31391, "Location31391", f"{text}, for zone {name}"
    return None


def _rank(value: Any) -> tuple[int, Any]:
    """BSON order of the values a shard key takes here: MinKey < numbers < strings < MaxKey."""
    if isinstance(value, MinKey):
        return (0, 0)
    if isinstance(value, MaxKey):
        return (9, 0)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, value)
    return (2, str(value))


def _order(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_rank(v) for v in values)
