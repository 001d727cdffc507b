"""mongobench-runner: the entrypoint of benchmark Job pods.

    mongobench-runner ycsb   --phase load|run --workload a --uri mongodb://... [options]
    mongobench-runner locust --phase load|run --workload a --uri mongodb://... [options]
    mongobench-runner locust --phase load|run --scenario FILE.py --uri mongodb://... [options]
    mongobench-runner merge  RESULT.json... [--output ...]

Runs one client (YCSB with the project's binding, or Locust), serves live metrics, writes one
result document (results/schema/v2.json) to the chosen sink, a summary to the
termination log, and exits 0 only when the run succeeded. See bench-jobs/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from mongobench_results.document import (
    FAILED,
    Document,
    Window,
    build_document,
    failed_document,
    iso_us,
    summary_line,
    utc_now,
)
from mongobench_results.merge import merge_documents
from mongobench_runner import cgroup, tls
from mongobench_runner import workload as wl
from mongobench_runner.barrier import ClientGate
from mongobench_runner.client_options import (
    connection_per_thread,
    connection_record,
    per_thread_pool_uri,
)
from mongobench_runner.failures import error_ratio_problem
from mongobench_runner.locust_driver import run_locust, run_worker
from mongobench_runner.metrics import LiveMetrics
from mongobench_runner.series import series_fields
from mongobench_runner.sinks import SinkError, parse_output, write_termination_log
from mongobench_runner.ycsb import (
    YcsbOutcome,
    YcsbProcess,
    cross_check,
    duration_record,
    duration_s,
    honours_duration,
)

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SINK = 3


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--phase", choices=["load", "run"], required=True)
    p.add_argument(
        "--workload",
        default=None,
        help="a-f, or a path to a YCSB property file (default a); with --scenario, the name "
        "the document gives the workload (default: the scenario file's name)",
    )
    p.add_argument(
        "--uri",
        default=os.environ.get("MONGOBENCH_URI"),
        help="MongoDB connection string (default: env MONGOBENCH_URI)",
    )
    p.add_argument(
        "-p",
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any YCSB property (recordcount, operationcount, maxexecutiontime, "
        "target, requestdistribution, fieldcount, fieldlength, insertorder, "
        "mongodb.writeConcern, mongodb.readPreference, batchsize, ...)",
    )
    p.add_argument("--threads", type=int, help="client threads (YCSB threadcount / Locust users)")
    p.add_argument("--client-index", type=int, default=0)
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--metrics-port", type=int, help="serve live Prometheus metrics on this port")
    p.add_argument("--metrics-addr", default="0.0.0.0")  # noqa: S104
    p.add_argument(
        "--output",
        default="file:result.json",
        help="file:PATH (default result.json), stdout, configmap:NAMESPACE/NAME",
    )
    p.add_argument(
        "--termination-log",
        type=Path,
        default=None,
        help="summary file (default /dev/termination-log when it exists)",
    )
    p.add_argument("--timeout", type=float, default=None, help="kill the driver after SECONDS")
    p.add_argument(
        "--barrier",
        default=None,
        help="start together with the step's other clients: configmap:NAMESPACE/NAME (in a "
        "cluster) or dir:PATH (local processes); default: start at once",
    )
    p.add_argument(
        "--barrier-timeout",
        type=float,
        default=300.0,
        help="fail when the step's clients are not all ready within SECONDS (300)",
    )
    p.add_argument(
        "--barrier-offset",
        type=int,
        default=0,
        help="this step's first key at a barrier it shares with another run's clients (a "
        "duet: B's clients follow A's); default 0",
    )
    p.add_argument(
        "--barrier-clients",
        type=int,
        default=None,
        help="how many clients meet at the barrier in all (a duet: both runs'); default --clients",
    )
    p.add_argument(
        "--max-error-ratio",
        type=float,
        default=0.0,
        help="fail the run when more than this fraction of operations failed (0)",
    )


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="mongobench-runner",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = root.add_subparsers(dest="command", required=True)
    y = sub.add_parser("ycsb", help="run YCSB with the project's MongoDB binding")
    _add_common(y)
    y.add_argument(
        "--ycsb-home",
        type=Path,
        default=None,
        help="folder with lib/*.jar (default env MONGOBENCH_YCSB_HOME or the build)",
    )
    y.add_argument(
        "--java-opts", default=None, help="JVM options after the image's (env JAVA_OPTS)"
    )
    lo = sub.add_parser("locust", help="run the pymongo Locust driver")
    _add_common(lo)
    lo.add_argument("--role", choices=["standalone", "master", "worker"], default="standalone")
    lo.add_argument(
        "--workers",
        type=int,
        default=0,
        help="standalone: start this many local worker processes (distributed mode)",
    )
    lo.add_argument("--expect-workers", type=int, default=0, help="master: workers to wait for")
    lo.add_argument("--master-host", default="127.0.0.1")
    lo.add_argument("--master-port", type=int, default=5557)
    lo.add_argument(
        "--scenario",
        type=Path,
        default=None,
        help="a user scenario (a Locust file with a MongoScenario) instead of YCSB's workloads",
    )
    m = sub.add_parser("merge", help="merge the result documents of parallel clients")
    m.add_argument("documents", nargs="+", type=Path)
    m.add_argument("--output", default="stdout")
    m.add_argument("--termination-log", type=Path, default=None)
    return root


def deliver(doc: Document, output: str, termination_log: Path | None) -> int:
    """Writes the document and the summary; the exit code of the whole run."""
    summary = summary_line(doc)
    code = EXIT_FAILED if doc["status"] == FAILED else 0
    try:
        where = parse_output(output).write(doc)
    except (SinkError, OSError, ValueError) as e:
        summary = f"{summary}; result NOT stored ({output}): {e}"
        where = None
        code = EXIT_SINK
        # last resort: the document in the pod log
        sys.stdout.write(json.dumps(doc) + "\n")
    try:
        write_termination_log(summary, termination_log)
    except OSError as e:
        print(f"mongobench-runner: termination log not written: {e}", file=sys.stderr)
    print(f"mongobench-runner: {summary}" + (f" -> {where}" if where else ""), file=sys.stderr)
    return code


def _properties(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """(effective properties for this client, their redacted copy for the document)."""
    base = wl.load_workload(args.workload)
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
    return props, wl.redacted(props)


def _expected_ops(props: dict[str, str], phase: str) -> int | None:
    if phase == "load":
        if "insertcount" in props:
            return int(props["insertcount"])
        return int(props.get("recordcount", "0")) - int(props.get("insertstart", "0"))
    if int(props.get("maxexecutiontime", "0") or 0) > 0:
        return None
    return int(props.get("operationcount", "0"))


def client_gate(args: argparse.Namespace) -> ClientGate | None:
    if not args.barrier:
        return None
    return ClientGate.of(args)


def run_ycsb(args: argparse.Namespace, install: Callable[[Callable[[], None]], None]) -> Document:
    start = utc_now()
    labels = wl.parse_overrides(args.label)
    label = wl.workload_label(args.workload)
    props, _ = _properties(args)
    if args.phase == "run":
        wl.refuse_delete(props)
    threads = int(props.get("threadcount", "1"))
    if connection_per_thread(props):
        props["mongodb.url"] = per_thread_pool_uri(props["mongodb.url"], threads)
    shown = {
        **wl.redacted(props),
        **connection_record(props, "ycsb", threads),
        **duration_record(props, args.phase),
    }
    metrics = LiveMetrics(
        driver="ycsb", phase=args.phase, workload=label, client_index=args.client_index
    )
    if args.metrics_port is not None:
        metrics.serve(args.metrics_port, args.metrics_addr)
    # After the image's own: the JVM takes the last of two settings of one option.
    java_opts = None
    if args.java_opts is not None:
        java_opts = shlex.split(os.environ.get("JAVA_OPTS", "")) + args.java_opts.split()
    proc = YcsbProcess(
        phase=args.phase,
        props=props,
        home=args.ycsb_home,
        java_opts=java_opts,
        timeout_s=args.timeout,
        on_status=metrics.observe,
        gate=client_gate(args),
    )
    install(proc.interrupt)
    metrics.running.set(1)
    cfs_before = cgroup.cfs_periods()
    try:
        outcome = proc.run()
    finally:
        metrics.running.set(0)
    cfs = cgroup.during(cfs_before, cgroup.cfs_periods())
    return ycsb_document(
        args,
        props=props,
        shown=shown,
        outcome=outcome,
        start=start,
        end=utc_now(),
        labels=labels,
        points=metrics.throughput_points,
        latency=metrics.latency_points,
        cfs=cfs,
    )


def ycsb_document(
    args: argparse.Namespace,
    *,
    props: dict[str, str],
    shown: dict[str, str],
    outcome: YcsbOutcome,
    start: datetime,
    end: datetime,
    labels: dict[str, str],
    points: Sequence[tuple[int, float]] = (),
    latency: Mapping[int, float] | None = None,
    cfs: tuple[int, int] | None = None,
) -> Document:
    """The client's document from a finished YCSB process (pure); `points`: its status lines'
    (seconds, ops/s)."""
    label = wl.workload_label(args.workload)
    threads = int(props.get("threadcount", "1"))
    runtime_ms = outcome.overall("RunTime(ms)")
    throughput = outcome.overall("Throughput(ops/sec)")
    runtime_s = runtime_ms / 1000 if runtime_ms is not None else outcome.wall_s
    # YCSB's own count of operations (transactions), recovered exactly from its export.
    transactions = round(throughput * runtime_s) if throughput is not None else 0

    problems = _ycsb_problems(args, outcome, transactions)

    warnings = cross_check(outcome)
    end_us = int(end.timestamp() * 1e6)
    if outcome.first_op_us is not None and outcome.last_op_us is not None:
        window = Window(outcome.first_op_us, outcome.last_op_us, "operations")
    else:
        window = Window(end_us - round(runtime_s * 1e6), end_us, "driver")
        if transactions:
            warnings.append(
                "the binding reported no operation timestamps: the window is YCSB's own run "
                "time, start-up included"
            )
    gate = None
    if outcome.ready_us is not None or outcome.gate_error:
        gate = {
            "readyAt": iso_us(outcome.ready_us) if outcome.ready_us else None,
            **(outcome.gate_opening or {}),
        }
    if (
        args.clients > 1
        and args.phase == "run"
        and wl.proportions(props)["INSERT"] > 0
        and props.get("workload") != wl.PARTITIONED_WORKLOAD
        and props.get("mongodb.upsert", "false") != "true"
    ):
        warnings.append(
            f"parallel clients inserting in the run phase with workload={props.get('workload')} "
            "reuse YCSB's insert key sequence (duplicate keys across clients)"
        )
    if duration_s(props, args.phase) > 0 and not honours_duration(props):
        warnings.append(
            f"workload={props.get('workload')} keeps YCSB's own maxexecutiontime, which counts "
            "each thread's start-up (connecting, the start gate) against the duration"
        )
    return build_document(
        driver="ycsb",
        driver_version=outcome.driver_version,
        phase=args.phase,
        workload=label,
        properties=shown,
        labels=labels,
        client_index=args.client_index,
        clients=args.clients,
        threads=threads,
        start=start,
        end=end,
        window=window,
        operations=outcome.operations,
        transactions=transactions,
        cpu_user_s=outcome.cpu_user_s,
        cpu_system_s=outcome.cpu_system_s,
        error="; ".join(problems) if problems else None,
        expected_ops=_expected_ops(props, args.phase),
        throttled=float(props.get("target", "0") or 0) > 0,
        driver_runtime_s=runtime_s,
        start_gate=gate,
        extra_warnings=warnings,
        cfs=cfs,
        **series_fields(points, latency),
    )


def _ycsb_problems(args: argparse.Namespace, outcome: YcsbOutcome, transactions: int) -> list[str]:
    """Why a finished YCSB process does not count as a clean measurement (empty: it does).
    Reads --timeout and --max-error-ratio only when they matter."""
    problems: list[str] = []
    if outcome.gate_error:
        problems.append(outcome.gate_error)
    if outcome.interrupted:
        problems.append(f"interrupted by a signal after {outcome.wall_s:.1f} s")
    if outcome.timed_out:
        problems.append(f"YCSB did not finish within --timeout {args.timeout:g} s and was killed")
    elif outcome.returncode not in (0, None) and not outcome.interrupted:
        tail = " | ".join(line for line in outcome.stderr_tail[-5:] if line.strip())
        problems.append(f"YCSB exited with code {outcome.returncode}: {tail}")
    if outcome.export_error and not (outcome.timed_out or outcome.interrupted):
        problems.append(outcome.export_error)
    problems.extend(f"binding: {e}" for e in outcome.binding_errors[:3])
    errors = sum(op.errors for name, op in outcome.operations.items() if name != "CLEANUP")
    # Only a run with failures reads --max-error-ratio.
    too_many = (
        error_ratio_problem(
            outcome.operations,
            errors=errors,
            attempted=transactions + (errors if transactions == 0 else 0),
            transactions=transactions,
            max_error_ratio=args.max_error_ratio,
            samples=outcome.op_error_samples,
        )
        if errors
        else None
    )
    if too_many:
        problems.append(too_many)
    if not problems and transactions == 0:
        problems.append("no operation completed")
    return problems


def _signal_installer() -> Callable[[Callable[[], None]], None]:
    def install(stop: Callable[[], None]) -> None:
        def handler(signum: int, frame: FrameType | None) -> None:
            stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    return install


def run_driver(args: argparse.Namespace) -> int:
    start = utc_now()
    try:
        if args.command == "ycsb":
            doc = run_ycsb(args, _signal_installer())
        else:
            doc = run_locust(args, _signal_installer())
    except (ValueError, OSError, RuntimeError) as e:
        doc = failed_document(
            driver=args.command,
            phase=args.phase,
            workload=wl.workload_label(args.workload),
            properties={},
            labels={},
            client_index=args.client_index,
            clients=args.clients,
            threads=args.threads or 0,
            start=start,
            error=f"{type(e).__name__}: {e}",
        )
    return deliver(doc, args.output, args.termination_log)


def run_merge(args: argparse.Namespace) -> int:
    docs: list[Any] = []
    for path in args.documents:
        docs.append(json.loads(path.read_text()))
    return deliver(merge_documents(docs), args.output, args.termination_log)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "merge" and args.workload is None:
        scenario = getattr(args, "scenario", None)
        args.workload = scenario.stem if scenario is not None else "a"
    if args.command == "merge":
        try:
            return run_merge(args)
        except (ValueError, OSError, KeyError) as e:
            print(f"mongobench-runner merge: {e}", file=sys.stderr)
            return EXIT_USAGE
    if args.role == "worker" if args.command == "locust" else False:
        return run_worker(args)
    return run_driver(args)


if __name__ == "__main__":
    raise SystemExit(main())
