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
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mongobench_results import hdr
from mongobench_results.document import Document, OpResult, Window, build_document, iso_us, utc_now
from mongobench_runner import workload as wl
from mongobench_runner.barrier import BarrierError, ClientGate, describe, parse_barrier
from mongobench_runner.client_options import client_options
from mongobench_runner.metrics import LiveMetrics, StatusFollower
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
        cmd = [
            *locust_command(),
            "-f",
            _locustfile(args),
            "--worker",
            "--master-host",
            args.master_host,
            "--master-port",
            str(args.master_port),
            "--loglevel",
            "WARNING",
            "--skip-log-setup",
        ]
        return subprocess.call(cmd, env=_env(cfg))


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
    if getattr(args, "scenario", None) and "workload" not in overrides:
        del props["workload"]  # YCSB's workload class: nothing a scenario uses
    return props, wl.redacted(props)


def run_locust(args: argparse.Namespace, install: Callable[[Callable[[], None]], None]) -> Document:
    start = utc_now()
    props, shown = _props(args)
    scenario = scenario_file(args)
    if scenario is not None:
        # Which code ran is part of the record: the file's name and its digest.
        shown["scenario"] = scenario.name
        shown["scenario.sha256"] = hashlib.sha256(scenario.read_bytes()).hexdigest()
    # Refused here, before Locust starts: inside a Locust user it would only stall the run.
    elif args.phase == "run":
        check_distribution(props)
    client_options(props, os.environ)  # a bad mongodb.* property fails now, with its name
    threads = int(props.get("threadcount", "1"))
    workers = args.workers if args.role == "standalone" else args.expect_workers
    if args.role == "master" and workers < 1:
        raise ValueError("--role master needs --expect-workers N")
    procs: list[subprocess.Popen[bytes]] = []
    start_gate: dict[str, Any] | None = None
    if args.barrier:
        # Locust users connect when they are spawned, inside Locust: the barrier is met before
        # Locust starts (the window still begins at the first operation, start-up outside it).
        gate = ClientGate(
            parse_barrier(args.barrier), args.client_index, args.clients, args.barrier_timeout
        )
        ready_us = int(time.time() * 1e6)
        try:
            start_us = gate.open(ready_us)
        except BarrierError as e:
            raise RuntimeError(str(e)) from e
        assert gate.opening is not None
        start_gate = {"readyAt": iso_us(ready_us), **describe(gate.opening)}
        time.sleep(max(start_us / 1e6 - time.time(), 0.0))

    def stop() -> None:
        for p in procs:
            if p.poll() is None:
                p.terminate()

    install(stop)
    metrics = LiveMetrics(
        driver="locust",
        phase=args.phase,
        workload=wl.workload_label(args.workload),
        client_index=args.client_index,
    )
    if args.metrics_port is not None:
        metrics.serve(args.metrics_port, args.metrics_addr)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="locust-") as tmpdir:
        tmp = Path(tmpdir)
        cfg = _config(tmp, args, props, workers)
        env = _env(cfg)
        file = _locustfile(args)
        log = (tmp / "locust.log").open("wb")
        status = StatusFollower(tmp / "locust.log", metrics)  # the locustfile's status lines
        metrics.running.set(1)
        cmd = _base_args(threads, file)
        if workers:
            port = args.master_port
            cmd += ["--master", "--expect-workers", str(workers), "--master-bind-port", str(port)]
            if args.role == "standalone":
                cmd += ["--master-bind-host", "127.0.0.1"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
        if workers and args.role == "standalone":
            for _ in range(workers):
                procs.append(
                    subprocess.Popen(
                        [
                            *locust_command(),
                            "-f",
                            file,
                            "--worker",
                            "--master-host",
                            "127.0.0.1",
                            "--master-port",
                            str(args.master_port),
                            "--loglevel",
                            "WARNING",
                            "--skip-log-setup",
                        ],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        timed_out = False
        deadline = time.monotonic() + args.timeout if args.timeout else float("inf")
        out = tmp / "out.json"
        reported_at: float | None = None
        while procs[0].poll() is None:
            status.poll()
            now = time.monotonic()
            if now > deadline:
                timed_out = True
                break
            if reported_at is None and out.is_file():
                reported_at = now
            if reported_at is not None and now - reported_at > 30:
                break  # measurements are in; a Locust that does not exit is stopped
            time.sleep(0.2)
        stop()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()
        status.poll()
        metrics.running.set(0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        data: dict[str, Any] | None = json.loads(out.read_text()) if out.is_file() else None
        tail = (tmp / "locust.log").read_text(errors="replace").strip().splitlines()[-5:]
    end = utc_now()

    problems: list[str] = []
    operations: dict[str, OpResult] = {}
    transactions = 0
    samples: list[str] = []
    now_us = int(end.timestamp() * 1e6)
    window = Window(now_us, now_us, "operations")
    if timed_out:
        problems.append(f"Locust did not finish within --timeout {args.timeout:g} s")
    if data is None:
        problems.append("Locust reported no measurements: " + " | ".join(tail))
    else:
        reports = data["reports"]
        for report in reports:
            transactions += int(report["transactions"])
            samples += report.get("errorSamples", [])
            for name in set(report["histograms"]) | set(report["failed"]) | set(report["codes"]):
                op = operations.setdefault(name, OpResult(hdr.new_histogram(), {}))
                if name in report["histograms"]:
                    hdr.add(op.histogram, hdr.decode(report["histograms"][name]))
                if name in report["failed"]:
                    if op.failed_histogram is None:
                        op.failed_histogram = hdr.new_histogram()
                    hdr.add(op.failed_histogram, hdr.decode(report["failed"][name]))
                for code, n in report["codes"].get(name, {}).items():
                    op.return_codes[code] = op.return_codes.get(code, 0) + n
        starts = [r["firstStart"] for r in reports if r["firstStart"] is not None]
        ends = [r["lastEnd"] for r in reports if r["lastEnd"] is not None]
        if starts and ends:
            # The users' own first and last operation timestamps (epoch seconds).
            window = Window(round(min(starts) * 1e6), round(max(ends) * 1e6), "operations")
    errors = sum(op.errors for op in operations.values())
    if errors and (transactions == 0 or errors / transactions > args.max_error_ratio):
        codes = ", ".join(
            f"{n} " + "/".join(f"{c}={k}" for c, k in op.return_codes.items() if c != "OK")
            for n, op in sorted(operations.items())
            if op.errors
        )
        first = f"; first: {samples[0]}" if samples else ""
        problems.append(
            f"{errors} of {transactions} operations failed ({codes}), more than "
            f"--max-error-ratio {args.max_error_ratio:g}{first}"
        )
    if not problems and transactions == 0:
        problems.append("no operation completed")
    user = after.ru_utime - before.ru_utime
    system = after.ru_stime - before.ru_stime
    if args.role == "master" and data is not None:
        # workers run in other pods: count the CPU they reported, plus the master's own
        user = sum(r["cpuUser"] for r in data["reports"]) + data["masterCpuUser"]
        system = sum(r["cpuSystem"] for r in data["reports"]) + data["masterCpuSystem"]
    expected: int | None = None
    if int(props.get("maxexecutiontime", "0") or 0) <= 0:
        if args.phase == "load":
            expected = int(
                props.get(
                    "insertcount",
                    int(props.get("recordcount", "0")) - int(props.get("insertstart", "0")),
                )
            )
        else:
            expected = int(props.get("operationcount", "0"))
    return build_document(
        driver="locust",
        driver_version=f"locust {LOCUST_VERSION}, pymongo {_pymongo_version()}",
        phase=args.phase,
        workload=wl.workload_label(args.workload),
        properties={**shown, "locust.workers": str(workers)},
        labels=wl.parse_overrides(args.label),
        client_index=args.client_index,
        clients=args.clients,
        threads=threads,
        start=start,
        end=end,
        window=window,
        start_gate=start_gate,
        operations=operations,
        transactions=transactions,
        cpu_user_s=user,
        cpu_system_s=system,
        error="; ".join(problems) if problems else None,
        expected_ops=expected,
        throttled=float(props.get("target", "0") or 0) > 0,
    )


def _pymongo_version() -> str:
    return version("pymongo")
