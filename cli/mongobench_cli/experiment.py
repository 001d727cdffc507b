"""BenchmarkExperiments in the CLI (rendering pure; reading through sources.KubeSource).

`experiment/NAME` (or `bmx/NAME`) names one wherever a run is expected: `describe` shows its
cells, deploy timings and comparison; `compare` and `report` take its runs, grouped by cell
(the spec label `experiment.cell`), against its baseline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table

from mongobench_cli import render
from mongobench_results import stats

CELL_LABEL = "experiment.cell"  # the runs' spec label (operator: experiment.objects)
RUN_LABEL = "mongobench.io/experiment"  # the runs' metadata label


def baseline(obj: Mapping[str, Any]) -> str | None:
    """The baseline cell's label, as the runs carry it."""
    for cell in (obj.get("status") or {}).get("cells") or ():
        if cell.get("baseline"):
            return str(cell["label"])
    return None


# The run fields an experiment's dimensions vary, as its runs carry them (operator's objects.py).
VARIES_LABEL = "experiment.varies"


def varied_by_runs(runs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The run fields the experiments behind these runs vary by design (from the archive)."""
    fields = (
        f
        for run in runs
        for f in str(((run.get("spec") or {}).get("labels") or {}).get(VARIES_LABEL, "")).split(",")
    )
    return list(dict.fromkeys(f for f in fields if f))


def run_dimensions(obj: Mapping[str, Any]) -> list[str]:
    """The run fields (dotted paths) the experiment's dimensions set, e.g. mongo.writeConcern."""
    dims = (obj.get("spec") or {}).get("dimensions") or []
    return [str(d["field"]) for d in dims if d.get("target") == "run" and d.get("field")]


def _seconds(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def deploy_rows(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per cluster deployment: the deploy-time table (cell values, seconds)."""
    rows = []
    for cell in (obj.get("status") or {}).get("cells") or ():
        for i, d in enumerate(cell.get("deployments") or (), 1):
            rows.append(
                {
                    "cell": cell.get("label"),
                    **{k: v for k, v in (cell.get("values") or {}).items()},
                    "deployment": i,
                    "pods": d.get("pods"),
                    "provisionedSeconds": d.get("provisionedSeconds"),
                    "configuredSeconds": d.get("configuredSeconds"),
                    "readySeconds": d.get("readySeconds"),
                }
            )
    return rows


DEPLOY_SECONDS = (
    ("provisioned s", "provisionedSeconds"),
    ("configured s", "configuredSeconds"),
    ("ready s", "readySeconds"),
)


def _mean(values: Sequence[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, int | float)]
    return round(sum(numbers) / len(numbers), 1) if numbers else None


def _varied(values: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The columns that say what a cell is: one factor at a time, the factor varied from the
    baseline and its value (the baseline's row says so); a factorial, every dimension's value."""
    varied = [k for k, v in values.items() if base.get(k) != v]
    if not varied:
        return {"factor": "baseline", "value": "-"}
    return {"factor": ",".join(varied), "value": ",".join(str(values[k]) for k in varied)}


def deploy_table(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The deploy-time table of an experiment (live or archived), a row per cell in the order
    of its design: the cell (as `_varied`), the pods deployed, the deployments the means are
    over (a cell's cluster may be created more than once), and the mean provisioned,
    configured and Ready seconds."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    cells = status.get("cells") or ()
    ofat = spec.get("design") == "OneFactorAtATime"
    base = next((c.get("values") or {} for c in cells if c.get("baseline")), {})
    rows = []
    for cell in cells:
        values = dict(cell.get("values") or {})
        deployed = list(cell.get("deployments") or ())
        pods = next((d["pods"] for d in deployed if isinstance(d.get("pods"), int)), None)
        rows.append(
            {
                **(_varied(values, base) if ofat else values),
                "pods": pods,
                "deployments": len(deployed),
                **{column: _mean([d.get(key) for d in deployed]) for column, key in DEPLOY_SECONDS},
            }
        )
    return rows


def deploy_rich(rows: Sequence[Mapping[str, Any]], title: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    columns = list(rows[0]) if rows else ["cell"]
    for c in columns:
        table.add_column(c, justify="left" if c in ("factor", "value") else "right")
    for r in rows:
        table.add_row(*("-" if r.get(c) is None else str(r[c]) for c in columns))
    return table


def rounds_text(obj: Mapping[str, Any]) -> str:
    """Rounds so far, and with adaptive repetitions the target and whether each cell met it."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    rounds = status.get("rounds", spec.get("repetitions", 3))
    reps = status.get("repetitions")
    if not reps:
        return str(rounds)
    target = f"{reps.get('metric')} +-{100 * float(reps.get('relativeHalfWidth') or 0):g}%"
    cells = ", ".join(
        f"{c['name']} {'met' if c.get('met') else 'not met' if c.get('done') else 'going on'}"
        f" (n={c.get('valid')})"
        for c in reps.get("cells") or ()
    )
    return f"{rounds} of {reps.get('min')}-{reps.get('max')} until {target}: {cells}"


def describe(obj: Mapping[str, Any]) -> Group:
    meta, status = obj["metadata"], obj.get("status") or {}
    progress = status.get("progress") or {}
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for k, v in (
        ("Name", f"{meta.get('namespace')}/{meta['name']}"),
        ("Phase", status.get("phase", "Pending")),
        ("Cells", f"{progress.get('summary', '-')} {progress.get('current') or ''}".strip()),
        (
            "Order",
            (obj.get("spec") or {}).get("order", "Interleaved")
            + (f" (seed {status['seed']})" if "seed" in status else ""),
        ),
        ("Design", (obj.get("spec") or {}).get("design", "Factorial")),
        ("Baseline", baseline(obj) or "-"),
        ("Rounds", rounds_text(obj)),
        ("Started", status.get("startTime", "-")),
        ("Ended", status.get("completionTime", "-")),
    ):
        head.add_row(k, str(v))
    cells = Table(title="Cells", title_justify="left", box=box.SIMPLE_HEAD)
    for c in (
        "cell",
        "phase",
        "cluster",
        "runs",
        "deploy s (prov/conf/ready)",
        "ops/s by workload",
    ):
        cells.add_column(c)
    for cell in status.get("cells") or ():
        runs = " ".join(f"r{r['repetition']}:{r['phase']}" for r in cell.get("runs") or ())
        deploy = "; ".join(
            (f"{d['pods']} pods " if d.get("pods") is not None else "")
            + "/".join(
                _seconds(d.get(k))
                for k in ("provisionedSeconds", "configuredSeconds", "readySeconds")
            )
            for d in cell.get("deployments") or ()
        )
        summary = " ".join(
            f"{w}={s.get('throughput')}" for w, s in (cell.get("summary") or {}).items()
        )
        name = cell.get("label", cell.get("name", "")) + (" *" if cell.get("baseline") else "")
        cells.add_row(
            name,
            cell.get("phase", ""),
            cell.get("cluster", ""),
            runs,
            deploy or "-",
            summary or "-",
        )
    parts: list[Any] = [head, cells]
    comparison = status.get("comparison") or {}
    if comparison.get("error"):
        parts.append(f"Comparison: {comparison['error']}")
    elif comparison.get("rows"):
        parts.append(
            comparison_table(comparison["rows"], str(comparison.get("baseline")), comparison)
        )
    if comparison.get("duet"):
        parts.append(render.duet_table(comparison["duet"]))
    return Group(*parts)


def comparison_table(
    rows: Sequence[Mapping[str, Any]], base: str, comparison: Mapping[str, Any] | None = None
) -> Table:
    title = f"Against {base}"
    comparison = comparison or {}
    if comparison.get("adjust"):  # status written before adjustment existed has none
        name = stats.ADJUSTMENT_NAMES.get(str(comparison["adjust"]), str(comparison["adjust"]))
        title += f"; verdicts after {name} across {comparison.get('family')} comparisons"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for c in ("workload", "metric", "cell", "n", "valid", "mean", "interval", "change", "verdict"):
        table.add_column(c)
    for r in rows:
        change = "-"
        if r.get("relative") is not None:
            change = f"{r['relative'] * 100:+.1f}%"
        table.add_row(
            str(r.get("workload")),
            str(r.get("metric")),
            str(r.get("configuration")),
            str(r.get("n")),
            _valid_cell(r.get("validity")),
            f"{r.get('mean', 0):.4g}",
            f"[{r.get('ciLow', 0):.4g}, {r.get('ciHigh', 0):.4g}]" if "ciLow" in r else "-",
            change,
            str(r.get("verdict", "")),
        )
    return table


def _valid_cell(value: Any) -> str:
    if not isinstance(value, Mapping) or not value.get("judged"):
        return "-"
    accepted = value.get("accepted") or {}
    note = f" (accepted: {', '.join(sorted(accepted))})" if accepted else ""
    return f"{value.get('valid')}/{value.get('trials')}{note}"


def progress_line(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    progress = status.get("progress") or {}
    current = progress.get("current") or ""
    return (
        f"{obj['metadata']['name']}: {status.get('phase', 'Pending')}, cells "
        f"{progress.get('summary', '-')}" + (f", now {current}" if current else "")
    )


def follow(
    fetch: Callable[[], Mapping[str, Any] | None],
    console: Console,
    *,
    interval: float,
    timeout: float | None,
) -> int:
    """Print each change of progress until the experiment ends: 0 Succeeded, 1 Failed, 3 gone
    or timed out; the cells table at the end."""
    started, last = time.monotonic(), ""
    while True:
        obj = fetch()
        if obj is None:
            console.print("the experiment was deleted", markup=False)
            return 3
        line = progress_line(obj)
        if line != last:
            console.print(line, markup=False)
            last = line
        phase = (obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            console.print(describe(obj))
            return 0 if phase == "Succeeded" else 1
        if timeout is not None and time.monotonic() - started > timeout:
            return 3
        time.sleep(interval)
