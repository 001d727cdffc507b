"""pytest plugin (`-p localplane.clock_ahead`): the session runs with the wall clock moved
MONGOBENCH_CLOCK_AHEAD_DAYS ahead, so a test that passes only near the date it was written (a
certificate issued "now" and judged at a date the test fixed) fails the day it is written.
`make test-unit-later` runs the unit tier this way.

time-machine moves what Python reads as the date (datetime.now/today, time.time, gmtime, ...)
and leaves the monotonic clock alone. Debian's faketime moves it for the whole process, but its
libfaketime (0.9.10) hangs Python's timed waits (threading.Condition.wait never returns) or
breaks time.sleep (EINVAL), so the tiers' threads could not run under it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

ENV = "MONGOBENCH_CLOCK_AHEAD_DAYS"


def _days() -> float:
    return float(os.environ.get(ENV) or 0)


def pytest_configure(config: pytest.Config) -> None:
    days = _days()
    if not days:
        return
    real = datetime.now(UTC)
    # tick: the clock runs on from there (tests that wait see time pass).
    traveller = time_machine.travel(real + timedelta(days=days), tick=True)
    traveller.start()
    moved = (datetime.now(UTC) - real).total_seconds() / 86400
    if abs(moved - days) > 1:
        raise pytest.UsageError(f"{ENV}={days}: the clock moved {moved:.1f} days")
    config.add_cleanup(traveller.stop)


def pytest_report_header() -> str | None:
    days = _days()
    return f"wall clock moved {days:g} days ahead ({ENV})" if days else None
