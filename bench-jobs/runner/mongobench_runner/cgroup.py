"""The client container's CPU throttling, from its own cgroup: the client's saturation signal.

A kubelet enforces a container's CPU limit with the CFS quota of the container's cgroup; its
`cpu.stat` counts the enforcement periods (`nr_periods`) and those in which the container ran
out of quota (`nr_throttled`). The runner reads them before and after the driver: the share of
throttled periods says the client was starved of CPU during the step. cgroup v2 (one
hierarchy) and v1 (the `cpu` controller) are both read; None where neither is visible.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own_cpu_stat(proc_cgroup: str, root: Path) -> Path | None:
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "" and (root / path.lstrip("/") / "cpu.stat").is_file():
            candidate = root / path.lstrip("/") / "cpu.stat"
            if "nr_periods" in candidate.read_text():
                return candidate
        if "cpu" in controllers.split(","):
            for mount in (root / controllers, root / "cpu", root / "cpu,cpuacct"):
                candidate = mount / path.lstrip("/") / "cpu.stat"
                if candidate.is_file():
                    return candidate
    return None


def cfs_periods(
    root: Path = ROOT, proc: Path = Path("/proc/self/cgroup")
) -> tuple[int, int] | None:
    """(periods, throttled periods) of this process's CPU cgroup so far; None when it has no
    CFS quota accounting (no limit, or no cgroup visible)."""
    try:
        stat = _own_cpu_stat(proc.read_text(), root)
        if stat is None:
            return None
        fields = dict(line.split() for line in stat.read_text().splitlines() if " " in line)
        return int(fields["nr_periods"]), int(fields["nr_throttled"])
    except (OSError, KeyError, ValueError):
        return None


def during(before: tuple[int, int] | None, after: tuple[int, int] | None) -> tuple[int, int] | None:
    """The periods and throttled periods between two readings (None when either is missing
    or no period passed: no quota)."""
    if before is None or after is None:
        return None
    periods, throttled = after[0] - before[0], after[1] - before[1]
    return (periods, throttled) if periods > 0 else None
