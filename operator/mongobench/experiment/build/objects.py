"""Builders (pure) of the objects an experiment creates, and of its status."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mongobench.api import GROUP, VERSION, BenchmarkExperimentSpec
from mongobench.api.benchmarkrun import Clients
from mongobench.api.schema import from_dict
from mongobench.experiment.decide.matrix import Matrix, Slot

EXPERIMENT_LABEL = "mongobench.io/experiment"
GROUP_LABEL = "mongobench.io/experiment-group"
CELL_LABEL = "mongobench.io/experiment-cell"
REPETITION_LABEL = "mongobench.io/experiment-repetition"
# The run's spec.labels key `mongobench compare --group-by` groups the cells by.
CELL_SPEC_LABEL = "experiment.cell"
# The run fields its dimensions vary (comma-separated): differences by design, which compare
# then accepts from the archive too, where the experiment's spec is not at hand.
VARIES_SPEC_LABEL = "experiment.varies"


def cluster_name(experiment: str, group: int) -> str:
    return f"{experiment}-k{group}"


def run_name(experiment: str, slot: Slot) -> str:
    return f"{experiment}-c{slot.cell}-r{slot.repetition}"


def _owner(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkExperiment",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def cluster(
    meta: Mapping[str, Any], spec: BenchmarkExperimentSpec, matrix: Matrix, group: int
) -> dict[str, Any]:
    """Group `group`'s MongoCluster of the experiment (`meta`, `spec`)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {
            "name": cluster_name(meta["name"], group),
            "namespace": meta["namespace"],
            "labels": {EXPERIMENT_LABEL: meta["name"], GROUP_LABEL: str(group)},
            "ownerReferences": [_owner(meta)],
        },
        "spec": _paired(meta["name"], spec, matrix.groups[group]),
    }


def _paired(
    name: str, spec: BenchmarkExperimentSpec, template: Mapping[str, Any]
) -> dict[str, Any]:
    """A Duet's cluster: its pods paired with the other cluster's on the same nodes."""
    out = copy.deepcopy(dict(template))
    if spec.duet:
        out["placement"] = dict(out.get("placement") or {}) | {"duet": name}
    return out


def archive_of(spec: BenchmarkExperimentSpec, name: str) -> dict[str, Any] | None:
    """The runs' archive: the experiment's, with every run under <prefix>/<experiment>."""
    archive = spec.archive
    if not archive:
        return None
    out = dict(archive)
    if out.get("enabled", True):
        out["prefix"] = "/".join(p for p in (out.get("prefix"), "experiments", name) if p)
    return out


def duet_name(experiment: str, repetition: int) -> str:
    """The pair of a Duet's round: both runs' barrier and their pods' pairing label."""
    return f"{experiment}-r{repetition}"


def _duet(name: str, matrix: Matrix, slot: Slot) -> dict[str, Any]:
    partner = matrix.cells[1 - slot.cell].run_spec
    clients = from_dict(Clients, partner.get("clients"), "spec.run.clients")
    return {
        "name": duet_name(name, slot.repetition),
        "side": slot.cell,
        "peerParallelism": clients.parallelism,
    }


def run(
    meta: Mapping[str, Any], spec: BenchmarkExperimentSpec, matrix: Matrix, slot: Slot
) -> dict[str, Any]:
    """The BenchmarkRun of `slot` (one repetition of a cell) of the experiment (`meta`, `spec`).
    The cell's run template is copied through as a dict: the BenchmarkRun gets it as written."""
    cell = matrix.cells[slot.cell]
    out = copy.deepcopy(dict(cell.run_spec))
    out["clusterRef"] = {"name": cluster_name(meta["name"], cell.group)}
    out["repetitions"] = 1
    if spec.duet:
        out["duet"] = _duet(meta["name"], matrix, slot)
    labels = dict(out.get("labels") or {})
    labels |= {name: _label(value) for name, value in cell.values.items()}
    labels[CELL_SPEC_LABEL] = matrix.label(slot.cell)
    varies = [d.field for d in matrix.dimensions if d.target == "run"]
    if varies:
        labels[VARIES_SPEC_LABEL] = ",".join(varies)
    labels["experiment"] = meta["name"]
    labels["experiment.repetition"] = str(slot.repetition)
    out["labels"] = labels
    archive = archive_of(spec, meta["name"])
    if archive is not None:
        out["archive"] = archive
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkRun",
        "metadata": {
            "name": run_name(meta["name"], slot),
            "namespace": meta["namespace"],
            "labels": {
                EXPERIMENT_LABEL: meta["name"],
                CELL_LABEL: str(slot.cell),
                REPETITION_LABEL: str(slot.repetition),
                GROUP_LABEL: str(cell.group),
            },
            "ownerReferences": [_owner(meta)],
        },
        "spec": out,
    }


def _label(value: Any) -> str:
    return (
        value
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )
