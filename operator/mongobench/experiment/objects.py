"""Builders (pure) of the objects an experiment creates, and of its status."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mongobench.api import GROUP, VERSION
from mongobench.experiment.matrix import DUET, Matrix, Slot

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


def _owner(experiment: Mapping[str, Any]) -> dict[str, Any]:
    meta = experiment["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchmarkExperiment",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def cluster(experiment: Mapping[str, Any], matrix: Matrix, group: int) -> dict[str, Any]:
    meta = experiment["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {
            "name": cluster_name(meta["name"], group),
            "namespace": meta["namespace"],
            "labels": {EXPERIMENT_LABEL: meta["name"], GROUP_LABEL: str(group)},
            "ownerReferences": [_owner(experiment)],
        },
        "spec": _paired(experiment, copy.deepcopy(dict(matrix.groups[group]))),
    }


def _paired(experiment: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A Duet's cluster: its pods paired with the other cluster's on the same nodes."""
    if (experiment.get("spec") or {}).get("order") == DUET:
        spec["placement"] = dict(spec.get("placement") or {}) | {
            "duet": experiment["metadata"]["name"]
        }
    return spec


def archive_of(experiment_spec: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The runs' archive: the experiment's, with every run under <prefix>/<experiment>."""
    archive = experiment_spec.get("archive")
    if not archive:
        return None
    out = dict(archive)
    if out.get("enabled", True):
        out["prefix"] = "/".join(p for p in (out.get("prefix"), "experiments", name) if p)
    return out


def duet_name(experiment: str, repetition: int) -> str:
    """The pair of a Duet's round: both runs' barrier and their pods' pairing label."""
    return f"{experiment}-r{repetition}"


def _duet(experiment: Mapping[str, Any], matrix: Matrix, slot: Slot) -> dict[str, Any]:
    partner = matrix.cells[1 - slot.cell].run_spec
    return {
        "name": duet_name(experiment["metadata"]["name"], slot.repetition),
        "side": slot.cell,
        "peerParallelism": int((partner.get("clients") or {}).get("parallelism", 1)),
    }


def run(experiment: Mapping[str, Any], matrix: Matrix, slot: Slot) -> dict[str, Any]:
    meta = experiment["metadata"]
    cell = matrix.cells[slot.cell]
    spec = copy.deepcopy(dict(cell.run_spec))
    spec["clusterRef"] = {"name": cluster_name(meta["name"], cell.group)}
    spec["repetitions"] = 1
    if experiment["spec"].get("order") == DUET:
        spec["duet"] = _duet(experiment, matrix, slot)
    labels = dict(spec.get("labels") or {})
    labels |= {name: _label(value) for name, value in cell.values.items()}
    labels[CELL_SPEC_LABEL] = matrix.label(slot.cell)
    varies = [d.field for d in matrix.dimensions if d.target == "run"]
    if varies:
        labels[VARIES_SPEC_LABEL] = ",".join(varies)
    labels["experiment"] = meta["name"]
    labels["experiment.repetition"] = str(slot.repetition)
    spec["labels"] = labels
    archive = archive_of(experiment["spec"], meta["name"])
    if archive is not None:
        spec["archive"] = archive
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
            "ownerReferences": [_owner(experiment)],
        },
        "spec": spec,
    }


def _label(value: Any) -> str:
    return (
        value
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )
