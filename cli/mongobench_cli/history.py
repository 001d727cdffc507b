"""`mongobench history`: an archive's series and change points, as text, JSON, a Grafana export
and an HTML page with one plot per series, and the gate's verdict (`--fail-on regression`) with
the acknowledgements (the archive's history/acks.yaml and --acks files). The series, change
points and verdict come from the results library (mongobench_results.history); this module reads
the archive and the files and presents them."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich import box
from rich.table import Table

from mongobench_cli.render import num
from mongobench_cli.sources import SourceError
from mongobench_results import history


@dataclass(frozen=True)
class Judged:
    """The archive's history and the gate's verdict over its changes."""

    update: history.Update
    verdict: history.Verdict


def update(
    ref: str,
    series_keys: Sequence[str],
    metrics: Sequence[str],
    method: history.Method,
    *,
    acks: Sequence[Path] = (),
    endpoint_url: str | None = None,
    region: str | None = None,
    rebuild: bool = False,
    write: bool = True,
) -> Judged:
    """The archive's history (S3 URL or folder), its cache updated with the runs added since,
    judged with the archive's acknowledgements and those of the `acks` files."""
    import mongobench_archive as archive  # noqa: PLC0415

    if "://" not in ref:
        ref = str(Path(ref).expanduser())
    try:
        given = [a for path in acks for a in read_acks(path)]
        root = archive.open_root(ref, endpoint_url=endpoint_url, region=region)
        u = history.update_archive(root, series_keys, metrics, method, rebuild=rebuild, write=write)
        known = [*history.archive_acks(root, yaml.safe_load, yaml.YAMLError), *given]
    except archive.ArchiveError as exc:
        raise SourceError(str(exc)) from exc
    except history.HistoryError as exc:
        raise SourceError(str(exc)) from exc
    return Judged(u, history.verdict(u.changes, known))


def read_acks(path: Path) -> list[history.Ack]:
    try:
        return history.parse_acks(yaml.safe_load(path.read_text()), str(path))
    except OSError as exc:
        raise SourceError(f"--acks {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise SourceError(f"--acks {path}: not YAML: {exc}") from exc


def summary_line(u: history.Update) -> str:
    points = sum(len(s.points) for s in u.history.series.values())
    return (
        f"{len(u.history.runs)} runs, {len(u.history.series)} series, {points} points "
        f"({u.new_runs} runs added{' to the cache' if u.from_cache else ''}); "
        f"{len(u.changes)} change points (Otava E-Divisive means, p < "
        f"{u.history.method.max_pvalue:g}, window {u.history.method.window})"
    )


def changes_table(u: history.Update, v: history.Verdict) -> Table:
    """Every change point; an acknowledged one says so under its change, apart."""
    t = Table(box=box.SIMPLE_HEAD, title="change points", title_justify="left")
    for col in ("series", "change", "mean before -> after", "run before", "run after", "p"):
        t.add_column(col)
    t.add_column("provenance changed", overflow="fold")
    for c in u.changes:
        direction = "worse" if c.regression else "better"
        ack = v.ack_of(c)
        t.add_row(
            c.series.id,
            f"{100 * c.magnitude:+.1f}% ({direction})" + (f"\n{ack.text()}" if ack else ""),
            f"{num(c.mean_before)} -> {num(c.mean_after)} {c.series.unit}",
            f"{c.before.run} ({c.before.time})",
            f"{c.after.run} ({c.after.time})",
            f"{c.pvalue:.2g}",
            c.provenance_text(),
        )
    return t


def to_json(j: Judged) -> str:
    u, v = j.update, j.verdict
    doc: dict[str, Any] = {
        "method": u.history.method.to_dict(),
        "seriesKeys": list(u.history.series_keys),
        "runs": len(u.history.runs),
        "newRuns": u.new_runs,
        "series": [
            {
                "id": s.id,
                "key": dict(s.key),
                "unit": s.unit,
                "higherIsBetter": s.higher_is_better,
                "points": [p.to_dict() for p in s.points],
            }
            for _, s in sorted(u.history.series.items())
        ],
        "changes": [_change_dict(c, v) for c in u.changes],
        "regressions": [_change_dict(c, v) for c in v.standing],
        "acknowledgedRegressions": [_change_dict(c, v) for c, _ in v.acknowledged],
        "unmatchedAcknowledgements": [a.to_dict() for a in v.unmatched],
    }
    return json.dumps(doc, indent=2) + "\n"


def write_grafana(u: history.Update, path: Path) -> None:
    try:
        path.write_text(json.dumps(history.grafana_rows(u.history, u.changes), indent=1))
    except OSError as exc:
        raise SourceError(f"cannot write {path}: {exc.strerror}") from exc


def _change_dict(c: history.Change, v: history.Verdict) -> dict[str, Any]:
    ack = v.ack_of(c)
    return {**c.to_dict(), "acknowledged": ack.to_dict() if ack else None}


# The gate's lines fit a CI log at this width.
WIDTH = 100


def _wrap(line: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def change_lines(c: history.Change, head: str) -> list[str]:
    """A change for the log, in at most WIDTH columns: the series, the change and its size,
    the runs either side."""
    return [
        *_wrap(f"{head}: {c.series.id}"),
        *_wrap(
            f"  change {100 * c.magnitude:+.1f}% ({'worse' if c.regression else 'better'}): "
            f"{num(c.mean_before)} -> {num(c.mean_after)} {c.series.unit}, p {c.pvalue:.2g}"
        ),
        *_wrap(f"  before {c.before.run} ({c.before.time})"),
        *_wrap(f"  after  {c.after.run} ({c.after.time}, uid {c.after.uid})"),
    ]


def gate_lines(v: history.Verdict) -> list[str]:
    """What `--fail-on regression` says: each regression the newest runs sit after, then the
    acknowledged ones apart, and acknowledgements that silence no change."""
    out: list[str] = []
    for c in v.standing:
        out += change_lines(c, "REGRESSION")
        out += [
            f"  to accept it, list it under acknowledgements: in {history.ACKS} (or --acks):",
            *_wrap(f"    - series: {c.series.id}", "        "),
            f"      run: {history.ack_run(c)}",
            "      reason: ...",
            "      by: ...",
        ]
    for c, ack in v.acknowledged:
        out += change_lines(c, "acknowledged regression")
        out += _wrap(f"  {ack.text()}")
    for a in v.unmatched:
        out += _wrap(
            f"note: no change point at {a.run} in {a.series} to acknowledge (a run name "
            "several runs share is no match: name the uid)"
        )
    if not v.standing:
        out.append(
            "no regression"
            + (f" ({len(v.acknowledged)} acknowledged)" if v.acknowledged else "")
            + " at the newest runs"
        )
    else:
        out.append(f"{len(v.standing)} unacknowledged regression(s) at the newest runs")
    return out
