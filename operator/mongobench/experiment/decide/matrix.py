"""The experiment's matrix (pure): dimensions expanded into cells, the cells' cluster and run
specs, and the order of their repetitions.

- A dimension sets one field (a dotted path) of the MongoCluster spec template (`target:
  cluster`) or of the BenchmarkRun spec template (`target: run`) to each of its values. The cells
  are the product of the dimensions, minus `exclude` entries, plus `include` entries (like a CI
  matrix: an include that matches no cell is a cell of its own).
- A dimension may name its values (`valueNames`, one each): a cell is then labelled, compared
  and matched (baseline, include, exclude, the runs' labels) by the name, and the field gets the
  value. That keeps an object value (a whole `sharding` block) readable as `shardKey=sensor-ts`.
- `design: OneFactorAtATime` varies one factor at a time instead (the sharded-deployment
  study's design): the cells are the baseline (`spec.baseline`, a value for every dimension)
  and, per dimension, each of its other values with every other dimension at its baseline
  value: 1 + sum(len(values) - 1) cells, not the product. Include and exclude shape a product
  only, so the schema refuses them with this design.
- Cells whose cluster specs are equal share one *cluster group*: only run fields differ, so the
  cluster is reused between them.
- Every (cell, repetition) is one *slot*, one BenchmarkRun with repetitions 1. A *round* is
  repetition r of every cell. `Interleaved` orders slots round by round, cells in matrix order
  (ABAB, not AABB); `RandomizedRounds` also runs round by round, each round in a fresh random
  order of the cells (randomized multiple interleaved trials: drift and position effects
  average out, and every round stays complete); `Random` shuffles all slots at once. Both
  random orders use a seed the status records, so slow drift on a shared cloud does not bias
  one configuration and the order can be replayed.
- `Duet` runs the two cells of a round at once, side by side (a *pair* of slots started
  together), so both see the same noise and the comparison pairs their per-second figures.
  It takes exactly two cells, and each gets a cluster of its own even when only run fields
  differ: two runs at once on one cluster would measure each other. Both sides run for
  `run.durationSeconds`, so their windows are the same seconds.
- An A/A calibration (`calibration: true`) has no dimensions: its two cells `calibration=a` and
  `calibration=b` take the same templates, and each gets a cluster of its own (two clusters
  from one template), so their comparison shows what the setup reports when nothing differs.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mongobench.api import BenchmarkExperimentSpec, SpecError
from mongobench.api.benchmarkexperiment import Dimension, Order
from mongobench.api.benchmarkrun import Run
from mongobench.api.schema import from_dict

MAX_CELLS = 200
DUET = "Duet"
OFAT = "OneFactorAtATime"
# The dimension of an A/A calibration: two cells, identical but for their clusters.
CALIBRATION = "calibration"
CALIBRATION_CELLS = ("a", "b")


@dataclass(frozen=True)
class Cell:
    index: int
    name: str  # stable within the experiment: c0, c1, ...
    values: Mapping[str, Any]  # dimension name -> value
    cluster_spec: Mapping[str, Any]
    run_spec: Mapping[str, Any]
    group: int  # index of the cluster group (cells with equal cluster specs)


@dataclass(frozen=True)
class Slot:
    cell: int
    repetition: int  # 1-based


@dataclass(frozen=True)
class Matrix:
    dimensions: tuple[Dimension, ...]
    cells: tuple[Cell, ...]
    groups: tuple[Mapping[str, Any], ...]  # cluster spec per group
    baseline: int  # cell index

    def label(self, cell: int) -> str:
        """`shards=2,version=8.0`: how the cell reads in tables and comparisons."""
        values = self.cells[cell].values
        return ",".join(f"{k}={_text(v)}" for k, v in values.items()) or self.cells[cell].name


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def set_path(spec: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `spec` with the dotted `path` set (intermediate objects created)."""
    out = copy.deepcopy(dict(spec))
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise SpecError(f"field {path!r}: {part!r} is not an object in the template")
        node = child
    node[parts[-1]] = copy.deepcopy(value)
    return out


def _matches(values: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    return all(values.get(k) == v for k, v in entry.items())


def _combinations(
    dims: Sequence[Dimension],
    include: Sequence[Mapping[str, Any]],
    exclude: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    names = [d.name for d in dims]
    for entry in (*include, *exclude):
        unknown = [k for k in entry if k not in names]
        if unknown:
            raise SpecError(f"include/exclude names {unknown[0]!r}, which is no dimension")
    combos = [
        dict(zip(names, vs, strict=True)) for vs in itertools.product(*(d.choices for d in dims))
    ]
    combos = [c for c in combos if not any(_matches(c, e) for e in exclude)]
    for entry in include:
        if len(entry) != len(names):
            raise SpecError(f"include entry {dict(entry)} must give a value for every dimension")
        named = [d for d in dims if d.value_names and entry[d.name] not in d.value_names]
        if named:
            d = named[0]
            raise SpecError(
                f"include entry {dict(entry)}: {d.name} must be one of its valueNames "
                f"({', '.join(d.value_names)})"
            )
        if not any(c == dict(entry) for c in combos):
            combos.append({n: entry[n] for n in names})
    return combos


def _one_factor_at_a_time(
    dims: Sequence[Dimension], baseline: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The baseline, then per dimension each other value with the rest at the baseline."""
    names = [d.name for d in dims]
    base = dict(baseline or {})
    if sorted(base) != sorted(names):
        raise SpecError(
            f"design OneFactorAtATime: baseline {base} must give a value for every dimension "
            f"({', '.join(names)})"
        )
    for d in dims:
        if base[d.name] not in d.values:
            raise SpecError(
                f"design OneFactorAtATime: baseline {d.name}={_text(base[d.name])} is not one "
                f"of the dimension's values"
            )
    base = {n: base[n] for n in names}  # the dimensions' order, as the product's cells
    combos = [base]
    for d in dims:
        combos += [base | {d.name: v} for v in d.values if v != base[d.name]]
    return combos


def _design(spec: BenchmarkExperimentSpec) -> list[dict[str, Any]]:
    """The cells' dimension values, by the spec's design."""
    if spec.design != OFAT:
        return _combinations(spec.dimensions, spec.include, spec.exclude)
    if spec.include or spec.exclude:
        raise SpecError("design OneFactorAtATime takes no include or exclude")
    return _one_factor_at_a_time(spec.dimensions, spec.baseline)


def expand(spec: BenchmarkExperimentSpec) -> Matrix:
    """The experiment spec's cells (SpecError for a matrix the operator cannot use)."""
    matrix = _calibration(spec) if spec.calibration else _expand(spec)
    if spec.duet:
        return _duet(matrix)
    return matrix


def _duet(matrix: Matrix) -> Matrix:
    """A Duet's two cells, each on a cluster of its own (the two runs go at once)."""
    if len(matrix.cells) != 2:
        raise SpecError(
            f"order Duet takes exactly two cells (A and B side by side); the matrix has "
            f"{len(matrix.cells)}"
        )
    for c in matrix.cells:
        # Only this field of the run template is read here: the whole is validated per cell by
        # the apiserver (a dry run), whose message names the field.
        if not from_dict(Run, c.run_spec.get("run"), "spec.run.run").duration_seconds:
            raise SpecError(
                f"order Duet needs run.durationSeconds in every cell ({matrix.label(c.index)} has "
                f"none): both sides measure one window (an operationCount ends each side at its "
                f"own pace)"
            )
    cells = tuple(dataclasses.replace(c, group=c.index) for c in matrix.cells)
    return dataclasses.replace(
        matrix, cells=cells, groups=tuple(c.cluster_spec for c in matrix.cells)
    )


def _expand(spec: BenchmarkExperimentSpec) -> Matrix:
    dims = spec.dimensions
    combos = _design(spec)
    if not combos:
        raise SpecError("the matrix has no cell (every combination is excluded)")
    if len(combos) > MAX_CELLS:
        raise SpecError(f"the matrix has {len(combos)} cells, more than {MAX_CELLS}")
    by_name = {d.name: d for d in dims}
    groups: list[Mapping[str, Any]] = []
    cells = []
    for i, values in enumerate(combos):
        cluster, run = dict(spec.cluster), dict(spec.run)
        for name, value in values.items():
            d = by_name[name]
            if d.target == "cluster":
                cluster = set_path(cluster, d.field, d.value(value))
            else:
                run = set_path(run, d.field, d.value(value))
        if cluster not in groups:
            groups.append(cluster)
        cells.append(Cell(i, f"c{i}", values, cluster, run, groups.index(cluster)))
    baseline = 0
    wanted = spec.baseline
    if wanted:
        found = [c.index for c in cells if _matches(c.values, wanted)]
        if len(found) != 1:
            raise SpecError(
                f"baseline {dict(wanted)} matches {len(found)} cells; it must name exactly one"
            )
        baseline = found[0]
    return Matrix(dims, tuple(cells), tuple(groups), baseline)


def _calibration(spec: BenchmarkExperimentSpec) -> Matrix:
    """The A/A matrix: two cells from the same templates, one cluster (group) each."""
    if spec.dimensions or spec.include or spec.exclude:
        raise SpecError("a calibration has no dimensions, include or exclude: it runs A against A")
    cluster, run = dict(spec.cluster), dict(spec.run)
    dim = Dimension(CALIBRATION, "cluster", "", CALIBRATION_CELLS)
    cells = tuple(
        Cell(i, f"c{i}", {CALIBRATION: v}, cluster, run, i) for i, v in enumerate(CALIBRATION_CELLS)
    )
    return Matrix((dim,), cells, (cluster, cluster), 0)


def slots(
    matrix: Matrix, repetitions: int, order: Order, seed: int | None, first: int = 1
) -> list[Slot]:
    """Every (cell, repetition) of rounds `first`..`repetitions` in the order they run.

    RandomizedRounds draws round r's order from its own generator (seed and r), so adding a
    round (adaptive repetitions) never changes the order of the rounds before it."""
    rounds = range(first, repetitions + 1)
    if order == "RandomizedRounds":
        out = []
        for r in rounds:
            cells = [c.index for c in matrix.cells]
            random.Random(f"{seed}:{r}").shuffle(cells)
            out += [Slot(c, r) for c in cells]
        return out
    # Interleaved and Duet: round by round in matrix order (a Duet starts each round's pair
    # together, see schedule.decide).
    out = [Slot(c.index, r) for r in rounds for c in matrix.cells]
    if order == "Random":
        random.Random(seed).shuffle(out)
    return out


def seeded(order: str) -> bool:
    """Whether the order draws from a seed (recorded in status)."""
    return order in ("Random", "RandomizedRounds")


def default_seed(uid: str) -> int:
    """The seed of a random order when the spec gives none: from the object's uid (recorded)."""
    return int(hashlib.sha256(uid.encode()).hexdigest()[:8], 16)


def partner(slot: Slot) -> Slot:
    """The other slot of a Duet's pair: the other cell, the same round."""
    return Slot(1 - slot.cell, slot.repetition)
