"""`make bench-clients`: what each benchmark client costs, against its bare-driver baseline.

One server on loopback, loaded once (YCSB load, BENCH_RECORDS records, default 1,000); then the
same read-only work (workload C: uniform reads of YCSB keys, BENCH_THREADS threads, BENCH_OPS
operations) driven by
  1. YCSB with the project's binding (mongobench-runner ycsb)
  2. a bare Java driver loop (io.mongobench.ycsb.bench.BareReadLoop, same driver jar)
  3. the Locust driver (mongobench-runner locust)
  4. a bare pymongo loop (threads calling find_one)
The server (BENCH_SERVER) is by default mongobench-wireserver (benchmarks/wireserver: in-memory,
Go), fast enough that the clients are the bottleneck; BENCH_SERVER=ferretdb runs FerretDB
(SQLite) instead, which bounds every client at a few hundred ops/s.
Client CPU is user+system of the client process tree (RUSAGE_CHILDREN around each process;
for the runner-driven clients the figure in the result document, which excludes the runner);
server CPU is the server process's over the same span (/proc). Prints ops/s and CPU seconds per
1,000 operations of every client, each as a ratio to the bare loop of the same language, and the
cores client and server used, so a reader sees which side was the bottleneck.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from localplane.ferretdb import running_ferretdb
from mongobench_runner.ycsb import ycsb_home

sys.path.insert(0, str(Path(__file__).resolve().parent / "wireserver"))
from wireserver import process_cpu_seconds, running_wireserver

SERVER = os.environ.get("BENCH_SERVER", "wireserver")
RECORDS = int(os.environ.get("BENCH_RECORDS", "1000"))
# FerretDB serves a few hundred reads a second: fewer operations keep its run short. Against the
# wire server, enough that JVM start-up and JIT warm-up (a few CPU seconds) weigh little.
OPS = int(os.environ.get("BENCH_OPS", "6000" if SERVER == "ferretdb" else "200000"))
THREADS = int(os.environ.get("BENCH_THREADS", "4"))
# Every client runs ROUNDS times, alternately in order and in reverse order; figures are over all
# rounds, the CPU per 1,000 operations of each round is shown too (the machine's other work and
# JIT warm-up move single runs by 10-30%).
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1" if SERVER == "ferretdb" else "2"))

PYMONGO_LOOP = """
import json, random, sys, threading, time
import pymongo
from mongobench_runner.ycsbgen import key_name
uri, db, records, ops, threads = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
coll = pymongo.MongoClient(uri)[db]["usertable"]
lock = threading.Lock()
state = {"issued": 0, "errors": 0}
def work():
    rnd = random.Random()
    while True:
        with lock:
            if state["issued"] >= ops:
                return
            state["issued"] += 1
        if coll.find_one({"_id": key_name(rnd.randrange(records), hashed=True)}) is None:
            with lock:
                state["errors"] += 1
start = time.perf_counter()
ts = [threading.Thread(target=work) for _ in range(threads)]
[t.start() for t in ts]
[t.join() for t in ts]
print(json.dumps({"operations": ops, "errors": state["errors"],
                  "seconds": time.perf_counter() - start}))
"""


@dataclass
class Server:
    label: str
    uri: str
    cpu_seconds: Callable[[], float]
    log: Path


@contextmanager
def _server() -> Iterator[Server]:
    if SERVER == "ferretdb":
        with running_ferretdb() as fdb:
            yield Server(
                "FerretDB (SQLite backend)",
                fdb.uri,
                lambda: process_cpu_seconds(fdb.process.pid),
                fdb.log,
            )
    elif SERVER == "wireserver":
        with running_wireserver() as ws:
            try:
                yield Server(
                    "mongobench-wireserver (in-memory, Go)", ws.uri, ws.cpu_seconds, ws.log
                )
            finally:
                ws.stop()  # it logs the commands it served on SIGTERM
                _report_wireserver_log(ws.log)
    else:
        raise SystemExit(f"BENCH_SERVER={SERVER!r}: wireserver (default) or ferretdb")


def _report_wireserver_log(log: Path) -> None:
    lines = log.read_text().splitlines()
    unknown = [ln for ln in lines if "unknown command" in ln or "failed" in ln]
    for ln in unknown[:20]:
        print(f"  server: {ln}", file=sys.stderr)
    served = [ln for ln in lines if " served " in ln]
    if served:
        print(f"\nserver log: {served[-1].split('wireserver: ', 1)[-1].split(' ', 2)[-1]}")


@dataclass
class Row:
    ops: float
    seconds: float  # the measured window (the client's own first-to-last operation)
    cpu: float  # client CPU seconds
    wall: float  # wall seconds of the client's process
    server_cpu: float  # server CPU seconds over the client's process
    errors: float = 0


class Meter:
    """Wall time and the server's CPU around one client process."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def __enter__(self) -> Meter:
        self.t0 = time.perf_counter()
        self.s0 = self.server.cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.server_cpu = self.server.cpu_seconds() - self.s0


def _measured(cmd: list[str], server: Server) -> Row:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with Meter(server) as m:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = json.loads(out.strip().splitlines()[-1])
    return Row(res["operations"], res["seconds"], cpu, m.wall, m.server_cpu, res["errors"])


def _runner(args: list[str], tmp: Path, name: str, server: Server) -> Row:
    out = tmp / f"{name}.json"
    with Meter(server) as m:
        proc = subprocess.run(
            [sys.executable, "-m", "mongobench_runner", *args, "--output", f"file:{out}"],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    doc = json.loads(out.read_text())
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed: {doc['error']}")
    return Row(
        doc["operationsTotal"],
        doc["runtimeSeconds"],
        doc["clientCpu"]["totalSeconds"],
        m.wall,
        m.server_cpu,
    )


BASELINE = {
    "YCSB binding": "bare Java driver",
    "bare Java driver": "bare Java driver",
    "Locust driver": "bare pymongo",
    "bare pymongo": "bare pymongo",
}


def _total(runs: list[Row]) -> Row:
    return Row(*(sum(getattr(r, f) for r in runs) for f in Row.__dataclass_fields__))


def _table(label: str, results: dict[str, list[Row]], load: float) -> None:
    print(
        f"\nbench-clients: {label} on loopback, workload C (uniform reads), {RECORDS} records, "
        f"{OPS} operations x {ROUNDS} round(s) per client, {THREADS} threads, "
        f"{os.cpu_count()} CPUs (1-minute load average {load:.2f} before the server started)\n"
    )
    print(
        f"{'client':<18}{'ops/s':>9}{'CPU s/1k ops':>14}{'CPU ratio':>11}{'ops/s ratio':>13}"
        f"{'client cores':>14}{'server cores':>14}{'server CPU s/1k':>17}"
        f"{'bound by':>10}  CPU s/1k by round"
    )
    rows = {name: _total(runs) for name, runs in results.items()}
    for name, row in rows.items():
        rate = row.ops / row.seconds
        cpu_k = row.cpu / row.ops * 1000
        base = rows[BASELINE[name]]
        base_rate = base.ops / base.seconds
        base_cpu = base.cpu / base.ops * 1000
        client_cores, server_cores = row.cpu / row.wall, row.server_cpu / row.wall
        print(
            f"{name:<18}{rate:>9.0f}{cpu_k:>14.4f}{cpu_k / base_cpu:>11.2f}"
            f"{rate / base_rate:>13.2f}{client_cores:>14.2f}{server_cores:>14.2f}"
            f"{row.server_cpu / row.ops * 1000:>17.4f}"
            f"{'client' if client_cores > server_cores else 'server':>10}  "
            + " ".join(f"{r.cpu / r.ops * 1000:.4f}" for r in results[name])
        )
    print(
        "\nratios: to the bare loop of the same language (YCSB binding / bare Java driver, "
        "Locust driver / bare pymongo).\n"
        "cores: CPU seconds / wall seconds of the client's process (start-up included), for the "
        "client and for the server over the same span; ops/s is over the client's own measured "
        "window. bound by: the side that used more CPU (a client far above the server: the "
        "client was the bottleneck).\n"
        "Figures are over all rounds (totals)."
    )
    for name, row in rows.items():
        if row.errors:
            print(f"WARNING: {name}: {row.errors:.0f} reads found no document")


def main() -> int:
    if not (ycsb_home() / "lib").is_dir():
        raise SystemExit("the YCSB binding is not built: run `make setup`")
    results: dict[str, list[Row]] = {name: [] for name in BASELINE}
    load = os.getloadavg()[0]  # other work on the machine shares its CPUs with the clients
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmpdir, _server() as server:
        tmp = Path(tmpdir)
        db = "bench"
        uri = f"{server.uri}{db}"
        common = [
            "--workload",
            "c",
            "--uri",
            uri,
            "--threads",
            str(THREADS),
            "-p",
            f"recordcount={RECORDS}",
            "-p",
            f"operationcount={OPS}",
            "-p",
            "requestdistribution=uniform",
            "--timeout",
            "900",
        ]
        _runner(["ycsb", "--phase", "load", *common, "-p", "batchsize=100"], tmp, "load", server)
        java = [
            os.environ.get("JAVA", "java"),
            "-cp",
            str(ycsb_home() / "lib" / "*"),
            "io.mongobench.ycsb.bench.BareReadLoop",
            server.uri,
            db,
            str(RECORDS),
            str(OPS),
            str(THREADS),
        ]
        loop = [sys.executable, "-c", PYMONGO_LOOP, server.uri, db, str(RECORDS), str(OPS)]
        clients: dict[str, Callable[[], Row]] = {
            "YCSB binding": lambda: _runner(
                ["ycsb", "--phase", "run", *common], tmp, "ycsb", server
            ),
            "bare Java driver": lambda: _measured(java, server),
            "Locust driver": lambda: _runner(
                ["locust", "--phase", "run", *common], tmp, "locust", server
            ),
            "bare pymongo": lambda: _measured([*loop, str(THREADS)], server),
        }
        for r in range(ROUNDS):
            names = list(clients) if r % 2 == 0 else list(reversed(clients))
            for name in names:
                results[name].append(clients[name]())
        _table(server.label, results, load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
