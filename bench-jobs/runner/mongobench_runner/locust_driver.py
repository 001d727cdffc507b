"""Runs the Locust driver (bench-jobs/locust/locustfile.py) as separate processes.

Locust monkey-patches the interpreter with gevent, so it never runs inside the runner: the runner
starts `locust` (standalone, or a master plus local workers, or only a master/worker for
multi-pod runs), waits, and turns the histograms the locustfile reports into the same result
document YCSB runs produce. With `--scenario FILE` Locust runs a user scenario (a MongoScenario
from bench-jobs/locust/mongobench_scenario.py, which that folder provides on the path) instead
of the YCSB workloads; its measurements and document are the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

from mongobench_results import hdr
from mongobench_results.document import Document, OpResult, Window, build_document, iso_us, utc_now
from mongobench_runner import cgroup, tls
from mongobench_runner import workload as wl
from mongobench_runner.barrier import BarrierError, ClientGate, describe
from mongobench_runner.client_options import (
    client_options,
    connection_per_thread,
    connection_record,
)
from mongobench_runner.failures import error_ratio_problem
from mongobench_runner.metrics import LiveMetrics, StatusFollower
from mongobench_runner.series import series_fields
from mongobench_runner.ycsbgen import check_distribution

LOCUST_VERSION = "2.47.0"


def locustfile() -> Path:
    env = os.environ.get("MONGOBENCH_LOCUSTFILE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "locust" / "locustfile.py"


def scenario_file(args: argparse.Namespace) -> Path | None:
    """The user scenario of `--scenario`, checked before anything starts; None: YCSB's mixes."""
    if not getattr(args, "scenario", None):
        return None
    path = Path(args.scenario)
    if not path.is_file():
        raise ValueError(f"scenario {path}: no such file")
    return path


def _locustfile(args: argparse.Namespace) -> str:
    return str(scenario_file(args) or locustfile())


def _env(cfg: Path) -> dict[str, str]:
    """Locust's environment: the config, and the driver's folder on the path (a scenario file
    elsewhere imports mongobench_scenario from there)."""
    path = [str(locustfile().parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {
        **os.environ,
        "MONGOBENCH_LOCUST_CONFIG": str(cfg),
        "PYTHONPATH": os.pathsep.join(path),
    }


def locust_command() -> list[str]:
    exe = shutil.which("locust", path=str(Path(sys.executable).parent)) or shutil.which("locust")
    return [exe] if exe else [sys.executable, "-m", "locust"]


def _base_args(users: int, file: str) -> list[str]:
    return [
        *locust_command(),
        "-f",
        file,
        "--headless",
        "--users",
        str(users),
        "--spawn-rate",
        str(max(users, 1)),
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--skip-log-setup",
        "--stop-timeout",
        "5",
    ]


def _config(tmp: Path, args: argparse.Namespace, props: dict[str, str], workers: int) -> Path:
    path = tmp / "config.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(
            {"phase": args.phase, "props": props, "workers": workers, "out": str(tmp / "out.json")},
            f,
        )
    return path


def run_worker(args: argparse.Namespace) -> int:
    """A worker pod: `mongobench-runner locust --role worker --master-host H` (no document)."""
    props, _ = _props(args)
    with tempfile.TemporaryDirectory(prefix="locust-") as tmp:
        cfg = _config(Path(tmp), args, props, args.expect_workers or 1)
        cmd = _worker_args(_locustfile(args), args.master_host, args.master_port)
        return subprocess.call(cmd, env=_env(cfg))


def _worker_args(file: str, master_host: str, master_port: int) -> list[str]:
    return [
        *locust_command(),
        "-f",
        file,
        "--worker",
        "--master-host",
        master_host,
        "--master-port",
        str(master_port),
        "--loglevel",
        "WARNING",
        "--skip-log-setup",
    ]


def _props(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    # A scenario takes no YCSB workload file: only the properties given (-p and the options).
    base = {} if getattr(args, "scenario", None) else wl.load_workload(args.workload)
    overrides = wl.parse_overrides(args.property)
    if args.uri:
        overrides["mongodb.url"] = args.uri
    if args.threads is not None:
        overrides["threadcount"] = str(args.threads)
    props = wl.effective_properties(
        base, overrides, phase=args.phase, client_index=args.client_index, clients=args.clients
    )
    if "mongodb.url" not in props:
        raise ValueError("no MongoDB URI: pass --uri or set MONGOBENCH_URI")
    # The cluster's CA, mounted by the Job when the cluster runs TLS (mongobench_runner.tls).
    props["mongodb.url"] = tls.with_ca_file(props["mongodb.url"], tls.ca_file_from_env())
    if getattr(args, "scenario", None) and "workload" not in overrides:
        del props["workload"]  # YCSB's workload class: nothing a scenario uses
    return props, wl.redacted(props)


def run_locust(args: argparse.Namespace, install: Callable[[Callable[[], None]], None]) -> Document:
    start = utc_now()
    props, shown = _props(args)
    _check_inputs(args, props, shown)
    threads = int(props.get("threadcount", "1"))
    workers = args.workers if args.role == "standalone" else args.expect_workers
    if args.role == "master" and workers < 1:
        raise ValueError("--role master needs --expect-workers N")
    start_gate = _pass_barrier(args) if args.barrier else None
    procs: list[subprocess.Popen[bytes]] = []
    install(lambda: _terminate(procs))
    metrics = LiveMetrics(
        driver="locust",
        phase=args.phase,
        workload=wl.workload_label(args.workload),
        client_index=args.client_index,
    )
    if args.metrics_port is not None:
        metrics.serve(args.metrics_port, args.metrics_addr)
    cfs_before = cgroup.cfs_periods()
    ran = _run_processes(args, props, procs, metrics, threads=threads, workers=workers)
    cfs = cgroup.during(cfs_before, cgroup.cfs_periods())
    end = utc_now()

    reports = ran.data["reports"] if ran.data is not None else []
    operations, transactions, samples = _merge_reports(reports)
    problems: list[str] = []
    if ran.timed_out:
        problems.append(f"Locust did not finish within --timeout {args.timeout:g} s")
    if ran.data is None:
        problems.append("Locust reported no measurements: " + " | ".join(ran.tail))
    too_many = error_ratio_problem(
        operations,
        errors=sum(op.errors for op in operations.values()),
        attempted=transactions,
        transactions=transactions,
        max_error_ratio=args.max_error_ratio,
        samples=samples,
    )
    if too_many:
        problems.append(too_many)
    if not problems and transactions == 0:
        problems.append("no operation completed")
    return build_document(
        driver="locust",
        driver_version=f"locust {LOCUST_VERSION}, pymongo {_pymongo_version()}",
        phase=args.phase,
        workload=wl.workload_label(args.workload),
        properties={
            **shown,
            "locust.workers": str(workers),
            **connection_record(props, "locust", threads),
        },
        labels=wl.parse_overrides(args.label),
        client_index=args.client_index,
        clients=args.clients,
        threads=threads,
        start=start,
        end=end,
        window=_operations_window(reports, end),
        start_gate=start_gate,
        operations=operations,
        transactions=transactions,
        cpu_user_s=ran.cpu_user_s,
        cpu_system_s=ran.cpu_system_s,
        error="; ".join(problems) if problems else None,
        expected_ops=_expected_ops(props, args.phase),
        throttled=float(props.get("target", "0") or 0) > 0,
        cfs=cfs,
        **series_fields(metrics.throughput_points, metrics.latency_points),
    )


def _check_inputs(args: argparse.Namespace, props: dict[str, str], shown: dict[str, str]) -> None:
    """Refuse bad input before Locust starts; record which scenario code runs in ``shown``."""
    scenario = scenario_file(args)
    if scenario is not None:
        # Which code ran is part of the record: the file's name and its digest.
        shown["scenario"] = scenario.name
        shown["scenario.sha256"] = hashlib.sha256(scenario.read_bytes()).hexdigest()
    # Refused here, before Locust starts: inside a Locust user it would only stall the run.
    elif args.phase == "run":
        check_distribution(props)
    client_options(props, os.environ)  # a bad mongodb.* property fails now, with its name
    connection_per_thread(props)


def _pass_barrier(args: argparse.Namespace) -> dict[str, Any]:
    """Wait at the start barrier; the document's startGate block."""
    # Locust users connect when they are spawned, inside Locust: the barrier is met before
    # Locust starts (the window still begins at the first operation, start-up outside it).
    gate = ClientGate.of(args)
    ready_us = int(time.time() * 1e6)
    try:
        start_us = gate.open(ready_us)
    except BarrierError as e:
        raise RuntimeError(str(e)) from e
    assert gate.opening is not None
    start_gate = {"readyAt": iso_us(ready_us), **describe(gate.opening)}
    time.sleep(max(start_us / 1e6 - time.time(), 0.0))
    return start_gate


@dataclass(frozen=True)
class _LocustExit:
    """What the Locust processes left behind once they have all ended."""

    data: dict[str, Any] | None  # the locustfile's out.json; None when it wrote none
    tail: list[str]  # the last lines of Locust's log
    timed_out: bool
    cpu_user_s: float
    cpu_system_s: float


def _run_processes(
    args: argparse.Namespace,
    props: dict[str, str],
    procs: list[subprocess.Popen[bytes]],
    metrics: LiveMetrics,
    *,
    threads: int,
    workers: int,
) -> _LocustExit:
    """Start Locust (and its local workers) into ``procs``, wait for it, stop everything."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="locust-") as tmpdir:
        tmp = Path(tmpdir)
        env = _env(_config(tmp, args, props, workers))
        file = _locustfile(args)
        log = (tmp / "locust.log").open("wb")
        status = StatusFollower(tmp / "locust.log", metrics)  # the locustfile's status lines
        metrics.running.set(1)
        _start(procs, args, file, env, log, threads=threads, workers=workers)
        out = tmp / "out.json"
        timed_out = _wait_for_master(procs[0], status, out, args.timeout)
        _terminate(procs)
        _reap(procs)
        log.close()
        status.poll()
        metrics.running.set(0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        data: dict[str, Any] | None = json.loads(out.read_text()) if out.is_file() else None
        tail = (tmp / "locust.log").read_text(errors="replace").strip().splitlines()[-5:]
    user = after.ru_utime - before.ru_utime
    system = after.ru_stime - before.ru_stime
    if args.role == "master" and data is not None:
        # workers run in other pods: count the CPU they reported, plus the master's own
        user = sum(r["cpuUser"] for r in data["reports"]) + data["masterCpuUser"]
        system = sum(r["cpuSystem"] for r in data["reports"]) + data["masterCpuSystem"]
    return _LocustExit(data, tail, timed_out, user, system)


def _start(
    procs: list[subprocess.Popen[bytes]],
    args: argparse.Namespace,
    file: str,
    env: dict[str, str],
    log: IO[bytes],
    *,
    threads: int,
    workers: int,
) -> None:
    """The Locust master (or the only process) first, then any workers of a standalone run."""
    cmd = _base_args(threads, file)
    if workers:
        port = args.master_port
        cmd += ["--master", "--expect-workers", str(workers), "--master-bind-port", str(port)]
        if args.role == "standalone":
            cmd += ["--master-bind-host", "127.0.0.1"]
    procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
    if workers and args.role == "standalone":
        for _ in range(workers):
            worker = _worker_args(file, "127.0.0.1", args.master_port)
            procs.append(subprocess.Popen(worker, env=env, stdout=log, stderr=subprocess.STDOUT))


def _wait_for_master(
    master: subprocess.Popen[bytes], status: StatusFollower, out: Path, timeout: float
) -> bool:
    """Follow the master until it exits; True when --timeout ran out first."""
    deadline = time.monotonic() + timeout if timeout else float("inf")
    reported_at: float | None = None
    while master.poll() is None:
        status.poll()
        now = time.monotonic()
        if now > deadline:
            return True
        if reported_at is None and out.is_file():
            reported_at = now
        if reported_at is not None and now - reported_at > 30:
            break  # measurements are in; a Locust that does not exit is stopped
        time.sleep(0.2)
    return False


def _terminate(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _merge_reports(
    reports: list[dict[str, Any]],
) -> tuple[dict[str, OpResult], int, list[str]]:
    """Every Locust process's report merged: operations, transactions, error samples."""
    operations: dict[str, OpResult] = {}
    transactions = 0
    samples: list[str] = []
    for report in reports:
        transactions += int(report["transactions"])
        samples += report.get("errorSamples", [])
        for name in set(report["histograms"]) | set(report["failed"]) | set(report["codes"]):
            _add_operation(
                operations.setdefault(name, OpResult(hdr.new_histogram(), {})), report, name
            )
    return operations, transactions, samples


def _add_operation(op: OpResult, report: dict[str, Any], name: str) -> None:
    if name in report["histograms"]:
        hdr.add(op.histogram, hdr.decode(report["histograms"][name]))
    if name in report["failed"]:
        if op.failed_histogram is None:
            op.failed_histogram = hdr.new_histogram()
        hdr.add(op.failed_histogram, hdr.decode(report["failed"][name]))
    for code, n in report["codes"].get(name, {}).items():
        op.return_codes[code] = op.return_codes.get(code, 0) + n


def _operations_window(reports: list[dict[str, Any]], end: datetime) -> Window:
    """The users' own first and last operation timestamps (epoch seconds); empty at ``end``
    when no operation ran."""
    starts = [r["firstStart"] for r in reports if r["firstStart"] is not None]
    ends = [r["lastEnd"] for r in reports if r["lastEnd"] is not None]
    if starts and ends:
        return Window(round(min(starts) * 1e6), round(max(ends) * 1e6), "operations")
    now_us = int(end.timestamp() * 1e6)
    return Window(now_us, now_us, "operations")


def _expected_ops(props: dict[str, str], phase: str) -> int | None:
    """Operations the run should complete; None when it is bounded by time instead."""
    if int(props.get("maxexecutiontime", "0") or 0) > 0:
        return None
    if phase == "load":
        return int(
            props.get(
                "insertcount",
                int(props.get("recordcount", "0")) - int(props.get("insertstart", "0")),
            )
        )
    return int(props.get("operationcount", "0"))


def _pymongo_version() -> str:
    return version("pymongo")
