"""BenchmarkExperiment spec as typed, frozen values (schema:
crds/mongobench.io_benchmarkexperiments.yaml). The cluster and run templates stay free-form
(dicts): the dimensions set fields inside them before they become a MongoCluster's and a
BenchmarkRun's spec, which the apiserver then validates (a dry run per cell, see
experiment.reconcile.validate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mongobench.api.benchmarkrun import Repeated, RepeatUntil
from mongobench.api.schema import SpecError, from_dict

Target = Literal["cluster", "run"]
Design = Literal["Factorial", "OneFactorAtATime"]
Order = Literal["Interleaved", "RandomizedRounds", "Random", "Duet"]
ClusterPolicy = Literal["Delete", "Keep", "KeepOnFailure"]
OnCellFailure = Literal["Stop", "Continue"]


@dataclass(frozen=True)
class Acknowledgement:
    """A change for the worse accepted: the series (as `mongobench history` names it), the
    change's run (namespace/name or uid), why and who."""

    series: str
    run: str
    reason: str
    by: str


@dataclass(frozen=True)
class HistorySpec:
    archive: dict[str, Any]  # as a BenchmarkRun's spec.archive (free-form, resolved as one)
    series: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    acknowledgements: tuple[Acknowledgement, ...] = ()

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> HistorySpec:
        return from_dict(cls, spec, "spec.history")


@dataclass(frozen=True)
class Dimension:
    """A matrix axis: `field` (a dotted path inside the target's spec template) takes each of
    `values`; `value_names` (one each) label the cells instead of the values."""

    name: str
    target: Target
    field: str
    values: tuple[Any, ...]
    value_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """The CRD's bounds again (an apiserver without them, a spec stored before them)."""
        if not self.values:
            raise SpecError(f"dimension {self.name!r} has no values")
        named = self.value_names
        if named and (len(named) != len(self.values) or len(set(named)) != len(named)):
            raise SpecError(
                f"dimension {self.name!r}: valueNames must name each value once, "
                f"{len(self.values)} distinct names"
            )

    @property
    def choices(self) -> tuple[Any, ...]:
        """What the cells hold for this dimension: the names, else the values."""
        return self.value_names or self.values

    def value(self, choice: Any) -> Any:
        """The field's value for a cell's choice."""
        return self.values[self.value_names.index(choice)] if self.value_names else choice


@dataclass(frozen=True)
class BenchmarkExperimentSpec(Repeated):
    cluster: dict[str, Any]  # the MongoCluster spec template
    run: dict[str, Any]  # the BenchmarkRun spec template (no target, no repetitions)
    dimensions: tuple[Dimension, ...] = ()
    include: tuple[dict[str, Any], ...] = ()
    exclude: tuple[dict[str, Any], ...] = ()
    design: Design = "Factorial"
    baseline: dict[str, Any] | None = None
    repetitions: int = 3  # rounds; the minimum when repeat_until is set
    repeat_until: RepeatUntil | None = None
    order: Order = "Interleaved"
    seed: int | None = None
    calibration: bool = False
    max_clusters: int = 1
    cluster_policy: ClusterPolicy = "Delete"
    on_cell_failure: OnCellFailure = "Stop"
    cluster_ready_timeout_seconds: int = 900
    archive: dict[str, Any] | None = None  # as a BenchmarkRun's spec.archive
    history: HistorySpec | None = None

    def __post_init__(self) -> None:
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise SpecError("dimension names must be unique")

    @classmethod
    def parse(cls, spec: dict[str, Any]) -> BenchmarkExperimentSpec:
        return from_dict(cls, spec)

    @property
    def duet(self) -> bool:
        """Order Duet: a round's two cells run at once, side by side."""
        return self.order == "Duet"
