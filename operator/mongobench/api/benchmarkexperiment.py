"""BenchmarkExperiment spec parts as typed, frozen values (schema:
crds/mongobench.io_benchmarkexperiments.yaml). Only spec.history is modelled: the rest of the
experiment's spec is read by the matrix and the schedule as the run template it expands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mongobench.api.schema import from_dict


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
