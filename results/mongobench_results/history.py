"""History: the same study's figures across archived runs, and where they moved (pure).

A *series* is one number followed over time: per (topology, workload, metric), plus any keys
the user names (`--series cloud`: a label of the runs' spec, else a target dimension, as
compare's `--group-by`). Each archived run adds one point per series it measured: the mean of
its valid trials of that workload, at the run's start time. Runs are ordered by that time.

Change points come from Apache Otava's E-Divisive means (`mongobench-results[history]`; the
Hunter paper's split and merge steps: sliding windows of `window` points, weak change points at
10x the p-value, merged down to those significant at `max_pvalue` by Student's t-test). Nothing
here re-implements it; Otava is imported only when change points are asked for.

Incremental updates: the series are kept in the archive (`history/series.json`,
`to_json`/`from_json`); a new run appends its points, and only its run.json is read. The
change-point pass then runs over each whole series: at 500 points it takes tens of milliseconds
(`make bench-history`), and Otava's own incremental split (`new_points`/`old_cp`) was not used
because, fed one run at a time, it kept weak points at the tail that its merge step let through
as change points the full pass does not find. A run older than a series' last point is inserted
in order.

A change names the runs either side of it, the means before and after (between the change
points around it), the relative change of the mean, whether it is for the worse for that metric,
and the provenance fields (`provenance.json` of each run, when recorded) that differ between
the run before and the run after.

The gate (`verdict`): a regression holds at the newest runs of its series until later changes
win back at least half of it; those that hold fail `mongobench history --fail-on regression`
unless an acknowledgement (`history/acks.yaml`, `--acks`, spec.history.acknowledgements: series,
the change's run, reason, who) names that change, following it ACK_SHIFT runs either way (where
Otava places a change can move by a run as runs are added), never a later one.

The CLI (`mongobench history`) and the operator (a BenchmarkExperiment's `spec.history`,
condition Regressed) both use this module; it imports no CLI, archive or Kubernetes package.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from mongobench_results import compare, records

# Where the cache lives, relative to the archive root it describes.
SERIES_CACHE = "history/series.json"
# A flat copy of every point and change for Grafana's Infinity data source (see grafana_rows).
GRAFANA_EXPORT = "history/grafana.json"
CACHE_VERSION = 1
DEFAULT_METRICS = ("throughput", "p99")
# Fewer points than this: no test can say anything (and Otava's t-test needs 2 a side).
MIN_POINTS = 4
NONE = "none"


class HistoryError(ValueError):
    """Input that cannot form a history; the message is one line for the user."""


@dataclass(frozen=True)
class Method:
    """Otava's documented parameters (its defaults: window 50, p 0.001, no minimum magnitude).
    `bench-history` measures them on a known truth."""

    max_pvalue: float = 0.001
    window: int = 50
    min_magnitude: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "maxPValue": self.max_pvalue,
            "window": self.window,
            "minMagnitude": self.min_magnitude,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Method:
        return cls(float(d["maxPValue"]), int(d["window"]), float(d["minMagnitude"]))


@dataclass(frozen=True)
class HistoryRun:
    """One archived run as the history sees it."""

    key: str  # namespace/name
    uid: str
    run: Mapping[str, Any]  # the BenchmarkRun object (run.json)
    location: str = ""  # where it is archived, for the user


@dataclass(frozen=True)
class Point:
    run: str
    uid: str
    time: str  # RFC 3339: the run's start
    value: float
    trials: int  # valid trials behind the mean
    location: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "uid": self.uid,
            "time": self.time,
            "value": self.value,
            "trials": self.trials,
            "location": self.location,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Point:
        return cls(
            str(d["run"]),
            str(d["uid"]),
            str(d["time"]),
            float(d["value"]),
            int(d["trials"]),
            str(d.get("location", "")),
        )


@dataclass
class Series:
    key: tuple[tuple[str, str], ...]  # (topology, workload, metric, then the --series keys)
    unit: str
    higher_is_better: bool
    points: list[Point] = field(default_factory=list)

    @property
    def id(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.key)

    def get(self, name: str) -> str:
        return dict(self.key).get(name, "")

    def values(self) -> list[float]:
        return [p.value for p in self.points]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": [list(kv) for kv in self.key],
            "unit": self.unit,
            "higherIsBetter": self.higher_is_better,
            "points": [p.to_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Series:
        return cls(
            tuple((str(k), str(v)) for k, v in d["key"]),
            str(d["unit"]),
            bool(d["higherIsBetter"]),
            [Point.from_dict(p) for p in d["points"]],
        )


@dataclass(frozen=True)
class FieldChange:
    path: str  # dotted, with [i] for list items: "mongod.buildInfo.version"
    before: Any
    after: Any

    def text(self) -> str:
        return f"{self.path}: {_scalar_text(self.before)} -> {_scalar_text(self.after)}"


@dataclass(frozen=True)
class Change:
    series: Series = field(repr=False)
    index: int  # the first point after the change
    mean_before: float
    mean_after: float
    pvalue: float
    # The provenance fields that differ between the runs either side; None: not recorded.
    provenance: tuple[FieldChange, ...] | None = None

    @property
    def before(self) -> Point:
        return self.series.points[self.index - 1]

    @property
    def after(self) -> Point:
        return self.series.points[self.index]

    @property
    def magnitude(self) -> float:
        """Relative change of the mean (after / before - 1)."""
        return self.mean_after / self.mean_before - 1.0 if self.mean_before else math.inf

    @property
    def regression(self) -> bool:
        """For the worse: a lower throughput, a higher latency."""
        return self.magnitude < 0 if self.series.higher_is_better else self.magnitude > 0

    def provenance_text(self) -> str:
        if self.provenance is None:
            return "none recorded"
        if not self.provenance:
            return "no provenance field changed"
        return "; ".join(c.text() for c in self.provenance)

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.series.id,
            "key": dict(self.series.key),
            "index": self.index,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "meanBefore": self.mean_before,
            "meanAfter": self.mean_after,
            "magnitude": self.magnitude,
            "pValue": self.pvalue,
            "regression": self.regression,
            "unit": self.series.unit,
            "provenance": None
            if self.provenance is None
            else [{"path": c.path, "before": c.before, "after": c.after} for c in self.provenance],
        }


# --- series from runs --------------------------------------------------------------------------


def run_time(run: Mapping[str, Any]) -> str:
    """When the run started (status.startTime), else when it was created."""
    status = run.get("status") or {}
    meta = run.get("metadata") or {}
    return str(status.get("startTime") or meta.get("creationTimestamp") or "")


def _key_value(run: Mapping[str, Any], key: str) -> str:
    """A --series key's value: the run's label, else a target dimension, else `none`."""
    labels = (run.get("spec") or {}).get("labels") or {}
    if key in labels:
        return str(labels[key])
    if key in compare.DIMENSIONS:
        value = records.shape(run).dimensions().get(key)
        return NONE if value is None else str(value)
    return NONE


def check_keys(series_keys: Sequence[str], metrics: Sequence[str]) -> None:
    fixed = {"topology", "workload", "metric"}
    if len(set(series_keys)) != len(series_keys) or fixed & set(series_keys):
        raise HistoryError(
            "--series: name each key once; topology, workload and metric are always keys"
        )
    unknown = [m for m in metrics if m not in compare.METRIC_CHOICES]
    if unknown:
        raise HistoryError(
            f"unknown metric {unknown[0]!r}: choose from {', '.join(compare.METRIC_CHOICES)}"
        )


def run_points(
    hr: HistoryRun, series_keys: Sequence[str] = (), metrics: Sequence[str] = DEFAULT_METRICS
) -> list[tuple[Series, Point]]:
    """The run's point in each series it measured (one Series per point, holding its key)."""
    run = hr.run
    time = run_time(run)
    extra = tuple((k, _key_value(run, k)) for k in series_keys)
    topology = records.shape(run).kind
    by_workload: dict[str, list[records.StepView]] = {}
    for s in records.results(run):
        if s.validity.valid:
            by_workload.setdefault(str(s.workload), []).append(s)
    out: list[tuple[Series, Point]] = []
    for workload, trials in by_workload.items():
        ops = sorted({op for s in trials for op in ((s.result or {}).get("operations") or {})})
        for metric in compare.metrics_for(ops, metrics, load=workload == records.LOAD):
            values = [v for s in trials if (v := metric.extract(s)) is not None]
            if not values:
                continue
            key = (("topology", topology), ("workload", workload), ("metric", metric.id), *extra)
            series = Series(key, metric.unit, metric.higher_is_better)
            point = Point(hr.key, hr.uid, time, sum(values) / len(values), len(values), hr.location)
            out.append((series, point))
    return out


def _order(p: Point) -> tuple[str, str]:
    return (p.time, p.uid)


@dataclass
class History:
    """Every series of an archive, with what built them (the cache's content)."""

    series_keys: tuple[str, ...] = ()
    metrics: tuple[str, ...] = DEFAULT_METRICS
    method: Method = Method()
    series: dict[str, Series] = field(default_factory=dict)
    runs: set[str] = field(default_factory=set)  # uids already in the series

    def add(self, new_runs: Iterable[HistoryRun]) -> list[str]:
        """Append the runs not seen yet; the ids of the series that changed. A run older than
        a series' last point is inserted in order and that series is passed in full again."""
        touched: dict[str, int] = {}
        reorder: set[str] = set()
        for hr in sorted(new_runs, key=lambda r: (run_time(r.run), r.uid)):
            if hr.uid in self.runs:
                continue
            self.runs.add(hr.uid)
            for template, point in run_points(hr, self.series_keys, self.metrics):
                s = self.series.setdefault(template.id, template)
                if s.points and _order(point) < _order(s.points[-1]):
                    reorder.add(s.id)
                s.points.append(point)
                touched[s.id] = touched.get(s.id, 0) + 1
        for sid in reorder:
            self.series[sid].points.sort(key=_order)
        return sorted(touched)

    def changes(
        self, provenance: Callable[[Point], Mapping[str, Any] | None] | None = None
    ) -> list[Change]:
        """Change points of every series, each passed in full; `provenance` gives a run's
        provenance document (None: not recorded) for the diff at each change."""
        out: list[Change] = []
        for sid in sorted(self.series):
            s = self.series[sid]
            found = detect(s.values(), self.method)
            for index, mean_before, mean_after, p in found:
                change = Change(s, index, mean_before, mean_after, p)
                if provenance is not None:
                    change = replace(
                        change,
                        provenance=provenance_changes(
                            provenance(change.before), provenance(change.after)
                        ),
                    )
                out.append(change)
        return out

    def to_json(self) -> bytes:
        doc = {
            "version": CACHE_VERSION,
            "seriesKeys": list(self.series_keys),
            "metrics": list(self.metrics),
            "method": self.method.to_dict(),
            "runs": sorted(self.runs),
            "series": [self.series[k].to_dict() for k in sorted(self.series)],
        }
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> History:
        doc = json.loads(data)
        if doc.get("version") != CACHE_VERSION:
            raise HistoryError(
                f"history cache version {doc.get('version')!r} is not {CACHE_VERSION}"
            )
        series = [Series.from_dict(s) for s in doc["series"]]
        return cls(
            tuple(doc["seriesKeys"]),
            tuple(doc["metrics"]),
            Method.from_dict(doc["method"]),
            {s.id: s for s in series},
            set(doc["runs"]),
        )

    def matches(self, series_keys: Sequence[str], metrics: Sequence[str], method: Method) -> bool:
        """The cache was built the way it is asked for now (else it is rebuilt)."""
        return (
            self.series_keys == tuple(series_keys)
            and self.metrics == tuple(metrics)
            and self.method == method
        )


def build(
    runs: Iterable[HistoryRun],
    series_keys: Sequence[str] = (),
    metrics: Sequence[str] = DEFAULT_METRICS,
    method: Method | None = None,
) -> History:
    check_keys(series_keys, metrics)
    h = History(tuple(series_keys), tuple(metrics), method or Method())
    h.add(runs)
    return h


def load_or_build(
    cached: bytes | None,
    series_keys: Sequence[str],
    metrics: Sequence[str],
    method: Method,
) -> History:
    """The cached history when it was built the same way, else an empty one to add runs to."""
    check_keys(series_keys, metrics)
    if cached:
        try:
            h = History.from_json(cached)
        except (ValueError, KeyError, TypeError):
            h = None
        if h is not None and h.matches(series_keys, metrics, method):
            return h
    return History(tuple(series_keys), tuple(metrics), method)


# --- change points (Otava) ---------------------------------------------------------------------


Found = tuple[int, float, float, float]  # index, mean before, mean after, p-value


def detect(values: Sequence[float], method: Method = Method()) -> list[Found]:
    """Otava's change points of one series (its compute_change_points: split, then merge)."""
    if len(values) < MIN_POINTS:
        return []
    from otava.analysis import compute_change_points  # noqa: PLC0415 - only when asked for

    # A list, as Otava's own callers pass it (its split step fails on a numpy array).
    final, _ = compute_change_points(
        [float(v) for v in values],
        window_len=method.window,
        max_pvalue=method.max_pvalue,
        min_magnitude=method.min_magnitude,
    )
    return [
        (int(c.index), float(c.stats.mean_1), float(c.stats.mean_2), float(c.stats.pvalue))
        for c in final
        if math.isfinite(float(c.stats.pvalue)) and 0 < c.index < len(values)
    ]


# --- provenance --------------------------------------------------------------------------------


def _flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(obj, Mapping):
        for k in obj:
            _flatten(obj[k], f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = obj


_ABSENT = object()


def provenance_changes(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[FieldChange, ...] | None:
    """Scalar fields (at any depth) that differ between two runs' provenance; None when
    either run recorded none."""
    if before is None or after is None:
        return None
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(before, "", a)
    _flatten(after, "", b)
    out = []
    for path in sorted(set(a) | set(b)):
        x, y = a.get(path, _ABSENT), b.get(path, _ABSENT)
        if x != y:
            out.append(FieldChange(path, None if x is _ABSENT else x, None if y is _ABSENT else y))
    return tuple(out)


def _scalar_text(v: Any) -> str:
    return "(absent)" if v is None else json.dumps(v) if isinstance(v, str) else str(v)


# --- an archive's history, updated in place ----------------------------------------------------


# The key of a run's provenance in its archive folder (the provenance manifest of issue 27).
PROVENANCE = "provenance.json"


class _Store(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, data: bytes) -> None: ...


class _ArchivedRun(Protocol):
    """What is read of an archived run (mongobench_archive.ArchivedRun)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def complete(self) -> bool: ...
    @property
    def location(self) -> str: ...
    @property
    def run(self) -> dict[str, Any]: ...
    def get_json(self, key: str) -> Any: ...


class _Root(Protocol):
    """An archive root (mongobench_archive.Root): its store and its runs. Structural, so this
    library imports no archive package; the CLI and the operator pass theirs."""

    @property
    def store(self) -> _Store: ...
    def runs(self) -> Sequence[_ArchivedRun]: ...


@dataclass
class Update:
    history: History
    changes: list[Change]
    new_runs: int
    from_cache: bool


def update_archive(
    root: _Root,
    series_keys: Sequence[str] = (),
    metrics: Sequence[str] = DEFAULT_METRICS,
    method: Method | None = None,
    *,
    rebuild: bool = False,
    write: bool = True,
    extra: Iterable[HistoryRun] = (),
) -> Update:
    """The archive's history: the cached series (`history/series.json`) with the runs archived
    since appended, their change points (with the provenance changes at each), and the cache
    and the Grafana export written back when anything was added. Only complete uploads count.
    `extra`: runs to judge with the archive's that may not be archived yet (an experiment's,
    from the API); a run in both counts once. The caller's archive errors pass through."""
    method = method or Method()
    extra = list(extra)
    if extra and write:  # the cache would count them as archived and never read them
        raise ValueError("update_archive: runs from outside the archive are judged read-only")
    cached = None if rebuild else root.store.get(SERIES_CACHE)
    h = load_or_build(cached, series_keys, metrics, method)
    from_cache = bool(h.runs)
    archived = {a.uid: a for a in root.runs() if a.complete}
    new = [
        HistoryRun(f"{a.namespace}/{a.name}", a.uid, a.run, a.location)
        for uid, a in archived.items()
        if uid not in h.runs
    ]
    h.add([*new, *extra])
    seen: dict[str, Mapping[str, Any] | None] = {}

    def provenance(point: Point) -> Mapping[str, Any] | None:
        if point.uid not in seen:
            a = archived.get(point.uid)
            doc = a.get_json(PROVENANCE) if a is not None else None
            seen[point.uid] = doc if isinstance(doc, Mapping) else None
        return seen[point.uid]

    changes = h.changes(provenance)
    if write and (new or not from_cache):
        root.store.put(SERIES_CACHE, h.to_json())
        root.store.put(GRAFANA_EXPORT, json.dumps(grafana_rows(h, changes), indent=1).encode())
    return Update(h, changes, len(new), from_cache)


# --- acknowledgements and the gate ------------------------------------------------------------

# The archive's acknowledgements, next to the series they are about (YAML; JSON is YAML too).
ACKS = "history/acks.yaml"
# Where Otava places a change can move by a point as runs are added (the same drop is found at
# the run it happened or the next): an acknowledgement follows its change that far.
ACK_SHIFT = 2
# A regression stands while the newest level has won back less than this share of it.
RECOVERED = 0.5
_ACK_FIELDS = ("series", "run", "reason", "by")
_FIXED_KEYS = ("topology", "workload", "metric")


@dataclass(frozen=True)
class Ack:
    """A change for the worse accepted by someone: the series (its id, as the history names
    it), the change's run (the first run after it: namespace/name, or its uid when runs of the
    series share the name), why and who."""

    series: str
    run: str
    reason: str
    by: str

    def text(self) -> str:
        return f"acknowledged: {self.reason} ({self.by})"

    def to_dict(self) -> dict[str, str]:
        return {"series": self.series, "run": self.run, "reason": self.reason, "by": self.by}


def parse_acks(doc: Any, source: str) -> list[Ack]:
    """The acknowledgements of a parsed file (`acknowledgements: [{series, run, reason, by}]`)
    or of a list of entries (spec.history.acknowledgements); empty or None: none. Bad input is
    a HistoryError naming the source and the entry."""
    if doc is None:
        return []
    entries = doc.get("acknowledgements") if isinstance(doc, Mapping) else doc
    if isinstance(doc, Mapping) and set(doc) - {"acknowledgements"}:
        raise HistoryError(f"{source}: the only top-level key is acknowledgements")
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise HistoryError(f"{source}: acknowledgements must be a list of entries")
    out: list[Ack] = []
    for i, e in enumerate(entries):
        where = f"{source}: acknowledgements[{i}]"
        if not isinstance(e, Mapping):
            raise HistoryError(f"{where}: an entry is a mapping of {', '.join(_ACK_FIELDS)}")
        missing = [k for k in _ACK_FIELDS if not isinstance(e.get(k), str) or not e[k].strip()]
        if missing:
            raise HistoryError(f"{where}: {missing[0]} is missing (a non-empty string)")
        unknown = sorted(set(e) - set(_ACK_FIELDS))
        if unknown:
            raise HistoryError(f"{where}: unknown field {unknown[0]!r}")
        keys = [kv.partition("=") for kv in e["series"].split(",")]
        if any(not k or not sep for k, sep, _ in keys) or [k for k, _, _ in keys][:3] != list(
            _FIXED_KEYS
        ):
            raise HistoryError(
                f"{where}: series {e['series']!r} is not a series id "
                "(topology=...,workload=...,metric=...[,key=value...], as history prints it)"
            )
        out.append(Ack(*(str(e[k]).strip() for k in _ACK_FIELDS)))
    return out


def archive_acks(
    root: _Root, loads: Callable[[bytes], Any], error: type[Exception] = ValueError
) -> list[Ack]:
    """The archive's acknowledgements (`history/acks.yaml`; none when absent). `loads` parses
    YAML and raises `error` (the caller's yaml.safe_load and yaml.YAMLError: this library
    depends on no YAML package)."""
    data = root.store.get(ACKS)
    if data is None:
        return []
    try:
        doc = loads(data)
    except error as exc:
        raise HistoryError(f"{ACKS}: not YAML: {' '.join(str(exc).split())}") from exc
    return parse_acks(doc, ACKS)


def match_acks(changes: Sequence[Change], acks: Iterable[Ack]) -> dict[tuple[str, int], Ack]:
    """Which change each acknowledgement silences, by (series id, index): the change of its
    series nearest its run, at most ACK_SHIFT points away; no other change."""
    by_series: dict[str, list[Change]] = {}
    for c in changes:
        by_series.setdefault(c.series.id, []).append(c)
    out: dict[tuple[str, int], Ack] = {}
    for a in acks:
        found = by_series.get(a.series) or []
        if not found:
            continue
        points = found[0].series.points
        at = [i for i, p in enumerate(points) if a.run in (p.run, p.uid)]
        if len(at) != 1:  # none, or a name runs reuse (an experiment's, night after night)
            continue
        nearest = min(found, key=lambda c: (abs(c.index - at[0]), c.index))
        if abs(nearest.index - at[0]) <= ACK_SHIFT:
            out.setdefault((a.series, nearest.index), a)
    return out


def ack_run(c: Change) -> str:
    """How an acknowledgement names the change's run: namespace/name, or the uid when other
    runs of the series share the name."""
    names = [p.run for p in c.series.points]
    return c.after.run if names.count(c.after.run) == 1 else c.after.uid


@dataclass(frozen=True)
class Verdict:
    """The gate's view of the changes: the regressions the newest runs still sit after,
    unacknowledged (`standing`: these fail a gate) and acknowledged; the acknowledgements that
    silence no change (the change is gone, or a typo)."""

    standing: list[Change]
    acknowledged: list[tuple[Change, Ack]]
    unmatched: list[Ack]
    acks: dict[tuple[str, int], Ack]

    def ack_of(self, c: Change) -> Ack | None:
        return self.acks.get((c.series.id, c.index))


def holds(c: Change, newest: float) -> bool:
    """A regression still holds at the newest level (the mean after its series' last change)
    unless later changes won back at least RECOVERED of it."""
    lost = c.mean_before - c.mean_after
    return c.regression and (lost == 0 or (newest - c.mean_after) / lost < RECOVERED)


def verdict(changes: Sequence[Change], acks: Sequence[Ack]) -> Verdict:
    """Split the regressions the newest runs of each series sit after into unacknowledged
    and acknowledged ones (direction per metric: throughput down, latency and cost up)."""
    matched = match_acks(changes, acks)
    last: dict[str, Change] = {}
    for c in changes:
        if c.series.id not in last or c.index > last[c.series.id].index:
            last[c.series.id] = c
    standing: list[Change] = []
    acknowledged: list[tuple[Change, Ack]] = []
    for c in changes:
        if not holds(c, last[c.series.id].mean_after):
            continue
        ack = matched.get((c.series.id, c.index))
        if ack is None:
            standing.append(c)
        else:
            acknowledged.append((c, ack))
    used = set(matched.values())
    return Verdict(standing, acknowledged, [a for a in acks if a not in used], matched)


# --- views -------------------------------------------------------------------------------------


def grafana_rows(history: History, changes: Sequence[Change]) -> list[dict[str, Any]]:
    """One flat row per point, for Grafana's Infinity data source (JSON, `time` as the time
    field, the key columns as labels): `change` marks the first point after a change point,
    with its relative magnitude, so a panel can annotate it."""
    at = {(c.series.id, c.index): c for c in changes}
    rows = []
    for sid in sorted(history.series):
        s = history.series[sid]
        for i, p in enumerate(s.points):
            c = at.get((sid, i))
            rows.append(
                {
                    "time": p.time,
                    "series": sid,
                    **dict(s.key),
                    "value": p.value,
                    "unit": s.unit,
                    "run": p.run,
                    "change": c is not None,
                    "changeMagnitude": c.magnitude if c else None,
                    "regression": c.regression if c else None,
                }
            )
    return rows
