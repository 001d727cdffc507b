"""Benchmark-only: each Python thread of the measured process names its OS thread after itself,
so make bench-scale can count the threads at the peak by name in /proc/<pid>/task/*/comm
(Python 3.11 leaves every thread named after the executable). On the measured processes'
PYTHONPATH only; the product never imports it. Names are shortened to fit the kernel's 15
bytes: pymongo's `pymongo_server_monitor_thread` reads `pm.monitor`."""

from __future__ import annotations

import contextlib
import ctypes
import threading

PR_SET_NAME = 15
SHORTER = (
    ("pymongo_", "pm."),
    ("server_monitor", "monitor"),
    ("server_rtt", "rtt"),
    ("kill_cursors", "killcursors"),
    ("_thread", ""),
    ("ThreadPoolExecutor", "pool"),
)


def short(name: str) -> str:
    for long, brief in SHORTER:
        name = name.replace(long, brief)
    return name[:15]


def _named() -> None:
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return
    start = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_named(self: threading.Thread) -> None:
        with contextlib.suppress(Exception):
            prctl(PR_SET_NAME, short(self.name).encode(), 0, 0, 0)
        start(self)

    threading.Thread._bootstrap_inner = bootstrap_named  # type: ignore[attr-defined]


_named()
