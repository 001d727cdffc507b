"""`mongobench history`: an archive's series and change points, as text, JSON, a Grafana export
and an HTML page with one plot per series. The series and change points come from the results
library (mongobench_results.history); this module reads the archive and presents them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from mongobench_cli.render import num
from mongobench_cli.sources import SourceError
from mongobench_results import history


def update(
    ref: str,
    series_keys: Sequence[str],
    metrics: Sequence[str],
    method: history.Method,
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    rebuild: bool = False,
    write: bool = True,
) -> history.Update:
    """The archive's history (S3 URL or folder), its cache updated with the runs added since."""
    import mongobench_archive as archive  # noqa: PLC0415

    if "://" not in ref:
        ref = str(Path(ref).expanduser())
    try:
        root = archive.open_root(ref, endpoint_url=endpoint_url, region=region)
        return history.update_archive(
            root, series_keys, metrics, method, rebuild=rebuild, write=write
        )
    except archive.ArchiveError as exc:
        raise SourceError(str(exc)) from exc
    except history.HistoryError as exc:
        raise SourceError(str(exc)) from exc


def summary_line(u: history.Update) -> str:
    points = sum(len(s.points) for s in u.history.series.values())
    return (
        f"{len(u.history.runs)} runs, {len(u.history.series)} series, {points} points "
        f"({u.new_runs} runs added{' to the cache' if u.from_cache else ''}); "
        f"{len(u.changes)} change points (Otava E-Divisive means, p < "
        f"{u.history.method.max_pvalue:g}, window {u.history.method.window})"
    )


def changes_table(u: history.Update) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title="change points", title_justify="left")
    for col in ("series", "change", "mean before -> after", "run before", "run after", "p"):
        t.add_column(col)
    t.add_column("provenance changed", overflow="fold")
    for c in u.changes:
        direction = "worse" if c.regression else "better"
        t.add_row(
            c.series.id,
            f"{100 * c.magnitude:+.1f}% ({direction})",
            f"{num(c.mean_before)} -> {num(c.mean_after)} {c.series.unit}",
            f"{c.before.run} ({c.before.time})",
            f"{c.after.run} ({c.after.time})",
            f"{c.pvalue:.2g}",
            c.provenance_text(),
        )
    return t


def to_json(u: history.Update) -> str:
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
        "changes": [c.to_dict() for c in u.changes],
    }
    return json.dumps(doc, indent=2) + "\n"


def write_grafana(u: history.Update, path: Path) -> None:
    try:
        path.write_text(json.dumps(history.grafana_rows(u.history, u.changes), indent=1))
    except OSError as exc:
        raise SourceError(f"cannot write {path}: {exc.strerror}") from exc
