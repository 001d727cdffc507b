"""What Grafana sends Prometheus for a dashboard: its variables resolved, its queries interpolated.

Grafana itself cannot run here (its module is AGPL-licensed), so the dashboards' queries are
evaluated against a real Prometheus after interpolating them as Grafana's Prometheus data source
does, which this module reproduces for the features our dashboards use:

- variables resolve in the order they are listed, each query variable's own query interpolated
  with the ones before it (chained dropdowns); `label_values(match, label)` asks Prometheus'
  label API with `match[]`, as Grafana does;
- the options are sorted as the variable's `sort` says (0 none, 1/2 alphabetical, 3/4 numerical);
- with no choice made (a dashboard just opened) a variable takes its first option, which is "All"
  when it has one; a choice (the user's pick in the dropdown) must be one of the options;
- a variable used in a query becomes, for "All", its `allValue` (or every option as a regex
  alternation when none is set); for several picks `(a|b)`; values of multi-value or All
  variables are regex-escaped for a PromQL string (`prometheusSpecialRegexEscape`), others only
  have backslashes and quotes escaped (`prometheusRegularEscape`);
- `$__interval` is the dashboard's range over the panel's data points, at least the scrape
  interval; `$__rate_interval` is max($__interval + scrape interval, 4 x scrape interval).
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALL = "$__all"
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<match>.*),\s*)?(?P<label>\w+)\)$", re.S)
# $var, ${var}, ${var:format}, [[var]]: Grafana's three spellings.
REFERENCE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}

LabelValues = Callable[[str | None, str], list[str]]


@dataclass(frozen=True)
class Target:
    board: str
    panel: str
    ref: str
    expr: str
    range: bool
    instant: bool


def load_boards(folder: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def targets(name: str, board: Mapping[str, Any]) -> list[Target]:
    """Every query of every panel (rows' panels included), in the board's order."""
    out = []
    for panel in board.get("panels", []):
        for inner in [panel, *panel.get("panels", [])]:
            for t in inner.get("targets", []):
                if "expr" in t:
                    out.append(
                        Target(
                            name,
                            inner["title"],
                            t["refId"],
                            t["expr"],
                            bool(t.get("range")),
                            bool(t.get("instant")) and not t.get("range"),
                        )
                    )
    return out


def seconds(duration: str) -> float:
    m = _DURATION.match(duration)
    if not m:
        raise ValueError(f"not a Grafana duration: {duration!r}")
    return int(m[1]) * _SECONDS[m[2]]


def duration(secs: float) -> str:
    for unit in ("d", "h", "m", "s"):
        if secs >= _SECONDS[unit] and secs % _SECONDS[unit] == 0:
            return f"{int(secs // _SECONDS[unit])}{unit}"
    return f"{max(1, round(secs * 1000))}ms"


def builtins(
    range_seconds: float, scrape_interval: float, data_points: int = 1000
) -> dict[str, str]:
    """$__interval, $__rate_interval and $__range for a panel `data_points` wide."""
    interval = max(scrape_interval, range_seconds / data_points)
    interval = max(1.0, round(interval))
    rate = max(interval + scrape_interval, 4 * scrape_interval)
    return {
        "__interval": duration(interval),
        "__rate_interval": duration(rate),
        "__range": duration(range_seconds),
    }


def regex_escape(value: str) -> str:
    """Grafana's prometheusSpecialRegexEscape, for multi-value and All variables: regex
    metacharacters escaped, each backslash doubled for the PromQL string it lands in."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"([$^*{}\[\]'+?.()|])", r"\\\\\1", value)


def plain_escape(value: str) -> str:
    """Grafana's prometheusRegularEscape, for single-value variables."""
    return value.replace("\\", "\\\\").replace("'", "\\\\'")


def _sort(options: list[str], how: int) -> list[str]:
    if how in (1, 2):
        return sorted(options, reverse=how == 2)
    if how in (3, 4):

        def key(v: str) -> float:
            m = re.search(r"-?\d+(\.\d+)?", v)
            return float(m[0]) if m else float("inf")

        return sorted(options, key=key, reverse=how == 4)
    return options


@dataclass(frozen=True)
class Variable:
    name: str
    options: list[str]
    picked: list[str]  # [ALL] for "All"
    all_value: str | None
    escape: bool  # multi-value or All: values become regex-escaped

    def rendered(self) -> str:
        if self.picked == [ALL]:
            if self.all_value is not None:
                return self.all_value
            chosen = self.options
        else:
            chosen = self.picked
        values = [regex_escape(v) if self.escape else plain_escape(v) for v in chosen]
        return values[0] if len(values) == 1 else "(" + "|".join(values) + ")"


class VariableError(ValueError):
    pass


def resolve(
    board: Mapping[str, Any],
    label_values: LabelValues,
    picks: Mapping[str, str | Sequence[str]] | None = None,
    builtin: Mapping[str, str] | None = None,
) -> dict[str, Variable]:
    """The board's variables as Grafana resolves them when the dashboard is opened, with the
    dropdown choices in `picks` (a name -> value or values; "All" or ALL for All)."""
    picks = dict(picks or {})
    resolved: dict[str, Variable] = {}
    for v in board.get("templating", {}).get("list", []):
        name, kind = v["name"], v["type"]
        if kind == "datasource":
            continue
        if kind == "constant":
            resolved[name] = Variable(name, [v["query"]], [v["query"]], None, escape=False)
            continue
        if kind != "query":
            raise VariableError(f"${name}: variables of type {kind} are not modelled")
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = LABEL_VALUES.match(query.strip())
        if not m:
            raise VariableError(f"${name}: only label_values(...) queries are modelled: {query}")
        match = interpolate(m["match"], resolved, builtin) if m["match"] else None
        options = _sort(sorted(set(label_values(match, m["label"]))), int(v.get("sort", 0)))
        include_all, multi = bool(v.get("includeAll")), bool(v.get("multi"))
        picked = _pick(name, picks.pop(name, None), options, include_all, multi, query)
        if not picked:
            raise VariableError(f"${name}: no value to choose from ({query})")
        resolved[name] = Variable(
            name, options, picked, v.get("allValue"), escape=multi or include_all
        )
    if picks:
        raise VariableError(f"no variables {sorted(picks)} on this board")
    return resolved


def _pick(
    name: str,
    wanted: str | Sequence[str] | None,
    options: list[str],
    include_all: bool,
    multi: bool,
    query: str,
) -> list[str]:
    if wanted is None:
        # A dashboard just opened: the first option, "All" first where there is one.
        return [ALL] if include_all else options[:1]
    values = [wanted] if isinstance(wanted, str) else list(wanted)
    if values in (["All"], [ALL]):
        if not include_all:
            raise VariableError(f"${name} offers no All")
        return [ALL]
    if len(values) > 1 and not multi:
        raise VariableError(f"${name} takes one value, not {values}")
    missing = [x for x in values if x not in options]
    if missing:
        raise VariableError(f"${name}'s dropdown offers {options}, not {missing} ({query})")
    return values


def interpolate(
    expr: str, variables: Mapping[str, Variable], builtin: Mapping[str, str] | None = None
) -> str:
    """The query Grafana sends: every variable reference replaced; an unknown one is an error
    (Grafana would send it as written, and Prometheus refuse it)."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        if builtin and name in builtin:
            return builtin[name]
        if name not in variables:
            raise VariableError(f"${name} is no variable of the dashboard: {expr}")
        return variables[name].rendered()

    return REFERENCE.sub(value, expr)


@dataclass(frozen=True)
class Answer:
    target: Target
    promql: str
    series: int  # series with at least one finite value over the window


def _get(url: str, params: Mapping[str, Any]) -> Any:
    qs = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{url}?{qs}", timeout=10) as resp:
        body = json.load(resp)
    if body.get("status") != "success":
        raise RuntimeError(f"{url} {params}: {body}")
    return body["data"]


def _finite(result: list[dict[str, Any]]) -> int:
    def values(r: dict[str, Any]) -> list[str]:
        return [v for _, v in r.get("values", [])] or ([r["value"][1]] if "value" in r else [])

    return sum(1 for r in result if any(math.isfinite(float(v)) for v in values(r)))


def evaluate_boards(
    prometheus: str,
    boards: Mapping[str, Mapping[str, Any]],
    picks: Mapping[str, Mapping[str, str | Sequence[str]]],
    start: float,
    end: float,
    scrape_interval: float,
) -> list[Answer]:
    """Every panel query of every board as Grafana sends it for the time range [start, end]:
    variables resolved with the label API over that range (`picks`: board -> the dropdown
    choices; the defaults for the others), range targets as range queries, `instant` ones at
    `end`."""
    builtin = builtins(end - start, scrape_interval)
    step = max(1.0, seconds(builtin["__interval"]))

    def label_values(match: str | None, label: str) -> list[str]:
        params: dict[str, Any] = {"start": start, "end": end}
        if match:
            params["match[]"] = match
        return list(_get(f"{prometheus}/api/v1/label/{label}/values", params))

    out = []
    for name, board in boards.items():
        variables = resolve(board, label_values, picks.get(name, {}), builtin)
        for t in targets(name, board):
            promql = interpolate(t.expr, variables, builtin)
            if t.instant:
                data = _get(f"{prometheus}/api/v1/query", {"query": promql, "time": end})
            else:
                data = _get(
                    f"{prometheus}/api/v1/query_range",
                    {"query": promql, "start": start, "end": end, "step": step},
                )
            out.append(Answer(t, promql, _finite(data["result"])))
    return out
