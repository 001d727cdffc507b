"""The validity checks as a method, measured: does the steadiness check find a warm-up of known
length, and is a noisy neighbour on the database's node flagged?

    PYTHONPATH=e2e/local .venv/bin/python benchmarks/method_validity.py [--steps N]

Two figures (bench-method joins them into its last line; `make bench-validity` prints them):

- `warmup_found_rate()`: simulated per-second throughput series (30-300 s) with a warm-up of
  known length (a ramp from 40% to the level, 3-20 s) and the per-second noise of this
  project's clients (CV_LEVELS: the spread of per-second throughput of YCSB against the local
  plane's FerretDB lies in this range), judged by mongobench_results.steady; found = a warm-up
  reported within 2 s of the truth and no level shift. The false-alarm rate on steady series
  of the same noise is printed beside it. Seconds on one core.
- `noisy_neighbour_rate(steps)`: on this machine, real: a real Prometheus (localplane) scrapes a
  cAdvisor-named endpoint serving CPU cgroups (localplane.cgroups, as the harness kubelet does)
  of a benchmark client and, during each step, a CPU hog on the database's node; the operator's
  own query (benchmarkrun.telemetry.neighbours, the profile's containerCpuByPod) and verdict
  (benchmarkrun.decide.validity) judge each step's window. Flagged = NoisyNode. Steps without
  the hog run beside them (the false-flag rate). About 2 x 8 s per step: not part of bench-method's
  quick figures by default (`make bench-validity`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from localplane import cgroups
from mongobench_results import steady
from mongobench_results.validity import NOISY_NODE

CV_LEVELS = (0.03, 0.05, 0.10)
LENGTHS = (30, 60, 120, 300)
TOLERANCE_S = 2.0


def _series(
    rng: random.Random, n: int, cv: float, warmup: int, level: float = 1000.0
) -> list[float]:
    out = []
    for i in range(n):
        mu = level * (0.4 + 0.6 * i / warmup) if i < warmup else level
        out.append(max(rng.gauss(mu, cv * mu), 0.0))
    return out


@dataclass(frozen=True)
class WarmupFigures:
    found: float  # warm-ups found within TOLERANCE_S, no shift
    false_alarms: float  # steady series judged not steady
    trials: int


def warmup_found_rate(
    trials: int = 600, seed: int = 25, cvs: Sequence[float] = CV_LEVELS
) -> WarmupFigures:
    rng = random.Random(seed)
    found = alarms = 0
    for k in range(trials):
        cv = cvs[k % len(cvs)]
        n = rng.choice(LENGTHS)
        w = rng.randint(3, min(20, n // 3))
        verdict = steady.judge_series(_series(rng, n, cv, w))
        found += (
            verdict.warmup_seconds is not None
            and abs(verdict.warmup_seconds - w) <= TOLERANCE_S
            and not verdict.shifts_seconds
        )
        alarms += not steady.judge_series(_series(rng, n, cv, 0)).steady
    return WarmupFigures(found / trials, alarms / trials, trials)


# --- the noisy neighbour, on this machine ------------------------------------------------------

NODE = "db-node"  # the database's node (cAdvisor's `node` label)
SPIN = "import os\nos.fork()\nwhile True:\n    pass\n"  # two busy processes
WORK = "import time\nwhile True:\n    sum(range(20000))\n    time.sleep(0.01)\n"  # a client's duty


@dataclass(frozen=True)
class NeighbourFigures:
    flagged: float  # steps with the hog judged NoisyNode
    false_flags: float  # steps without it judged NoisyNode
    steps: int


@contextlib.contextmanager
def _in_cgroup(name: str, code: str, version: str) -> Iterator[cgroups.ContainerCgroup]:
    group = cgroups.ContainerCgroup(name, None, version)
    group.create()
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    group.add(proc.pid)
    try:
        yield group
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the group: a forked child goes too
        proc.wait()
        time.sleep(0.2)  # the child's exit, before the cgroup is removed
        group.remove()


def noisy_neighbour_rate(steps: int = 10, step_seconds: float = 6.0) -> NeighbourFigures:
    from localplane.prometheus import start_prometheus
    from mongobench.api.benchmarkrun import ValidityPolicy
    from mongobench.benchmarkrun.decide import validity
    from mongobench.benchmarkrun.telemetry import neighbours
    from mongobench.benchmarkrun.telemetry.cpu import (
        NodeMapping,
        ResourceProfile,
        WindowQuery,
        iso_utc,
        query_window,
    )

    version = cgroups.available()
    if version is None:
        raise SystemExit("method_validity: this user cannot create CPU cgroups here")
    # On this shared machine a hog's share depends on everyone's load: the threshold is low,
    # and nothing but the hog is a neighbour here (the false-flag steps check that).
    profile, policy = ResourceProfile.load(), ValidityPolicy(neighbour_cpu_fraction=0.02)
    containers: dict[cgroups.ContainerKey, cgroups.ContainerCgroup] = {}
    server = cgroups.serve(lambda _path: cgroups.cadvisor_text(list(containers.items())))
    mapping = NodeMapping(aliases={NODE: os.uname().nodename})
    own = [("bench", "client-0")]
    workdir = Path(tempfile.mkdtemp(prefix="method-validity-"))
    # As kube-prometheus-stack's kubelet ServiceMonitor: the containers' own labels kept.
    kubelet = {
        "job_name": "kubelet",
        "honor_labels": True,
        "static_configs": [{"targets": [f"127.0.0.1:{server.server_address[1]}"]}],
    }
    prom = start_prometheus(workdir, extra_scrape_configs=[kubelet])
    flagged = false_flags = 0
    try:
        for step in range(2 * steps):
            hog = step % 2 == 0
            with _in_cgroup(f"bench-client-{step}", WORK, version) as client:
                containers[("bench", "client-0", "ycsb", NODE)] = client
                with contextlib.ExitStack() as stack:
                    if hog:
                        burner = stack.enter_context(_in_cgroup(f"bench-hog-{step}", SPIN, version))
                        containers[("other", "hog", "burn", NODE)] = burner
                    start = time.time()
                    time.sleep(step_seconds)
                    end = time.time()
                    time.sleep(2.5)  # the last scrapes of the window land
                    containers.pop(("other", "hog", "burn", NODE), None)
                containers.pop(("bench", "client-0", "ycsb", NODE), None)
            t0 = iso_utc(datetime.fromtimestamp(start, UTC))
            t1 = iso_utc(datetime.fromtimestamp(end, UTC))
            cpu = query_window(WindowQuery(
                prom_url=prom.url, start=t0, end=t1, step_seconds=1.0, cluster_nodes=[NODE],
                client_nodes=[], namespace="bench", pods=[], scrape_interval=1.0, mapping=mapping,
            ))  # fmt: skip
            found = neighbours.query(
                prom.url, t0, t1, 1.0, nodes=[NODE], own=own,
                node_cpus={n: c.cpus for n, c in cpu.nodes.items()},
                scrape_interval=1.0, mapping=mapping, profile=profile,
            )  # fmt: skip
            verdict = validity.judge_step(
                policy, {}, {"cpu": cpu.to_status(), "neighbours": found}, limit_cores=None
            )
            noisy = NOISY_NODE in verdict.reason_names
            flagged += hog and noisy
            false_flags += (not hog) and noisy
    finally:
        server.shutdown()
        server.server_close()
        prom.stop()
    return NeighbourFigures(flagged / steps, false_flags / steps, steps)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10, help="steps with the hog (and as many without)")
    p.add_argument("--trials", type=int, default=600, help="simulated series with a warm-up")
    p.add_argument("--no-local-plane", action="store_true", help="the simulated figure only")
    args = p.parse_args(argv)
    t = time.monotonic()
    w = warmup_found_rate(args.trials)
    print(
        f"warm-up found within {TOLERANCE_S:g} s: {w.found:.1%} of {w.trials} series "
        f"(CV {', '.join(f'{c:.0%}' for c in CV_LEVELS)}); steady series judged not steady: "
        f"{w.false_alarms:.1%} ({time.monotonic() - t:.1f} s)"
    )
    line = f"warm-up found {100 * w.found:.1f}%"
    if not args.no_local_plane:
        t = time.monotonic()
        n = noisy_neighbour_rate(args.steps)
        print(
            f"noisy neighbour flagged: {n.flagged:.0%} of {n.steps} steps with a CPU hog on the "
            f"database's node; {n.false_flags:.0%} of {n.steps} steps without it "
            f"({time.monotonic() - t:.0f} s)"
        )
        line += f", noisy neighbour flagged {100 * n.flagged:.1f}%"
    print(f"method-validity: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
