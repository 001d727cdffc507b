"""MongoDB administration: the only code in the operator that talks to mongod/mongos.

Names are loaded on first use, so importing a pure submodule (``model``, ``plan``) does not
import pymongo: ``mongobench.mongocluster``'s pure builders rely on it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mongobench.mongo.admin import MongoAdmin
    from mongobench.mongo.connect import (
        HOST_MAP_ENV,
        Connector,
        MappedResolver,
        identity_resolver,
        resolver_from_env,
    )
    from mongobench.mongo.errors import (
        HostUnresolvable,
        MongoAdminError,
        PermanentMongoError,
        TransientMongoError,
    )
    from mongobench.mongo.model import (
        Credentials,
        Distribution,
        DrainingProgress,
        Mongos,
        ReplicaSetSpec,
        ReplicaSetStatus,
        Role,
        RollingStep,
        ServerDescription,
        ServerFacts,
        ShardInfo,
        ShardingSpec,
        UserSpec,
        admin_user,
        benchmark_user,
        cluster_admin_user,
        exporter_user,
        internal_credentials,
        internal_credentials_each,
    )

_EXPORTS = {
    "Connector": "mongobench.mongo.connect",
    "Credentials": "mongobench.mongo.model",
    "Distribution": "mongobench.mongo.model",
    "DrainingProgress": "mongobench.mongo.model",
    "HOST_MAP_ENV": "mongobench.mongo.connect",
    "HostUnresolvable": "mongobench.mongo.errors",
    "MappedResolver": "mongobench.mongo.connect",
    "MongoAdmin": "mongobench.mongo.admin",
    "MongoAdminError": "mongobench.mongo.errors",
    "Mongos": "mongobench.mongo.model",
    "PermanentMongoError": "mongobench.mongo.errors",
    "ReplicaSetSpec": "mongobench.mongo.model",
    "ReplicaSetStatus": "mongobench.mongo.model",
    "Role": "mongobench.mongo.model",
    "RollingStep": "mongobench.mongo.model",
    "ServerDescription": "mongobench.mongo.model",
    "ServerFacts": "mongobench.mongo.model",
    "ShardInfo": "mongobench.mongo.model",
    "ShardingSpec": "mongobench.mongo.model",
    "TransientMongoError": "mongobench.mongo.errors",
    "UserSpec": "mongobench.mongo.model",
    "admin_user": "mongobench.mongo.model",
    "benchmark_user": "mongobench.mongo.model",
    "cluster_admin_user": "mongobench.mongo.model",
    "exporter_user": "mongobench.mongo.model",
    "identity_resolver": "mongobench.mongo.connect",
    "internal_credentials": "mongobench.mongo.model",
    "internal_credentials_each": "mongobench.mongo.model",
    "resolver_from_env": "mongobench.mongo.connect",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
