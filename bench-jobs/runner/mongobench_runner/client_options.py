"""The YCSB binding's `mongodb.*` properties as pymongo MongoClient options (pure).

The Locust driver takes the same properties as the Java binding (BindingConfig.java), so a
BenchmarkRun means the same thing with either driver: write concern, read preference, journal,
wtimeout, credentials (password or the name of an env var holding it), TLS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# BenchmarkRun spec.clients.connectionPerThread, passed to the runner as this property.
CONNECTION_PER_THREAD = "mongobench.connectionPerThread"
# What each driver's one shared MongoClient pools when nothing says otherwise: the Java
# driver's default maxPoolSize, and the Locust driver's unbounded pool (pymongo maxPoolSize=0).
SHARED_MAX_POOL = {"ycsb": "100", "locust": "unbounded"}

WRITE_CONCERNS: dict[str, dict[str, Any]] = {
    "unacknowledged": {"w": 0},
    "acknowledged": {"w": 1},
    "journaled": {"w": 1, "journal": True},
    "majority": {"w": "majority"},
    "w1": {"w": 1},
    "w2": {"w": 2},
    "w3": {"w": 3},
}
READ_PREFERENCES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")
TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


def _bool(key: str, value: str) -> bool:
    if value.strip().lower() in TRUE:
        return True
    if value.strip().lower() in FALSE:
        return False
    raise ValueError(f"{key}: expected true or false, got {value!r}")


def client_options(props: Mapping[str, str], env: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for pymongo.MongoClient beyond the URI; ValueError on a bad value."""
    return {
        **_write_concern(props),
        **_read_preference(props),
        **_credentials(props, env),
        **_tls(props),
    }


def _write_concern(props: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    wc = props.get("mongodb.writeConcern")
    if wc:
        if wc in WRITE_CONCERNS:
            out.update(WRITE_CONCERNS[wc])
        elif wc.isdigit():
            out["w"] = int(wc)
        else:
            raise ValueError(f"mongodb.writeConcern: unknown value {wc!r}")
    if "mongodb.journal" in props:
        out["journal"] = _bool("mongodb.journal", props["mongodb.journal"])
    if "mongodb.wtimeoutMs" in props:
        out["wTimeoutMS"] = int(props["mongodb.wtimeoutMs"])
    return out


def _read_preference(props: Mapping[str, str]) -> dict[str, Any]:
    rp = props.get("mongodb.readPreference")
    if not rp:
        return {}
    if rp not in READ_PREFERENCES:
        raise ValueError(f"mongodb.readPreference: unknown value {rp!r}")
    return {"readPreference": rp}


def _credentials(props: Mapping[str, str], env: Mapping[str, str]) -> dict[str, Any]:
    """Username and password (given, or read from the env var named by passwordEnv)."""
    user = props.get("mongodb.username")
    if not user:
        return {}
    password = props.get("mongodb.password")
    if password is None and props.get("mongodb.passwordEnv"):
        name = props["mongodb.passwordEnv"]
        if name not in env:
            raise ValueError(f"mongodb.passwordEnv: environment variable {name} is not set")
        password = env[name]
    out: dict[str, Any] = {"username": user, "password": password}
    for option in ("authSource", "authMechanism"):
        if props.get(f"mongodb.{option}"):
            out[option] = props[f"mongodb.{option}"]
    return out


def _tls(props: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "mongodb.tls" in props:
        out["tls"] = _bool("mongodb.tls", props["mongodb.tls"])
    if props.get("mongodb.tlsCAFile"):
        out["tlsCAFile"] = props["mongodb.tlsCAFile"]
    if "mongodb.tlsAllowInvalidHostnames" in props:
        out["tlsAllowInvalidHostnames"] = _bool(
            "mongodb.tlsAllowInvalidHostnames", props["mongodb.tlsAllowInvalidHostnames"]
        )
    return out


def connection_per_thread(props: Mapping[str, str]) -> bool:
    return _bool(CONNECTION_PER_THREAD, props.get(CONNECTION_PER_THREAD, "false"))


def _uri_options(uri: str) -> dict[str, str]:
    return {k.lower(): v for k, v in parse_qsl(urlsplit(uri).query)}


def per_thread_pool_uri(uri: str, threads: int) -> str:
    """The URI with maxPoolSize = minPoolSize = threads, replacing any pool size it gave.

    YCSB's binding shares one MongoClient among a JVM's threads and has no client-per-thread
    option: a pool as large as the threads, opened in full before the first operation, is the
    nearest it gets (no thread ever waits for, or opens, a connection mid-run; a thread is still
    not pinned to one connection)."""
    parts = urlsplit(uri)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in ("maxpoolsize", "minpoolsize")
    ]
    query += [("maxPoolSize", str(threads)), ("minPoolSize", str(threads))]
    return urlunsplit(parts._replace(query=urlencode(query)))


def connection_record(props: Mapping[str, str], driver: str, threads: int) -> dict[str, str]:
    """The connection mode and pool settings in effect, for the result document's properties.

    shared: one MongoClient per process (YCSB: per JVM), its pool shared by the threads;
    perThread: Locust opens a MongoClient per user (pool of one connection); YCSB a shared pool
    of exactly `threads` connections (per_thread_pool_uri)."""
    if connection_per_thread(props):
        clients = "1 per thread" if driver == "locust" else "1 per process"
        pool = "1" if driver == "locust" else str(threads)
        return {
            "connections.mode": "perThread",
            "connections.mongoClients": clients,
            "connections.maxPoolSize": pool,
            "connections.minPoolSize": pool,
        }
    given = _uri_options(props.get("mongodb.url", ""))
    return {
        "connections.mode": "shared",
        "connections.mongoClients": "1 per process",
        # the Locust driver passes maxPoolSize=0 itself, over the URI's
        "connections.maxPoolSize": (
            given.get("maxpoolsize", SHARED_MAX_POOL[driver])
            if driver == "ycsb"
            else SHARED_MAX_POOL[driver]
        ),
        "connections.minPoolSize": given.get("minpoolsize", "0"),
    }
