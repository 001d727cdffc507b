"""The YCSB binding's `mongodb.*` properties as pymongo MongoClient options (pure).

The Locust driver takes the same properties as the Java binding (BindingConfig.java), so a
BenchmarkRun means the same thing with either driver: write concern, read preference, journal,
wtimeout, credentials (password or the name of an env var holding it), TLS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
