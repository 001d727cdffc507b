"""`make demo`: the main job on the embedded default, with no cluster and no Docker.

    python -m localplane.demo [--keep] [--workloads ac] [--repetitions 3] [--max-repetitions 0]
                              [--records 1000] [--seconds 20] [--threads 1] [--warm-servers 30]

Starts the local control plane (real kube-apiserver, etcd, controller-manager, scheduler; KWOK
nodes), the CRDs and the operator, a real Prometheus scraping a real node-exporter, and the
harness kubelet that really runs the benchmark pods (the runner and YCSB with the project's
binding). The databases are FerretDB (it speaks MongoDB's wire protocol; no mongod can be
installed here, so its numbers are FerretDB's): one on SQLite, one on Debian's PostgreSQL.

It answers one question, "is FerretDB faster on PostgreSQL than on SQLite?", with three
BenchmarkRuns through `spec.uriSecretRef` that differ only in their database: SQLite (the
baseline), PostgreSQL, and SQLite again (an A/A twin, run last: a drift of this machine over the
demo shows there as a "difference" where there can be none). Each trial is bounded by time
(`run.durationSeconds`), one client with a CPU limit of its own, so the operator's checks judge
the client against its limit and not against this machine, whose CPU the databases share, and
after unmeasured reads in its own process (`run.warmupSeconds`); an invalid trial is run once
more (`validity.rerunInvalid`), and both servers get unmeasured load first (`--warm-servers`).
The databases and the client run on a CPU of their own, the control plane on the others
(localplane.cpusets). It shows `mongobench watch` for each run, writes the HTML report
and an export, and ends with `mongobench compare` of the three. Everything stops at the end;
`--keep` (make demo KEEP=1) keeps it all running for kubectl until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pymongo import MongoClient
from pymongo.collection import Collection

from localplane import cpusets
from localplane.executor import pod_executor
from localplane.ferretdb import running_ferretdb
from localplane.nodes import NodeSet
from localplane.operator import start_operator
from localplane.plane import Plane, cleanup_stale
from localplane.postgres import bin_dir as postgres_bin
from localplane.postgres import running_postgres
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
    if postgres_bin() is None:
        problems.append("PostgreSQL's server (`make setup` installs it from Debian)")
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
# Each client container's CPU limit: the clients are judged against their own cgroup (ClientBound
# at 90% of it), not against this machine, whose CPU the database shares.
CLIENT_CPU = "1"
WARMUP_SECONDS = 4

# The question the demo answers: the same MongoDB protocol, workloads and clients in front of two
# storage engines. FerretDB translates each command into SQL for its backend.
WHY = (
    "The same MongoDB protocol, workloads and client in front of two storage engines. FerretDB "
    "v1.24 on SQLite finds a document by reading its collection: its time per operation grows "
    "with the collection (one read by _id took about 1 ms among 100 documents and 17 ms among "
    "4,000 on a 2-core machine). On PostgreSQL it hands the filter to PostgreSQL, which scans "
    "the table in its own process (1.7 ms among 4,000). Expect PostgreSQL faster, most where "
    "updates are many (A: each one finds, then writes), less where there are only reads (C)."
)


@dataclass(frozen=True)
class Config:
    name: str  # the BenchmarkRun
    secret: str  # the Secret with its database's URI
    backend: str  # sqlite | postgresql
    what: str  # one line for the terminal


# The baseline, the configuration under test, and the baseline again: an A/A twin after both, so
# that a drift of this machine over the demo shows as a "difference" where there can be none.
CONFIGS = (
    Config("demo-sqlite", "ferretdb-sqlite", "sqlite", "FerretDB on SQLite (the baseline)"),
    Config("demo-postgresql", "ferretdb-postgresql", "postgresql", "FerretDB on PostgreSQL"),
    Config("demo-sqlite-again", "ferretdb-sqlite", "sqlite", "FerretDB on SQLite again (A/A twin)"),
)


def run_manifest(config: Config, args: argparse.Namespace) -> Any:
    return {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": config.name},
        "spec": {
            "uriSecretRef": {"name": config.secret, "key": "uri"},
            # An external database is used as it is (nothing dropped): each run loads its own.
            "database": config.name.replace("-", "_"),
            "workloads": [{"name": w} for w in args.workloads],
            "load": {"recordCount": args.records, "threads": 2},
            # Bounded by time: every trial measures the same window, long enough for the
            # steadiness check (one throughput sample a second).
            "run": {
                "durationSeconds": args.seconds,
                # Each trial is a new client process with new connections: its first seconds
                # were slower (3-6 s on PostgreSQL), a warm-up the steadiness check flagged in
                # most trials. Unmeasured reads over the same connections come first.
                "warmupSeconds": WARMUP_SECONDS,
                "threads": args.threads,
                # The steadiness check's resolution. Per second, this shared 2-core machine moved
                # throughput by 10-20% for seconds at a time in trials of steady means (one in
                # three flagged as a level shift); over 2 s those wobbles average out, and a
                # 20-s trial still has the 10 points the check needs.
                "statusIntervalSeconds": 2,
            },
            "repetitions": args.repetitions,
            # A trial still rose 10-15% in its first half now and then (one in 19 in the last
            # demo, on SQLite under A's updates), NotSteady: such a trial is run once more,
            # right after it, and both stay in the record.
            "validity": {"rerunInvalid": 1},
            **(
                {
                    "repeatUntil": {
                        "metric": "throughput",
                        "relativeHalfWidth": TARGET_HALF_WIDTH,
                        "maxRepetitions": args.max_repetitions,
                    }
                }
                if args.max_repetitions > args.repetitions
                else {}
            ),
            "clients": {
                "parallelism": 1,
                # Requests = limits (Guaranteed), as a kubelet's static CPU manager wants for
                # cores of its own: here the measured CPU (localplane.cpusets).
                "resources": {"requests": {"cpu": CLIENT_CPU}, "limits": {"cpu": CLIENT_CPU}},
                # Each trial is a new JVM: with the JIT's two tiers, the client sped up for the
                # first 5-10 s of every 20-s trial (the steadiness check saw it as a warm-up);
                # the first tier alone is at speed within a second or two.
                "jvmOptions": ["-XX:TieredStopAtLevel=1"],
            },
            "labels": {"demo": "backend", "backend": config.backend},
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


# Fresh servers were slower for their first minutes: run one after the other, the baseline (first)
# measured 20-30% below its A/A twin (last). Reads and updates on a throwaway database first.
SERVER_WARMUP_SECONDS = 30


def warm_servers(uris: list[str], seconds: float) -> None:
    """Reads and updates by _id on a throwaway collection of each server, all at once."""

    def warm(uri: str) -> None:
        client: MongoClient[dict[str, Any]]
        with MongoClient(uri, serverSelectionTimeoutMS=10_000) as client:
            docs: Collection[dict[str, Any]] = client.demo_warmup.usertable
            docs.drop()
            fields = {f"field{j}": "x" * 100 for j in range(10)}
            docs.insert_many([{"_id": f"user{i}", **fields} for i in range(1000)])
            until = time.monotonic() + seconds
            i = 0
            while time.monotonic() < until:
                key = f"user{(i * 7919) % 1000}"
                docs.find_one({"_id": key})
                docs.update_one({"_id": key}, {"$set": {"field0": f"y{i}"}})
                i += 1
            client.drop_database("demo_warmup")

    threads = [threading.Thread(target=warm, args=(uri,)) for uri in uris]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def node_aliases(plane: Plane) -> str:
    """Every KWOK node is this machine for node-exporter."""
    host = os.uname().nodename
    names = plane.kubectl("get", "nodes", "-o", "name").stdout.split()
    return ",".join(f"{n.removeprefix('node/')}={host}" for n in names)


@contextmanager
def embedded(work: Path, keep: bool, warm_seconds: float) -> Iterator[tuple[Plane, str]]:
    """The whole embedded default, stopped on exit."""
    cpus = cpusets.split()
    if cpus is not None:
        # This thread first: what it starts (the plane, Prometheus, the operator, the executor's
        # threads) inherits the harness's CPUs; the servers and clients move to their own below.
        os.sched_setaffinity(0, cpus.harness)
    with ExitStack() as stack:
        say("starting the local control plane (kube-apiserver, etcd, scheduler, KWOK nodes) ...")
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3))
        stack.callback(plane.stop)
        plane.apply(REPO / "crds")
        plane.kubectl("create", "namespace", NS)
        say(
            f"plane up in {plane.started_in:.1f}s; starting Prometheus, node-exporter, "
            "PostgreSQL and two FerretDB servers (SQLite, PostgreSQL)"
        )
        prom = start_prometheus(work / "prometheus")
        stack.callback(prom.stop)
        pg = stack.enter_context(running_postgres())
        servers = {
            "ferretdb-sqlite": stack.enter_context(running_ferretdb(work / "ferretdb-sqlite")),
            "ferretdb-postgresql": stack.enter_context(
                running_ferretdb(work / "ferretdb-postgresql", postgresql_url=pg.url)
            ),
        }
        if cpus is not None:
            say(f"the measured path on CPUs of its own: {cpus.describe()}")
            for pid in (pg.pid, *(fdb.process.pid for fdb in servers.values())):
                cpusets.pin_process_tree(pid, cpus.measured)
        for secret, fdb in servers.items():
            plane.kubectl(
                "create", "secret", "generic", secret, "-n", NS, f"--from-literal=uri={fdb.uri}"
            )
        # The Secrets' URIs are this machine's loopback already: nothing to rewrite.
        stack.enter_context(
            pod_executor(
                plane, NS, uri_rewrite=lambda uri: uri, cpuset=cpus.measured if cpus else None
            )
        )
        say(f"warming both servers for {warm_seconds:g} s (not measured)")
        warm_servers([fdb.uri for fdb in servers.values()], warm_seconds)
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
    parser.add_argument("--workloads", default="ac")
    parser.add_argument("--repetitions", type=int, default=3, help="the minimum per workload")
    parser.add_argument(
        "--max-repetitions",
        type=int,
        default=0,
        help="more trials until the throughput's interval is within +-10%% (adaptive)",
    )
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=20, help="each trial's measured window")
    parser.add_argument("--threads", type=int, default=1, help="YCSB threads of the client")
    parser.add_argument(
        "--warm-servers",
        type=float,
        default=SERVER_WARMUP_SECONDS,
        help="seconds of unmeasured load on both servers first",
    )
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
    names = [c.name for c in CONFIGS]
    maximum = max(args.max_repetitions, args.repetitions)
    say(f"the question: is FerretDB faster on PostgreSQL than on SQLite? {WHY}")
    try:
        with embedded(work, args.keep, args.warm_servers) as (plane, _):
            for config in CONFIGS:
                manifest = run_manifest(config, args)
                plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(manifest))
                trials = (
                    f"{args.repetitions} to {maximum} trials (until +-{TARGET_HALF_WIDTH:.0%})"
                    if maximum > args.repetitions
                    else f"{args.repetitions} trials"
                )
                say(
                    f"BenchmarkRun {config.name}: {config.what}; workloads "
                    f"{args.workloads.upper()} x {trials} of {args.seconds} s, 1 client x "
                    f"{args.threads} thread{'s' if args.threads > 1 else ''}"
                )
                if cli(plane.kubeconfig, "watch", config.name, check=False) != 0:
                    cli(plane.kubeconfig, "describe", config.name, check=False)
                    raise RuntimeError(
                        f"BenchmarkRun {config.name} did not succeed (described above)"
                    )
                for line in judged(plane, config.name):
                    say(f"  {line}")
            cli(plane.kubeconfig, "report", *names, "--baseline", names[0], "-o", str(report))
            cli(plane.kubeconfig, "export", *names, "-o", str(export))
            say(
                f"done in {time.monotonic() - began:.0f}s. FerretDB stood in for MongoDB.\n"
                f"  report:        {report / 'report.html'}\n"
                f"  export:        {export}\n"
                f"  operator log:  {work / 'operator.log'}"
            )
            # The answer last, where the terminal stops.
            # On the question's metric: the verdicts are adjusted together across the table's
            # comparisons, and the latency and CPU rows (20 with them, 4 without) asked more
            # of a 3-trial throughput difference than the question does. The report has them.
            say(
                f"the answer, on throughput ({CONFIGS[2].name} is the A/A twin; latency and "
                "CPU: the report):"
            )
            cli(
                plane.kubeconfig, "compare", *names, "--baseline", names[0], "--metric",
                "throughput",
            )  # fmt: skip
    except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as e:
        print(f"demo: FAILED: {e} (logs under {work})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
