"""pymongo and bson, imported when first used: the one place the operator imports the driver.

An operator with no cluster to administer never needs it, and pymongo with bson is the
operator's largest dependency after kopf and aiohttp (~130 modules, ~5.5 MiB resident: make
bench-memory). Its names are attributes of this module, resolved on first access: a client is
built (``driver.MongoClient``), a reply is read (``driver.Timestamp``) or a driver error is
classified (``except driver.PyMongoError``: evaluated only when an exception reaches it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bson import Int64, MaxKey, MinKey, Timestamp
    from pymongo import MongoClient
    from pymongo.errors import (
        AutoReconnect,
        ConfigurationError,
        ConnectionFailure,
        ExecutionTimeout,
        NetworkTimeout,
        NotPrimaryError,
        OperationFailure,
        PyMongoError,
        ServerSelectionTimeoutError,
        WaitQueueTimeoutError,
    )

_NAMES = {
    "MongoClient": "pymongo",
    "Timestamp": "bson",
    "Int64": "bson",
    "MinKey": "bson",
    "MaxKey": "bson",
    "AutoReconnect": "pymongo.errors",
    "ConfigurationError": "pymongo.errors",
    "ConnectionFailure": "pymongo.errors",
    "ExecutionTimeout": "pymongo.errors",
    "NetworkTimeout": "pymongo.errors",
    "NotPrimaryError": "pymongo.errors",
    "OperationFailure": "pymongo.errors",
    "PyMongoError": "pymongo.errors",
    "ServerSelectionTimeoutError": "pymongo.errors",
    "WaitQueueTimeoutError": "pymongo.errors",
}


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain module attributes
    return value


__all__ = [
    "AutoReconnect",
    "ConfigurationError",
    "ConnectionFailure",
    "ExecutionTimeout",
    "Int64",
    "MaxKey",
    "MinKey",
    "MongoClient",
    "NetworkTimeout",
    "NotPrimaryError",
    "OperationFailure",
    "PyMongoError",
    "ServerSelectionTimeoutError",
    "Timestamp",
    "WaitQueueTimeoutError",
]
