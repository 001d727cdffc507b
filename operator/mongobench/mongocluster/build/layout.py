"""Pure: which replica sets a cluster has, and the name and address of every object.

One StatefulSet per replica set, named like the replica set itself (``<cluster>-rs0``,
``<cluster>-cfg``, ``<cluster>-shard<i>``), so a member's host name, its pod and its replSet name
all read the same in ``kubectl`` and in ``rs.status()``. A Standalone topology is one StatefulSet
of one pod, ``<cluster>-mongod`` (pod ``<cluster>-mongod-0``): a ReplicaSetLayout of role
STANDALONE, so Services, TLS, monitoring, rolling and status treat it as the others, while no
replica-set name exists (``rs0`` would name a set that is not there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from mongobench.api.mongocluster import MongoClusterSpec, ResourceComponent
from mongobench.api.names import MAX_STATEFULSET_NAME, STANDALONE_SUFFIX, check_mongocluster_name
from mongobench.api.schema import SpecError
from mongobench.mongo.model import ReplicaSetSpec, Role
from mongobench.mongocluster.build.labels import Component

PORT = 27017
CREDENTIAL_SECRETS = ("keyfile", "admin", "operator", "benchmark", "exporter")


@dataclass(frozen=True)
class ReplicaSetLayout:
    name: str  # replSet name == StatefulSet name
    role: Role
    members: int
    component: Component
    namespace: str
    # (pod ordinal, MongoDB priority) of members whose priority is not the default 1.
    priorities: tuple[tuple[int, float], ...] = ()
    # The shard's index (spec.placement.shards keys); None for config servers and a replica set.
    shard_index: int | None = None

    @property
    def headless_service(self) -> str:
        return f"{self.name}-hl"

    @property
    def resource_component(self) -> ResourceComponent:
        return "configServer" if self.role is Role.CONFIG else "mongod"

    def pod_name(self, index: int) -> str:
        return f"{self.name}-{index}"

    def member_host(self, index: int) -> str:
        svc = self.headless_service
        return f"{self.pod_name(index)}.{svc}.{self.namespace}.svc.cluster.local:{PORT}"

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.member_host(i) for i in range(self.members))

    @property
    def seed_list(self) -> str:
        """``<replSet>/<host>,<host>``: mongos --configdb and addShard both take this form."""
        return f"{self.name}/{','.join(self.hosts)}"

    def to_spec(self) -> ReplicaSetSpec:
        """The replica set as the MongoDB admin module wants it (replSetInitiate, reconfig)."""
        priorities = tuple(
            (self.member_host(i), priority) for i, priority in self.priorities if i < self.members
        )
        return ReplicaSetSpec(self.name, self.role, self.hosts, priorities)


@dataclass(frozen=True)
class ClusterLayout:
    name: str
    namespace: str
    sharded: bool
    replica_sets: tuple[ReplicaSetLayout, ...]
    mongos_replicas: int  # 0 unless sharded
    keyfile_secret: str
    admin_secret: str

    @property
    def config_server(self) -> ReplicaSetLayout | None:
        return next((rs for rs in self.replica_sets if rs.role is Role.CONFIG), None)

    @property
    def shards(self) -> tuple[ReplicaSetLayout, ...]:
        return tuple(rs for rs in self.replica_sets if rs.role is Role.SHARD)

    @property
    def standalone(self) -> bool:
        return any(rs.role is Role.STANDALONE for rs in self.replica_sets)

    @property
    def mongos(self) -> str:
        """Name of the mongos Deployment and of its Service."""
        return f"{self.name}-mongos"

    @property
    def mongos_host(self) -> str:
        return f"{self.mongos}.{self.namespace}.svc.cluster.local:{PORT}"

    @property
    def benchmark_secret(self) -> str:
        return f"{self.name}-benchmark"

    @property
    def exporter_secret(self) -> str:
        return f"{self.name}-exporter"

    @property
    def operator_secret(self) -> str:
        return f"{self.name}-operator"

    @property
    def connection_secret(self) -> str:
        return f"{self.name}-connection"

    @property
    def pod_monitor(self) -> str:
        return self.name

    def pdb_name(self, workload: str) -> str:
        return f"{workload}-pdb"

    @property
    def members_network_policy(self) -> str:
        return f"{self.name}-mongod"

    @property
    def mongos_network_policy(self) -> str:
        return f"{self.name}-mongos"


def credential_secret_names(cluster: str) -> tuple[str, ...]:
    """The credential Secrets the operator generates for a cluster (the ones a spec does not
    reference by name): keyfile, admin, operator, benchmark and exporter users."""
    return tuple(f"{cluster}-{suffix}" for suffix in CREDENTIAL_SECRETS)


def cluster_layout(name: str, namespace: str, spec: MongoClusterSpec) -> ClusterLayout:
    """Every replica set of the cluster: config servers first, then shards in order."""
    sets: list[ReplicaSetLayout] = []
    mongos = 0
    if spec.topology.type == "Sharded":
        shape = spec.topology.sharded_shape
        sets.append(
            ReplicaSetLayout(
                f"{name}-cfg", Role.CONFIG, shape.config_servers, "configsvr", namespace
            )
        )
        # Priorities apply to the shards, where the benchmark's writes land; config servers keep
        # the default (documented on the CRD field).
        priorities = _priorities(shape.member_priorities, "spec.topology.sharded.memberPriorities")
        sets.extend(
            ReplicaSetLayout(
                f"{name}-shard{i}",
                Role.SHARD,
                shape.members_per_shard,
                "shard",
                namespace,
                priorities,
                shard_index=i,
            )
            for i in range(shape.shards)
        )
        mongos = shape.mongos
    elif spec.topology.standalone:
        # One member for good: admission refuses any count (there is no set to scale).
        sets.append(
            ReplicaSetLayout(
                f"{name}{STANDALONE_SUFFIX}", Role.STANDALONE, 1, "standalone", namespace
            )
        )
    else:
        shape_rs = spec.topology.replica_set
        sets.append(
            ReplicaSetLayout(
                f"{name}-rs0",
                Role.REPLICA,
                spec.topology.replica_set_members,
                "replicaset",
                namespace,
                _priorities(
                    shape_rs.member_priorities if shape_rs else {},
                    "spec.topology.replicaSet.memberPriorities",
                ),
            )
        )
    out = ClusterLayout(
        name=name,
        namespace=namespace,
        sharded=spec.topology.type == "Sharded",
        replica_sets=tuple(sets),
        mongos_replicas=mongos,
        keyfile_secret=spec.auth.keyfile_secret_name or f"{name}-keyfile",
        admin_secret=spec.auth.admin_secret_name or f"{name}-admin",
    )
    _check_names(out, spec.topology.type)
    return out


def _priorities(by_ordinal: Mapping[str, float], path: str) -> tuple[tuple[int, float], ...]:
    """Ordinal keys to numbers, sorted. Admission refuses anything else; a spec stored before
    the rules existed still fails with the field named rather than a wrong reconfig."""
    out: list[tuple[int, float]] = []
    for key, value in by_ordinal.items():
        if not (key.isascii() and key.isdigit()):
            raise SpecError(f"{path}: {key!r} is not a member ordinal (0, 1, ...)")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not 0 <= value <= 1000:
            raise SpecError(f"{path}.{key}: {value} is not a priority from 0 to 1000")
        out.append((int(key), float(value)))
    return tuple(sorted(out))


def _check_names(layout: ClusterLayout, topology: str) -> None:
    # Caught here with the field to blame, not later as an API error on one of many objects.
    # Admission refuses these names (crds/); this covers objects stored before the rules.
    check_mongocluster_name(layout.name, topology)
    for rs in layout.replica_sets:
        if len(rs.name) > MAX_STATEFULSET_NAME:  # more shards than the CRD allows
            raise SpecError(
                f"metadata.name: {layout.name!r} is too long: StatefulSet {rs.name!r} "
                f"exceeds {MAX_STATEFULSET_NAME} characters"
            )


def connection_uri(
    layout: ClusterLayout, username: str, password: str, database: str, *, tls: bool = False
) -> str:
    """The client URI: the mongos Service when sharded, else the member seed list + replicaSet
    (a standalone's one host alone: no replicaSet, which a client would wait for in vain)."""
    creds = f"{quote(username, safe='')}:{quote(password, safe='')}@"
    params = ["authSource=admin"]
    if layout.sharded:
        hosts = layout.mongos_host
    else:
        (rs,) = layout.replica_sets
        hosts = ",".join(rs.hosts)
        if rs.role is not Role.STANDALONE:
            params.append(f"replicaSet={rs.name}")
    if tls:
        params.append("tls=true")
    return f"mongodb://{creds}{hosts}/{quote(database, safe='')}?{'&'.join(params)}"
