"""BenchmarkRun spec as typed, frozen values (schema: crds/mongobench.io_benchmarkruns.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mongobench.api.mongocluster import (
    AntiAffinity,
    NodeAffinity,
    ResourceRequirements,
    Toleration,
)
from mongobench.api.schema import SpecError, field_of, from_dict

Driver = Literal["ycsb", "locust"]
StandardWorkload = Literal["a", "b", "c", "d", "e", "f"]
STANDARD_WORKLOADS: tuple[str, ...] = ("a", "b", "c", "d", "e", "f")
CleanupPolicy = Literal["OnSuccess", "Always", "Never"]
# Whether a run shares its target with others (benchmarkrun/decide/queue.py).
Concurrency = Literal["Exclusive", "Shared"]


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
        Literal[
            "zipfian", "uniform", "latest", "hotspot", "sequential", "exponential", "permutation"
        ]
        | None
    ) = None
    field_count: int = 10
    field_length: int = 100
    status_interval_seconds: int = 1  # the steadiness check's resolution
    # Unmeasured reads in each trial's own client process before its window (ClientWarmup).
    warmup_seconds: int | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Warmup:
    operation_count: int | None = None
    duration_seconds: int | None = None


@dataclass(frozen=True)
class RepeatUntil:
    """Adaptive repetitions: more than `repetitions` (up to max_repetitions) until the interval
    of `metric`'s mean is within +-relative_half_width of it (benchmarkrun.decide.repetitions)."""

    metric: str
    relative_half_width: float
    max_repetitions: int


class Repeated:
    """What a BenchmarkRun's and a BenchmarkExperiment's specs share: `repetitions`, fixed, or
    the minimum of adaptive ones up to repeat_until's maximum (benchmarkrun.decide.repetitions reads
    both as one policy)."""

    repetitions: int
    repeat_until: RepeatUntil | None

    @property
    def max_repetitions(self) -> int:
        """The repetitions planned: repetitions, or repeatUntil's maximum."""
        if self.repeat_until is None:
            return self.repetitions
        return max(self.repetitions, self.repeat_until.max_repetitions)


@dataclass(frozen=True)
class KneeLatency:
    percentile: Literal["p50", "p95", "p99", "p999"] = "p99"
    limit_ms: float = 10.0


@dataclass(frozen=True)
class Knee:
    """Knee search: instead of fixed repetitions, probe the offered load (YCSB target, Locust's
    constant throughput) for the highest one whose percentile stays under the limit, then run
    `repetitions` trials there (benchmarkrun.decide.knee; the search is mongobench_results.knee)."""

    start_ops_per_second: int
    max_ops_per_second: int
    latency: KneeLatency = field(default_factory=KneeLatency)
    resolution: float = 0.05
    repetitions: int = 3
    # Achieved / offered at or above which a probe carried its load.
    min_achieved_fraction: float = 0.9

    def __post_init__(self) -> None:
        """The CRD's rules again (an apiserver without them)."""
        if not 0 < self.start_ops_per_second <= self.max_ops_per_second:
            raise SpecError("spec.knee: startOpsPerSecond must be 1..maxOpsPerSecond")
        if not 0 < self.resolution < 1:
            raise SpecError(f"spec.knee.resolution: {self.resolution} is not in (0, 1)")
        if self.latency.limit_ms <= 0:
            raise SpecError("spec.knee.latency.limitMs must be positive")


@dataclass(frozen=True)
class PricesRef:
    name: str


@dataclass(frozen=True)
class Cost:
    """Node prices per instance type (one node-hour), inline or in a ConfigMap of the run's
    namespace (data: instance type -> price, optional key `currency`); never looked up
    outside. Each step's cost is its nodes' hours at these prices (mongobench_results.cost)."""

    prices: dict[str, float] = field(default_factory=dict)
    config_map_ref: PricesRef | None = None
    currency: str = "USD"


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


# A shard key value, a split point or a zone bound: field -> value, in the key's order
# (fields left out are MinKey).
KeyValues = dict[str, Any]


@dataclass(frozen=True)
class ShardKeyField:
    field: str
    type: Literal["Ranged", "Hashed"] = "Ranged"


@dataclass(frozen=True)
class Zone:
    name: str
    shards: tuple[str, ...]
    min: KeyValues = field(default_factory=dict)  # empty: MinKey
    max: KeyValues = field(default_factory=dict)  # empty: MaxKey


@dataclass(frozen=True)
class Sharding:
    """The single-field form (``key``, ``hashed``) or a compound key (``fields``)."""

    key: str = "_id"
    hashed: bool = True
    pre_split_chunks: int | None = None
    fields: tuple[ShardKeyField, ...] = ()
    split_points: tuple[KeyValues, ...] = ()
    zones: tuple[Zone, ...] = ()

    @property
    def key_fields(self) -> tuple[ShardKeyField, ...]:
        return self.fields or (ShardKeyField(self.key, "Hashed" if self.hashed else "Ranged"),)


@dataclass(frozen=True)
class IndexKey:
    field: str
    type: Literal["Ascending", "Descending", "Hashed", "Text"] = "Ascending"


@dataclass(frozen=True)
class Index:
    """A secondary index on the benchmark collection, created before every (re)load."""

    name: str
    keys: tuple[IndexKey, ...]
    unique: bool = False


@dataclass(frozen=True)
class Clients:
    parallelism: int = 1
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: NodeAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    # None: apart (preferred anti-affinity) unless beside_database.
    separate_from_database: bool | None = None
    # Required pod affinity to the cluster's data-bearing mongod pods: on their node.
    beside_database: bool = False
    # Among a step's own client pods; None: as "None".
    anti_affinity: AntiAffinity | None = None
    backoff_limit: int = 0
    deadline_seconds: int = 7200
    start_timeout_seconds: int = 300
    # A connection per client thread instead of one shared pool per client process.
    connection_per_thread: bool = False
    # The YCSB client JVM's options, after the image's JAVA_OPTS.
    jvm_options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """The CRD's rule again (an apiserver without it, a spec stored before it)."""
        if self.beside_database and self.separate_from_database:
            raise SpecError(
                "spec.clients: besideDatabase and separateFromDatabase exclude each other"
            )

    @property
    def apart_from_database(self) -> bool:
        """Whether the clients keep off the database's nodes (separateFromDatabase's default)."""
        if self.separate_from_database is None:
            return not self.beside_database
        return self.separate_from_database


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


MAX_RERUNS = 5  # spec.validity.rerunInvalid's maximum (the CRD's too)

# The verdict's reasons (mongobench_results.validity.REASONS), as spec.validity.accept takes them.
ValidityReason = Literal["ClientBound", "NoisyNode", "NotSteady", "Errors", "LittlesLaw"]


@dataclass(frozen=True)
class ValidityPolicy:
    """When a measured step (a trial) counts as invalid, and how often one is re-run
    (benchmarkrun.decide.validity applies it; results/mongobench_results/validity.py is the
    verdict)."""

    # Client CPU used / its CPU limit (or its node's CPUs when it has no limit) at or above
    # which the step measured the client, not MongoDB.
    client_cpu_fraction: float = 0.9
    # CPU steal of any node of the step (percent of its CPUs) above which the node was noisy.
    steal_percent: float = 5.0
    # Share of CFS periods in which a benchmark client was throttled above which it was starved.
    throttled_fraction: float = 0.1
    # CPU of other pods' containers on the step's nodes (cAdvisor), share of their CPUs.
    neighbour_cpu_fraction: float = 0.25
    # Failed operations / all operations above which the step is invalid.
    error_rate: float = 0.001
    # A warm-up longer than this share of the measured window makes the step not steady (a
    # shorter one is reported only). The window cannot be trimmed: the latency histograms
    # cover all of it.
    max_warmup_fraction: float = 0.1
    # A level shift, or the rise that ends a warm-up, of at most this share of the level before
    # it is reported, not NotSteady: a 10% shift moves a trial's mean at most 5% from either
    # level, within the trial-to-trial noise of a VM (30-s trials on an idle 2-CPU machine
    # shifted 5-15%). The runner reports no change below 5% (steady.MIN_SHIFT).
    max_level_shift: float = 0.1
    # Little's law disagreeing with the client threads makes the step invalid.
    littles_law: bool = True
    # How often an invalid trial is run again (a new step; the invalid one stays in status).
    # 0 by default: a re-run doubles a trial's cost, and where every trial is invalid for the
    # same standing reason (a client node at capacity, a shared host) it only repeats it;
    # the verdict is reported either way and compare leaves invalid trials out.
    rerun_invalid: int = 0
    # Reasons judged and shown but not making a trial invalid: where a standing condition is
    # known and accepted (clients sharing the database's nodes: ClientBound; a shared host:
    # NoisyNode). The trial counts as valid and says "accepted: ClientBound".
    accept: tuple[ValidityReason, ...] = ()

    def __post_init__(self) -> None:
        """The CRD's rules again (an apiserver without them, a spec stored before them): the
        handler turns this into the InvalidSpec condition."""
        shares = {
            "clientCpuFraction": self.client_cpu_fraction,
            "throttledFraction": self.throttled_fraction,
            "neighbourCpuFraction": self.neighbour_cpu_fraction,
            "errorRate": self.error_rate,
            "maxWarmupFraction": self.max_warmup_fraction,
            "maxLevelShift": self.max_level_shift,
        }
        for name, value in shares.items():
            if not 0 <= value <= 1:
                raise SpecError(f"spec.validity.{name}: {value} is not a share between 0 and 1")
        if not 0 <= self.steal_percent <= 100:
            raise SpecError(f"spec.validity.stealPercent: {self.steal_percent} is not a percent")
        if self.max_warmup_fraction >= 1:
            raise SpecError("spec.validity.maxWarmupFraction must be below 1")
        if self.neighbour_cpu_fraction >= self.client_cpu_fraction:
            raise SpecError("spec.validity.neighbourCpuFraction must be below clientCpuFraction")
        if not 0 <= self.rerun_invalid <= MAX_RERUNS:
            raise SpecError(f"spec.validity.rerunInvalid: {self.rerun_invalid} is not 0..5")


CPU_RESOLUTION_RANGE = (1, 60)  # spec.monitoring.cpuResolutionSeconds (the CRD's bounds too)


@dataclass(frozen=True)
class Monitoring:
    """How the run's resources are sampled (benchmarkrun.build.cpu_monitor)."""

    # Node CPU sampled every so many seconds while the run lasts: the operator owns a PodMonitor
    # that scrapes node-exporter at this interval, and the CPU queries rate over 4 of them.
    # None: Prometheus' own scrape interval (the operator's prometheus.scrapeInterval).
    cpu_resolution_seconds: int | None = None

    def __post_init__(self) -> None:
        low, high = CPU_RESOLUTION_RANGE
        seconds = self.cpu_resolution_seconds
        if seconds is not None and not low <= seconds <= high:
            raise SpecError(
                f"spec.monitoring.cpuResolutionSeconds: {seconds} is not {low} to {high} seconds"
            )


PROFILER_TOP_MAX = 100  # spec.profiler.top (the CRD's bound too): status stays bounded


@dataclass(frozen=True)
class Duet:
    """One side of a duet (order Duet): the pair's name, this run's side (0: A, 1: B) and the
    partner's client count, so both runs' clients meet at one start barrier."""

    name: str
    side: int
    peer_parallelism: int

    @property
    def offset(self) -> int:
        """This side's first client key at the shared barrier: B's follow A's."""
        return self.peer_parallelism if self.side else 0


@dataclass(frozen=True)
class Profiler:
    """MongoDB's profiler during each measured step (present = on): level 1 with slowMs on the
    run's database on every data-bearing mongod, the step's `top` slowest operations kept."""

    slow_ms: int
    top: int = 10

    def __post_init__(self) -> None:
        if self.slow_ms < 0:
            raise SpecError(f"spec.profiler.slowMs: {self.slow_ms} is below 0")
        if not 1 <= self.top <= PROFILER_TOP_MAX:
            raise SpecError(f"spec.profiler.top: {self.top} is not 1 to {PROFILER_TOP_MAX}")


@dataclass(frozen=True)
class BenchmarkRunSpec(Repeated):
    workloads: tuple[Workload, ...]
    cluster_ref: ClusterRef | None = None
    uri_secret_ref: UriSecretRef | None = None
    driver: Driver = "ycsb"
    image: str | None = None
    database: str = "ycsb"
    collection: str = "usertable"
    concurrency: Concurrency = "Exclusive"
    duet: Duet | None = None
    load: Load = field(default_factory=Load)
    run: Run = field(default_factory=lambda: Run(operation_count=100000))
    warmup: Warmup | None = None
    repetitions: int = 3  # the minimum when repeat_until is set
    repeat_until: RepeatUntil | None = None
    data_reset: DataReset = field(default_factory=DataReset)
    mongo: MongoOptions = field(default_factory=MongoOptions)
    sharding: Sharding = field(default_factory=Sharding)
    indexes: tuple[Index, ...] = ()
    clients: Clients = field(default_factory=Clients)
    cleanup: Cleanup = field(default_factory=Cleanup)
    labels: dict[str, str] = field(default_factory=dict)
    archive: Archive | None = None
    validity: ValidityPolicy = field(default_factory=ValidityPolicy)
    knee: Knee | None = None
    cost: Cost | None = None
    monitoring: Monitoring = field(default_factory=Monitoring)
    profiler: Profiler | None = None

    def __post_init__(self) -> None:
        if self.clients.beside_database and self.cluster_ref is None:
            raise SpecError(
                "spec.clients.besideDatabase needs spec.clusterRef: the database's pods are a "
                "MongoCluster's"
            )

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> BenchmarkRunSpec:
        return from_dict(cls, spec)

    def scenarios(self) -> list[tuple[str, Scenario]]:
        """Every user scenario the run uses, with what uses it ("load" or the workload)."""
        used = [("load", self.load.scenario)] + [(w.name, w.scenario) for w in self.workloads]
        return [(who, s) for who, s in used if s is not None]


def cluster_of(spec: Any) -> str | None:
    """The MongoCluster a stored BenchmarkRun spec names (its clusterRef), read alone: None
    without one, or when it cannot be read (the run is refused for it on its own)."""
    if not isinstance(spec, Mapping):
        return None
    try:
        ref: ClusterRef | None = field_of(BenchmarkRunSpec, spec, "cluster_ref")
    except SpecError:
        return None
    return None if ref is None else ref.name
