"""MongoCluster spec as typed, frozen values (schema: crds/mongobench.io_mongoclusters.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mongobench.api.schema import SpecError, from_dict, renamed
from mongobench.mongo import versions

TopologyType = Literal["ReplicaSet", "Sharded", "Standalone"]
Platform = Literal["auto", "eks", "magnum", "kind"]
AntiAffinity = Literal["Required", "Preferred", "None"]
# Named layouts of the database pods over nodes (see mongocluster/build/placement.py).
PlacementPreset = Literal["None", "CoLocated", "Dedicated"]
NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
DeletionPolicy = Literal["Retain", "Delete"]
ResourceComponent = Literal["mongod", "configServer", "mongos", "exporter"]


@dataclass(frozen=True)
class ReplicaSetShape:
    members: int = 3
    # Pod ordinal ("0", "1", ...) -> MongoDB member priority (0..1000); unlisted members: 1.
    member_priorities: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardedShape:
    shards: int
    members_per_shard: int = 3
    config_servers: int = 3
    mongos: int = 2
    # As ReplicaSetShape's, for every shard replica set; config servers keep the default.
    member_priorities: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Topology:
    type: TopologyType = "ReplicaSet"
    replica_set: ReplicaSetShape | None = None
    sharded: ShardedShape | None = None

    @property
    def sharded_shape(self) -> ShardedShape:
        if self.sharded is None:  # admission requires it; a spec stored before may lack it
            raise SpecError("spec.topology.sharded: required when topology.type is Sharded")
        return self.sharded

    @property
    def replica_set_members(self) -> int:
        return (self.replica_set or ReplicaSetShape()).members

    @property
    def standalone(self) -> bool:
        """One mongod without --replSet: nothing to initiate, scale or elect."""
        return self.type == "Standalone"


@dataclass(frozen=True)
class Storage:
    size: str = "10Gi"
    storage_class_name: str | None = None
    wired_tiger_cache_size_gb: float | None = field(
        default=None, metadata=renamed("wiredTigerCacheSizeGB")
    )


@dataclass(frozen=True)
class ResourceRequirements:
    requests: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.requests:
            out["requests"] = dict(self.requests)
        if self.limits:
            out["limits"] = dict(self.limits)
        return out


@dataclass(frozen=True)
class Toleration:
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "operator": self.operator,
            "value": self.value,
            "effect": self.effect,
            "tolerationSeconds": self.toleration_seconds,
        }
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: NodeSelectorOperator
    values: tuple[str, ...] = ()

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Kubernetes' NodeSelectorTerm, by node labels only (matchFields is left out)."""

    match_expressions: tuple[NodeSelectorRequirement, ...]

    def to_k8s(self) -> dict[str, Any]:
        return {"matchExpressions": [r.to_k8s() for r in self.match_expressions]}


@dataclass(frozen=True)
class NodeSelector:
    node_selector_terms: tuple[NodeSelectorTerm, ...]


@dataclass(frozen=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True)
class NodeAffinity:
    """Kubernetes' NodeAffinity (required terms are ORed, a term's expressions ANDed)."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        required = self.required_during_scheduling_ignored_during_execution
        if required is not None:
            out["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [t.to_k8s() for t in required.node_selector_terms]
            }
        if self.preferred_during_scheduling_ignored_during_execution:
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": p.weight, "preference": p.preference.to_k8s()}
                for p in self.preferred_during_scheduling_ignored_during_execution
            ]
        return out


@dataclass(frozen=True)
class RolePlacement:
    """Where one role's pods run. An unset field (None) keeps spec.placement's value."""

    node_selector: dict[str, str] | None = None
    node_affinity: NodeAffinity | None = None
    tolerations: tuple[Toleration, ...] | None = None
    anti_affinity: AntiAffinity | None = None
    spread_across_zones: bool | None = None


@dataclass(frozen=True)
class ShardPlacement(RolePlacement):
    """One shard's members: placement.mongod's fields overridden again, and their size
    (overrides resources.mongod for this shard's mongod containers)."""

    resources: ResourceRequirements | None = None


@dataclass(frozen=True)
class Placement:
    """Defaults for every database pod; `mongod`, `configServer`, `mongos` and `shards` (by
    shard index) override them field by field. `preset` lays the roles out over nodes."""

    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: NodeAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    anti_affinity: AntiAffinity = "Preferred"
    spread_across_zones: bool | None = None
    preset: PlacementPreset | None = None
    duet: str | None = None  # the duet's name: each pod joins the other side's in its place
    mongod: RolePlacement | None = None
    config_server: RolePlacement | None = None
    mongos: RolePlacement | None = None
    shards: dict[str, ShardPlacement] = field(default_factory=dict)


@dataclass(frozen=True)
class Auth:
    admin_secret_name: str | None = None
    keyfile_secret_name: str | None = None
    benchmark_database: str = "ycsb"
    benchmark_user: str = "benchmark"


@dataclass(frozen=True)
class IssuerRef:
    name: str
    kind: Literal["Issuer", "ClusterIssuer"] = "Issuer"


TLSMode = Literal["requireTLS", "preferTLS", "allowTLS"]
MemberAuth = Literal["keyFile", "x509"]


@dataclass(frozen=True)
class TLS:
    enabled: bool = False
    mode: TLSMode = "requireTLS"
    issuer_ref: IssuerRef | None = None
    # A Secret with the CA's tls.crt and tls.key: the operator issues the certificates itself.
    ca_secret_name: str | None = None
    member_auth: MemberAuth = "keyFile"

    @property
    def x509_members(self) -> bool:
        return self.enabled and self.member_auth == "x509"

    @property
    def operator_dials_tls(self) -> bool:
        """Whether clients (the operator's own connections, the connection Secret's URI that
        benchmark clients read) dial TLS: where every member accepts it (preferTLS, requireTLS)
        or authenticates the operator by certificate (x509). Under allowTLS members dial each
        other plain, and while a cluster rolls onto TLS (mongocluster.decide.tls_roll) allowTLS is
        the step during which members not yet restarted speak plain only."""
        return self.enabled and (self.mode != "allowTLS" or self.member_auth == "x509")


@dataclass(frozen=True)
class Monitoring:
    exporter: bool = True
    exporter_image: str = "percona/mongodb_exporter:0.43.1"
    pod_monitor: bool = True
    pod_monitor_labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NetworkPolicy:
    enabled: bool = False
    # Empty: the operator's default (OperatorConfig.scraper_namespace_labels).
    scraper_namespace_labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MongoClusterSpec:
    version: str
    image: str | None = None
    topology: Topology = field(
        default_factory=lambda: Topology("ReplicaSet", replica_set=ReplicaSetShape(3))
    )
    storage: Storage = field(default_factory=Storage)
    # Keyed by component (mongod, configServer, mongos, exporter).
    resources: dict[str, ResourceRequirements] = field(default_factory=dict)
    placement: Placement = field(default_factory=Placement)
    platform: Platform = "auto"
    auth: Auth = field(default_factory=Auth)
    tls: TLS = field(default_factory=TLS)
    monitoring: Monitoring = field(default_factory=Monitoring)
    network_policy: NetworkPolicy = field(default_factory=NetworkPolicy)
    deletion_policy: DeletionPolicy = "Retain"
    # MAJOR.MINOR to set once every member runs `version`; None: never touched.
    feature_compatibility_version: str | None = None

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> MongoClusterSpec:
        parsed = from_dict(cls, spec)
        # The CRD refuses it at admission; an object stored before the range was stated is not.
        if not versions.is_supported(parsed.version):
            raise SpecError(f"spec.version: {versions.unsupported_message(parsed.version)}")
        return parsed

    @property
    def image_ref(self) -> str:
        return self.image or f"mongo:{self.version}"

    @property
    def major_minor(self) -> tuple[int, int]:
        major, minor, *_ = self.version.split(".")
        return int(major), int(minor)

    def resources_for(self, component: ResourceComponent) -> ResourceRequirements:
        return self.resources.get(component, ResourceRequirements())
