"""`mongobench watch`: follow a run until it ends. The view is pure (progress_view); the loop
polls the API, draws with rich (a live panel on a terminal, one line per change otherwise, for
CI logs) and turns the final phase into the exit code."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from mongobench_cli import render
from mongobench_results import records

EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
EXIT_ERROR = 2
EXIT_GONE = 3  # deleted while watched, or --timeout reached


@dataclass(frozen=True)
class View:
    name: str
    phase: str
    done: int
    total: int
    current: str
    last_throughput: float | None
    live_throughput: float | None
    elapsed: float | None
    eta: float | None

    def progress(self) -> tuple[object, ...]:
        """What a new line is printed for in a log: not the clock ticking."""
        return (self.phase, self.done, self.total, self.current, self.last_throughput)

    def line(self) -> str:
        live = f", live {render.num(self.live_throughput)} ops/s" if self.live_throughput else ""
        last = (
            f", last step {render.num(self.last_throughput)} ops/s"
            if self.last_throughput is not None
            else ""
        )
        eta = f", ETA {render.duration(self.eta)}" if self.eta is not None else ""
        return (
            f"{self.name}: {self.phase} {self.done}/{self.total} steps done, "
            f"current: {self.current or '-'}{last}{live}, "
            f"elapsed {render.duration(self.elapsed)}{eta}"
        )


def progress_view(
    run: Mapping[str, Any], now: datetime, live_throughput: float | None = None
) -> View:
    """Where the run is, and an ETA from the time finished steps took (remaining_seconds)."""
    status = run.get("status") or {}
    progress = status.get("progress") or {}
    steps = records.steps(run)
    total = int(progress.get("steps") or len(steps))
    done = sum(1 for s in steps if s.phase == "Succeeded")
    phase = str(status.get("phase") or "Pending")
    eta = 0.0 if phase in records.TERMINAL else remaining_seconds(steps, run.get("spec"), now)
    last = next(
        (
            records.throughput(s.result)
            for s in reversed(steps)
            if s.kind == "run" and s.result and s.phase == "Succeeded"
        ),
        None,
    )
    started = records.parse_time(status.get("startTime"))
    ended = records.parse_time(status.get("completionTime"))
    elapsed = ((ended or now) - started).total_seconds() if started else None
    return View(
        name=str(run.get("metadata", {}).get("name", "")),
        phase=phase,
        done=done,
        total=total,
        current=str(progress.get("current") or ""),
        last_throughput=last,
        live_throughput=live_throughput,
        elapsed=elapsed,
        eta=eta,
    )


def remaining_seconds(
    steps: list[records.StepView], spec: Mapping[str, Any] | None, now: datetime
) -> float | None:
    """The time the unfinished steps will take, each expected to take as long as the finished
    steps of its workload did (a scan step is not a point read), else those of its kind, else
    any; a step bounded by time alone no less than its duration. None before any step
    finished."""
    finished = [s for s in steps if s.phase == "Succeeded" and s.seconds is not None]
    if not finished:
        return None
    took: dict[tuple[str, str | None] | str, list[float]] = {}
    for s in finished:
        took.setdefault((s.kind, s.workload), []).append(float(s.seconds or 0))
        took.setdefault(s.kind, []).append(float(s.seconds or 0))
    overall = [float(s.seconds or 0) for s in finished]
    eta = 0.0
    for s in steps:
        if s.phase == "Succeeded":
            continue
        durations = took.get((s.kind, s.workload)) or took.get(s.kind) or overall
        expected = sum(durations) / len(durations)
        expected = max(expected, _timed_seconds(spec or {}, s.kind))
        if s.phase == "Running" and s.start is not None:
            expected = max(0.0, expected - (now - s.start).total_seconds())
        eta += expected
    return eta


def _timed_seconds(spec: Mapping[str, Any], kind: str) -> float:
    """The least a measured or warm-up step takes when time alone bounds it (`durationSeconds`
    without an `operationCount` in spec.run or spec.warmup); 0 otherwise."""
    bound = (spec.get(kind) or {}) if kind in ("run", "warmup") else {}
    if bound.get("operationCount") or not bound.get("durationSeconds"):
        return 0.0
    return float(bound["durationSeconds"])


def panel(view: View) -> Group:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    style = {"Succeeded": "green", "Failed": "red"}.get(view.phase, "cyan")
    grid.add_row("Run", view.name)
    grid.add_row("Phase", Text(view.phase, style=style))
    steps = Table.grid(padding=(0, 1))
    steps.add_column(width=30)
    steps.add_column()
    steps.add_row(
        ProgressBar(total=max(view.total, 1), completed=view.done, width=30),
        f"{view.done}/{view.total} steps done",
    )
    grid.add_row("Steps", steps)
    grid.add_row("Current", view.current or "-")
    grid.add_row(
        "Throughput",
        (f"live {render.num(view.live_throughput)} ops/s; " if view.live_throughput else "")
        + (
            f"last step {render.num(view.last_throughput)} ops/s"
            if view.last_throughput is not None
            else "no step finished yet"
        ),
    )
    grid.add_row("Elapsed", render.duration(view.elapsed))
    grid.add_row("ETA", render.duration(view.eta) if view.eta is not None else "unknown")
    return Group(grid)


def live_rate(prometheus: str, namespace: str) -> float | None:
    """Current ops/s of the run's clients from their gauges in Prometheus (best effort)."""
    query = f'sum(mongobench_client_throughput_ops_per_second{{namespace="{namespace}"}})'
    url = f"{prometheus.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    if not url.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:  # noqa: S310 - scheme checked
            body = json.load(resp)
        result = body["data"]["result"]
        return float(result[0]["value"][1]) if result else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


@dataclass(frozen=True)
class _Stopped:
    """Watching ended before the run did: why, and in which colour to say it."""

    message: str
    style: str


def _view_of(run: dict[str, Any], prometheus: str | None) -> View:
    rate = None
    if prometheus and run.get("status", {}).get("phase") not in records.TERMINAL:
        rate = live_rate(prometheus, str(run["metadata"].get("namespace", "")))
    return progress_view(run, datetime.now(UTC), rate)


def _watch(
    fetch: Callable[[], dict[str, Any] | None],
    console: Console,
    live: Live | None,
    run: dict[str, Any],
    view: View,
    *,
    interval: float,
    timeout: float | None,
    deadline: float | None,
    prometheus: str | None,
    clock: Callable[[], float],
) -> tuple[dict[str, Any], View] | _Stopped:
    """Draw and poll until the run ends (its last object and view) or watching must stop."""
    last: tuple[object, ...] = ()
    while True:
        if live:
            live.update(panel(view))
        elif view.progress() != last:
            last = view.progress()
            console.print(view.line(), markup=False, highlight=False, soft_wrap=True)
        if view.phase in records.TERMINAL:
            return run, view
        if deadline is not None and clock() >= deadline:
            return _Stopped(f"{view.name}: still {view.phase} after {timeout:g}s", "yellow")
        time.sleep(interval)
        got = fetch()
        if got is None:
            return _Stopped(f"{view.name}: deleted while watched", "red")
        run = got
        view = _view_of(run, prometheus)


def follow(
    fetch: Callable[[], dict[str, Any] | None],
    console: Console,
    *,
    interval: float = 2.0,
    timeout: float | None = None,
    prometheus: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Poll `fetch` (None: the run is gone) until the run ends; the exit code."""
    deadline = clock() + timeout if timeout else None
    first = fetch()
    if first is None:
        console.print("error: the run does not exist", style="red")
        return EXIT_GONE
    first_view = _view_of(first, prometheus)
    live = (
        Live(panel(first_view), console=console, refresh_per_second=4, transient=False)
        if console.is_terminal
        else None
    )
    try:
        if live:
            live.start()
        ended = _watch(
            fetch,
            console,
            live,
            first,
            first_view,
            interval=interval,
            timeout=timeout,
            deadline=deadline,
            prometheus=prometheus,
            clock=clock,
        )
    finally:
        if live:
            live.stop()
    if isinstance(ended, _Stopped):
        console.print(ended.message, style=ended.style)
        return EXIT_GONE
    run, view = ended
    if view.phase == "Succeeded":
        console.print(f"{view.name}: Succeeded", style="green", highlight=False)
        return EXIT_SUCCEEDED
    reason = next(
        (
            c.get("message")
            for c in records.conditions(run)
            if c.get("type") == "Succeeded" and c.get("status") == "False"
        ),
        "",
    )
    console.print(f"{view.name}: Failed: {reason}", style="red", markup=False, highlight=False)
    return EXIT_FAILED
