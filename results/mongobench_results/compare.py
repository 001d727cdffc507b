"""Comparison of benchmark runs (pure): configurations, comparability, benchstat-style verdicts.

Used by `mongobench compare`, the HTML report and the operator's BenchmarkExperiment status,
so it imports no CLI, terminal, plotting or numeric package.

- A *configuration* is what is being compared: one run, or every run sharing the value of a
  label (`group_by`) or of a target dimension (shards, members, mongos, version, platform,
  topology). Its samples are the measured repetitions of all its runs, per workload; the
  loads are workload `load` (time to load, throughput, insert latency); metric `seconds` is
  each workload's run time (a one-operation workload's: that operation's).
- Each configuration is compared with the baseline for every workload and metric: mean, SD, n,
  confidence interval, the change with its Welch-Satterthwaite interval, Welch's and the
  Mann-Whitney p-values and Hedges' g (see stats.py).
- The verdict follows Go's benchstat: the change is shown only when the chosen test rejects "no
  difference" at alpha (p < alpha), otherwise "~". Welch's test is the default because the
  summary is the mean (benchstat's AssumeNormal); `test="utest"` uses the rank test
  (benchstat's default), which cannot reach p < 0.05 with fewer than 4 repetitions a side.
- Throughput and latency changes are relative to the baseline (percent); CPU changes are in
  percentage points (a share of the node's CPUs already).
- The relative change's interval is Fieller's, from the ratio of the two uncertain means
  (`ci="parametric"`), or the percentile bootstrap's (`ci="bootstrap"`, seed and resamples
  named); see stats.py.
- One table is one family of comparisons: its p-values are adjusted together (Holm by default,
  or Benjamini-Hochberg, or none) and the verdicts come from the adjusted p-values.
- Validity: each measured step (trial) carries the operator's verdict (validity.py). Invalid
  trials stay out of the statistics unless `include_invalid` (then the row is flagged); every row
  says how many of its trials were valid and why the others were not. No verdict from a cell
  with fewer trials than the test needs (MIN_N): "too few valid trials (2 < 3)".
- Flags: fewer than 3 repetitions, a coefficient of variation over 10 %, steps failing
  Little's law, and configurations whose workload parameters differ (not comparable, and why).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict, Unpack

from mongobench_results import records, stats

CV_LIMIT = 0.10
MIN_N = 3
DIMENSIONS = ("topology", "shards", "members", "mongos", "configServers", "version", "platform")
LATENCY_STATS = ("avg", "min", "p50", "p95", "p99", "p999", "max")
# cost: only where the steps carry a cost (prices were given); no row otherwise.
DEFAULT_METRICS = ("throughput", "avg", "p99", "cpu", "cost")
# Per role (benchmarkrun.telemetry.roles): cores summed over the role's pods, and memory working
# set.
ROLE_METRICS = tuple(f"{kind}:{role}" for kind in ("cpu", "memory") for role in records.ROLES)
ROLE_CPU_METRICS = tuple(m for m in ROLE_METRICS if m.startswith("cpu:"))
# seconds: a step's run time (the clients' window); a workload of one operation from one
# thread is that operation's run time, as study 3 timed one query (row "run time").
METRIC_CHOICES = ("throughput", "seconds", *LATENCY_STATS, "cpu", *ROLE_METRICS, "cost")
RUN_TIME = "run time"
_ROLE_FIGURE = {"cpu": ("cores", "cpuCores"), "memory": ("bytes", "memoryWorkingSetBytes")}

# Row.outcome's words (the compact table and the headlines).
FASTER, SLOWER, NO_DIFFERENCE = "faster", "slower", "no difference"
NO_VALID, TOO_FEW = "no valid trials", "too few valid trials"

Test = Literal["welch", "utest"]
Adjust = Literal["holm", "bh", "none"]
IntervalKind = Literal["parametric", "bootstrap"]
DEFAULT_ADJUST: Adjust = "holm"


class ComparisonError(ValueError):
    """Input that cannot be compared; the message is one line for the user."""


@dataclass(frozen=True)
class RunInput:
    key: str  # unique across the inputs, e.g. "ns/name" or "name@archive"
    run: Mapping[str, Any]  # the BenchmarkRun object


@dataclass(frozen=True)
class Metric:
    id: str  # e.g. "throughput", "READ p99", "cpu database"
    unit: str
    higher_is_better: bool
    points: bool  # change in (percentage) points, not relative
    extract: Callable[[records.StepView], float | None] = field(compare=False, repr=False)


def _latency_of(op: str, stat: str) -> Callable[[records.StepView], float | None]:
    def extract(s: records.StepView) -> float | None:
        return records.latency(s.result, op, stat) if s.result else None

    return extract


def _seconds(s: records.StepView) -> float | None:
    return records.step_seconds(s.result) if s.result else None


def metrics_for(
    workload_ops: Sequence[str], wanted: Sequence[str], load: bool = False
) -> list[Metric]:
    """The metrics of one workload; a load's come after its time to load (seconds), which
    comes with the throughput metric (one figure seen two ways: records over seconds)."""
    out: list[Metric] = []
    unknown = [w for w in wanted if w not in METRIC_CHOICES]
    if unknown:
        raise ComparisonError(
            f"unknown metric {unknown[0]!r}: choose from {', '.join(METRIC_CHOICES)}"
        )
    if load and ("throughput" in wanted or "seconds" in wanted):
        out.append(Metric("time to load", "s", False, False, _seconds))
    elif "seconds" in wanted:
        out.append(Metric(RUN_TIME, "s", False, False, _seconds))
    if "throughput" in wanted:
        out.append(
            Metric(
                "throughput",
                "ops/s",
                True,
                False,
                lambda s: records.throughput(s.result) if s.result else None,
            )
        )
    for op in workload_ops:
        for stat in LATENCY_STATS:
            if stat in wanted:
                out.append(
                    Metric(
                        f"{op} {stat}",
                        "us",
                        False,
                        False,
                        _latency_of(op, stat),
                    )
                )
    if "cpu" in wanted:
        out.append(
            Metric("cpu database", "%", False, True, lambda s: records.cpu_group(s, "cluster"))
        )
        out.append(
            Metric("cpu clients", "%", False, True, lambda s: records.cpu_group(s, "clients"))
        )
    out += [_role_metric(w) for w in ROLE_METRICS if w in wanted]
    if "cost" in wanted:
        out.append(Metric("cost", "per Mops", False, False, _cost_per_million))
    return out


def _cost_per_million(s: records.StepView) -> float | None:
    """The step's cost per million operations (cost.py, written by the operator when the run
    names prices); None without prices or with a node type that has none."""
    value = (s.cost or {}).get("perMillionOperations")
    return float(value) if value is not None else None


def _role_metric(wanted: str) -> Metric:
    """``cpu:mongos``: cores summed over the routers (relative change). The id is the option's
    word: "cpu clients" is already the client nodes' busy %."""
    kind, role = wanted.split(":")
    unit, figure = _ROLE_FIGURE[kind]
    return Metric(wanted, unit, False, False, lambda s: records.role_figure(s, role, figure))


@dataclass(frozen=True)
class Configuration:
    name: str
    runs: tuple[RunInput, ...]
    group: tuple[tuple[str, str], ...] = ()  # (key, value) of each --group-by key
    _steps: dict[str, list[records.StepView]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def run_keys(self) -> list[str]:
        return [r.key for r in self.runs]

    def steps(self, workload: str) -> list[records.StepView]:
        """The measured steps of this workload, valid or not (parsed once: every metric asks
        again)."""
        if not self._steps:
            for r in self.runs:
                for s in records.results(r.run):
                    self._steps.setdefault(str(s.workload), []).append(s)
            self._steps.setdefault("", [])
        return self._steps.get(workload, [])

    def trials(self, workload: str, include_invalid: bool = False) -> list[records.StepView]:
        """The steps the statistics use: the valid ones (unjudged count as valid), or all."""
        steps = self.steps(workload)
        return steps if include_invalid else [s for s in steps if s.validity.valid]

    def shape(self) -> records.Shape:
        return records.shape(self.runs[0].run)


@dataclass(frozen=True)
class CellValidity:
    """How many of a cell's trials (measured steps of one workload) were valid, and why not."""

    valid: int
    trials: int
    judged: int  # trials the operator judged (older runs have none)
    reasons: tuple[tuple[str, int], ...]  # reason name -> invalid trials with it
    included_invalid: bool  # the invalid trials are in the statistics (--include-invalid)
    # reason name -> trials where the policy accepted it (spec.validity.accept)
    accepted: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, steps: Sequence[records.StepView], include_invalid: bool) -> CellValidity:
        counts = Counter(r for s in steps if not s.validity.valid for r in s.validity.reason_names)
        accepted = Counter(r for s in steps for r in s.validity.accepted_names)
        valid = sum(1 for s in steps if s.validity.valid)
        return cls(
            valid=valid,
            trials=len(steps),
            judged=sum(1 for s in steps if s.validity.judged),
            reasons=tuple(sorted(counts.items())),
            included_invalid=include_invalid and valid < len(steps),
            accepted=tuple(sorted(accepted.items())),
        )

    def text(self) -> str:
        """One cell: "3/4 valid (NoisyNode 1)", "3/3 valid (accepted: ClientBound 3)",
        "3/3 valid" or "unjudged"."""
        if not self.judged:
            return "unjudged"
        notes = [", ".join(f"{name} {n}" for name, n in self.reasons)] if self.reasons else []
        if self.accepted:
            notes.append("accepted: " + ", ".join(f"{name} {n}" for name, n in self.accepted))
        why = "; ".join(notes)
        return f"{self.valid}/{self.trials} valid" + (f" ({why})" if why else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "valid": self.valid,
            "trials": self.trials,
            "judged": self.judged,
            "reasons": dict(self.reasons),
            "includedInvalid": self.included_invalid,
        }
        if self.accepted:
            out["accepted"] = dict(self.accepted)
        return out


@dataclass(frozen=True)
class Row:
    workload: str
    metric: Metric
    configuration: str
    baseline: bool
    summary: stats.Summary
    difference: stats.Difference | None
    p: float | None  # of the test that decides the verdict, before adjustment
    significant: bool | None
    verdict: str
    flags: tuple[str, ...]
    values: tuple[float, ...]
    validity: CellValidity = CellValidity(0, 0, 0, (), False)
    p_adjusted: float | None = None  # p adjusted for the table's family of comparisons

    def change_text(self) -> str:
        """The change with its interval: "+12.1% [+8.0, +16.2]", "-3.0 pp [-5.1, -0.9]";
        empty on the baseline's row."""
        d = self.difference
        if self.baseline or d is None:
            return ""
        if self.metric.points:
            ci = f" [{d.ci_low:+.1f}, {d.ci_high:+.1f}]" if d.ci_low is not None else ""
            return f"{d.delta:+.1f} pp{ci}"
        rel, rel_ci = d.relative, d.relative_ci
        if rel is None:
            return f"{d.delta:+.3g}"
        ci = f" [{100 * rel_ci[0]:+.1f}, {100 * rel_ci[1]:+.1f}]" if rel_ci else ""
        if d.relative_unbounded:
            ci = " [unbounded]"  # Fieller: the baseline's mean is not known to differ from 0
        return f"{100 * rel:+.1f}%{ci}"

    def outcome(self) -> str:
        """The verdict in a word or three: "faster"/"slower" (throughput, latency, time to
        load), "higher"/"lower" (CPU, memory, cost), "no difference", "no valid trials", "too
        few valid trials", or the verdict as it stands ("baseline", "not comparable")."""
        if self.verdict.startswith("no valid trials"):
            return NO_VALID
        if self.verdict.startswith("too few valid trials"):
            return TOO_FEW
        if self.significant is False:
            return NO_DIFFERENCE
        if self.significant and self.difference is not None:
            up = self.difference.delta > 0
            if self.metric.id == "throughput" or self.metric.unit in ("us", "s"):
                return FASTER if up == self.metric.higher_is_better else SLOWER
            return "higher" if up else "lower"
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        s, d = self.summary, self.difference
        out: dict[str, Any] = {
            "workload": self.workload,
            "metric": self.metric.id,
            "unit": self.metric.unit,
            "configuration": self.configuration,
            "baseline": self.baseline,
            "n": s.n,
            "mean": s.mean,
            "sd": s.sd,
            "cv": s.cv,
            "ciLow": s.ci_low,
            "ciHigh": s.ci_high,
            "confidence": s.confidence,
            "values": list(self.values),
            "verdict": self.verdict,
            "significant": self.significant,
            "p": self.p,
            "pAdjusted": self.p_adjusted,
            "flags": list(self.flags),
            "validity": self.validity.to_dict(),
        }
        if d is not None and not self.baseline:
            rel_ci = d.relative_ci
            out |= {
                "delta": d.delta,
                "deltaCiLow": d.ci_low,
                "deltaCiHigh": d.ci_high,
                "relative": d.relative,
                "relativeCiLow": rel_ci[0] if rel_ci else None,
                "relativeCiHigh": rel_ci[1] if rel_ci else None,
                "relativeCiUnbounded": d.relative_unbounded,
                "intervalMethod": d.interval_method,
                "welchDf": d.df,
                "welchP": d.welch_p,
                "rankP": d.rank_p,
                "hedgesG": d.hedges_g,
            }
        return out


@dataclass(frozen=True)
class Comparison:
    configurations: list[Configuration]
    baseline: str
    rows: list[Row]
    incomparable: list[str]  # why configurations may not be compared, one line each
    notes: list[str]
    alpha: float
    confidence: float
    test: Test
    adjust: Adjust = DEFAULT_ADJUST
    ci: IntervalKind = "parametric"
    include_invalid: bool = False
    group_by: tuple[str, ...] = ()  # the keys configurations were pooled by, in order

    @property
    def family(self) -> int:
        """How many comparisons the adjustment counted (rows with a p-value and a verdict)."""
        return sum(1 for r in self.rows if r.p_adjusted is not None)

    @property
    def interval_method(self) -> str:
        return stats.PARAMETRIC if self.ci == "parametric" else stats.bootstrap_method()

    def family_text(self) -> str:
        """ "the 12 comparisons of this table" (or "the 1 comparison")."""
        return f"the {self.family} comparison{'' if self.family == 1 else 's'} of this table"

    def adjustment_text(self) -> str:
        """For legends: "Holm across the 12 comparisons of this table"."""
        if self.family == 0:
            return "no comparison had the valid trials for a verdict"
        if self.adjust == "none":
            return f"no adjustment for {self.family_text()}"
        return f"{stats.ADJUSTMENT_NAMES[self.adjust]} across {self.family_text()}"

    def row_dicts(self) -> list[dict[str, Any]]:
        """Every row as a dict; grouped by keys, each row also says its configuration's values
        of them (`group`: {"cloud": "aws", "shards": "3"})."""
        if not self.group_by:
            return [r.to_dict() for r in self.rows]
        groups = {c.name: dict(c.group) for c in self.configurations}
        return [{**r.to_dict(), "group": groups.get(r.configuration, {})} for r in self.rows]

    def configuration_header(self) -> str:
        """What the configuration column holds: the --group-by keys, or runs."""
        return ",".join(self.group_by) if self.group_by else "configuration"

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "test": self.test,
            "adjust": self.adjust,
            "family": self.family,
            "intervalMethod": self.interval_method,
            "includeInvalid": self.include_invalid,
            "configurations": [
                {
                    "name": c.name,
                    "group": dict(c.group),
                    "runs": c.run_keys,
                    "shape": c.shape().dimensions(),
                }
                for c in self.configurations
            ],
            "groupBy": list(self.group_by),
            "incomparable": self.incomparable,
            "notes": self.notes,
            "rows": self.row_dicts(),
        }


def _dimension(run: Mapping[str, Any], name: str) -> Any:
    return records.shape(run).dimensions().get(name)


def group_keys(group_by: str | None) -> tuple[str, ...]:
    """`--group-by cloud,shards` as its keys, in order."""
    if group_by is None:
        return ()
    keys = tuple(k.strip() for k in group_by.split(","))
    if not all(keys) or len(set(keys)) != len(keys):
        raise ComparisonError(f"--group-by {group_by!r}: name each key once, separated by commas")
    return keys


def _group_values(runs: Sequence[RunInput], key: str) -> list[str]:
    """Each run's value of one grouping key: its spec label, else a target dimension."""
    has_label = [key in ((r.run.get("spec") or {}).get("labels") or {}) for r in runs]
    if any(has_label):
        for r, has in zip(runs, has_label, strict=True):
            if not has:
                raise ComparisonError(f"run {r.key} has no label {key!r} to group by")
        return [str(r.run["spec"]["labels"][key]) for r in runs]
    if key in DIMENSIONS:
        return [str(_dimension(r.run, key)) for r in runs]
    raise ComparisonError(f"no run has a label {key!r} (nor is it one of {', '.join(DIMENSIONS)})")


def configurations(runs: Sequence[RunInput], group_by: str | None = None) -> list[Configuration]:
    """Runs grouped into configurations, in the order first seen: by one key (a label's value
    names the configuration, a dimension's `key=value`) or by the tuple of several keys
    (`cloud=aws,shards=3`)."""
    if not runs:
        raise ComparisonError("nothing to compare: no runs given")
    keys = group_keys(group_by)
    if not keys:
        return [Configuration(r.key, (r,)) for r in runs]
    columns = [_group_values(runs, k) for k in keys]
    labelled = {
        k for k in keys if any(k in ((r.run.get("spec") or {}).get("labels") or {}) for r in runs)
    }
    groups: dict[tuple[tuple[str, str], ...], list[RunInput]] = {}
    for i, r in enumerate(runs):
        groups.setdefault(
            tuple((k, col[i]) for k, col in zip(keys, columns, strict=True)), []
        ).append(r)

    def name(group: tuple[tuple[str, str], ...]) -> str:
        if len(group) == 1 and group[0][0] in labelled:
            return group[0][1]
        return ",".join(f"{k}={v}" for k, v in group)

    for g, rs in groups.items():
        mixed = mixed_shape(rs)
        if mixed:
            raise ComparisonError(
                f"--group-by {','.join(keys)} pools runs whose targets differ in {mixed} into "
                f"configuration {name(g)}: add {mixed.split()[0]} to --group-by"
            )
    return [Configuration(name(g), tuple(rs), g) for g, rs in groups.items()]


def mixed_shape(runs: Sequence[RunInput]) -> str | None:
    """The first target dimension the runs differ in, with its values ("members 1, 3"); None
    when they share one shape. Pooling a 3x3 cluster's runs with a 3x1's into one mean
    describes neither (issue 35). Unknown values (no snapshot) count as no difference."""
    shapes = [s.dimensions() for r in runs if (s := records.shape(r.run)).kind != "unknown"]
    for dim in DIMENSIONS:
        values = {v for shape in shapes if (v := shape.get(dim)) is not None}
        if len(values) > 1:
            return f"{dim} {', '.join(sorted(map(str, values)))}"
    return None


def _is_varied(key: str, varied: Sequence[str]) -> bool:
    return any(key == v or key.startswith(f"{v}.") for v in varied)


def _without_varied(key: str, value: Any, varied: Sequence[str]) -> Any:
    """A mapping parameter (run.properties) without the entries varied by design inside it
    (run.properties.bucketsize, study 4's dimension)."""
    inside = {v.removeprefix(f"{key}.") for v in varied if v.startswith(f"{key}.")}
    if not inside or not isinstance(value, Mapping):
        return value
    return {k: x for k, x in value.items() if k not in inside}


def _fact_text(key: str, value: Any) -> str:
    """A spec fact as a user reads it: a sharding block as the shard key MongoDB writes
    (`{sensor: 1, ts: 1}`), not the block's defaults that its fields override."""
    if key == "sharding" and isinstance(value, Mapping):
        return records.shard_key({"spec": {"sharding": value}})
    return str(value)


def _parameter_differences(
    a: Mapping[str, Any], b: Mapping[str, Any], varied: Sequence[str] = ()
) -> list[str]:
    keys = sorted(k for k in set(a) | set(b) if not _is_varied(k, varied))
    return [
        f"{k} {_fact_text(k, a.get(k, '-'))} vs {_fact_text(k, b.get(k, '-'))}"
        for k in keys
        if _without_varied(k, a.get(k), varied) != _without_varied(k, b.get(k), varied)
    ]


def comparability(
    configs: Sequence[Configuration],
    baseline: Configuration,
    workloads: Sequence[str],
    varied: Sequence[str] = (),
) -> dict[tuple[str, str], str]:
    """(configuration, workload) -> why it cannot be compared with the baseline. Parameters in
    `varied` (dotted spec paths, e.g. "mongo.writeConcern": an experiment's run dimensions)
    differ by design: they are what is compared, not a reason to refuse."""
    out: dict[tuple[str, str], str] = {}
    for w in workloads:
        base_runs = [
            r for r in baseline.runs if any(s.workload == w for s in records.results(r.run))
        ]
        if not base_runs:
            continue
        reference = records.workload_parameters(base_runs[0].run, w)
        for c in configs:
            for r in c.runs:
                if not any(s.workload == w for s in records.results(r.run)):
                    continue
                params = records.workload_parameters(r.run, w)
                diffs = _parameter_differences(reference, params, varied)
                if diffs:
                    out[(c.name, w)] = (
                        f"workload {w}: {r.key} and {base_runs[0].key} differ in "
                        + "; ".join(diffs)
                    )
                    break
    return out


def _format_change(d: stats.Difference, metric: Metric) -> str:
    if metric.points:
        return f"{d.delta:+.1f} pp"
    rel = d.relative
    return f"{100 * rel:+.1f}%" if rel is not None else f"{d.delta:+.3g}"


def _direction(d: stats.Difference, metric: Metric) -> str:
    if d.delta == 0:
        return ""
    better = (d.delta > 0) == metric.higher_is_better
    return "better" if better else "worse"


def compare(
    runs: Sequence[RunInput],
    *,
    baseline: str | None = None,
    group_by: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    alpha: float = stats.DEFAULT_ALPHA,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    test: Test = "welch",
    adjust: Adjust = DEFAULT_ADJUST,
    ci: IntervalKind = "parametric",
    include_invalid: bool = False,
    varied: Sequence[str] = (),
) -> Comparison:
    """`varied`: the run parameters the configurations differ in by design (see
    comparability)."""
    if adjust not in stats.ADJUSTMENTS:
        raise ComparisonError(f"unknown adjustment {adjust!r}: choose from holm, bh, none")
    configs = configurations(runs, group_by)
    base = _pick_baseline(configs, baseline)
    workloads = records.workloads([r.run for c in configs for r in c.runs])
    if not workloads:
        raise ComparisonError("no measured step in any of the runs: nothing to compare")
    blocked = comparability(configs, base, workloads, varied)
    ordered = [base, *[c for c in configs if c is not base]]
    rows: list[Row] = []
    notes = _concurrency_notes(base, ordered[1:], varied)
    min_rank = stats.rank_test_min_samples(alpha)
    for w in workloads:
        ops = sorted(
            {
                op
                for c in configs
                for s in c.steps(w)
                for op in (s.result or {}).get("operations", {})
            }
        )
        for metric in metrics_for(ops, metrics, load=w == records.LOAD):
            base_values = _values(base, w, metric, include_invalid)
            base_measured = bool(_values(base, w, metric, True))
            for c in ordered:
                values = _values(c, w, metric, include_invalid)
                # A metric no trial measured is no row; a cell whose every trial was judged
                # invalid is one (nothing is lost: it says why there is no figure).
                measured = bool(values) or bool(_values(c, w, metric, True))
                if not measured and (c is base or not base_measured):
                    continue
                rows.append(
                    _row(
                        workload=w,
                        metric=metric,
                        config=c,
                        is_base=c is base,
                        values=values,
                        base_values=base_values,
                        blocked=blocked,
                        alpha=alpha,
                        confidence=confidence,
                        test=test,
                        min_rank=min_rank,
                        ci=ci,
                        include_invalid=include_invalid,
                    )
                )
    rows = _decide(rows, alpha, adjust)
    if test == "utest" and any("rank test needs" in f for r in rows for f in r.flags):
        notes.append(
            f"the rank test cannot find a difference at alpha {alpha} with fewer than "
            f"{min_rank} repetitions a side; Welch's test (--test welch) can"
        )
    return Comparison(
        configurations=ordered,
        baseline=base.name,
        rows=rows,
        incomparable=sorted(set(blocked.values())),
        notes=notes,
        alpha=alpha,
        confidence=confidence,
        test=test,
        adjust=adjust,
        ci=ci,
        include_invalid=include_invalid,
        group_by=group_keys(group_by),
    )


def _concurrency_notes(
    base: Configuration, others: Sequence[Configuration], varied: Sequence[str] = ()
) -> list[str]:
    """The clients' concurrency is a dimension users compare on purpose: said, not refused
    (and not said where the configurations vary it by design)."""
    notes = []
    reference = records.concurrency(base.runs[0].run) if base.runs else {}
    for c in others:
        for r in c.runs[:1]:
            diffs = _parameter_differences(reference, records.concurrency(r.run), varied)
            if diffs:
                notes.append(f"{c.name} differs from {base.name} in " + "; ".join(diffs))
    return notes


def _decide(rows: Sequence[Row], alpha: float, adjust: Adjust) -> list[Row]:
    """The verdicts of one table: its p-values adjusted together (the family is every row with
    a p-value that may give a verdict), significant where the adjusted p < alpha."""
    adjusted = stats.adjust([r.p for r in rows], adjust)
    out = []
    for row, p_adj in zip(rows, adjusted, strict=True):
        if p_adj is None or row.difference is None:
            out.append(row)
            continue
        significant = p_adj < alpha
        verdict = (
            f"{_format_change(row.difference, row.metric)} "
            f"{_direction(row.difference, row.metric)}".strip()
            if significant
            else "~"
        )
        out.append(replace(row, p_adjusted=p_adj, significant=significant, verdict=verdict))
    return out


def significance(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    alpha: float = stats.DEFAULT_ALPHA,
    test: Test = "welch",
    adjust: Adjust = DEFAULT_ADJUST,
) -> list[bool | None]:
    """The verdicts `compare` gives one table's rows from their samples alone (baseline, new):
    significant after the family's adjustment, or None where there is no verdict (fewer than
    MIN_N trials a side). For simulations of the method (benchmarks/method.py)."""
    ps = [
        _p_value(stats.difference(a, b), test) if min(len(a), len(b)) >= MIN_N else None
        for a, b in pairs
    ]
    return [None if p is None else p < alpha for p in stats.adjust(ps, adjust)]


def _p_value(diff: stats.Difference | None, test: Test) -> float | None:
    if diff is None:
        return None
    return diff.welch_p if test == "welch" else diff.rank_p


def _pick_baseline(configs: Sequence[Configuration], baseline: str | None) -> Configuration:
    if baseline is None:
        return configs[0]
    for c in configs:
        if baseline == c.name:
            return c
    for c in configs:  # a run's key or its bare name
        if any(baseline in (r.key, r.key.rsplit("/", 1)[-1]) for r in c.runs):
            return c
    names = ", ".join(c.name for c in configs)
    raise ComparisonError(f"baseline {baseline!r} is none of the configurations ({names})")


def _values(
    config: Configuration, workload: str, metric: Metric, include_invalid: bool
) -> list[float]:
    return [
        v for s in config.trials(workload, include_invalid) if (v := metric.extract(s)) is not None
    ]


def cv_text(cv: float, limit: float = CV_LIMIT) -> str:
    """A CV with the fewest decimals that still show it above the limit ("10.5%" for 0.1048
    against 10%, never "10% > 10%")."""
    for digits in range(4):
        shown = f"{100 * cv:.{digits}f}"
        if float(shown) > 100 * limit or cv <= limit:
            return shown + "%"
    return f"{100 * cv:.4f}%"


def _data_flags(
    summary: stats.Summary, metric: Metric, config: Configuration, workload: str, reason: str | None
) -> list[str]:
    """What the data of one row says about itself: too few, too noisy, inconsistent, blocked."""
    flags: list[str] = []
    if summary.n < MIN_N:
        flags.append(f"n={summary.n} < {MIN_N}")
    if summary.cv is not None and summary.cv > CV_LIMIT:
        flags.append(f"CV {cv_text(summary.cv)} > {100 * CV_LIMIT:.0f}%")
    if metric.id == "throughput":
        steps = config.steps(workload)
        bad = [s for s in steps if records.littles_law(s.result or {}).get("ok") is False]
        if bad:
            flags.append(f"Little's law fails in {len(bad)} of {len(steps)} steps")
    if reason:
        flags.append("not comparable: " + reason)
    return flags


def _row(
    *,
    workload: str,
    metric: Metric,
    config: Configuration,
    is_base: bool,
    values: list[float],
    base_values: list[float],
    blocked: Mapping[tuple[str, str], str],
    alpha: float,
    confidence: float,
    test: Test,
    min_rank: int,
    ci: IntervalKind,
    include_invalid: bool,
) -> Row:
    summary = stats.summarise(values, confidence)
    reason = blocked.get((config.name, workload))
    cell = CellValidity.of(config.steps(workload), include_invalid)
    flags = _data_flags(summary, metric, config, workload, reason)
    if cell.included_invalid:
        flags.append(f"includes {cell.trials - cell.valid} invalid trials")
    diff = None if is_base else stats.difference(base_values, values, confidence, ci)
    p: float | None = None
    if not values and cell.trials and not cell.valid:
        verdict = f"no valid trials: {cell.text()}"
    elif is_base:
        verdict = "baseline"
    elif reason:
        verdict = "not comparable"
    elif diff is None:
        verdict = "no data" if not values else "no baseline"
    elif min(diff.n_base, diff.n_new) < MIN_N:
        # No verdict from fewer trials than the test needs; the figures stay for reading.
        verdict = f"too few valid trials ({min(diff.n_base, diff.n_new)} < {MIN_N})"
    else:
        p = _p_value(diff, test)
        if test == "utest" and diff.n_base < min_rank and diff.n_new < min_rank:
            flags.append(f"rank test needs n >= {min_rank}")
        verdict = "?"  # decided with the table's family (_decide)
    if diff is not None and diff.relative_unbounded and not metric.points:
        flags.append(
            "change interval unbounded: the baseline's mean is not significantly different "
            "from 0 (Fieller)"
        )
    return Row(
        workload=workload,
        metric=metric,
        configuration=config.name,
        baseline=is_base,
        summary=summary,
        difference=diff,
        p=p,
        significant=None,
        verdict=verdict,
        flags=tuple(flags),
        values=tuple(values),
        validity=cell,
    )


# --- the answer in a sentence -------------------------------------------------------------------


def what_differs(base: Configuration, config: Configuration) -> list[str]:
    """What `config`'s (first) run sets differently from the baseline's: the cluster's shape,
    the clients' concurrency and resources, the workloads' parameters ("clients.parallelism 2
    vs 1"). Labels are not among them: they name a configuration, they change nothing that
    runs. Empty: the same spec, an A/A pair."""
    if not base.runs or not config.runs:
        return []
    a, b = base.runs[0].run, config.runs[0].run
    return _parameter_differences(_spec_facts(b), _spec_facts(a))


def _spec_facts(run: Mapping[str, Any]) -> dict[str, Any]:
    spec = run.get("spec") or {}
    facts: dict[str, Any] = {
        k: v for k, v in records.shape(run).dimensions().items() if v is not None
    }
    facts |= records.concurrency(run)
    # An external database is known only by the Secret that holds its URI: two Secrets are two
    # databases (the same Secret, an A/A pair however the runs' database names differ).
    secret = (spec.get("uriSecretRef") or {}).get("name")
    if secret:
        facts["uriSecretRef"] = secret
    resources = (spec.get("clients") or {}).get("resources")
    if resources:
        facts["clients.resources"] = resources
    for w in records.workloads([run]):
        facts |= records.workload_parameters(run, w)
    return facts


def headline_metric(result: Comparison) -> str | None:
    """The metric a headline speaks of: throughput when compared, else the first one."""
    ids = [r.metric.id for r in result.rows]
    return "throughput" if "throughput" in ids else (ids[0] if ids else None)


def headline(result: Comparison, config: Configuration) -> str:
    """One sentence per configuration against the baseline, on the headline metric: "b vs a
    (clients.parallelism 2 vs 1): throughput faster on a (+12.1% [+8.0, +16.2]); no difference
    on c". An A/A pair (nothing differs) says what its result means."""
    base = next(c for c in result.configurations if c.name == result.baseline)
    metric = headline_metric(result)
    once = set(measured_once(result))
    rows = [
        r
        for r in result.rows
        if r.configuration == config.name
        and r.metric.id == metric
        and not r.baseline
        and r.workload not in once
    ]
    by_outcome: dict[str, list[str]] = {}
    for r in rows:
        word = r.outcome()
        shown = (
            f"{r.workload} ({r.change_text()})"
            if word in (FASTER, SLOWER, "higher", "lower")
            else r.workload
        )
        by_outcome.setdefault(word, []).append(shown)
    order = (FASTER, SLOWER, "higher", "lower", NO_DIFFERENCE, TOO_FEW, NO_VALID)
    words = sorted(by_outcome, key=lambda w: order.index(w) if w in order else len(order))
    parts = [f"{word} on {', '.join(by_outcome[word])}" for word in words]
    differs = what_differs(base, config)
    aa = not differs
    who = f"{config.name} vs {base.name}"
    who += " (A/A: the same spec)" if aa else f" ({'; '.join(differs)})"
    text = f"{who}: {metric} " + "; ".join(parts) if parts else f"{who}: no {metric} to compare"
    # The other metrics only where the table found a change: a headline that says "no difference"
    # on throughput must not hide a slower p99.
    changed_elsewhere = [
        f"{r.metric.id} {r.outcome()} on {r.workload} ({r.change_text()})"
        for r in result.rows
        if r.configuration == config.name
        and r.metric.id != metric
        and not r.baseline
        and r.outcome() in (FASTER, SLOWER, "higher", "lower")
    ]
    if changed_elsewhere:
        text += "; also " + ", ".join(changed_elsewhere)
    if aa:
        changed = any(r.significant for r in rows)
        text += (
            "; an A/A pair differs only by chance: these are false positives, and a difference "
            "this size is noise on this setup"
            if changed
            else "; as an A/A pair should: no difference where there is none (a verdict here "
            "would be a false positive)"
        )
    return text


LOAD = "load"  # the load phase's row label


def measured_once(result: Comparison) -> list[str]:
    """The load phase when measured at most once a configuration (a run's one load): there is
    no verdict to give on it, so the headlines and the compact table do not weigh it."""
    seen: dict[str, int] = {}
    for r in result.rows:
        seen[r.workload] = max(seen.get(r.workload, 0), r.summary.n, r.validity.trials)
    # Only the load: a workload measured once is a run of one repetition, whose missing verdict
    # is the news, not to be left out.
    return [w for w, n in seen.items() if n <= 1 and w == LOAD]


def headlines(result: Comparison) -> list[str]:
    """A headline per configuration other than the baseline, in the table's order."""
    return [headline(result, c) for c in result.configurations if c.name != result.baseline]


# --- pairs across a dimension (a study's AWS-vs-OpenStack table) --------------------------------


@dataclass(frozen=True)
class Pair:
    """One row of a paired table: within one topology (the --group-by keys but the paired one),
    a workload's metric on the baseline value and on another value of the paired key."""

    topology: tuple[tuple[str, str], ...]
    value: str  # the paired key's value compared with the baseline value
    base: Row
    row: Row

    @property
    def label(self) -> str:
        """The workload, with the operation for a latency ("a READ")."""
        op = self.row.metric.id.rsplit(" ", 1)[0] if self.row.metric.unit == "us" else ""
        return f"{self.row.workload} {op}".strip()

    def uncorrected_g(self) -> float | None:
        """Cohen's d with the pooled SD: Hedges' g without the small-sample correction J, the
        effect size the studies reported."""
        d = self.row.difference
        if d is None or d.hedges_g is None:
            return None
        return d.hedges_g / stats.hedges_j(d.n_base + d.n_new - 2)

    def to_dict(self, pair_by: str, baseline_value: str) -> dict[str, Any]:
        b, r, d = self.base.summary, self.row.summary, self.row.difference
        rel_ci = d.relative_ci if d else None
        out: dict[str, Any] = dict(self.topology)
        out |= {
            "workload": self.row.workload,
            "metric": self.row.metric.id,
            "unit": self.row.metric.unit,
            pair_by: self.value,
            f"{baseline_value} n": b.n,
            f"{baseline_value} mean": b.mean,
            f"{baseline_value} sd": b.sd,
            f"{self.value} n": r.n,
            f"{self.value} mean": r.mean,
            f"{self.value} sd": r.sd,
            "change": self.row.change_text(),
            "delta": d.delta if d else None,
            "deltaCiLow": d.ci_low if d else None,
            "deltaCiHigh": d.ci_high if d else None,
            "relative": d.relative if d else None,
            "relativeCiLow": rel_ci[0] if rel_ci else None,
            "relativeCiHigh": rel_ci[1] if rel_ci else None,
            "hedgesG": d.hedges_g if d else None,
            "hedgesGUncorrected": self.uncorrected_g(),
            "p": self.row.p,
            "pAdjusted": self.row.p_adjusted,
            "verdict": self.row.outcome(),
            "validity": self.row.validity.text(),
            "baselineValidity": self.base.validity.text(),
            "flags": "; ".join(self.row.flags),
        }
        return out


@dataclass(frozen=True)
class Pairs:
    """A paired table: one metric, rows = topology x workload, the baseline value against each
    other value of the paired key, its p-values adjusted together (one family)."""

    pair_by: str
    baseline_value: str
    values: tuple[str, ...]  # the other values of the paired key, in order first seen
    topology_keys: tuple[str, ...]
    metric: str
    pairs: list[Pair]
    alpha: float
    confidence: float
    test: Test
    adjust: Adjust
    ci: IntervalKind
    incomparable: list[str]
    notes: list[str]

    @property
    def family(self) -> int:
        return sum(1 for p in self.pairs if p.row.p_adjusted is not None)

    def records(self) -> list[dict[str, Any]]:
        return [p.to_dict(self.pair_by, self.baseline_value) for p in self.pairs]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairBy": self.pair_by,
            "baselineValue": self.baseline_value,
            "values": list(self.values),
            "topologyKeys": list(self.topology_keys),
            "metric": self.metric,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "test": self.test,
            "adjust": self.adjust,
            "family": self.family,
            "incomparable": self.incomparable,
            "notes": self.notes,
            "rows": self.records(),
        }


def _in_paired_table(metric: Metric, wanted: str) -> bool:
    """The rows of one metric as the studies tabulate it: the database nodes' CPU (not the
    clients'), a load's throughput (not its time to load), each operation's latency."""
    if wanted == "cpu":
        return metric.id == "cpu database"
    if wanted in LATENCY_STATS:
        return metric.id.endswith(f" {wanted}")
    if wanted == "seconds":  # a completion time: a load's time to load, a workload's run time
        return metric.id in ("time to load", "run time")
    return metric.id == wanted


class Method(TypedDict, total=False):
    """compare's keywords of method (defaults as compare's), passed on by `pairs`."""

    alpha: float
    confidence: float
    test: Test
    adjust: Adjust
    ci: IntervalKind
    include_invalid: bool
    varied: Sequence[str]


def _other_values(
    configs: Sequence[Configuration], pair_by: str, baseline_value: str
) -> tuple[str, ...]:
    """The paired key's values other than the baseline's, in order first seen."""
    values = list(dict.fromkeys(dict(c.group)[pair_by] for c in configs))
    if baseline_value not in values:
        raise ComparisonError(
            f"--baseline-value {baseline_value!r} is no run's {pair_by} ({', '.join(values)})"
        )
    others = tuple(v for v in values if v != baseline_value)
    if not others:
        raise ComparisonError(f"nothing to pair: every run has {pair_by}={baseline_value}")
    return others


def pairs(
    runs: Sequence[RunInput],
    *,
    group_by: str,
    pair_by: str,
    baseline_value: str,
    metric: str = "throughput",
    **method: Unpack[Method],
) -> Pairs:
    """Within each topology (the values of the --group-by keys other than `pair_by`), the
    configuration whose `pair_by` is `baseline_value` against each other one, per workload: the
    study's AWS-vs-OpenStack table in one call. Each topology is compared on its own (its
    comparability, its baseline); the verdicts are decided over the whole table (one family)."""
    keys = group_keys(group_by)
    if pair_by not in keys:
        raise ComparisonError(
            f"--pair-by {pair_by!r} is not among the --group-by keys ({', '.join(keys)})"
        )
    if metric not in METRIC_CHOICES:
        raise ComparisonError(f"unknown metric {metric!r}: choose from {', '.join(METRIC_CHOICES)}")
    configs = configurations(runs, group_by)
    others = _other_values(configs, pair_by, baseline_value)
    by_topology: dict[tuple[tuple[str, str], ...], list[Configuration]] = {}
    for c in configs:
        by_topology.setdefault(tuple(kv for kv in c.group if kv[0] != pair_by), []).append(c)
    tables: list[tuple[tuple[tuple[str, str], ...], Comparison]] = []
    for topology, members in by_topology.items():
        base = [c for c in members if dict(c.group)[pair_by] == baseline_value]
        if not base:
            where = ",".join(f"{k}={v}" for k, v in topology) or "the runs"
            raise ComparisonError(f"{where}: no run with {pair_by}={baseline_value} to pair with")
        result = compare(
            [r for c in members for r in c.runs],
            baseline=base[0].name,
            group_by=group_by,
            metrics=(metric,),
            **(method | {"adjust": "none"}),  # decided below, over the whole table
        )
        tables.append((topology, result))
    # One family: the p-values of the table's rows (only theirs) adjusted together. A load
    # measured once a run has no verdict to give: left out, as from compare's compact table.
    shown = [
        [
            r
            for r in t.rows
            if _in_paired_table(r.metric, metric) and r.workload not in measured_once(t)
        ]
        for _, t in tables
    ]
    alpha = method.get("alpha", stats.DEFAULT_ALPHA)
    adjust = method.get("adjust", DEFAULT_ADJUST)
    decided = iter(_decide([r for rows in shown for r in rows], alpha, adjust))
    out: list[Pair] = []
    incomparable: list[str] = []
    notes: list[str] = []
    for (topology, result), table in zip(tables, shown, strict=True):
        rows = [next(decided) for _ in table]
        value_of = {c.name: dict(c.group)[pair_by] for c in result.configurations}
        bases = {(r.workload, r.metric.id): r for r in rows if r.baseline}
        for r in rows:
            base_row = bases.get((r.workload, r.metric.id))
            if not r.baseline and base_row is not None:
                out.append(Pair(topology, value_of[r.configuration], base_row, r))
        incomparable += result.incomparable
        notes += result.notes
    return Pairs(
        pair_by=pair_by,
        baseline_value=baseline_value,
        values=others,
        topology_keys=tuple(k for k in keys if k != pair_by),
        metric=metric,
        pairs=out,
        alpha=alpha,
        confidence=method.get("confidence", stats.DEFAULT_CONFIDENCE),
        test=method.get("test", "welch"),
        adjust=adjust,
        ci=method.get("ci", "parametric"),
        incomparable=sorted(set(incomparable)),
        notes=notes,
    )
