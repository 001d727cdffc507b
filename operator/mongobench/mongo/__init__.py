"""MongoDB administration: the only code in the operator that talks to mongod/mongos."""

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
    ServerFacts,
    ShardInfo,
    ShardingSpec,
    UserSpec,
    admin_user,
    benchmark_user,
    cluster_admin_user,
    exporter_user,
)

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
    "resolver_from_env",
]
