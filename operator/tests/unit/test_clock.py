"""Unit tier: the operator reads the wall clock in one place (mongobench.clock) and the
controllers are given it, so what they decide from time (certificates, renewals, rotations,
timeouts, status times) can be fixed by a test and never depends on the day a test runs.

`make test` also runs the unit tier with the wall clock a year ahead (faketime): a test that
passes only near the date it was written fails there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mongobench

pytestmark = pytest.mark.unit

PACKAGE = Path(mongobench.__file__).parent
# Who may read the wall clock: the clock itself, and the Kubernetes client's own bookkeeping
# (a token's expiry, a request's rate), which decides nothing about a resource.
READERS = {"clock.py", "k8s/client.py", "k8s/api.py", "k8s/credentials.py"}
# now_rfc3339 is a condition's default lastTransitionTime, for callers that pass no `now`.
DEFAULT_STAMP = {"k8s/conditions.py"}
NOW_METHODS = {"now", "utcnow", "today"}


def clock_reads(source: str) -> list[tuple[int, str]]:
    """(line, call) of each wall-clock reading in `source`: datetime.now(), time.time(), ...,
    and now_rfc3339()."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute):
            owner = getattr(f.value, "attr", None) or getattr(f.value, "id", "")
            # Any .now()/.utcnow()/.today(): datetime under whatever name it was imported.
            if f.attr in NOW_METHODS or (owner, f.attr) == ("time", "time"):
                found.append((node.lineno, f"{owner}.{f.attr}()"))
            elif f.attr == "now_rfc3339":
                found.append((node.lineno, "now_rfc3339()"))
        elif isinstance(f, ast.Name) and f.id == "now_rfc3339":
            found.append((node.lineno, "now_rfc3339()"))
    return found


def test_the_probe_sees_each_way_of_reading_the_clock() -> None:
    source = (
        "import datetime, time\nfrom datetime import datetime as dt\n"
        "a = datetime.datetime.now()\nb = dt.now()\nc = time.time()\n"
        "d = datetime.date.today()\ne = cond.now_rfc3339()\nf = now_rfc3339()\n"
        "g = time.monotonic()\nh = clock()\n"
    )
    assert [line for line, _ in clock_reads(source)] == [3, 4, 5, 6, 7, 8]


def test_only_the_clock_module_reads_the_wall_clock() -> None:
    readers: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        reads = clock_reads(path.read_text())
        if name in DEFAULT_STAMP:
            reads = [r for r in reads if r[1] != "now_rfc3339()"]
        if reads and name not in READERS:
            readers[name] = reads
    assert readers == {}, "read the wall clock; take `now` or a `Clock` from the caller"


def test_handlers_pass_the_clock_in() -> None:
    """The controllers' entry points take the clock: nothing reads it for them."""
    import inspect

    from mongobench.benchmarkrun.act import archive, orchestrate
    from mongobench.experiment.act import reconcile as experiment
    from mongobench.mongocluster.act import reconcile

    for fn, param in (
        (reconcile.provision, "now"),
        (reconcile.sync, "clock"),
        (orchestrate.advance, "clock"),
        (archive.sync, "clock"),
        (experiment.advance, "now"),
    ):
        p = inspect.signature(fn).parameters[param]
        assert p.default is inspect.Parameter.empty, f"{fn.__qualname__}: {param} has a default"


def test_an_objects_age_is_the_seconds_since_its_creation_and_never_negative() -> None:
    """Unit tier: the one "seconds since creation" helper the controllers share (a run waits for
    its scenarios, an experiment times out a cluster by it)."""
    from datetime import UTC, datetime

    from mongobench.clock import age_seconds

    now = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    assert age_seconds({"creationTimestamp": "2026-01-01T12:00:00Z"}, now) == 30.0
    assert age_seconds({}, now) == 0.0  # not created yet (a body built locally)
    assert age_seconds({"creationTimestamp": "2026-01-01T12:01:00Z"}, now) == 0.0  # clock skew


def test_handlers_pass_the_configuration_in() -> None:
    """The controllers' entry points take the operator's configuration (no default to fall back
    on), and below the process's start-up (main.py) nothing reads the global one."""
    import inspect
    from pathlib import Path

    import mongobench
    from mongobench.benchmarkrun.act import archive, orchestrate
    from mongobench.experiment.act import reconcile as experiment
    from mongobench.mongocluster.act import reconcile

    for fn in (
        reconcile.provision,
        reconcile.sync,
        orchestrate.advance,
        archive.sync,
        experiment.advance,
    ):
        p = inspect.signature(fn).parameters["config"]
        assert p.default is inspect.Parameter.empty, f"{fn.__qualname__}: config has a default"
    package = Path(mongobench.__file__).parent
    readers = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if "OperatorConfig.current()" in path.read_text()
        and path.name not in ("main.py", "config.py")
    ]
    assert readers == []
