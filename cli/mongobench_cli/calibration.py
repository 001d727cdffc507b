"""`mongobench calibrate` and the report's calibration section: rendering (pure) of
mongobench_results.calibration, which computes every figure."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.table import Table

from mongobench_results import calibration

COLUMNS = (
    "workload",
    "metric",
    "rounds",
    "false positives",
    "FP rate",
    "mean",
    "SD",
    "MDE (n=window)",
    "MDE (all rounds)",
    "A/A verdict",
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def cells(row: calibration.Row) -> list[str]:
    return [
        row.workload,
        f"{row.metric} ({row.unit})",
        str(row.rounds),
        f"{row.false_positives}/{row.windows} ({row.independent} disjoint)",
        _pct(row.false_positive_rate),
        _num(row.mean),
        _num(row.sd),
        _pct(row.mde),
        _pct(row.mde_all),
        row.verdict,
    ]


def legend(result: calibration.Calibration, name: str = "") -> str:
    """How the figures were computed, in one paragraph."""
    of = f"Calibration {name}: " if name else ""
    test = "Welch's t-test" if result.test == "welch" else "the Mann-Whitney U test"
    return (
        f"{of}{result.rounds} rounds of an A/A pair (calibration=a against calibration=b, the "
        f"same configuration on two clusters). False positives: windows of {result.window} "
        f"consecutive rounds (sliding by one) compared as `mongobench compare` does ({test}, "
        f"alpha {result.alpha}) whose verdict is a change; windows overlap, so the disjoint "
        f"count is the rate's real sample size. MDE: the smallest true change of the mean a "
        f"two-sided Welch test at alpha {result.alpha} detects with {result.power:.0%} power at "
        f"the observed SD (pooled over both cells), for n = {result.window} a side and for n = "
        "every round, relative to the mean."
    )


def table(result: calibration.Calibration, name: str = "") -> Table:
    out = Table(
        title=f"A/A calibration {name}".strip(),
        title_justify="left",
        caption=legend(result, name),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for c in COLUMNS:
        out.add_column(c)
    for row in result.rows:
        out.add_row(*cells(row))
    return out


def as_json(result: calibration.Calibration, name: str = "") -> str:
    return json.dumps({"calibration": name, **result.to_dict()}, indent=2) + "\n"


def markdown(result: calibration.Calibration, name: str = "") -> str:
    lines = [
        legend(result, name),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    lines += [
        "| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in result.rows
    ]
    return "\n".join(lines) + "\n"


def html_section(result: calibration.Calibration, name: str) -> str:
    """The report's section: the calibration the study ran under."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(r)) + "</tr>"
        for r in result.rows
    )
    return (
        f"<p>This study ran under the A/A calibration <b>{html.escape(name)}</b>: a change "
        "smaller than its MDE may go unseen, and its false-positive rate is how often identical "
        "setups were called different.</p>"
        f"<p class='note'>{html.escape(legend(result, name))}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def named(experiments: Sequence[Mapping[str, Any]]) -> str | None:
    """The calibration a study's experiments name (annotation mongobench.io/calibration)."""
    for obj in experiments:
        found = ((obj.get("metadata") or {}).get("annotations") or {}).get(calibration.ANNOTATION)
        if found:
            return str(found)
    return None
