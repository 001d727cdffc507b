"""Builders (pure) of the objects an experiment creates, and of its status."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from mongobench.api import GROUP, VERSION
from mongobench.experiment.matrix import Matrix, Slot

EXPERIMENT_LABEL = "mongobench.io/experiment"
GROUP_LABEL = "mongobench.io/experiment-group"
CELL_LABEL = "mongobench.io/experiment-cell"
REPETITION_LABEL = "mongobench.io/experiment-repetition"
# The run's spec.labels key `mongobench compare --group-by` groups the cells by.
CELL_SPEC_LABEL = "experiment.cell"


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
        "spec": copy.deepcopy(dict(matrix.groups[group])),
    }


def archive_of(experiment_spec: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The runs' archive: the experiment's, with every run under <prefix>/<experiment>."""
    archive = experiment_spec.get("archive")
    if not archive:
        return None
    out = dict(archive)
    if out.get("enabled", True):
        out["prefix"] = "/".join(p for p in (out.get("prefix"), "experiments", name) if p)
    return out


def run(experiment: Mapping[str, Any], matrix: Matrix, slot: Slot) -> dict[str, Any]:
    meta = experiment["metadata"]
    cell = matrix.cells[slot.cell]
    spec = copy.deepcopy(dict(cell.run_spec))
    spec["clusterRef"] = {"name": cluster_name(meta["name"], cell.group)}
    spec["repetitions"] = 1
    labels = dict(spec.get("labels") or {})
    labels |= {name: _label(value) for name, value in cell.values.items()}
    labels[CELL_SPEC_LABEL] = matrix.label(slot.cell)
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


def workload_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per workload over the cell's runs: n, mean throughput and mean of the operations' worst
    p99 (microseconds), from the measured steps as `mongobench compare` reads them."""
    from mongobench_cli import records  # noqa: PLC0415 - pure; imported when a cell has runs

    acc: dict[str, list[tuple[float, float | None]]] = {}
    for r in runs:
        for step in records.measured(r):
            result = step.result or {}
            value = records.throughput(result)
            if value is None:
                continue
            lat = [records.latency(result, op, "p99") for op in result.get("operations") or {}]
            p99 = max((p for p in lat if p is not None), default=None)
            acc.setdefault(str(step.workload), []).append((value, p99))
    out = {}
    for w, vals in sorted(acc.items()):
        p99s: list[float] = [p for _, p in vals if p is not None]
        out[w] = {
            "n": len(vals),
            "throughput": round(sum(t for t, _ in vals) / len(vals), 1),
            "p99Micros": round(sum(p99s) / len(p99s), 1) if p99s else None,
        }
    return out


def compact_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The comparison rows status keeps: what `mongobench compare` prints, without the samples."""
    keep = (
        "workload",
        "metric",
        "unit",
        "configuration",
        "baseline",
        "n",
        "mean",
        "ciLow",
        "ciHigh",
        "relative",
        "relativeCiLow",
        "relativeCiHigh",
        "delta",
        "p",
        "verdict",
        "flags",
    )
    return [{k: r[k] for k in keep if k in r and r[k] is not None} for r in rows]
