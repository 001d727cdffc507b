"""MongoDB administration: the only code in the operator that talks to mongod/mongos.

Names are loaded on first use, so importing a pure submodule (``model``, ``plan``) does not
import pymongo: ``mongobench.mongocluster``'s pure builders rely on it.
"""

from __future__ import annotations

import importlib
from typing import Any

# Looked up in this order: the pure model first, so its names never load pymongo.
_SUBMODULES = ("model", "errors", "connect", "admin")


def __getattr__(name: str) -> Any:
    """An exported name, from the first submodule that defines it (statically Any: typed code
    imports the submodule)."""
    if name in __all__:
        for submodule in _SUBMODULES:
            module = importlib.import_module(f"{__name__}.{submodule}")
            if name in vars(module):
                return vars(module)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The exports, listed once.
__all__ = [
    "HOST_MAP_ENV",
    "Connector",
    "Credentials",
    "Distribution",
    "DrainingProgress",
    "HostUnresolvable",
    "MappedResolver",
    "MongoAdmin",
    "MongoAdminError",
    "Mongos",
    "PermanentMongoError",
    "ReplicaSetSpec",
    "ReplicaSetStatus",
    "Role",
    "RollingStep",
    "ServerDescription",
    "ServerFacts",
    "ShardInfo",
    "ShardingSpec",
    "TransientMongoError",
    "UserSpec",
    "admin_user",
    "benchmark_user",
    "cluster_admin_user",
    "exporter_user",
    "identity_resolver",
    "internal_credentials",
    "internal_credentials_each",
    "resolver_from_env",
]
