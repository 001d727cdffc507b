"""BenchmarkRun spec as typed, frozen values (schema: crds/mongobench.io_benchmarkruns.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mongobench.api.mongocluster import ResourceRequirements
from mongobench.api.schema import from_dict

Driver = Literal["ycsb", "locust"]
StandardWorkload = Literal["a", "b", "c", "d", "e", "f"]
STANDARD_WORKLOADS: tuple[str, ...] = ("a", "b", "c", "d", "e", "f")
CleanupPolicy = Literal["OnSuccess", "Always", "Never"]


@dataclass(frozen=True)
class ClusterRef:
    name: str


@dataclass(frozen=True)
class UriSecretRef:
    name: str
    key: str = "uri"


@dataclass(frozen=True)
class ConfigMapKeyRef:
    name: str
    key: str


@dataclass(frozen=True)
class Scenario:
    """A user Locust scenario file: key `key` of ConfigMap `name` in the run's namespace."""

    config_map_ref: ConfigMapKeyRef


@dataclass(frozen=True)
class Load:
    record_count: int = 100000
    threads: int = 16
    batch_size: int = 1
    insert_order: Literal["hashed", "ordered"] = "hashed"
    skip: bool = False
    scenario: Scenario | None = None
    repetitions: int = 1  # measured loads, each from empty; the run phase follows the last
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    name: str
    base: StandardWorkload | None = None
    properties: dict[str, str] = field(default_factory=dict)
    scenario: Scenario | None = None

    @property
    def standard(self) -> str | None:
        """The standard workload (a-f) this one is or starts from; None for fully custom ones."""
        return self.name if self.name in STANDARD_WORKLOADS else self.base


@dataclass(frozen=True)
class Run:
    operation_count: int | None = None
    duration_seconds: int | None = None
    threads: int = 16
    target_ops_per_second: int | None = None
    request_distribution: (
        Literal["zipfian", "uniform", "latest", "hotspot", "sequential", "exponential"] | None
    ) = None
    field_count: int = 10
    field_length: int = 100
    status_interval_seconds: int = 10
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Warmup:
    operation_count: int | None = None
    duration_seconds: int | None = None


@dataclass(frozen=True)
class DataReset:
    between: Literal["None", "Workloads", "Repetitions"] = "None"
    inserting_workloads: Literal["RunLast", "Reload", "AsWritten"] = "RunLast"


@dataclass(frozen=True)
class MongoOptions:
    write_concern: Literal["unacknowledged", "acknowledged", "journaled", "majority"] = (
        "acknowledged"
    )
    read_preference: Literal[
        "primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest"
    ] = "primary"
    upsert: bool = False


@dataclass(frozen=True)
class Sharding:
    key: str = "_id"
    hashed: bool = True
    pre_split_chunks: int | None = None


@dataclass(frozen=True)
class Clients:
    parallelism: int = 1
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    node_selector: dict[str, str] = field(default_factory=dict)
    separate_from_database: bool = True
    backoff_limit: int = 0
    deadline_seconds: int = 7200
    start_timeout_seconds: int = 300


@dataclass(frozen=True)
class Cleanup:
    jobs: CleanupPolicy = "OnSuccess"
    data: CleanupPolicy = "Never"


@dataclass(frozen=True)
class Archive:
    """Where results go when they leave the cluster; unset fields take the operator default."""

    enabled: bool = True
    bucket: str | None = None
    prefix: str | None = None
    endpoint: str | None = None
    region: str | None = None
    credentials_secret: str | None = None


@dataclass(frozen=True)
class BenchmarkRunSpec:
    workloads: tuple[Workload, ...]
    cluster_ref: ClusterRef | None = None
    uri_secret_ref: UriSecretRef | None = None
    driver: Driver = "ycsb"
    image: str | None = None
    database: str = "ycsb"
    collection: str = "usertable"
    load: Load = field(default_factory=Load)
    run: Run = field(default_factory=lambda: Run(operation_count=100000))
    warmup: Warmup | None = None
    repetitions: int = 3
    data_reset: DataReset = field(default_factory=DataReset)
    mongo: MongoOptions = field(default_factory=MongoOptions)
    sharding: Sharding = field(default_factory=Sharding)
    clients: Clients = field(default_factory=Clients)
    cleanup: Cleanup = field(default_factory=Cleanup)
    labels: dict[str, str] = field(default_factory=dict)
    archive: Archive | None = None

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> BenchmarkRunSpec:
        return from_dict(cls, spec)

    def scenarios(self) -> list[tuple[str, Scenario]]:
        """Every user scenario the run uses, with what uses it ("load" or the workload)."""
        used = [("load", self.load.scenario)] + [(w.name, w.scenario) for w in self.workloads]
        return [(who, s) for who, s in used if s is not None]
