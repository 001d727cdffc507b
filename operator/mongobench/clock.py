"""The wall clock, read at the operator's edge and passed in.

Handlers (and the operator's own loops) read `wall()` once per pass and hand the instant to
the controllers, which decide from it (certificates' issue and renewal, rotations, timeouts)
and stamp status with it; nothing below the handlers reads the clock itself, so a test fixes
time by passing it, and a test that passes only near the date it was written cannot exist.
A step that needs a later reading than its pass's (a stamp taken after a slow write) is given
a `Clock` to call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

Clock = Callable[[], datetime]


def wall() -> datetime:
    """Now, in UTC: the one place the operator reads the wall clock."""
    return datetime.now(UTC)


def rfc3339(t: datetime, *, precise: bool = False) -> str:
    """`t` in RFC 3339; whole seconds (as the apiserver writes them) unless `precise`."""
    if not precise:
        t = t.replace(microsecond=0)
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_rfc3339(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def seconds_since(stamp: str | None, now: datetime) -> float | None:
    """Seconds from an RFC 3339 stamp to `now` (None without a stamp)."""
    if not stamp:
        return None
    return (now - parse_rfc3339(stamp)).total_seconds()


def age_seconds(meta: Mapping[str, Any], now: datetime) -> float:
    """Seconds since an object's metadata.creationTimestamp; 0 without one, or with one ahead of
    `now` (the apiserver's clock may run ahead of the operator's)."""
    return max(seconds_since(meta.get("creationTimestamp"), now) or 0.0, 0.0)
