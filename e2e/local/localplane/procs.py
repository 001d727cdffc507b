"""Child processes that can be found and ended again, even by a later process.

Every component runs in its own process group (session), recorded as (pid, start time): the start
time from /proc tells a recycled pid apart, so a reaper never signals a stranger's process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def start_time(pid: int) -> int | None:
    """Kernel start time of `pid` in clock ticks; None when gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the parenthesised command name; state is the first, starttime the 20th.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Proc:
    name: str
    pid: int
    start: int
    log: str

    def alive(self) -> bool:
        return start_time(self.pid) == self.start

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "start": self.start, "log": self.log}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proc:
        return cls(data["name"], int(data["pid"]), int(data["start"]), data["log"])


def _die_with_parent(cmd: list[str]) -> list[str]:
    """Prefix `cmd` so the kernel SIGKILLs it when its parent dies (e.g. pytest killed -9):
    a crashed session leaks no process. util-linux `setpriv` sets PR_SET_PDEATHSIG and execs,
    so the pid stays ours; no preexec_fn, which is unsafe in a threaded parent (kopf)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:  # still reapable by cleanup_stale(), just not instantly
        return cmd
    return [setpriv, "--pdeathsig=KILL", "--", *cmd]


def spawn(
    name: str,
    cmd: list[str],
    log: Path,
    *,
    detached: bool,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[Proc, subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        popen = subprocess.Popen(
            # Detached (`dev up`) processes must outlive the command that started them.
            cmd if detached else _die_with_parent(cmd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
    started = start_time(popen.pid)
    if started is None:  # exited at once; keep a record so the caller reports its log
        started = -1
    return Proc(name, popen.pid, started, str(log)), popen


def terminate(
    procs: Iterable[Proc],
    children: dict[int, subprocess.Popen[bytes]] | None = None,
    grace: float = 5.0,
) -> None:
    """SIGTERM each live process group, SIGKILL what is left after `grace` seconds."""
    children = children or {}
    live = [p for p in procs if p.alive()]
    for p in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(children)
        live = [p for p in live if p.alive()]
        if not live:
            break
        time.sleep(0.05)
    for p in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
    for p in live:
        deadline = time.monotonic() + 5
        while p.alive() and time.monotonic() < deadline:
            _reap(children)
            time.sleep(0.02)
    _reap(children)


def _reap(children: dict[int, subprocess.Popen[bytes]]) -> None:
    for popen in children.values():
        popen.poll()


def rss_bytes(procs: Iterable[Proc]) -> int:
    total = 0
    for p in procs:
        if not p.alive():
            continue
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def tail(path: str | Path, lines: int = 40) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def owner_record() -> dict[str, int]:
    pid = os.getpid()
    return {"pid": pid, "start": start_time(pid) or -1}
