"""`mongobench report`: one self-contained HTML file (figures embedded) plus the PNG figures.

Figures (matplotlib, Agg backend, no display needed):
- throughput per workload and configuration, mean with confidence-interval error bars;
- mean and p99 latency per operation, likewise;
- latency percentile curves per workload and operation from the HDR histograms of every
  measured step of a configuration, summed exactly (mongobench_results.hdr);
- CPU per node for each step (busy % over each step's window; a time series where the
  archive's resources carry one); per configuration, CPU averaged over the database nodes per
  workload over time, every trial of every run (the studies' dstat figure);
- scaling: a metric against shards, members, mongos or version when the configurations differ
  in exactly that one dimension;
- loads: the time to load per configuration, and against each numeric dimension in which the
  configurations differ (experiment cells, `--group-by a,b`, or the target's shape), one line
  per value of the others;
- the saturation knee (runs with spec.knee): the named percentile against the achieved
  throughput of every probe, the limit line and the knee marked (its runs and its offered load).
- shard distribution: each sharded run's share of the documents per shard after its last load.

Tables beyond the comparison: the runs, their shard distribution, the slowest operations of
each profiled run (spec.profiler) and each run's disk use per collection after its last step.
"""

from __future__ import annotations

import base64
import html
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from mongobench_cli import render
from mongobench_cli.calibration import html_section as calibration_html
from mongobench_cli.sources import LoadedRun, SourceError
from mongobench_results import calibration, compare, hdr, knee, records
from mongobench_results import history as _history

SCALING_DIMENSIONS = ("shards", "members", "mongos", "version")
# From the median out to 99.999: evenly spaced on the 1 / (1 - q) axis (8 points a decade).
PERCENTILES = tuple(100 * (1 - 0.5 * 10 ** (-i / 8)) for i in range(0, 39))
DPI = 110


@dataclass
class Written:
    html: Path
    figures: list[Path] = field(default_factory=list)


@dataclass
class _Figures:
    folder: Path
    items: list[tuple[str, str, Path]] = field(default_factory=list)  # section, caption, file

    def save(self, fig: Figure, name: str, section: str, caption: str) -> None:
        path = self.folder / f"{name}.png"
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        plt.close(fig)
        self.items.append((section, caption, path))


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def _config_colors(result: compare.Comparison) -> dict[str, Any]:
    cmap = plt.get_cmap("tab10")
    return {c.name: cmap(i % 10) for i, c in enumerate(result.configurations)}


def _rows(result: compare.Comparison, metric: str) -> list[compare.Row]:
    return [r for r in result.rows if r.metric.id == metric]


def _bars(
    figs: _Figures,
    *,
    result: compare.Comparison,
    metric_ids: Sequence[tuple[str, str]],  # (workload, metric id) groups on the x axis
    name: str,
    section: str,
    title: str,
    ylabel: str,
) -> None:
    colors = _config_colors(result)
    configs = [c.name for c in result.configurations]
    width = 0.8 / max(1, len(configs))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(metric_ids) * max(1, len(configs)) / 2), 4))
    for i, cname in enumerate(configs):
        xs, ys, lo, hi = [], [], [], []
        for x, (workload, metric) in enumerate(metric_ids):
            row = next(
                (
                    r
                    for r in result.rows
                    if (r.workload, r.metric.id, r.configuration) == (workload, metric, cname)
                ),
                None,
            )
            if row is None or row.summary.mean is None:
                continue
            s, mean = row.summary, row.summary.mean
            xs.append(x + (i - (len(configs) - 1) / 2) * width)
            ys.append(mean)
            lo.append(mean - s.ci_low if s.ci_low is not None else 0.0)
            hi.append(s.ci_high - mean if s.ci_high is not None else 0.0)
        ax.bar(xs, ys, width * 0.95, yerr=[lo, hi], capsize=3, label=cname, color=colors[cname])
    ax.set_xticks(range(len(metric_ids)))
    ax.set_xticklabels(
        [w if len({m for _, m in metric_ids}) == 1 else f"{w}\n{m}" for w, m in metric_ids],
        fontsize=8,
    )
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, title="configuration", title_fontsize=8)
    figs.save(fig, name, section, title)


def knee_figures(figs: _Figures, runs: Sequence[LoadedRun]) -> str:
    """Per run and workload with probes: the latency-versus-throughput curve. Returns the
    knee table's HTML (a row per run and workload), empty without knee runs."""
    html_rows: list[str] = []
    header: list[str] = []
    for loaded in runs:
        run = loaded.run
        points = knee.curve(run)
        if not points:
            continue
        found = {
            str(k.get("workload")): k
            for k in ((run.get("status") or {}).get("knee") or {}).get("workloads") or ()
        }
        name = str((run.get("metadata") or {}).get("name", loaded.key))
        for workload in dict.fromkeys(p.workload for p in points):
            mine = [p for p in points if p.workload == workload]
            k = found.get(workload, {})
            percentile = str(k.get("percentile", "p99"))
            fig, ax = plt.subplots(figsize=(7, 4.2))
            probes = sorted((p for p in mine if not p.at_knee), key=lambda p: p.achieved)
            ax.plot(
                [p.achieved for p in probes],
                [p.latency_ms for p in probes],
                "o-",
                color="tab:blue",
                label="probes",
            )
            trials = [p for p in mine if p.at_knee]
            if trials:
                ax.plot(
                    [p.achieved for p in trials],
                    [p.latency_ms for p in trials],
                    "D",
                    color="tab:green",
                    markersize=8,
                    label="runs at the knee",
                )
            if k.get("limitMs") is not None:
                ax.axhline(float(k["limitMs"]), color="tab:red", ls="--", label="limit")
            if k.get("offeredOpsPerSecond") is not None:
                ax.axvline(
                    float(k["offeredOpsPerSecond"]),
                    color="tab:green",
                    ls=":",
                    label=f"knee {k['offeredOpsPerSecond']} ops/s offered",
                )
            ax.set_yscale("log")  # past the knee the percentile grows by orders of magnitude
            ax.set_xlabel("achieved throughput (ops/s)")
            ax.set_ylabel(f"{percentile} latency (ms, worst operation; log)")
            ax.set_title(f"{name}: {workload}, {percentile} against throughput")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            figs.save(
                fig,
                f"knee-{_safe(name)}-{_safe(workload)}",
                "Saturation knee",
                f"{name} workload {workload}: {percentile} latency against achieved throughput "
                f"for every probe, the limit and the knee",
            )
        for row in render.knee_rows(run):
            header = header or ["run", *row]
            cells = "".join(f"<td>{html.escape(v)}</td>" for v in row.values())
            html_rows.append(f"<tr><td>{html.escape(name)}</td>{cells}</tr>")
    if not html_rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    return f"<table class='knee'><tr>{head}</tr>{''.join(html_rows)}</table>"


def throughput_label(workload: str) -> str:
    """A throughput axis' label: a load inserts records, a workload runs operations (one axis
    for both would put the load's larger figure over the workloads' and call it operations)."""
    if workload == records.LOAD:
        return "records loaded per second (records/s)"
    return "operations per second (ops/s)"


def _throughput_groups(workloads: Sequence[str]) -> list[list[str]]:
    """The workloads, then the load, each group on an axis of its own (its unit)."""
    runs = [w for w in workloads if w != records.LOAD]
    return [g for g in (runs, [w for w in workloads if w == records.LOAD]) if g]


def throughput_figure(figs: _Figures, result: compare.Comparison) -> None:
    workloads = list(dict.fromkeys(r.workload for r in _rows(result, "throughput")))
    conf = f"{100 * result.confidence:.0f}%"
    for group in _throughput_groups(workloads):
        load = group == [records.LOAD]
        _bars(
            figs,
            result=result,
            metric_ids=[(w, "throughput") for w in group],
            name="throughput-load" if load else "throughput",
            section="Throughput",
            title=(
                f"Load throughput (mean, {conf} CI)"
                if load
                else f"Throughput per workload (mean, {conf} CI)"
            ),
            ylabel=throughput_label(group[0]),
        )


ANSWER = "Answer"  # the forest plot's section: shown at the top, not among the figures


def forest_rows(result: compare.Comparison) -> list[tuple[str, list[compare.Row]]]:
    """The forest plot's rows, top to bottom: (label "a throughput", that row's comparisons of
    each configuration with the baseline)."""
    out: dict[str, list[compare.Row]] = {}
    once = set(compare.measured_once(result))  # a load measured once a run: no verdict to draw
    for r in result.rows:
        if not r.baseline and r.workload not in once:
            out.setdefault(f"{r.workload}  {r.metric.id}", []).append(r)
    return list(out.items())


def _forest_point(row: compare.Row) -> tuple[float, float, float] | None:
    """(change, low, high) in % of the baseline, or pp for CPU; None without an interval."""
    d = row.difference
    if d is None or row.outcome() in (compare.NO_VALID, "not comparable"):
        return None
    if row.metric.points:
        if d.ci_low is None or d.ci_high is None:
            return None
        return d.delta, d.ci_low, d.ci_high
    if d.relative is None or d.relative_ci is None or d.relative_unbounded:
        return None
    return 100 * d.relative, 100 * d.relative_ci[0], 100 * d.relative_ci[1]


def forest_figure(figs: _Figures, result: compare.Comparison) -> None:
    """The changes against the baseline with their intervals: one row per workload and
    metric, one marker per configuration (filled where the verdict says it changed), the zero
    line; rows without a change to show say why at the right."""
    rows = forest_rows(result)
    if not any(_forest_point(r) for _, cells in rows for r in cells):
        return  # an empty frame of reasons: the headline above says them in one line
    colors = _config_colors(result)
    others = [c.name for c in result.configurations if c.name != result.baseline]
    step = 0.7 / max(1, len(others))
    # A row's height holds each configuration's marker or label apart (7-point text).
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + len(rows) * max(0.25, 0.2 * len(others))))
    for y, (_, cells) in enumerate(rows):
        for row in cells:
            i = others.index(row.configuration)
            yy = y + (i - (len(others) - 1) / 2) * step
            point = _forest_point(row)
            if point is None:
                ax.annotate(
                    row.outcome(), (1.0, yy), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", fontsize=7, va="center",
                    color=colors[row.configuration],
                )  # fmt: skip
                continue
            mid, low, high = point
            color = colors[row.configuration]
            ax.plot([low, high], [yy, yy], color=color, lw=1.5)
            ax.plot(
                [mid], [yy], "o", ms=5, color=color,
                markerfacecolor=color if row.significant else "white",
            )  # fmt: skip
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    conf = f"{100 * result.confidence:.0f}%"
    ax.set_xlabel(f"change against {result.baseline} (%; CPU in percentage points)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    for name in others:
        ax.plot([], [], "o", color=colors[name], label=name)
    # The scale on top as well: the first screen shows the figure's top rows.
    ax.tick_params(axis="x", labeltop=True, labelsize=7)
    ax.set_title(f"change against {result.baseline}", fontsize=9, loc="left", pad=16)
    # Above the top tick labels (about a quarter inch), level with the title.
    above = 1.0 + 0.25 / (fig.get_figheight() * ax.get_position().height)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, above), ncol=min(3, len(others)))
    figs.save(
        fig,
        "changes",
        ANSWER,
        f"Change of each configuration against the baseline {result.baseline}, with its {conf} "
        "interval (filled: a change by the verdict; hollow: none shown); 0: no change",
    )


def latency_figures(figs: _Figures, result: compare.Comparison) -> None:
    conf = f"{100 * result.confidence:.0f}%"
    for stat in ("avg", "p99"):
        groups = list(
            dict.fromkeys(
                (r.workload, r.metric.id) for r in result.rows if r.metric.id.endswith(f" {stat}")
            )
        )
        if groups:
            _bars(
                figs,
                result=result,
                metric_ids=groups,
                name=f"latency-{stat}",
                section="Latency",
                title=f"{'Mean' if stat == 'avg' else 'p99'} latency per operation "
                f"(mean over repetitions, {conf} CI)",
                ylabel="microseconds",
            )


def role_cpu_figure(figs: _Figures, result: compare.Comparison) -> None:
    """CPU of every role (cores summed over its pods) per workload and configuration."""
    ids = [f"cpu:{role}" for role in records.ROLES]
    groups = list(
        dict.fromkeys((r.workload, r.metric.id) for r in result.rows if r.metric.id in ids)
    )
    if groups:
        _bars(
            figs,
            result=result,
            metric_ids=groups,
            name="cpu-roles",
            section="CPU per role",
            title="CPU per role: cores summed over the role's pods "
            f"(mean over repetitions, {100 * result.confidence:.0f}% CI)",
            ylabel="cores",
        )


def _merged_histograms(
    config: compare.Configuration, runs: dict[str, LoadedRun], workload: str
) -> dict[str, Any]:
    """operation -> the sum of every measured step's merged histogram of this configuration."""
    per_op: dict[str, list[Any]] = {}
    for r in config.runs:
        loaded = runs[r.key]
        for step in records.measured(r.run):
            if str(step.workload) != workload:
                continue
            try:
                doc = loaded.merged(step.index)
            except SourceError:
                doc = None
            for op, entry in ((doc or {}).get("operations") or {}).items():
                if entry.get("hdr"):
                    per_op.setdefault(op, []).append(hdr.decode(entry["hdr"]))
    return {op: hdr.merge(hs) for op, hs in per_op.items()}


def _percentile_axis(ax: Any) -> None:
    ax.set_xscale("log")
    ticks = [1 / (1 - p / 100) for p in (50, 90, 99, 99.9, 99.99, 99.999)]
    labels = ["50", "90", "99", "99.9", "99.99", "99.999"]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _: dict(zip(ticks, labels, strict=True)).get(v, ""))
    )
    ax.set_xlabel("percentile")


def percentile_figures(
    figs: _Figures, result: compare.Comparison, runs: dict[str, LoadedRun]
) -> int:
    colors = _config_colors(result)
    drawn = 0
    workloads = list(dict.fromkeys(r.workload for r in result.rows))
    for w in workloads:
        by_config = {c.name: _merged_histograms(c, runs, w) for c in result.configurations}
        ops = sorted({op for hs in by_config.values() for op in hs})
        if not ops:
            continue
        fig, axes = plt.subplots(1, len(ops), figsize=(4.2 * len(ops), 3.6), squeeze=False)
        for ax, op in zip(axes[0], ops, strict=True):
            for cname, hs in by_config.items():
                h = hs.get(op)
                if h is None or h.get_total_count() == 0:
                    continue
                xs = [1 / (1 - p / 100) for p in PERCENTILES]
                ys = [max(1, h.get_value_at_percentile(p)) / 1000 for p in PERCENTILES]
                ax.plot(xs, ys, label=f"{cname} (n={h.get_total_count()})", color=colors[cname])
            _percentile_axis(ax)
            ax.set_yscale("log")
            plain = FuncFormatter(lambda v, _: f"{v:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
            ax.tick_params(axis="y", which="both", labelsize=8)
            ax.set_ylabel("latency (ms)")
            ax.set_title(f"workload {w}: {op}", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7)
        fig.tight_layout()
        figs.save(
            fig,
            f"percentiles-{_safe(w)}",
            "Latency percentiles",
            f"Workload {w}: latency by percentile, every measured operation of each "
            "configuration (HDR histograms of all clients and repetitions summed exactly)",
        )
        drawn += 1
    return drawn


def cpu_figures(figs: _Figures, result: compare.Comparison, runs: dict[str, LoadedRun]) -> None:
    for config in result.configurations:
        for r in config.runs:
            loaded = runs[r.key]
            steps = records.measured(r.run)
            series = _cpu_series(loaded, steps)
            if series:
                fig, ax = plt.subplots(figsize=(8, 3.6))
                roles = {
                    n["name"]: n.get("role", "")
                    for s in steps
                    for n in (s.cpu or {}).get("nodes") or []
                }
                for node, points in sorted(series.items()):
                    points.sort()
                    style = "--" if roles.get(node) == "client" else "-"
                    ax.plot(
                        [t for t, _ in points],
                        [v for _, v in points],
                        style,
                        label=f"{node} ({roles.get(node, '?')})",
                        lw=1,
                    )
                ax.set_xlabel("seconds since the first measured step started")
                for s in steps:  # shade and name the measured steps
                    if s.start and s.end and steps[0].start:
                        a = (s.start - steps[0].start).total_seconds()
                        b = (s.end - steps[0].start).total_seconds()
                        ax.axvspan(a, b, alpha=0.06, color="grey")
                        label = s.label.removeprefix("run ").replace(" #", "#")
                        ax.text((a + b) / 2, 97, label, ha="center", va="top", fontsize=6)
            else:
                nodes = sorted(
                    {
                        (n["name"], n.get("role", ""))
                        for s in steps
                        for n in (s.cpu or {}).get("nodes") or []
                    }
                )
                if not nodes:
                    continue
                fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(steps) + 3), 3.6))
                for node, role in nodes:
                    ys = [
                        next(
                            (
                                n.get("avg")
                                for n in (s.cpu or {}).get("nodes") or []
                                if n["name"] == node
                            ),
                            math.nan,
                        )
                        for s in steps
                    ]
                    style = "-" if role in ("cluster", "both") else "--"
                    ax.plot(
                        range(len(steps)), ys, style, marker="o", ms=3, label=f"{node} ({role})"
                    )
                ax.set_xticks(range(len(steps)))
                ax.set_xticklabels(
                    [s.label.removeprefix("run ") for s in steps], rotation=60, fontsize=7
                )
                ax.set_xlabel("measured step")
            ax.set_ylabel("CPU busy (% of the node)")
            ax.set_ylim(0, 100)
            ax.set_title(f"{r.key}: CPU per node", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            figs.save(
                fig,
                f"cpu-{_safe(r.key)}",
                "CPU",
                f"{r.key}: CPU busy per node"
                + (" over time (grey: measured steps)" if series else " averaged over each step")
                + (
                    # Nothing tells which node serves a URI: the database's CPU is not observed.
                    " (client nodes only: the database is an external URI, its CPU is not observed)"
                    if records.shape(r.run).kind == "External"
                    else " (solid: database nodes, dashed: client nodes)"
                ),
            )


@dataclass(frozen=True)
class Trace:
    """One trial's CPU averaged over the database nodes: seconds since the step started."""

    run: str
    repetition: int | None
    points: list[tuple[float, float]]


def node_average_cpu(
    config: compare.Configuration, runs: Mapping[str, LoadedRun]
) -> dict[str, list[Trace]]:
    """workload -> a trace per measured step of every run of the configuration: at each sample
    the mean busy % of the step's database nodes (records.node_average). Steps without a raw
    series (archives keep them in resources.json) have no trace."""
    out: dict[str, list[Trace]] = {}
    for r in config.runs:
        for s in records.measured(r.run):
            try:
                res = runs[r.key].resources(s.index) or {}
            except SourceError:
                continue
            nodes = (res.get("cpuSeries") or {}).get("nodes") or {}
            database = {
                n: records.cpu_busy_series(nodes[n])
                for n in records.database_nodes(s)
                if n in nodes
            }
            average = records.node_average(database)
            if not average or s.workload is None:
                continue
            origin = s.start.timestamp() if s.start else average[0][0]
            points = [(t - origin, v) for t, v in average]
            out.setdefault(str(s.workload), []).append(Trace(r.key, s.repetition, points))
    return out


def node_average_cpu_figures(
    figs: _Figures, result: compare.Comparison, runs: Mapping[str, LoadedRun]
) -> None:
    """Per configuration, the study's CPU figure: CPU averaged over the database nodes per
    workload over time, every trial of every run (thin) and their mean (thick)."""
    for config in result.configurations:
        traces = node_average_cpu(config, runs)
        if not traces:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.6))
        colors = plt.get_cmap("tab10")
        for i, (workload, trials) in enumerate(sorted(traces.items())):
            color = colors(i % 10)
            for tr in trials:
                ax.plot(*zip(*tr.points, strict=True), lw=0.6, alpha=0.35, color=color)
            mean = records.mean_trace([tr.points for tr in trials])
            ax.plot(
                *zip(*mean, strict=True), lw=2, color=color, label=f"{workload} ({len(trials)})"
            )
        ax.set_xlabel("seconds since the step started")
        ax.set_ylabel("CPU busy, mean of the database nodes (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{config.name}: CPU averaged over the database nodes", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, title="workload (trials)", title_fontsize=7, loc="upper right")
        figs.save(
            fig,
            f"cpu-average-{_safe(config.name)}",
            "CPU",
            f"{config.name}: CPU busy averaged over the database nodes at each sample, per "
            f"workload over time; every trial of its {len(config.runs)} run(s) (thin) and their "
            "mean (thick)",
        )


OVERLAY_NODES = 4  # database nodes shown, one panel each


def cpu_overlay_figure(
    figs: _Figures, result: compare.Comparison, runs: dict[str, LoadedRun]
) -> None:
    """CPU over time per database node, the configurations overlaid (each its first run with
    series): the i-th node of every configuration shares a panel, as the studies drew it."""
    colors = _config_colors(result)
    by_config: dict[str, list[list[tuple[float, float]]]] = {}
    for config in result.configurations:
        for r in config.runs:
            steps = records.measured(r.run)
            series = _cpu_series(runs[r.key], steps)
            roles = {
                n["name"]: n.get("role") for s in steps for n in (s.cpu or {}).get("nodes") or []
            }
            database = [n for n in sorted(series) if roles.get(n) in ("cluster", "both")]
            if database:
                by_config[config.name] = [sorted(series[n]) for n in database[:OVERLAY_NODES]]
                break
    if len(by_config) < 2:  # nothing to overlay
        return
    panels = max(len(nodes) for nodes in by_config.values())
    fig, axes = plt.subplots(panels, 1, figsize=(8, 2.4 * panels), sharex=True, squeeze=False)
    for i in range(panels):
        ax = axes[i][0]
        for name, nodes in by_config.items():
            if i < len(nodes):
                ax.plot(
                    [t for t, _ in nodes[i]],
                    [v for _, v in nodes[i]],
                    lw=1,
                    label=name,
                    color=colors[name],
                )
        ax.set_ylim(0, 100)
        ax.set_ylabel(f"node {i + 1}: busy %", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, title="configuration", title_fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("seconds since the first measured step started")
    figs.save(
        fig,
        "cpu-overlay",
        "CPU",
        "CPU busy over time per database node (the i-th node of each configuration's first "
        "run), configurations overlaid",
    )


def _cpu_series(
    loaded: LoadedRun, steps: Sequence[records.StepView]
) -> dict[str, list[tuple[float, float]]]:
    """node -> [(seconds since the first step started, busy %)] from the raw series archives
    keep per step (resources.json `cpuSeries`); empty when there are none."""
    out: dict[str, list[tuple[float, float]]] = {}
    origin = steps[0].start.timestamp() if steps and steps[0].start else None
    for s in steps:
        try:
            res = loaded.resources(s.index) or {}
        except SourceError:
            continue
        for node, modes in ((res.get("cpuSeries") or {}).get("nodes") or {}).items():
            for t, busy in records.cpu_busy_series(modes):
                out.setdefault(node, []).append((t - (origin or t), busy))
    return out


def scaling_dimension(result: compare.Comparison) -> str | None:
    """The one dimension in which the configurations differ (others equal), if any."""
    if len(result.configurations) < 2:
        return None
    dims = [c.shape().dimensions() for c in result.configurations]
    differing = [k for k in dims[0] if len({str(d.get(k)) for d in dims}) > 1]
    if len(differing) == 1 and differing[0] in SCALING_DIMENSIONS:
        return differing[0]
    return None


def _version_key(v: Any) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(v).split("."))
    except ValueError:
        return (0,)


def scaling_figure(figs: _Figures, result: compare.Comparison) -> str | None:
    dim = scaling_dimension(result)
    if dim is None:
        return None
    value = {c.name: c.shape().dimensions()[dim] for c in result.configurations}
    order = sorted(
        value, key=lambda n: _version_key(value[n]) if dim == "version" else value[n] or 0
    )
    workloads = list(dict.fromkeys(r.workload for r in _rows(result, "throughput")))
    groups = _throughput_groups(workloads)
    if not groups:
        return None
    # The workloads' operations and the load's records each on a panel of its own.
    fig, axes = plt.subplots(
        1, len(groups), figsize=(6.5 if len(groups) == 1 else 10.5, 4), squeeze=False
    )
    for ax, group in zip(axes[0], groups, strict=True):
        for w in group:
            rows = {r.configuration: r for r in _rows(result, "throughput") if r.workload == w}
            names = [n for n in order if n in rows and rows[n].summary.mean is not None]
            xs = list(range(len(names))) if dim == "version" else [value[n] for n in names]
            ys = [float(rows[n].summary.mean or 0.0) for n in names]
            lows = [rows[n].summary.ci_low for n in names]
            highs = [rows[n].summary.ci_high for n in names]
            err = [
                [y - lo if lo is not None else 0.0 for y, lo in zip(ys, lows, strict=True)],
                [hi - y if hi is not None else 0.0 for y, hi in zip(ys, highs, strict=True)],
            ]
            label = "load" if w == records.LOAD else f"workload {w}"
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
        if dim == "version":
            ax.set_xticks(range(len(order)))
            ax.set_xticklabels([str(value[n]) for n in order])
        else:
            ax.set_xticks(sorted({value[n] for n in order}))
        ax.set_xlabel(dim)
        ax.set_ylabel(throughput_label(group[0]))
        what = "Load throughput" if group == [records.LOAD] else "Throughput"
        ax.set_title(f"{what} against {dim} (mean, CI)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    caption = f"Throughput against {dim}" + (
        ": the workloads' operations and the load's records, each on its own axis"
        if len(groups) > 1
        else ""
    )
    figs.save(fig, f"scaling-{dim}", "Scaling", caption)
    return dim


def cell_values(name: str) -> dict[str, str] | None:
    """`shards=2,version=8.0.4` (an experiment cell's configuration name) as a dict, else None."""
    pairs = [p.partition("=") for p in name.split(",")]
    if not pairs or any(not k or not sep for k, sep, _ in pairs):
        return None
    return {k: v for k, _, v in pairs}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _lines_against(
    ax: Any, dim: str, lines: Mapping[str, list[tuple[float, compare.Row]]], ticks: Sequence[float]
) -> None:
    """A metric's means (with their intervals) against a numeric dimension, a line per value of
    the other dimensions: the one figure of a metric against two (or more) dimensions."""
    for rest, unordered in sorted(lines.items()):
        points = sorted(unordered, key=lambda p: p[0])
        ys = [float(r.summary.mean or 0.0) for _, r in points]
        err = [
            [y - (r.summary.ci_low if r.summary.ci_low is not None else y)
             for y, (_, r) in zip(ys, points, strict=True)],
            [(r.summary.ci_high if r.summary.ci_high is not None else y) - y
             for y, (_, r) in zip(ys, points, strict=True)],
        ]  # fmt: skip
        ax.errorbar([x for x, _ in points], ys, yerr=err, marker="o", capsize=3, label=rest)
    # The dimension's own values as ticks: 1, 3, 5, 7 shards, never 1.25 of one.
    ax.set_xticks(sorted(set(ticks)))
    ax.set_xlabel(dim)
    ax.grid(alpha=0.3)
    if list(lines) != ["all"]:  # a legend only where there are other dimensions to tell apart
        ax.legend(fontsize=8)


def _positions(dim: str, values: Mapping[str, Mapping[str, str]]) -> dict[str, float]:
    """Where each of the dimension's values sits on the x axis: a number at itself, others
    (a version) side by side in their order (8.0.4 after 7.0.14)."""
    texts = {v[dim] for v in values.values() if dim in v}
    if all(_number(t) is not None for t in texts):
        return {t: float(t) for t in texts}
    return {t: float(i) for i, t in enumerate(sorted(texts, key=_version_key))}


def _lines(
    dim: str, values: Mapping[str, Mapping[str, str]], rows: Mapping[str, compare.Row]
) -> dict[str, list[tuple[float, compare.Row]]]:
    """The rows against `dim`, a line per value of the other dimensions. Lines of one point are
    left out where another line has more: in a one-factor-at-a-time design they are the cells
    that vary another factor, at this one's baseline value (the baseline's line has it)."""
    x = _positions(dim, values)
    lines: dict[str, list[tuple[float, compare.Row]]] = {}
    for name, vals in values.items():
        if name in rows:
            rest = ",".join(f"{k}={v}" for k, v in vals.items() if k != dim) or "all"
            lines.setdefault(rest, []).append((x[vals[dim]], rows[name]))
    if any(len(points) > 1 for points in lines.values()):
        lines = {rest: points for rest, points in lines.items() if len(points) > 1}
    return lines


def experiment_scaling_figures(
    figs: _Figures, result: compare.Comparison, plotted: str | None = None
) -> list[str]:
    """An experiment's cells: throughput against each numeric dimension, one line per value of
    the other dimensions, one figure per workload and dimension. The dimensions plotted. Cells
    of one dimension that scaling_figure has `plotted` already (every workload in one figure)
    get none: they would repeat it a workload at a time."""
    cells = {c.name: cell_values(c.name) for c in result.configurations}
    if len(cells) < 2 or any(v is None for v in cells.values()):
        return []
    values = {n: v for n, v in cells.items() if v is not None}
    dims = list(next(iter(values.values())))
    if plotted is not None and dims == [plotted]:
        return []
    numeric = [d for d in dims if all(_number(v.get(d, "")) is not None for v in values.values())]
    numeric = [d for d in numeric if len({values[n][d] for n in values}) > 1]
    rows = _rows(result, "throughput")
    workloads = list(dict.fromkeys(r.workload for r in rows))
    for dim in numeric:
        for w in workloads:
            by_cell = {r.configuration: r for r in rows if r.workload == w}
            lines = _lines(dim, values, {
                n: r for n, r in by_cell.items() if r.summary.mean is not None
            })  # fmt: skip
            if not lines:  # no valid trial of this workload: the table says why
                continue
            fig, ax = plt.subplots(figsize=(6.5, 4))
            _lines_against(ax, dim, lines, [float(v[dim]) for v in values.values()])
            ax.set_ylabel(throughput_label(w))
            who = "Load" if w == records.LOAD else f"Workload {w}"
            ax.set_title(f"{who}: throughput against {dim} (mean, CI)", fontsize=10)
            figs.save(
                fig, f"scaling-{_safe(dim)}-{_safe(w)}", "Scaling",
                f"{who}: throughput against {dim}, one line per other dimensions",
            )  # fmt: skip
    return numeric


def _configuration_dimensions(result: compare.Comparison) -> dict[str, dict[str, str]]:
    """Each configuration's dimension values: from its name where it names them (experiment
    cells, `--group-by a,b`), else the target's shape dimensions that differ between them."""
    cells = {c.name: cell_values(c.name) for c in result.configurations}
    if all(v is not None for v in cells.values()):
        return {n: v for n, v in cells.items() if v is not None}
    shapes = {c.name: c.shape().dimensions() for c in result.configurations}
    differing = [k for k in SCALING_DIMENSIONS if len({str(d.get(k)) for d in shapes.values()}) > 1]
    return {n: {k: str(d.get(k)) for k in differing} for n, d in shapes.items()}


def load_figures(figs: _Figures, result: compare.Comparison) -> list[str]:
    """Time to load per configuration, then against each numeric dimension (seconds, as the
    studies plot an import against shards and replicas); likewise each workload's run time
    when compared on `seconds` (study 3's timed query). The dimensions plotted."""
    plotted: list[str] = []
    conf = f"{100 * result.confidence:.0f}%"
    timed = [(records.LOAD, "time to load")] + [
        (w, compare.RUN_TIME)
        for w in dict.fromkeys(r.workload for r in _rows(result, compare.RUN_TIME))
    ]
    for workload, metric in timed:
        rows = {
            r.configuration: r
            for r in _rows(result, metric)
            if r.workload == workload and r.summary.mean is not None
        }
        if not rows:
            continue
        what = "Time to load" if workload == records.LOAD else f"Workload {workload}: run time"
        name = "time-to-load" if workload == records.LOAD else f"run-time-{_safe(workload)}"
        _bars(
            figs, result=result, metric_ids=[(workload, metric)], name=name,
            section="Loads" if workload == records.LOAD else "Run times",
            title=f"{what} (mean, {conf} CI)", ylabel="seconds",
        )  # fmt: skip
        values = {n: v for n, v in _configuration_dimensions(result).items() if n in rows}
        dims = list(dict.fromkeys(k for v in values.values() for k in v))
        # Numeric dimensions (time against shards), and the versions side by side (study 3's
        # version vs version); other labels (a cloud) have their own compare tables.
        numeric = [
            d
            for d in dims
            if len({v.get(d) for v in values.values()}) > 1
            and (d == "version" or all(_number(v.get(d, "")) is not None for v in values.values()))
        ]
        for dim in numeric:
            fig, ax = plt.subplots(figsize=(6.5, 4))
            x = _positions(dim, values)
            _lines_against(ax, dim, _lines(dim, values, rows), list(x.values()))
            if any(_number(t) is None for t in x):
                labels: list[str] = sorted(x, key=lambda t: x[t])
                ax.set_xticklabels(labels)
            ax.set_ylabel("seconds to load" if workload == records.LOAD else "seconds")
            ax.set_title(f"{what} against {dim} (mean, {conf} CI)", fontsize=10)
            figs.save(
                fig, f"{name}-{_safe(dim)}", "Loads" if workload == records.LOAD else "Run times",
                f"{what} against {dim}, one line per other dimensions",
            )  # fmt: skip
        plotted += [d for d in numeric if d not in plotted]
    return plotted


DISTRIBUTION_SECTION = "Shard distribution"


def distribution_figure(
    figs: _Figures, runs: Sequence[LoadedRun], result: compare.Comparison | None = None
) -> bool:
    """Each sharded run's documents per shard after its last load, as shares of 100%: a bar a
    run, a segment a shard (the studies' "shard balance per shard"), named by its
    configuration where that is one run (a shard-key test's key), else by the run. False when
    no run is sharded."""
    label = {r.key: r.key for r in runs}
    for c in result.configurations if result else ():
        if len(c.runs) == 1:
            label[c.runs[0].key] = c.name
    dists = [(label.get(r.key) or r.name, d) for r in runs if (d := records.distribution(r.run))]
    if not dists:
        return False
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(8.0, 0.9 + 0.45 * len(dists)))
    for y, (_, dist) in enumerate(dists):
        left = 0.0
        for i, shard in enumerate(dist.get("shards") or []):
            share = float(shard.get("percent") or 0.0)
            ax.barh(y, share, left=left, color=cmap(i % 20), edgecolor="white")
            if share >= 8:  # a label where it fits
                ax.text(
                    left + share / 2, y, f"{shard.get('shard')}\n{share:.1f}%",
                    ha="center", va="center", fontsize=7,
                )  # fmt: skip
            left += share
    ax.set_yticks(range(len(dists)))
    ax.set_yticklabels([name for name, _ in dists], fontsize=8)
    ax.invert_yaxis()  # the first run on top, as in the table above
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the collection's documents")
    ax.set_title("Documents per shard after the last load", fontsize=10)
    figs.save(
        fig, "shard-distribution", DISTRIBUTION_SECTION,
        "Documents per shard after each run's last load (% of the collection)",
    )  # fmt: skip
    return True


def deploy_html(experiments: Sequence[Mapping[str, Any]]) -> str:
    """The deploy-time table: every cluster deployment of the experiments' cells."""
    from mongobench_cli import experiment  # noqa: PLC0415

    rows = []
    for obj in experiments:
        for r in experiment.deploy_rows(obj):
            rows.append(
                [
                    html.escape(obj["metadata"]["name"]),
                    html.escape(str(r["cell"])),
                    str(r["deployment"]),
                    str(r["pods"]) if r.get("pods") is not None else "-",
                    *(
                        f"{r[k]:.1f}" if isinstance(r.get(k), int | float) else "-"
                        for k in ("provisionedSeconds", "configuredSeconds", "readySeconds")
                    ),
                ]
            )
    headers = [
        "experiment", "cell", "deployment", "pods", "provisioned s", "configured s", "ready s"
    ]  # fmt: skip
    return _table(headers, rows, numeric=(2, 3, 4, 5, 6))


def deploy_figure(figs: _Figures, experiments: Sequence[Mapping[str, Any]]) -> bool:
    """Seconds to Ready against the pods deployed (every deployment a point, the mean a line):
    the deploy-time-against-nodes figure of the studies, without a stopwatch."""
    from mongobench_cli import experiment  # noqa: PLC0415

    points = {
        k: [
            (float(r["pods"]), float(r[key]))
            for obj in experiments
            for r in experiment.deploy_rows(obj)
            if isinstance(r.get("pods"), int) and isinstance(r.get(key), int | float)
        ]
        for k, key in (
            ("provisioned", "provisionedSeconds"),
            ("configured", "configuredSeconds"),
            ("ready", "readySeconds"),
        )
    }
    if len({x for x, _ in points["ready"]}) < 2:
        return False
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, pts in points.items():
        xs = sorted({x for x, _ in pts})
        means = [sum(y for x, y in pts if x == v) / sum(1 for x, _ in pts if x == v) for v in xs]
        line = ax.plot(xs, means, marker="o", label=f"{label} (mean)")[0]
        ax.scatter(
            [x for x, _ in pts], [y for _, y in pts], s=10, alpha=0.4, color=line.get_color()
        )
    ax.set_xticks(sorted({x for x, _ in points["ready"]}))
    ax.set_xlabel("pods deployed (mongod members, config servers, mongos)")
    ax.set_ylabel("seconds since the cluster was created")
    ax.set_title("Deploy time against cluster size", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    figs.save(fig, "deploy-times", "Deploy times", "Seconds to provisioned, configured and Ready")
    return True


# --- HTML --------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em; color: #222;
       max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.82em; margin: 0.5em 0; }
th, td { border-bottom: 1px solid #eee; padding: 3px 8px; text-align: left; vertical-align: top;
         white-space: nowrap; }
td:last-child { white-space: normal; }
th { background: #f5f5f5; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.first td { border-top: 2px solid #ccc; }
.better { color: #0a7d32; font-weight: 600; } .worse { color: #b3261e; font-weight: 600; }
.flag { color: #8a5a00; }
.nowrap { white-space: nowrap; }
.wrap { white-space: normal; display: inline-block; min-width: 16em; }
.legend { font-size: 0.85em; color: #555; margin: 0.2em 0; }
.note { background: #fff7e0; padding: 0.5em 1em; border-left: 4px solid #e0a800; }
ul.headline li { font-size: 1.05em; margin: 0.3em 0; }
summary { cursor: pointer; color: #333; }
div.scroll { overflow-x: auto; max-width: 100%; }
figure { display: inline-block; margin: 0.5em 1em 1em 0; }
figcaption { font-size: 0.8em; color: #555; max-width: 700px; }
img { max-width: 100%; }
"""


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[int] = (),
    classes: Sequence[str] = (),
) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if i < len(classes) and classes[i] else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if j in numeric else f"<td>{c}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    # A wide table scrolls in its own box: the page keeps the window's width.
    return (
        f"<div class='scroll'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _compare_html(result: compare.Comparison) -> str:
    rows, classes = [], []
    previous = None
    V, F, VALID = render.VERDICT, render.FLAGS, render.COLUMNS.index("validity")
    for r in result.rows:
        cells = [html.escape(c) for c in render.compare_cells(r)]
        if r.significant:
            kind = "better" if "better" in r.verdict else "worse"
            cells[V] = f'<span class="{kind}">{cells[V]}</span>'
        # The count on a line, the reasons under it: the column stays narrow.
        if r.validity.valid < r.validity.trials:
            cells[VALID] = f'<span class="flag">{cells[VALID].replace(" (", "<br>(", 1)}</span>'
        elif r.validity.accepted:
            cells[VALID] = cells[VALID].replace(" (", "<br>(", 1)
        # One flag a line, never broken inside ("CV 20% > 10%" read as four lines).
        cells[F] = "<br>".join(
            f'<span class="flag nowrap">{html.escape(f)}</span>' for f in r.flags
        )
        key = (r.workload, r.metric.id)
        classes.append("first" if key != previous else "")
        if key == previous:
            cells[0] = cells[1] = ""
        previous = key
        rows.append(cells)
    conf = f"{100 * result.confidence:.0f}%"
    headers = [c.replace("95%", conf) for c in render.COLUMNS]
    legend = "".join(
        f"<p class='legend'>{html.escape(line)}</p>"
        for line in render.comparison_legend(result, short=False)
    )
    return _table(headers, rows, numeric=render.NUMERIC, classes=classes) + legend


def _question_html(result: compare.Comparison) -> str:
    """The question: which configurations, against which baseline, differing in what."""
    base = next(c for c in result.configurations if c.name == result.baseline)
    items = [f"<li><b>{html.escape(base.name)}</b> (baseline): {len(base.runs)} run(s)</li>"]
    for c in result.configurations:
        if c is base:
            continue
        differs = compare.what_differs(base, c)
        what = "; ".join(differs) if differs else "the same spec: an A/A pair"
        items.append(
            f"<li><b>{html.escape(c.name)}</b>: {len(c.runs)} run(s); against the baseline: "
            f"{html.escape(what)}</li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _opening_html(
    result: compare.Comparison, runs: Sequence[LoadedRun], figs: _Figures
) -> list[str]:
    """The first screen of a comparison: the question, the answer, how a change is decided."""
    return [
        "<h2>Question</h2>",
        f"<p>{len(runs)} runs in {len(result.configurations)} configurations, each compared "
        f"with the baseline <b>{html.escape(result.baseline)}</b>:</p>",
        _question_html(result),
        "<h2>Answer</h2>",
        *_answer_html(result, figs),
        f"<p class='legend'>A change is shown only where "
        f"{'Welch&#39;s t-test' if result.test == 'welch' else 'the Mann-Whitney U test'} "
        f"finds it significant at alpha {result.alpha} after adjusting for the table's "
        f"comparisons ({html.escape(result.adjustment_text())}), otherwise no difference. "
        f"Intervals are {100 * result.confidence:.0f}% (t distribution for means; for changes: "
        f"{html.escape(result.interval_method)}). CPU changes are in percentage points. "
        + (
            "Trials judged invalid are included and flagged.</p>"
            if result.include_invalid
            else "Trials judged invalid are left out; the valid column counts them.</p>"
        ),
    ]


def _single_html(result: compare.Comparison, runs: Sequence[LoadedRun]) -> list[str]:
    """One configuration: no question of a difference and no empty verdicts; what was
    measured, and how to get a comparison."""
    (only,) = result.configurations
    return [
        "<h2>Measured</h2>",
        f"<p>{len(runs)} run(s) of one configuration, <b>{html.escape(only.name)}</b>: nothing "
        "to compare it with here (name a second run or configuration to get a verdict). Its "
        f"figures and tables follow, with {100 * result.confidence:.0f}% intervals where it has "
        "repetitions.</p>",
    ]


def _answer_html(result: compare.Comparison, figs: _Figures) -> list[str]:
    """The answer: a headline per configuration, the verdict per workload and metric (the
    compact table of `compare`), the forest plot of the changes."""
    heads = "".join(f"<li>{html.escape(h)}</li>" for h in compare.headlines(result))
    conf = f"{100 * result.confidence:.0f}%"
    rows, classes, previous = [], [], None
    # A load measured once a run has no verdict to give: not "too few valid trials" in the
    # tally; one line says so, as in `compare`.
    once = compare.measured_once(result)
    shown = [r for r in result.rows if not r.baseline and r.workload not in once]
    for r in shown:
        word = r.outcome()
        kind = ("better" if "better" in r.verdict else "worse") if r.significant else ""
        cells = [
            html.escape(r.workload) if r.workload != previous else "",
            html.escape(r.metric.id),
            html.escape(r.configuration),
            html.escape(f"{r.validity.valid}/{r.validity.trials}" if r.validity.judged else "-"),
            html.escape(r.change_text()),
            f'<span class="{kind}">{html.escape(word)}</span>' if kind else html.escape(word),
        ]
        classes.append("first" if r.workload != previous else "")
        previous = r.workload
        rows.append(cells)
    headers = ["workload", "metric", "configuration", "valid", f"change [{conf} CI]", "verdict"]
    figure = [_figure_html(c, p) for sec, c, p in figs.items if sec == ANSWER]
    advice = _advice_html(result)
    counts = Counter(r.outcome() for r in shown)
    tally = ", ".join(f"{n} {word}" for word, n in counts.most_common())
    measured_once = (
        [
            f"<p class='note'>workload {html.escape(', '.join(once))}: measured once a run, no "
            "verdict (the runs' tables have its figures)</p>"
        ]
        if once
        else []
    )
    return [
        f"<ul class='headline'>{heads}</ul>",
        *figure,
        # Collapsed: its rows are the figure's, in words; the first screen keeps the answer.
        f"<details><summary>Verdicts per workload and metric ({html.escape(tally)})</summary>",
        _table(headers, rows, classes=classes),
        *measured_once,
        "</details>",
        *advice,
    ]


def _advice_html(result: compare.Comparison) -> list[str]:
    """Per validity reason: the invalid trials it made and what to change."""
    lines = [str(t) for t in render.invalid_trial_lines(result)]
    if not lines:
        return []
    return [
        f"<p class='note'>{html.escape(lines[0])}<br>"
        + "<br>".join(html.escape(x.strip()) for x in lines[1:])
        + "</p>"
    ]


def _trials_html(runs: Sequence[LoadedRun]) -> list[str]:
    """Each run's trials in a collapsed section: step, throughput, verdict, what was seen and
    what to change."""
    out = []
    for r in runs:
        measured = records.measured(r.run)
        if not measured:
            continue
        invalid = sum(1 for s in measured if not s.validity.valid)
        rows = []
        for s in measured:
            why = "<br>".join(
                html.escape(
                    f"{x.reason}{' (accepted)' if x.accepted else ''}: {x.message}"
                    + (f"; to change: {x.advice}" if x.advice and not x.accepted else "")
                )
                for x in s.validity.reasons
            )
            tp = records.throughput(s.result) if s.result else None
            rows.append([html.escape(s.label), render.num(tp), html.escape(s.validity.text()), why])
        summary = f"{html.escape(r.key)}: {len(measured)} trials" + (
            f", {invalid} invalid" if invalid else ""
        )
        table = _table(["step", "ops/s", "validity", "reasons"], rows, numeric=(1,))
        out.append(f"<details><summary>{summary}</summary>{table}</details>")
    return out


def _runs_html(runs: Sequence[LoadedRun], result: compare.Comparison) -> str:
    config_of = {r.key: c.name for c in result.configurations for r in c.runs}
    rows = []
    for r in runs:
        o = records.overview(r.run, r.origin)
        rows.append(
            [
                html.escape(config_of.get(r.key, "")),
                html.escape(r.key),
                html.escape(o.phase),
                html.escape(o.topology),
                html.escape(o.version),
                html.escape(o.platform),
                # Wrapped: an experiment's runs carry five labels, which would widen the page.
                '<span class="wrap">'
                + html.escape(", ".join(f"{k}={v}" for k, v in sorted(o.labels.items())))
                + "</span>",
                html.escape(render.when(o.started)),
                html.escape(render.duration(o.duration())),
                str(len(records.measured(r.run))),
                html.escape(o.origin),
            ]
        )
    headers = ["configuration", "run", "phase", "topology", "version", "platform", "labels",
               "started", "duration", "measured steps", "origin"]  # fmt: skip
    return _table(headers, rows, numeric=(9,))


def _distribution_html(runs: Sequence[LoadedRun], figs: _Figures) -> list[str]:
    """Each sharded run's key and shares per shard after its last load, then their figure;
    nothing otherwise."""
    rows = [[html.escape(c) for c in row] for row in render.distribution_rows(runs)]
    if not rows:
        return []
    return [
        f"<h2>{DISTRIBUTION_SECTION}</h2>",
        _table(render.DISTRIBUTION_COLUMNS, rows, numeric=(2,)),
        *(_figure_html(c, p) for sec, c, p in figs.items if sec == DISTRIBUTION_SECTION),
    ]


REPORT_SLOW_PER_RUN = 10  # the report's slow operations per run (describe shows each step's)


def _operations_html(runs: Sequence[LoadedRun]) -> list[str]:
    """Each profiled run's slowest operations (spec.profiler) and each run's disk use per
    collection after its last measured step; nothing for runs without them."""
    parts: list[str] = []
    slow = []
    for r in runs:
        ops = sorted(records.slow_operations(r.run), key=lambda o: -o.millis)
        for o in ops[:REPORT_SLOW_PER_RUN]:
            cells = [r.key or r.name, o.step, str(o.millis), o.op, o.shard or "-",
                     o.plan_summary or "-", render.examined(o), o.shape]  # fmt: skip
            slow.append([html.escape(c) for c in cells])
    if slow:
        headers = ["run", "step", "ms", "op", "shard", "plan", "docs/keys/ret", "shape"]
        parts += [f"<h2>{render.SLOW_OPERATIONS_SECTION}</h2>", _table(headers, slow, numeric=(2,))]
    disk = []
    for r in runs:
        for d in records.disk_use(r.run, last_only=True):
            cells = [r.key or r.name, d.step, d.collection, d.shard or "total", str(d.documents),
                     render.size_text(d.data_bytes), render.size_text(d.storage_bytes),
                     render.size_text(d.index_bytes)]  # fmt: skip
            disk.append([html.escape(c) for c in cells])
    if disk:
        headers = ["run", "after", "collection", "shard", "documents", "data", "storage", "indexes"]
        parts += [f"<h2>{render.DISK_USE_SECTION}</h2>", _table(headers, disk, numeric=(4,))]
    return parts


def _warnings_html(runs: Sequence[LoadedRun]) -> str:
    """Warnings grouped by kind with their count; where each was seen in a collapsed list."""
    groups = records.warning_groups([(r.key, w) for r in runs for w in records.warnings(r.run)])
    items = [
        f"<li><b>{len(where)} &times;</b> {html.escape(kind)}<details><summary>where</summary>"
        + "<br>".join(html.escape(w) for w in where)
        + "</details></li>"
        for kind, where in groups
    ]
    return f"<ul>{''.join(items)}</ul>" if items else "<p>none</p>"


def _figure_html(caption: str, path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
        f"<figcaption>{html.escape(caption)} ({html.escape(path.name)})</figcaption></figure>"
    )


def _calibration_parts(calibrated: tuple[str, calibration.Calibration] | None) -> list[str]:
    """The calibration the study ran under, when there is one."""
    if calibrated is None:
        return []
    return ["<h2>Calibration</h2>", calibration_html(calibrated[1], calibrated[0])]


def _plotted_html(dim: str | None, cell_dims: Sequence[str], load_dims: Sequence[str]) -> list[str]:
    """Where the figures against dimensions are."""
    parts = []
    if dim:
        parts.append(f"<p>The configurations differ only in <b>{dim}</b>: see Scaling.</p>")
    if cell_dims:
        parts.append(
            f"<p>Experiment cells plotted against {html.escape(', '.join(cell_dims))}: "
            "see Scaling.</p>"
        )
    if load_dims:
        parts.append(
            f"<p>Time to load plotted against {html.escape(', '.join(load_dims))}: see Loads.</p>"
        )
    return parts


def write(
    runs: Sequence[LoadedRun],
    result: compare.Comparison,
    out: Path,
    experiments: Sequence[Mapping[str, Any]] = (),
    calibrated: tuple[str, calibration.Calibration] | None = None,
) -> Written:
    try:
        figures_dir = out / "figures"
        figures_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourceError(f"cannot create {out}: {exc.strerror}") from exc
    by_key = {r.key: r for r in runs}
    figs = _Figures(figures_dir)
    forest_figure(figs, result)
    throughput_figure(figs, result)
    latency_figures(figs, result)
    dim = scaling_figure(figs, result)
    cell_dims = experiment_scaling_figures(figs, result, dim)
    load_dims = load_figures(figs, result)
    curves = percentile_figures(figs, result, by_key)
    role_cpu_figure(figs, result)
    cpu_figures(figs, result, by_key)
    node_average_cpu_figures(figs, result, by_key)
    cpu_overlay_figure(figs, result, by_key)
    deploy_figure(figs, experiments)
    knee_table = knee_figures(figs, runs)
    distribution_figure(figs, runs, result)

    # First screen: the question, the answer, the changes' figure; then the figures; then
    # the tables; then the warnings and each run's trials.
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>mongobench report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>mongobench report</h1>",
        *(
            _opening_html(result, runs, figs)
            if len(result.configurations) > 1
            else _single_html(result, runs)
        ),
    ]
    for line in [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]:
        parts.append(f"<p class='note'>{html.escape(line)}</p>")
    parts += _plotted_html(dim, cell_dims, load_dims)
    if not curves:
        parts.append(
            "<p class='note'>No full result documents were found (HDR histograms), so there are "
            "no latency percentile curves: report from an archive or a live cluster that still "
            "has the runs' result ConfigMaps.</p>"
        )
    parts += _calibration_parts(calibrated)
    section = None
    for sec, caption, path in figs.items:
        if sec in ("Deploy times", DISTRIBUTION_SECTION, ANSWER):  # shown elsewhere
            continue
        if sec != section:
            parts.append(f"<h2>{html.escape(sec)}</h2>")
            section = sec
        parts.append(_figure_html(caption, path))
    parts += ["<h2>Runs</h2>", _runs_html(runs, result), *_distribution_html(runs, figs)]
    parts += _operations_html(runs)
    parts += ["<h2>Comparison</h2>", _compare_html(result)]
    if knee_table:
        parts += ["<h2>Knee</h2>", knee_table]
    if experiments:
        parts += ["<h2>Deploy times</h2>", deploy_html(experiments)]
        parts += [_figure_html(c, p) for sec, c, p in figs.items if sec == "Deploy times"]
    parts += ["<h2>Warnings</h2>", _warnings_html(runs)]
    parts += ["<h2>Trials</h2>", *_trials_html(runs), "</body></html>"]
    page = out / "report.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return Written(page, [p for _, _, p in figs.items])


# --- history (mongobench history --report) -----------------------------------------------------


def history_figures(
    figs: _Figures, changes: Sequence[_history.Change], series: Sequence[_history.Series]
) -> None:
    """One plot per series: each run's point in time order, the mean of each segment between
    change points, and a line where a change point is (red for the worse, green for better)."""
    by_series: dict[str, list[_history.Change]] = {}
    for c in changes:
        by_series.setdefault(c.series.id, []).append(c)
    for s in series:
        values = [p.value for p in s.points]
        if not values:
            continue
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.plot(range(len(values)), values, ".", color="tab:blue", markersize=3, label="runs")
        cuts = sorted(c.index for c in by_series.get(s.id, []))
        for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True):
            mean = sum(values[a:b]) / (b - a)
            ax.hlines(mean, a, b - 1, color="black", linewidth=1)
        for c in by_series.get(s.id, []):
            ax.axvline(c.index - 0.5, color="tab:red" if c.regression else "tab:green", alpha=0.6)
        ax.set_xlabel("run (in time order)")
        ax.set_ylabel(s.unit)
        ax.set_title(s.id, fontsize=9)
        figs.save(fig, f"history-{_safe(s.id)}", "History", s.id)


def write_history(u: _history.Update, out: Path, summary: str) -> Written:
    """`out`/history.html: the change points and a plot per series (figures in out/figures)."""
    try:
        figures_dir = out / "figures"
        figures_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourceError(f"cannot create {out}: {exc.strerror}") from exc
    figs = _Figures(figures_dir)
    series = [u.history.series[k] for k in sorted(u.history.series)]
    history_figures(figs, u.changes, series)
    rows = [
        [
            c.series.id,
            f"{100 * c.magnitude:+.1f}% ({'worse' if c.regression else 'better'})",
            f"{render.num(c.mean_before)} -> {render.num(c.mean_after)} {c.series.unit}",
            c.before.run,
            c.after.run,
            c.provenance_text(),
        ]
        for c in u.changes
    ]
    head = ("series", "change", "mean before -> after", "run before", "run after", "provenance")
    cells = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>mongobench history</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>mongobench history</h1>",
        f"<p>{html.escape(summary)}</p>",
        "<h2>Change points</h2>",
        "<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{cells}</table>"
        if rows
        else "<p>none</p>",
        "<h2>History</h2>",
        *(_figure_html(c, p) for _, c, p in figs.items),
        "</body></html>",
    ]
    page = out / "history.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return Written(page, [p for _, _, p in figs.items])
