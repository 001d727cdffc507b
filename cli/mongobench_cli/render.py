"""Presentation: terminal tables (rich) and csv/json/markdown text of comparisons and listings."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml
from rich import box
from rich.console import Group
from rich.constrain import Constrain
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from mongobench_cli.sources import LoadedRun
from mongobench_results import compare, duet, records, stats
from mongobench_results import provenance as _provenance
from mongobench_results import validity as _validity


def num(value: float | None, unit: str = "") -> str:
    """3-4 significant figures, no exponent for the magnitudes benchmarks have."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    a = abs(value)
    text = f"{value:.0f}" if a >= 100 else f"{value:.1f}" if a >= 10 else f"{value:.2f}"
    return f"{text}{unit}"


def pval(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def when(t: datetime | None) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if t else "-"


# --- compare -----------------------------------------------------------------------------------


def _mean_sd(row: compare.Row) -> str:
    s = row.summary
    if s.sd is None:
        return num(s.mean)
    return f"{num(s.mean)} ± {num(s.sd)}"


def _ci(row: compare.Row) -> str:
    s = row.summary
    if s.ci_low is None:
        return "-"
    return f"[{num(s.ci_low)}, {num(s.ci_high)}]"


def _g(row: compare.Row) -> str:
    if row.baseline:
        return ""
    g = row.difference.hedges_g if row.difference else None
    return "-" if g is None else f"{g:+.2f}"


COLUMNS = (
    "workload",
    "metric",
    "configuration",
    "n",
    "validity",
    "mean ± SD",
    "95% CI",
    "change [95% CI]",
    "p Welch",
    "p rank",
    "p adjusted",
    "Hedges g",
    "verdict",
    "flags",
)
NUMERIC = tuple(COLUMNS.index(c) for c in ("n", "p Welch", "p rank", "p adjusted", "Hedges g"))
VERDICT, FLAGS = COLUMNS.index("verdict"), COLUMNS.index("flags")


def compare_cells(row: compare.Row) -> list[str]:
    d = row.difference if not row.baseline else None
    return [
        row.workload,
        f"{row.metric.id} ({row.metric.unit})",
        row.configuration,
        str(row.summary.n),
        row.validity.text(),
        _mean_sd(row),
        _ci(row),
        row.change_text(),
        pval(d.welch_p) if d else "",
        pval(d.rank_p) if d else "",
        pval(row.p_adjusted) if d else "",
        _g(row),
        row.verdict,
        "; ".join(row.flags),
    ]


def comparison_heading(result: compare.Comparison) -> str:
    """What decides the verdicts and what the intervals are, in one sentence."""
    conf = f"{100 * result.confidence:.0f}%"
    return (
        f"baseline {result.baseline}; verdict by {_test_name(result.test)}, alpha "
        f"{result.alpha}, {result.adjustment_text()}; intervals {conf}"
    )


def comparison_legend(result: compare.Comparison, short: bool = True) -> list[str]:
    """The lines that say how to read the table: the terminal's short column names, or the
    long ones of markdown and the HTML report."""
    names = (
        ("p(t)", "p(U)", "p(adj)", "g")
        if short
        else ("p Welch", "p rank", "p adjusted", "Hedges g")
    )
    t, u, adj, g = names
    p = t if result.test == "welch" else u
    lines = [
        f"{t}: Welch's t-test, {u}: Mann-Whitney U test, {adj}: {p} adjusted "
        f"({stats.ADJUSTMENT_NAMES[result.adjust]}) across {result.family_text()}, the "
        f"verdict's p; {g}: Hedges' g",
        "change interval: "
        + (
            "Fieller's for the relative change (the ratio of two uncertain means, Welch df), "
            "Welch-Satterthwaite's for pp"
            if result.ci == "parametric"
            else result.interval_method
        )
        + "; each interval on its own, not adjusted for the table's comparisons",
    ]
    if any(r.validity.judged for r in result.rows):
        lines.append(
            "validity: trials judged valid of those measured, the reasons of the others; "
            + (
                "invalid trials are in the figures (--include-invalid)"
                if result.include_invalid
                else "invalid trials are left out (--include-invalid keeps them)"
            )
        )
    accepted = sorted({name for r in result.rows for name, _ in r.validity.accepted})
    if accepted:
        lines.append(
            f"accepted: {', '.join(accepted)} found on trials that count, as the runs' "
            "spec.validity.accept allows"
        )
    return lines


def compare_table(result: compare.Comparison) -> Group:
    """The terminal table; flags become numbered notes under it, so the figures keep their
    width on an ordinary terminal."""
    conf = f"{100 * result.confidence:.0f}%"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=comparison_heading(result),
        title_justify="left",
        padding=(0, 1),
    )
    short = {
        "configuration": "config" if not result.group_by else result.configuration_header(),
        "validity": "valid",
        "p Welch": "p(t)",
        "p rank": "p(U)",
        "p adjusted": "p(adj)",
        "Hedges g": "g",
    }
    for i, col in enumerate((*COLUMNS[:-1], "notes")):
        right = i in NUMERIC
        # On a narrow terminal cells wrap at spaces, never inside a number.
        table.add_column(
            short.get(col, col).replace("95%", conf),
            justify="right" if right else "left",
            no_wrap=right,
            overflow="fold",
        )
    notes: dict[str, int] = {}
    previous: tuple[str, str] | None = None
    for row in result.rows:
        cells = compare_cells(row)
        if previous is not None and previous[0] == row.workload:
            # Repeated workload and metric names are left blank, as a person would write them.
            cells[0] = ""
            if previous[1] == row.metric.id:
                cells[1] = ""
        elif previous is not None:
            table.add_section()
        previous = (row.workload, row.metric.id)
        table.add_row(
            # Text, not markup: "[unbounded]" or a configuration's name is no style tag.
            *(Text(c) for c in cells[:VERDICT]),
            _verdict_text(row, cells[VERDICT]),
            _notes_text(row, notes),
        )
    return Group(table, *_compare_footer(result, notes))


# The compact table fits an ordinary terminal; `--wide` and -o csv|json|markdown have it all.
COMPACT_WIDTH = 100


def compare_compact(result: compare.Comparison) -> Constrain:
    """What `compare` prints by default, within COMPACT_WIDTH columns: the method in a line,
    one headline per configuration against the baseline, then per workload and metric each
    configuration's verdict with its change and interval and its valid trials, then the
    invalid trials' reasons with what to change."""
    conf = f"{100 * result.confidence:.0f}%"
    parts: list[Any] = [Text(comparison_heading(result), style="dim"), Text("")]
    # A grid: a headline's wrapped lines hang under its first word, not under the dash.
    heads = Table.grid()
    heads.add_column(no_wrap=True)
    heads.add_column()
    for line in compare.headlines(result):
        heads.add_row("- ", Text(line, style="bold"))
    parts.append(heads)
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    for col in ("metric", "configuration", "valid", f"change [{conf} CI]"):
        table.add_column(col, no_wrap=col.startswith(("change", "valid")), overflow="fold")
    table.add_column("verdict", no_wrap=True)
    previous: tuple[str, str] | None = None
    flagged = 0
    once = compare.measured_once(result)
    for row in result.rows:
        if row.baseline or row.workload in once:
            continue
        workload, metric = row.workload, row.metric.id
        if previous is None or previous[0] != workload:
            # The workload heads its rows: a column of its own would not fit 100 columns.
            if previous is not None:
                table.add_section()
            table.add_row(Text(f"workload {workload}", style="bold"))
        shown_metric = "" if previous == (workload, metric) else metric
        previous = (workload, metric)
        flagged += bool(row.flags)
        table.add_row(
            shown_metric,
            Text(row.configuration),
            f"{row.validity.valid}/{row.validity.trials}" if row.validity.judged else "-",
            Text(row.change_text()),
            _verdict_text(row, row.outcome() + (" !" if row.flags else "")),
        )
    invalid = invalid_trial_lines(result)
    # Wrapped lines keep their indent: the reasons read as items under their heading.
    parts += [Text(""), table]
    if once:
        # A line under the table: in the table's columns its words wrapped into a narrow cell.
        parts.append(
            Text(
                f"workload {', '.join(once)}: measured once a run, no verdict (--wide has the "
                "figures)",
                style="dim",
            )
        )
    parts += [Text(""), *invalid[:1]]
    parts += [Padding(t, (0, 0, 0, 2)) for t in invalid[1:]]
    notes = [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]
    parts += [Text(line, style="yellow") for line in notes]
    if any(r.significant is False and _clear_of_zero(r) for r in result.rows):
        parts.append(
            Text(
                "an interval clear of 0 with no difference: each interval is on its own, the "
                f"verdicts are adjusted together ({result.adjustment_text()})",
                style="dim",
            )
        )
    more = "--wide: every figure (mean, SD, p-values, Hedges' g), -o csv|json|markdown"
    if flagged:
        more = f"!: {flagged} rows carry flags (noise, few trials, Little's law); " + more
    parts.append(Text(more, style="dim"))
    return Constrain(Group(*parts), width=COMPACT_WIDTH)


# --- the paired table (compare --pair-by): a study's AWS-vs-OpenStack layout -----------------


def pairs_heading(result: compare.Pairs) -> str:
    other = ", ".join(result.values)
    return (
        f"{result.metric}: {other} against {result.baseline_value} ({result.pair_by}) per "
        f"{','.join(result.topology_keys) or 'configuration'} and workload; verdict by "
        f"{_test_name(result.test)}, alpha {result.alpha}, {_pairs_adjustment(result)}"
    )


def _pairs_adjustment(result: compare.Pairs) -> str:
    if result.family == 0:
        return "no pair had the valid trials for a verdict"
    family = f"the {result.family} pair{'' if result.family == 1 else 's'} of this table"
    if result.adjust == "none":
        return f"no adjustment for {family}"
    return f"{stats.ADJUSTMENT_NAMES[result.adjust]} across {family}"


# The study reported g without J; at its 5 + 5 repetitions that overstates the effect by 1/J.
_STUDY_DF = 8


def pairs_legend(result: compare.Pairs) -> list[str]:
    conf = f"{100 * result.confidence:.0f}%"
    unit = "percentage points" if result.metric == "cpu" else f"% of {result.baseline_value}'s mean"
    return [
        f"change: {' / '.join(result.values)} minus {result.baseline_value}, in {unit}, with its "
        f"{conf} interval ("
        + (
            "Welch-Satterthwaite)"
            if result.metric == "cpu"
            else "Fieller's, the ratio of two uncertain means)"
            if result.ci == "parametric"
            else "percentile bootstrap)"
        ),
        "g: Hedges' g with the small-sample correction J (pooled SD); the study's g lacked J, "
        f"which overstates the effect by a factor 1/J ({1 / stats.hedges_j(_STUDY_DF):.2f} at "
        "5 + 5 repetitions); -o csv|json give both",
        *(
            ["cpu: the database nodes' busy %, averaged over the nodes, as the study's dstat"]
            if result.metric == "cpu"
            else []
        ),
    ]


def _change_and_interval(row: compare.Row) -> tuple[str, str]:
    """compare's change text ("+12.1% [+8.0, +16.2]") as its two columns."""
    change, _, interval = row.change_text().partition(" [")
    return change, f"[{interval}" if interval else ""


def pairs_table(result: compare.Pairs) -> Constrain:
    """The paired table within COMPACT_WIDTH columns: rows topology x workload, the two means,
    the change with its interval, g and the verdict; the method and the legend around it."""
    conf = f"{100 * result.confidence:.0f}%"
    several = len(result.values) > 1
    unit = result.pairs[0].row.metric.unit if result.pairs else ""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    if result.topology_keys:
        table.add_column(",".join(result.topology_keys), overflow="fold")
    table.add_column("workload", overflow="fold")
    if several:
        table.add_column(result.pair_by, overflow="fold")
    table.add_column(f"{result.baseline_value} ({unit})", justify="right", no_wrap=True)
    table.add_column("other" if several else result.values[0], justify="right", no_wrap=True)
    for col in ("change", f"{conf} CI", "g"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold")
    previous: tuple[tuple[str, str], ...] | None = None
    for p in result.pairs:
        if previous is not None and previous != p.topology:
            table.add_section()
        topology = ",".join(f"{k}={v}" for k, v in p.topology)
        change, interval = _change_and_interval(p.row)
        cells = [
            *([topology if p.topology != previous else ""] if result.topology_keys else []),
            p.label,
            *([p.value] if several else []),
            num(p.base.summary.mean),
            num(p.row.summary.mean),
            change,
            interval,
            _g(p.row),
        ]
        previous = p.topology
        table.add_row(*(Text(c) for c in cells), _verdict_text(p.row, p.row.outcome()))
    parts: list[Any] = [Text(pairs_heading(result), style="dim"), Text(""), table, Text("")]
    parts += [Text(line, style="dim") for line in pairs_legend(result)]
    notes = [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]
    parts += [Text(line, style="yellow") for line in notes]
    if any(p.row.significant is False and _clear_of_zero(p.row) for p in result.pairs):
        parts.append(
            Text(
                "an interval clear of 0 with no difference: each interval is on its own, the "
                f"verdicts are adjusted together ({_pairs_adjustment(result)})",
                style="dim",
            )
        )
    parts.append(
        Text("-o csv|json|markdown: every column (n, SD, p-values, g without J)", style="dim")
    )
    return Constrain(Group(*parts), width=COMPACT_WIDTH)


def pairs_notes(result: compare.Pairs) -> list[str]:
    lines = [pairs_heading(result), *pairs_legend(result)]
    return [*lines, *(f"not comparable: {r}" for r in result.incomparable), *result.notes]


def pairs_csv(result: compare.Pairs) -> str:
    return csv_text(result.records(), comments=pairs_notes(result))


def pairs_json(result: compare.Pairs) -> str:
    return json.dumps(result.to_dict(), indent=2, default=_json_default) + "\n"


def pairs_markdown(result: compare.Pairs) -> str:
    notes = [f"{_md(line)}  " for line in pairs_notes(result)]
    return "\n".join(notes) + "\n\n" + rows_markdown(result.records())


def _clear_of_zero(row: compare.Row) -> bool:
    """The row's change interval lies on one side of zero."""
    d = row.difference
    if d is None:
        return False
    low, high = (d.ci_low, d.ci_high) if row.metric.points else (d.relative_ci or (None, None))
    return low is not None and high is not None and (low > 0 or high < 0)


def invalid_trial_lines(result: compare.Comparison) -> list[Text]:
    """Per validity reason: how many trials of which configurations and workloads it made
    invalid, and what to change (the results library's advice)."""
    cells = {(r.configuration, r.workload): r.validity for r in result.rows}
    found: dict[str, list[tuple[str, str, int]]] = {}
    for (config, workload), cell in cells.items():
        for name, n in cell.reasons:
            found.setdefault(name, []).append((config, workload, n))
    if not found:
        return []
    out = [Text("invalid trials (left out of the figures unless --include-invalid):")]
    for name, where in found.items():
        total = sum(n for _, _, n in where)
        places = ", ".join(f"{c} on {w}: {n}" for c, w, n in where)
        line = f"{name}, {total} trial{'s' if total > 1 else ''} ({places})"
        tip = _validity.advice(name)
        out.append(Text(line + (f": {tip}" if tip else ""), style="yellow"))
    return out


def _verdict_text(row: compare.Row, verdict: str) -> Text:
    style = ""
    if row.significant:
        style = "green" if "better" in row.verdict else "red"
    return Text(verdict, style=style or ("dim" if row.baseline else ""))


def _notes_text(row: compare.Row, notes: dict[str, int]) -> Text:
    """Short flags inline, longer ones as [n] references; ``notes`` numbers them across rows."""
    inline = [_inline_flag(f) for f in row.flags]
    refs = [
        notes.setdefault(f, len(notes) + 1) for f, i in zip(row.flags, inline, strict=True) if not i
    ]
    shown = [i for i in inline if i] + [f"[{n}]" for n in refs]
    return Text(" ".join(shown), style="yellow")


def _compare_footer(result: compare.Comparison, notes: Mapping[str, int]) -> list[Text]:
    """The legend, the numbered notes and what could not be compared, under the table."""
    parts: list[Text] = []
    if len(result.rows) > 1:
        parts.extend(Text(line, style="dim") for line in comparison_legend(result))
    if any(f.startswith("CV ") for r in result.rows for f in r.flags):
        parts.append(
            Text(
                f"CV: the coefficient of variation is over {100 * compare.CV_LIMIT:.0f}% (noisy: "
                "more repetitions or a quieter machine)",
                style="yellow",
            )
        )
    for text, n in notes.items():
        parts.append(Text(f"[{n}] {text}", style="yellow"))
    for line in [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]:
        parts.append(Text(line, style="yellow"))
    return parts


def _inline_flag(flag: str) -> str:
    """Flags short enough for the notes column ("CV 29%", "n=2"); the rest become notes."""
    if flag.startswith("CV "):
        return " ".join(flag.split(" ")[:2])
    if flag.startswith("n="):
        return flag.split(" ", maxsplit=1)[0]
    return ""


def _test_name(test: str) -> str:
    return "Welch's t-test" if test == "welch" else "Mann-Whitney U test"


def compare_records(result: compare.Comparison) -> list[dict[str, Any]]:
    """Rows as flat records: grouped by keys, each key is a column of its own after the
    configuration's name; the validity as the table's cell says it ("3/4 valid (NoisyNode 1)")
    beside its counts, not as a nested mapping."""
    out = []
    for row, r in zip(result.rows, result.row_dicts(), strict=True):
        group = r.pop("group", {})
        r.pop("validity", None)
        at = list(r).index("configuration") + 1
        items = list(r.items())
        cell = row.validity
        validity = {"validity": cell.text(), "validTrials": cell.valid, "trials": cell.trials}
        out.append(dict([*items[:at], *group.items(), *items[at:], *validity.items()]))
    return out


def compare_csv(
    result: compare.Comparison, provenance: Sequence[_provenance.Difference] | None = None
) -> str:
    """One row per comparison, after `# ` lines with what the table and markdown say around
    their rows: the method, the legend, the notes, the provenance against the baseline. Comment
    lines, not columns: they are about the whole comparison, so a column would repeat them on
    every row; `pandas.read_csv(f, comment="#")` skips them, and a spreadsheet shows them as
    text above the header. No cell holds a `#` (it would cut the row short for pandas)."""
    return csv_text(compare_records(result), comments=compare_notes(result, provenance))


def compare_notes(
    result: compare.Comparison, provenance: Sequence[_provenance.Difference] | None = None
) -> list[str]:
    """The lines around a comparison's rows, as plain text: the heading, the legend, what is
    not comparable, the notes, the provenance against the baseline (`!`: it changes results
    by itself)."""
    lines = [comparison_heading(result), *comparison_legend(result, short=False)]
    lines += [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]
    if provenance is not None:
        lines.append(f"provenance against {result.baseline}:")
        lines += [
            f"{'!' if d.changes_results else '-'} {d.note(result.baseline)}" for d in provenance
        ] or ["- no difference in what ran (where both sides know it)"]
    return [" ".join(line.split()) for line in lines]


def compare_json(
    result: compare.Comparison,
    provenance: Sequence[_provenance.Difference] | None = None,
    paired: duet.Result | None = None,
) -> str:
    doc = result.to_dict()
    if provenance is not None:
        doc["provenanceDifferences"] = [d.as_json() for d in provenance]
    if paired is not None:
        doc["duet"] = paired.to_dict()
    return json.dumps(doc, indent=2, default=_json_default) + "\n"


def provenance_differences(
    differences: Sequence[_provenance.Difference], baseline: str
) -> list[Text]:
    """compare's provenance notes: what ran differently from the baseline; the differences that
    change results by themselves (version, FCV, instance type, cache) flagged."""
    out = [Text(f"Provenance against {baseline}", style="bold italic")]
    if not differences:
        out.append(Text("  no difference in what ran (where both sides know it)"))
    for d in differences:
        style = "bold red" if d.changes_results else ""
        out.append(Text(f"  {'!' if d.changes_results else '-'} {d.note(baseline)}", style=style))
    return out


def provenance_section(prov: Mapping[str, Any] | None) -> list[Any]:
    """describe's summary of what ran (status.provenance, or the archive's whole document)."""
    parts: list[Any] = [Text("Provenance", style="bold italic")]
    if not prov:
        parts.append(Text("  none recorded (the run has no archive, or it predates provenance)"))
        return parts
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in _provenance.fields(prov).items():
        grid.add_row(f"  {_provenance.FIELDS[key]}", value)
    summary = _provenance.summary(prov) if "apiVersion" in prov else prov
    if "imageDigests" in summary:
        grid.add_row("  image digests", str(summary["imageDigests"]))
    seeds = prov.get("seeds")
    if seeds:
        grid.add_row("  seeds", json.dumps(seeds, sort_keys=True))
    window = (prov.get("prometheus") or {}).get("window")
    if window:
        scrape = prov["prometheus"].get("scrapeIntervalSeconds")
        grid.add_row(
            "  Prometheus window", f"{window['start']} to {window['end']}, scrape {scrape}s"
        )
    for note in prov.get("missing") or []:
        grid.add_row("  not observed", Text(str(note), style="yellow"))
    parts.append(grid)
    return parts


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def compare_markdown(
    result: compare.Comparison, provenance: Sequence[_provenance.Difference] | None = None
) -> str:
    conf = f"{100 * result.confidence:.0f}%"
    lines = [
        f"Baseline **{_md(result.baseline)}**; verdict by {_test_name(result.test)} at alpha "
        f"{result.alpha}, {result.adjustment_text()} (a change is shown only where significant "
        f"after adjustment, else ~); intervals {conf}.",
        "",
        *(f"{_md(line)}  " for line in comparison_legend(result, short=False)),
        "",
        "| "
        + " | ".join(
            result.configuration_header() if c == "configuration" else c.replace("95%", conf)
            for c in COLUMNS
        )
        + " |",
        "|" + "|".join("---:" if i in NUMERIC else "---" for i in range(len(COLUMNS))) + "|",
    ]
    for row in result.rows:
        lines.append("| " + " | ".join(_md(c) for c in compare_cells(row)) + " |")
    for line in [*(f"not comparable: {r}" for r in result.incomparable), *result.notes]:
        lines.append("")
        lines.append(f"> {_md(line)}")
    if provenance is not None:
        lines += ["", f"**Provenance against {_md(result.baseline)}**", ""]
        lines += [
            f"- {'**' if d.changes_results else ''}{_md(d.note(result.baseline))}"
            f"{'**' if d.changes_results else ''}"
            for d in provenance
        ] or ["- no difference in what ran (where both sides know it)"]
    return "\n".join(lines) + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


# --- list --------------------------------------------------------------------------------------


def list_rows(runs: Sequence[LoadedRun], now: datetime | None = None) -> list[dict[str, Any]]:
    now = now or datetime.now(UTC)
    out = []
    for r in runs:
        o = records.overview(r.run, r.origin)
        out.append(
            {
                "namespace": o.namespace,
                "name": o.name,
                "uid": o.uid,
                "origin": o.origin,
                "phase": o.phase,
                "progress": o.progress,
                "percent": o.percent,
                "current": o.current,
                "target": o.target,
                "topology": o.topology,
                "version": o.version,
                "platform": o.platform,
                "labels": dict(o.labels),
                "started": o.started.isoformat() if o.started else None,
                "durationSeconds": o.duration(now),
                "validity": validity_count(r.run),
            }
        )
    return out


def validity_count(run: Mapping[str, Any]) -> str:
    """Of a run's measured steps: "5/6 valid", "unjudged" (no verdicts), "-" (none measured)."""
    measured = records.measured(run)
    if not measured:
        return "-"
    if not any(s.validity.judged for s in measured):
        return "unjudged"
    return f"{sum(1 for s in measured if s.validity.valid)}/{len(measured)} valid"


def list_table(rows: Sequence[Mapping[str, Any]], show_origin: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    columns = ["NAMESPACE", "NAME", "PHASE", "PROGRESS", "TARGET", "TOPOLOGY", "VERSION"]
    columns += ["PLATFORM", "LABELS", "VALID", "STARTED", "DURATION"]
    if show_origin:
        columns.append("ORIGIN")
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows:
        started = records.parse_time(r["started"])
        cells = [
            r["namespace"],
            r["name"],
            Text(r["phase"], style=_phase_style(r["phase"])),
            r["progress"],
            r["target"],
            r["topology"],
            r["version"],
            r["platform"],
            ",".join(f"{k}={v}" for k, v in sorted(r["labels"].items())) or "-",
            r["validity"],
            when(started),
            duration(r["durationSeconds"]),
        ]
        if show_origin:
            cells.append(r["origin"])
        table.add_row(*cells)
    return table


def _phase_style(phase: str) -> str:
    return {"Succeeded": "green", "Failed": "red"}.get(phase, "cyan")


def csv_text(rows: Sequence[Mapping[str, Any]], comments: Iterable[str] = ()) -> str:
    """The one CSV writer of the CLI: `# ` comment lines, then a header of every row's keys in
    order of appearance, then the rows; a list cell as `x;y`, a mapping as `k=v;k=v` (no JSON or
    Python reprs in a spreadsheet)."""
    fields: list[str] = []
    for r in rows:
        fields.extend(k for k in r if k not in fields)
    out = io.StringIO()
    for line in comments:
        out.write(f"# {line}\n")
    if not fields:
        return out.getvalue()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _csv_cell(v) for k, v in r.items()} for r in rows)
    return out.getvalue()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, Mapping):
        return ";".join(f"{k}={_csv_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ";".join(str(_csv_cell(v)) for v in value)
    return value


def rows_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---" for _ in keys) + "|"]
    for r in rows:
        cells = [
            ",".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else str(v)
            for v in r.values()
        ]
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


# --- describe ----------------------------------------------------------------------------------


def describe(run: LoadedRun, confidence: float = stats.DEFAULT_CONFIDENCE) -> Group:
    obj = run.run
    measured = records.measured(obj)
    parts: list[Any] = [_overview_grid(records.overview(obj, run.origin)), _plan_table(obj)]
    parts += validity_notes(records.steps(obj))
    if measured:
        parts.append(_summary_table(run, confidence))
        parts.append(_cpu_table(measured))
    profiled = [s for s in measured if s.resources]
    if profiled:
        parts.append(_profile_table(profiled))
    loads = [s for s in records.steps(obj) if s.distribution]
    if loads:
        parts.append(_distribution_table(loads))
    parts += slow_operations_parts(obj)
    disk = disk_use_rows(obj)
    if disk:
        parts.append(disk_use_table(DISK_USE_SECTION, disk))
    if (obj.get("status") or {}).get("knee"):
        parts.append(knee_table(obj))
    if (obj.get("status") or {}).get("cost"):
        parts.append(cost_table(obj))
    snapshot = (obj.get("status") or {}).get("clusterSnapshot")
    if snapshot:
        parts.append(Text("Cluster snapshot", style="bold italic"))
        parts.append(Text(yaml.safe_dump(snapshot, sort_keys=False).rstrip()))
    parts.extend(provenance_section(run.provenance()))
    parts.append(_conditions_table(obj))
    warn = records.warnings(obj)
    parts.append(Text("Warnings", style="bold italic"))
    parts.extend(Text(f"  ! {w}", style="yellow") for w in warn)
    if not warn:
        parts.append(Text("  none"))
    return Group(*parts)


def knee_rows(run: Mapping[str, Any]) -> list[dict[str, str]]:
    """status.knee per workload, as text cells (describe and the report's table)."""
    out = []
    for k in ((run.get("status") or {}).get("knee") or {}).get("workloads") or ():
        tp = k.get("throughput") or {}
        lat = k.get("latencyMs") or {}
        ci = (
            f"{num(tp.get('ciLow'))} .. {num(tp.get('ciHigh'))}"
            if tp.get("ciLow") is not None
            else "-"
        )
        out.append(
            {
                "workload": str(k.get("workload")),
                "knee (offered ops/s)": num(k.get("offeredOpsPerSecond"))
                if k.get("offeredOpsPerSecond") is not None
                else "none",
                "achieved ops/s": f"{num(tp.get('mean'))} (n {tp.get('n', 0)})" if tp else "-",
                "CI": ci,
                f"{k.get('percentile')} ms": num(lat.get("mean")) if lat else "-",
                "limit ms": num(k.get("limitMs")),
                "probes / grid": f"{k.get('probes')} / {k.get('gridProbes')}",
                "search": str(k.get("reason", "")),
            }
        )
    return out


def knee_table(run: Mapping[str, Any]) -> Table:
    rows = knee_rows(run)
    # The percentile's column is named after it: the same in every row of one run.
    table = _titled("Saturation knee", rows[0].keys() if rows else ("workload",))
    for row in rows:
        table.add_row(*row.values())
    return table


def cost_table(run: Mapping[str, Any]) -> Table:
    """status.cost: cost per million operations per workload, and per step."""
    costs = (run.get("status") or {}).get("cost") or {}
    currency = str(costs.get("currency") or "")
    table = _titled(
        f"Cost ({currency} per million operations; node-hours at the given prices)",
        ("workload / step", "nodes", "node-hours", f"per Mops ({currency})"),
    )
    for w in costs.get("workloads") or ():
        table.add_row(str(w.get("workload")), "", "", num(w.get("perMillionOperations")))
    for entry in (run.get("status") or {}).get("steps") or ():
        c = entry.get("cost")
        if not isinstance(c, Mapping):
            continue
        nodes = ", ".join(f"{n} {t}" for t, n in (c.get("nodes") or {}).items())
        table.add_row(
            f"  {entry.get('label')}",
            nodes or str(c.get("error", "")),
            num(c.get("nodeHours")),
            num(c.get("perMillionOperations")),
        )
    for problem in costs.get("problems") or ():
        table.add_row(Text(f"  ! {problem}", style="yellow"), "", "", "")
    return table


def _overview_grid(o: records.Overview) -> Table:
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for k, v in (
        ("Name", f"{o.namespace}/{o.name}"),
        ("Origin", o.origin),
        ("Phase", Text(o.phase, style=_phase_style(o.phase))),
        ("Progress", f"{o.progress} ({o.current})" if o.current else o.progress),
        ("Target", o.target),
        ("Topology", o.topology),
        ("Version", o.version),
        ("Platform", o.platform),
        ("Labels", ", ".join(f"{k}={v}" for k, v in sorted(o.labels.items())) or "-"),
        ("Started", when(o.started)),
        ("Duration", duration(o.duration())),
    ):
        head.add_row(k, v)
    return head


def _titled(title: str, columns: Iterable[str]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for c in columns:
        table.add_column(c, overflow="fold")
    return table


def _plan_table(obj: Mapping[str, Any]) -> Table:
    plan = _titled(
        "Plan and per-step results",
        (
            "#",
            "step",
            "phase",
            "time",
            "window",
            "ops/s",
            "clients (ops/s, start skew)",
            "operations (avg / p99 us)",
            "Little",
            "validity",
            "message",
        ),
    )
    for s in records.steps(obj):
        res = s.result or {}
        window = records.window_seconds(res) if res else None
        plan.add_row(
            str(s.index),
            s.label,
            Text(s.phase, style=_phase_style(s.phase)),
            duration(s.seconds),
            f"{num(window)}s" if window else "",
            num(records.throughput(res)) if s.result else "",
            _clients_cell(res),
            _operations_cell(res),
            _little_cell(res),
            _validity_cell(s.validity) if s.kind == "run" and s.result else "",
            s.message or "",
        )
    return plan


def _validity_cell(verdict: _validity.Validity) -> Text:
    """`valid`, `unjudged`, or `invalid: ...` (the operator's verdict, spec.validity), accepted
    reasons said so; the attempt when it is a re-run. What was seen and what to change follow
    the table (validity_notes): a cell is too narrow for them."""
    text = verdict.text()
    if verdict.warmup_seconds is not None and verdict.valid:
        text += f" (warm-up {verdict.warmup_seconds:g} s)"
    if verdict.attempt > 1:
        text += f" [attempt {verdict.attempt}]"
    style = "" if not verdict.judged else ("green" if verdict.valid else "red")
    return Text(text, style=style)


def validity_notes(steps: Sequence[records.StepView]) -> list[Text]:
    """Under the plan: each judged trial's reasons with what was seen, then per reason that
    made trials invalid, what to change (the results library's advice)."""
    out: list[Text] = []
    for s in steps:
        for r in s.validity.reasons:
            accepted = " (accepted)" if r.accepted else ""
            out.append(Text(f"  {s.label}: {r.reason}{accepted}: {r.message}", style="yellow"))
    kinds = dict.fromkeys(n for s in steps for n in s.validity.reason_names)
    out += [Text(f"  to change: {_validity.advice_line(n)}") for n in kinds if n]
    return [Text("Trial validity", style="bold italic"), *out] if out else []


def _operations_cell(res: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{name} {num(op.get('avg'))}/{num(op.get('p99'))}"
        for name, op in sorted((res.get("operations") or {}).items())
    )


def _little_cell(res: Mapping[str, Any]) -> str:
    ll = records.littles_law(res)
    little = "-" if not ll else ("ok" if ll.get("ok") else f"ratio {ll.get('ratio')}")
    if ll and not ll.get("ok") and ll.get("diagnosis"):
        little += f": {ll['diagnosis']}"
    return little


def _clients_cell(res: Mapping[str, Any]) -> str:
    return ", ".join(
        f"#{c.get('index')} {num(c.get('throughput'))}"
        + (f" +{num(c.get('startSkewSeconds'))}s" if c.get("startSkewSeconds") else "")
        for c in res.get("perClient") or []
    )


def _summary_table(run: LoadedRun, confidence: float) -> Table:
    single = [compare.RunInput(run.key or run.name, run.run)]
    result = compare.compare(single, metrics=("throughput", "avg", "p99"), confidence=confidence)
    return summary_table(result)


def summary_table(result: compare.Comparison) -> Table:
    """One configuration's figures per workload and metric, within 100 columns: describe's
    summary, and compare's answer when there is nothing to judge them against."""
    summary = Table(
        title=f"Per-workload summary (mean ± SD, {100 * result.confidence:.0f}% CI, n)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for c in ("workload", "metric", "n", "mean ± SD", "CI", "CV"):
        summary.add_column(c)
    for row in result.rows:
        cv = row.summary.cv
        summary.add_row(
            row.workload,
            f"{row.metric.id} ({row.metric.unit})",
            str(row.summary.n),
            _mean_sd(row),
            _ci(row),
            f"{100 * cv:.1f}%" if cv is not None else "-",
        )
    return summary


def _cpu_table(measured: Sequence[records.StepView]) -> Table:
    cpu = _titled(
        "CPU per node group (busy % of all CPUs: avg / max)",
        ("step", "database nodes", "client nodes", "per node"),
    )
    for step in measured:
        figures = step.cpu or {}
        nodes = ", ".join(
            f"{n['name']} ({n.get('role')}) {num(n.get('avg'))}" for n in figures.get("nodes") or []
        )
        cpu.add_row(
            step.label,
            _group(figures.get("cluster")),
            _group(figures.get("clients")),
            nodes or "-",
        )
    return cpu


def _profile_table(profiled: Sequence[records.StepView]) -> Table:
    profile = _titled(
        "Disk, network and memory per node group (avg; max where kept)",
        ("step", "database nodes", "client nodes", "missing"),
    )
    for step in profiled:
        figures = step.resources or {}
        profile.add_row(
            step.label,
            _resource_group(figures.get("cluster")),
            _resource_group(figures.get("clients")),
            ", ".join(figures.get("missing") or []) or "-",
        )
    return profile


DISTRIBUTION_COLUMNS = ("run", "shard key", "documents", "per shard: % of documents (chunks)")


def distribution_rows(runs: Sequence[LoadedRun]) -> list[list[str]]:
    """One compact row per sharded run: its key and the shards after its last load."""
    rows = []
    for run in runs:
        dist = records.distribution(run.run)
        if not dist:
            continue
        shares = ", ".join(
            f"{s.get('shard')} {s.get('percent', 0):.1f}% ({s.get('chunks')})"
            for s in dist.get("shards") or []
        )
        key = records.shard_key(run.run)
        rows.append([run.key or run.name, key, str(dist.get("documents", "")), shares])
    return rows


def distribution_summary(runs: Sequence[LoadedRun]) -> Table | None:
    rows = distribution_rows(runs)
    if not rows:
        return None
    table = _titled("Shard distribution after the last load", DISTRIBUTION_COLUMNS)
    for row in rows:
        table.add_row(*row)
    return table


def _configuration(run: LoadedRun) -> str:
    """What a run is a trial of: its experiment cell (shardKey=sensor-ts), else its key."""
    labels = (run.run.get("spec") or {}).get("labels") or {}
    return str(labels.get("experiment.cell") or run.key or run.name)


def _shard_column(shard: str) -> str:
    """`shard0` of `monitoring-shard0`: the column a shard shares across the runs' clusters."""
    return shard.rpartition("-")[2] or shard


def shard_rows(runs: Sequence[LoadedRun]) -> list[dict[str, Any]]:
    """Per sharded run, after its last load: its configuration, key, documents, and each
    shard's documents and chunks (the shard-key study's table; -o json|csv|markdown)."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        dist = records.distribution(run.run)
        if not dist:
            continue
        row: dict[str, Any] = {
            "configuration": _configuration(run),
            "run": run.key or run.name,
            "shardKey": records.shard_key(run.run),
            "documents": dist.get("documents"),
        }
        for share in dist.get("shards") or []:
            column = _shard_column(str(share.get("shard")))
            row[f"{column} documents"] = share.get("documents")
            row[f"{column} chunks"] = share.get("chunks")
        rows.append(row)
    # A shard holding no chunk of a run's collection is left out of its distribution: it holds
    # none of it (the other runs name it).
    columns = dict.fromkeys(k for r in rows for k in r)
    return [{k: r.get(k, 0) for k in columns} for r in rows]


def shards_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """shard_rows() within 100 columns: one column per shard, `documents (chunks)`."""
    shards = list(
        dict.fromkeys(
            k.removesuffix(" documents") for r in rows for k in r if k.endswith(" documents")
        )
    )
    table = _titled(
        "Documents (chunks) per shard after the last load",
        ("configuration", "shard key", "documents", *shards),
    )
    for r in rows:
        table.add_row(
            str(r["configuration"]),
            str(r["shardKey"]),
            str(r["documents"]),
            *(f"{r[f'{s} documents']} ({r[f'{s} chunks']})" for s in shards),
        )
    return table


def _distribution_table(loads: Sequence[records.StepView]) -> Table:
    table = _titled(
        "Shard distribution after each load", ("step", "shard", "documents", "%", "data", "chunks")
    )
    for step in loads:
        dist = step.distribution or {}
        for i, share in enumerate(dist.get("shards") or []):
            size = share.get("dataBytes")
            table.add_row(
                step.label if i == 0 else "",
                str(share.get("shard")),
                str(share.get("documents")),
                f"{share.get('percent', 0):.1f}",
                "-" if size is None else f"{size / 2**20:.1f} MiB",
                str(share.get("chunks")),
            )
    return table


SLOW_OPERATIONS_SECTION = "Slow operations"
DISK_USE_SECTION = "Disk use per collection"
DESCRIBE_SLOW_PER_STEP = 5  # describe's rows per step; status keeps up to spec.profiler.top


def slow_operations_section(ops: Sequence[records.SlowOp]) -> list[Any]:
    """Each profiled step's slowest operations (the command's shape, never its values)."""
    shown: list[records.SlowOp] = []
    per_step: dict[str, int] = {}
    for op in ops:
        per_step[op.step] = per_step.get(op.step, 0) + 1
        if per_step[op.step] <= DESCRIBE_SLOW_PER_STEP:
            shown.append(op)
    sharded = any(op.shard for op in ops)
    columns = ("step", "ms", "op", *(("shard",) if sharded else ()), "plan", "docs/keys/ret")
    table = _titled(SLOW_OPERATIONS_SECTION, (*columns, "shape"))
    table.columns[-3].max_width = 18  # the plan wraps first: the shape is what is matched
    last = None
    for op in shown:
        cells = [
            op.step if op.step != last else "",
            str(op.millis),
            op.op,
            *([op.shard or "-"] if sharded else []),
            op.plan_summary or "-",
            examined(op),
            op.shape,
        ]
        table.add_row(*cells)
        last = op.step
    parts: list[Any] = [table]
    hidden = len(ops) - len(shown)
    if hidden:
        parts.append(
            Text(f"  {hidden} more (at most {DESCRIBE_SLOW_PER_STEP} a step here): -o yaml")
        )
    return parts


def slow_operations_parts(obj: Mapping[str, Any]) -> list[Any]:
    """The slow operations section of a profiled run; a line when none was slow (said, not left
    out: an empty section reads as a profiler that never ran); nothing for a run not profiled."""
    slow = records.slow_operations(obj)
    if slow:
        return slow_operations_section(slow)
    if profiler_captured(obj):
        slow_ms = (obj.get("spec", {}).get("profiler") or {}).get("slowMs")
        return [Text(f"{SLOW_OPERATIONS_SECTION}: none took {slow_ms} ms or more")]
    return []


def profiler_captured(obj: Mapping[str, Any]) -> bool:
    """Whether the run's profiler ran on its measured steps (condition Profiled True)."""
    return any(
        c.get("type") == "Profiled" and c.get("status") == "True" for c in records.conditions(obj)
    )


def examined(op: records.SlowOp) -> str:
    """Documents examined / keys examined / returned, `-` where the server left one out."""
    counts = (op.docs_examined, op.keys_examined, op.nreturned)
    return "/".join("-" if v is None else str(v) for v in counts)


def disk_use_rows(run: Mapping[str, Any]) -> list[records.DiskUse]:
    """After each load and after the last step that measured it: a measured step adds to the
    collection only what its inserts and updates write."""
    rows = records.disk_use(run)
    loads = {s.label for s in records.steps(run) if s.kind == "load"}
    last = rows[-1].step if rows else None
    return [r for r in rows if r.step in loads or r.step == last]


def size_text(size: int) -> str:
    """Bytes as GiB, MiB or KiB, whichever keeps a digit before the point."""
    for unit, power in (("GiB", 30), ("MiB", 20)):
        if size >= 2**power:
            return f"{size / 2**power:.1f} {unit}"
    return f"{size / 2**10:.0f} KiB"


def disk_use_table(title: str, rows: Sequence[records.DiskUse]) -> Table:
    """Documents, data (uncompressed), storage (on disk) and index bytes per collection, its
    total then its shards."""
    table = _titled(
        title, ("step", "collection", "shard", "documents", "data", "storage", "indexes")
    )
    last = None
    for r in rows:
        table.add_row(
            r.step if r.step != last else "",
            r.collection if r.shard is None else "",
            r.shard or "total",
            str(r.documents),
            size_text(r.data_bytes),
            size_text(r.storage_bytes),
            size_text(r.index_bytes),
        )
        last = r.step
    return table


def _conditions_table(obj: Mapping[str, Any]) -> Table:
    conds = _titled("Conditions", ("type", "status", "reason", "message"))
    for cond in records.conditions(obj):
        conds.add_row(
            str(cond.get("type")),
            str(cond.get("status")),
            str(cond.get("reason")),
            str(cond.get("message", "")),
        )
    return conds


def _group(g: Mapping[str, Any] | None) -> str:
    if not g:
        return "missing"
    return f"{num(g.get('avg'))} / {num(g.get('max'))} ({g.get('nodes')} nodes)"


def _resource_group(g: Mapping[str, Any] | None) -> str:
    """'disk writeIops 200 utilisationPercent 33.3/91.3; memory usedPercent 50/70' (a figure
    and its max, when kept, as avg/max)."""
    if not g:
        return "missing"
    parts = []
    for part, figures in g.items():
        if not isinstance(figures, Mapping):
            continue
        shown = [
            f"{key} {num(value)}"
            + (f"/{num(figures[key + 'Max'])}" if figures.get(key + "Max") is not None else "")
            for key, value in figures.items()
            if not key.endswith("Max") and value is not None
        ]
        if shown:
            parts.append(f"{part} " + " ".join(shown))
    return "; ".join(parts) or "missing"


def yaml_dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False)


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def duet_table(paired: Mapping[str, Any]) -> Table:
    """A duet's paired comparison (results.duet's dict: the CLI's, or an experiment's status):
    B against A per workload and metric, from the pairs' per-second figures."""
    valid = f"{paired.get('validPairs')}/{len(paired.get('pairs') or ())} pairs valid"
    table = Table(
        title=f"Duet: {paired.get('other')} against {paired.get('baseline')}, paired per second "
        f"({valid})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for c in ("workload", "metric", "rounds", "seconds", "change", "interval", "verdict"):
        table.add_column(c)
    for r in paired.get("rows") or ():
        table.add_row(
            str(r.get("workload")),
            str(r.get("metric")),
            str(r.get("rounds")),
            str(r.get("intervals")),
            _pct(r.get("changePercent")),
            f"[{_pct(r.get('lowPercent'))}, {_pct(r.get('highPercent'))}]",
            str(r.get("verdict")),
        )
    left_out = [
        f"left out: {p.get('duet')} {p.get('workload')}: {why.get('reason')} ({why.get('message')})"
        for p in paired.get("pairs") or ()
        for why in p.get("reasons") or ()
    ]
    if left_out:
        table.caption = "\n".join(left_out)
        table.caption_justify = "left"
    return table
