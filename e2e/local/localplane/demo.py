"""`make demo`: the main job on the embedded default, with no cluster and no Docker.

    python -m localplane.demo [--keep] [--workloads abcdef] [--repetitions 3] [--max-repetitions 5]
                              [--records 500]

Starts the local control plane (real kube-apiserver, etcd, controller-manager, scheduler; KWOK
nodes), the CRDs and the operator, a real Prometheus scraping a real node-exporter, FerretDB as
the database (it speaks MongoDB's wire protocol; no mongod can be installed here, so FerretDB
stands in for MongoDB and its numbers are FerretDB's), and the harness kubelet that really runs
the benchmark pods (the runner and YCSB with the project's binding). Then it runs three
BenchmarkRuns against FerretDB through `spec.uriSecretRef`: 1 client, the same again (an A/A
pair: any "difference" between those two is noise), and 2 clients, each workloads A-F with
adaptive repetitions (at least 3, more until the throughput's interval is within +-10% of its
mean or 5 are done: status says whether the target was met). The operator judges every trial
(validity: on this plane the clients share the database's host, so trials are often
client-bound, and the comparison leaves invalid trials out and says so). It shows `mongobench
watch` for each, prints `mongobench compare` of the three and writes the HTML report. Everything
stops at the end; `--keep` (make demo KEEP=1) keeps it all running for kubectl until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.nodes import NodeSet
from localplane.operator import start_operator
from localplane.plane import Plane, cleanup_stale
from localplane.prometheus import start_prometheus
from localplane.tools import REPO, binary

DEMO = Path(os.environ.get("MONGOBENCH_DEMO_DIR", REPO / ".demo"))
NS = "demo"
VENV_BIN = REPO / ".venv" / "bin"


class Missing(RuntimeError):
    """A piece the demo needs is not installed: one line that says which and how."""


def say(msg: str) -> None:
    print(f"demo: {msg}", flush=True)


def check_pieces() -> None:
    """Fails before anything starts when a piece is missing."""
    problems = []
    for name in ("kube-apiserver", "etcd", "kwok", "ferretdb"):
        try:
            binary(name)
        except (FileNotFoundError, KeyError):
            problems.append(f"{name} (built by `make setup`)")
    for name in ("prometheus", "prometheus-node-exporter"):
        if shutil.which(name) is None:
            problems.append(f"{name} (`make setup` installs it from Debian)")
    for exe in ("mongobench", "mongobench-operator", "mongobench-runner"):
        if not (VENV_BIN / exe).is_file():
            problems.append(f"{exe} in .venv (`make setup`)")
    if not (REPO / "bench-jobs" / "ycsb-binding" / "target" / "ycsb" / "lib").is_dir():
        problems.append("the YCSB binding (`make setup` builds it with Maven)")
    if problems:
        raise Missing("missing: " + "; ".join(problems))


# Adaptive repetitions: at least --repetitions trials a workload, then more until the throughput's
# 95% interval is within +-10% of its mean, or --max-repetitions.
TARGET_HALF_WIDTH = 0.10


def run_manifest(
    name: str, clients: int, workloads: str, repetitions: int, records: int, max_repetitions: int
) -> Any:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": name},
        "spec": {
            "uriSecretRef": {"name": "ferretdb", "key": "uri"},
            # An external database is used as it is (nothing dropped): each run loads its own.
            "database": name.replace("-", "_"),
            "workloads": [{"name": w} for w in workloads],
            "load": {"recordCount": records, "threads": 2},
            "run": {"operationCount": records, "threads": 2, "statusIntervalSeconds": 1},
            "repetitions": repetitions,
            "repeatUntil": {
                "metric": "throughput",
                "relativeHalfWidth": TARGET_HALF_WIDTH,
                "maxRepetitions": max(max_repetitions, repetitions),
            },
            "clients": {"parallelism": clients},
            "labels": {"demo": "clients", "clients": str(clients)},
        },
    }


def judged(plane: Plane, name: str) -> list[str]:
    """What the operator concluded of a finished run's trials: the TrialsValid and TargetMet
    conditions (how many trials were valid; whether adaptive repetitions met their target)."""
    out = plane.kubectl("get", "benchmarkrun", name, "-n", NS, "-o", "json")
    conditions = json.loads(out.stdout).get("status", {}).get("conditions", [])
    wanted = ("TrialsValid", "TargetMet")
    return [
        f"{c['type']} {c.get('status')} ({c.get('reason')}): {c.get('message', '')}"
        for c in conditions
        if c.get("type") in wanted
    ]


def cli(kubeconfig: Path, *args: str, check: bool = True) -> int:
    """The user's CLI, as a user runs it (its output goes to this terminal)."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    code = subprocess.call([str(VENV_BIN / "mongobench"), *args, "-n", NS], env=env)
    if check and code != 0:
        raise RuntimeError(f"`mongobench {' '.join(args)}` exited {code}")
    return code


def node_aliases(plane: Plane) -> str:
    """Every KWOK node is this machine for node-exporter."""
    host = os.uname().nodename
    names = plane.kubectl("get", "nodes", "-o", "name").stdout.split()
    return ",".join(f"{n.removeprefix('node/')}={host}" for n in names)


@contextmanager
def embedded(work: Path, keep: bool) -> Iterator[tuple[Plane, str]]:
    """The whole embedded default, stopped on exit."""
    with ExitStack() as stack:
        say("starting the local control plane (kube-apiserver, etcd, scheduler, KWOK nodes) ...")
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3))
        stack.callback(plane.stop)
        plane.apply(REPO / "crds")
        plane.kubectl("create", "namespace", NS)
        say(f"plane up in {plane.started_in:.1f}s; starting Prometheus, node-exporter, FerretDB")
        prom = start_prometheus(work / "prometheus")
        stack.callback(prom.stop)
        fdb = stack.enter_context(running_ferretdb(work / "ferretdb"))
        plane.kubectl(
            "create", "secret", "generic", "ferretdb", "-n", NS, f"--from-literal=uri={fdb.uri}"
        )
        stack.enter_context(
            pod_executor(plane, NS, uri_rewrite=rewrite_hosts(f"{fdb.host}:{fdb.port}"))
        )
        operator = start_operator(
            plane.kubeconfig,
            [NS],
            work / "operator.log",
            MONGOBENCH_PROMETHEUS_URL=prom.url,
            MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1",
            MONGOBENCH_PROMETHEUS_NODE_ALIASES=node_aliases(plane),
        )
        stack.callback(operator.stop)
        yield plane, prom.url
        if keep:
            say(
                f"KEEP: everything stays up until Ctrl-C.\n"
                f"  export KUBECONFIG={plane.kubeconfig}\n"
                f"  kubectl get benchmarkruns -n {NS}\n"
                f"  Prometheus: {prom.url}"
            )
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                say("stopping")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localplane.demo", description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep everything up until Ctrl-C")
    parser.add_argument("--workloads", default="abcdef")
    parser.add_argument("--repetitions", type=int, default=3, help="the minimum per workload")
    parser.add_argument("--max-repetitions", type=int, default=5)
    parser.add_argument("--records", type=int, default=500)
    args = parser.parse_args(argv)
    # A stopped demo (SIGTERM, Ctrl-C) unwinds its ExitStack: nothing is left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began = time.monotonic()
    try:
        check_pieces()
    except Missing as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    cleanup_stale()
    shutil.rmtree(DEMO, ignore_errors=True)
    DEMO.mkdir(parents=True)
    work = DEMO / "work"
    report = DEMO / "report"
    export = DEMO / "export"
    # demo-1client-again is demo-1client's A/A twin: the same spec, run after it.
    runs = [("demo-1client", 1), ("demo-1client-again", 1), ("demo-2clients", 2)]
    try:
        with embedded(work, args.keep) as (plane, _):
            for name, clients in runs:
                manifest = run_manifest(
                    name,
                    clients,
                    args.workloads,
                    args.repetitions,
                    args.records,
                    args.max_repetitions,
                )
                plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(manifest))
                say(
                    f"BenchmarkRun {name}: workloads {args.workloads.upper()} x "
                    f"{args.repetitions} to {max(args.max_repetitions, args.repetitions)} "
                    f"repetitions (until +-{TARGET_HALF_WIDTH:.0%}), "
                    f"{clients} client(s) x 2 threads"
                )
                if cli(plane.kubeconfig, "watch", name, check=False) != 0:
                    cli(plane.kubeconfig, "describe", name, check=False)
                    raise RuntimeError(f"BenchmarkRun {name} did not succeed (described above)")
                for line in judged(plane, name):
                    say(f"  {line}")
            say(
                "comparison (benchstat style: a change only where the data shows one; "
                "demo-1client-again is an A/A twin of the baseline, so any verdict it gets is "
                "noise; invalid trials are left out and counted in the validity column):"
            )
            cli(plane.kubeconfig, "compare", *(n for n, _ in runs), "--baseline", runs[0][0])
            cli(plane.kubeconfig, "report", *(n for n, _ in runs), "-o", str(report))
            cli(plane.kubeconfig, "export", *(n for n, _ in runs), "-o", str(export))
            say(
                f"done in {time.monotonic() - began:.0f}s. FerretDB stood in for MongoDB.\n"
                f"  report:        {report / 'report.html'}\n"
                f"  export:        {export}\n"
                f"  operator log:  {work / 'operator.log'}"
            )
    except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as e:
        print(f"demo: FAILED: {e} (logs under {work})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
