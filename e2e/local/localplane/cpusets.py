"""The measured path on CPUs of its own: what the demo does on a small machine.

A 1-thread closed loop (one client thread waiting on one server) keeps about one CPU busy; on a
2-CPU machine the control plane (kube-apiserver, etcd, the operator, Prometheus) shares the
other, and when it bursts onto the first the throughput moves by a third (the demo measured
A/A intervals of +-45% unpinned, +-3 to 8% pinned). As a kubelet's static CPU manager gives a
Guaranteed pod exclusive cores, the demo runs the databases and the benchmark client on the
last CPU and everything else on the rest: `Split.harness` for this process (its children
inherit it), `Split.measured` for the servers and the pod executor's containers.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    harness: frozenset[int]
    measured: frozenset[int]

    def describe(self) -> str:
        measured, harness = _cpus(self.measured), _cpus(self.harness)
        return f"CPU {measured} for the databases and the client, CPU {harness} for the rest"


def split() -> Split | None:
    """The last CPU this process may use for the measured path, the others for the harness;
    None with fewer than 2 (nothing to split)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return Split(frozenset(cpus[:-1]), frozenset(cpus[-1:]))


def pin_process_tree(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of `pid` and of its running children onto `cpus` (what they start later
    inherits it): a server started before the split, such as PostgreSQL's postmaster and its
    background workers."""
    for p in [pid, *_children(pid)]:
        for tid in _threads(p):
            with contextlib.suppress(ProcessLookupError):  # it ended in between
                os.sched_setaffinity(tid, cpus)


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    kids = [int(x) for x in out.stdout.split()]
    return [g for k in kids for g in (k, *_children(k))]


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
