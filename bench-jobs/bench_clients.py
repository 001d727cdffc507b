"""`make bench-clients`: what each benchmark client costs, against its bare-driver baseline.

One FerretDB on loopback, loaded once (YCSB load, 1,000 records); then the same read-only work
(workload C: reads of YCSB keys, THREADS threads, OPS operations) driven by
  1. YCSB with the project's binding (mongobench-runner ycsb)
  2. a bare Java driver loop (io.mongobench.ycsb.bench.BareReadLoop, same driver jar)
  3. the Locust driver (mongobench-runner locust)
  4. a bare pymongo loop (threads calling find_one)
Client CPU is user+system of the client process tree (RUSAGE_CHILDREN around each process;
for the runner-driven clients the figure in the result document, which excludes the runner).
Prints CPU seconds per 1,000 operations and ops/s, and each as a ratio to the bare loop of the
same language. The server shares the machine: absolute ops/s say more about FerretDB than about
the clients; the CPU per operation is the client's own cost.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from localplane.ferretdb import running_ferretdb
from mongobench_runner.ycsb import ycsb_home

RECORDS = int(os.environ.get("BENCH_RECORDS", "1000"))
OPS = int(os.environ.get("BENCH_OPS", "6000"))
THREADS = int(os.environ.get("BENCH_THREADS", "4"))

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


def _measured(cmd: list[str]) -> tuple[dict[str, float], float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.strip().splitlines()[-1]), cpu


def _runner(args: list[str], tmp: Path, name: str) -> dict[str, float]:
    out = tmp / f"{name}.json"
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
    return {
        "ops": doc["operationsTotal"],
        "seconds": doc["runtimeSeconds"],
        "cpu": doc["clientCpu"]["totalSeconds"],
    }


def main() -> int:
    if not (ycsb_home() / "lib").is_dir():
        raise SystemExit("the YCSB binding is not built: run `make setup`")
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmpdir, running_ferretdb() as fdb:
        tmp = Path(tmpdir)
        db = "bench"
        uri = f"{fdb.uri}{db}"
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
        _runner(["ycsb", "--phase", "load", *common, "-p", "batchsize=100"], tmp, "load")
        rows: dict[str, dict[str, float]] = {}
        rows["YCSB binding"] = _runner(["ycsb", "--phase", "run", *common], tmp, "ycsb")
        java = [
            os.environ.get("JAVA", "java"),
            "-cp",
            str(ycsb_home() / "lib" / "*"),
            "io.mongobench.ycsb.bench.BareReadLoop",
            fdb.uri,
            db,
            str(RECORDS),
            str(OPS),
            str(THREADS),
        ]
        res, cpu = _measured(java)
        rows["bare Java driver"] = {"ops": res["operations"], "seconds": res["seconds"], "cpu": cpu}
        rows["Locust driver"] = _runner(["locust", "--phase", "run", *common], tmp, "locust")
        res, cpu = _measured(
            [sys.executable, "-c", PYMONGO_LOOP, fdb.uri, db, str(RECORDS), str(OPS), str(THREADS)]
        )
        rows["bare pymongo"] = {"ops": res["operations"], "seconds": res["seconds"], "cpu": cpu}

    baseline = {
        "YCSB binding": "bare Java driver",
        "bare Java driver": "bare Java driver",
        "Locust driver": "bare pymongo",
        "bare pymongo": "bare pymongo",
    }
    print(
        f"\nbench-clients: FerretDB on loopback, workload C (uniform reads), {RECORDS} records, "
        f"{OPS} operations, {THREADS} threads\n"
    )
    print(
        f"{'client':<18}{'ops/s':>10}{'CPU s/1k ops':>14}{'ops/s ratio':>13}"
        f"{'CPU ratio':>11}  (ratios to the bare loop of the same language)"
    )
    for name, row in rows.items():
        rate = row["ops"] / row["seconds"]
        cpu_k = row["cpu"] / row["ops"] * 1000
        base = rows[baseline[name]]
        base_rate = base["ops"] / base["seconds"]
        base_cpu = base["cpu"] / base["ops"] * 1000
        print(
            f"{name:<18}{rate:>10.1f}{cpu_k:>14.3f}{rate / base_rate:>13.2f}"
            f"{cpu_k / base_cpu:>11.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
