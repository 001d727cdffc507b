"""Runs YCSB (the project's MongoDB binding) as a child process and turns its output into a result.

The JVM is started with a private property file (-P, so the URI and password never appear on a
command line), `-s` status every `status.interval` seconds (parsed live), the JSON array exporter
and per-operation HDR histogram logs (merged exactly later).
"""

from __future__ import annotations

import json
import math
import os
import resource
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mongobench_results import hdr
from mongobench_results.document import OpResult
from mongobench_runner import tls
from mongobench_runner.barrier import BarrierError, ClientGate, describe
from mongobench_runner.status import StatusLine, parse_status_line
from mongobench_runner.workload import PARTITIONED_WORKLOAD

BINDING_CLASS = "io.mongobench.ycsb.MongoDbClient"
ERROR_MARKER = "MONGOBENCH_BINDING_ERROR"
OP_ERROR_MARKER = "MONGOBENCH_BINDING_OP_ERROR"
TIMING_MARKER = "MONGOBENCH_BINDING_TIMING"
EXPORTER = "site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter"
EXPORT_FILE = "export.json"
HDR_PREFIX = "hdr-"
YCSB_VERSION = "0.17.0"


def ycsb_home() -> Path:
    """MONGOBENCH_YCSB_HOME (holds lib/*.jar), else the Maven build output of a checkout."""
    env = os.environ.get("MONGOBENCH_YCSB_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "ycsb-binding" / "target" / "ycsb"


@dataclass
class YcsbOutcome:
    returncode: int | None
    timed_out: bool
    interrupted: bool
    export: list[dict[str, Any]] | None
    export_error: str | None
    operations: dict[str, OpResult]
    binding_errors: list[str]
    op_error_samples: list[str]
    stderr_tail: list[str]
    status_lines: int
    cpu_user_s: float
    cpu_system_s: float
    wall_s: float
    driver_version: str = field(default="")
    # The binding's report of when this process's operations ran (epoch microseconds).
    first_op_us: int | None = None
    last_op_us: int | None = None
    ready_us: int | None = None  # when every thread had connected (start gate only)
    gate_opening: dict[str, Any] | None = None  # the barrier's start and every client's ready
    gate_error: str | None = None

    def overall(self, measurement: str) -> float | None:
        for row in self.export or []:
            if row.get("metric") == "OVERALL" and row.get("measurement") == measurement:
                return float(row["value"])
        return None


# Java's Integer.MAX_VALUE: YCSB parses operationcount as an int.
UNBOUNDED_OPERATIONS = 2**31 - 1
# The binding's PhaseDeadline: the measured phase's length, from its own start.
DURATION = "mongobench.durationseconds"
# The JVM's start gate waits this much longer than the runner's barrier timeout (the runner
# decides first and says why; this only bounds a lost runner).
GATE_GRACE_S = 120
# Start-up (JVM, connecting, TLS) that YCSB's own timer, now a backstop, allows on top.
STARTUP_ALLOWANCE_S = 120


def duration_s(props: dict[str, str], phase: str) -> int:
    """The measured phase's duration a run asks for (`maxexecutiontime`, as the operator and
    users pass it); 0 when the run is bounded by its operation count only, and for a load."""
    return int(props.get("maxexecutiontime", "0") or 0) if phase == "run" else 0


def honours_duration(props: dict[str, str]) -> bool:
    """Whether the workload class ends its threads at the measured phase's end (the project's
    own; a class of the user's keeps YCSB's timer)."""
    return props.get("workload") == PARTITIONED_WORKLOAD


def duration_record(props: dict[str, str], phase: str) -> dict[str, str]:
    """What the document shows of the clock in effect: the binding's duration, when it has one."""
    duration = duration_s(props, phase)
    return {DURATION: str(duration)} if duration > 0 and honours_duration(props) else {}


def time_bound(props: dict[str, str], phase: str, *, startup_s: float) -> dict[str, str]:
    """The properties YCSB 0.17 is given for a run bounded by time (`maxexecutiontime` > 0).

    YCSB's maxexecutiontime starts when its client threads start, so every thread's init()
    (connecting, the TLS handshake, the start gate) is spent from the duration: a slow start
    measures a short window, or none. The project's workload class ends each thread at the
    duration after its operations start instead (the step's common start instant behind the
    start gate, else the thread's first operation; `mongobench.durationseconds`), and YCSB's own
    timer stays only as a backstop, for a binding without that clock: the duration plus
    `startup_s`, which covers start-up (and the gate's own timeout when gated). Another workload
    class keeps YCSB's timer as it was (the document warns).

    Duration only (operationcount 0): YCSB's Client.initDb lowers the thread count to the
    operation count ("the threadcount is bigger than recordcount"), so a count of 0 starts no
    thread; a count no run reaches keeps every thread.
    """
    duration = duration_s(props, phase)
    if duration <= 0:
        return props
    out = dict(props)
    if int(props.get("operationcount", "0") or 0) == 0:
        out["operationcount"] = str(UNBOUNDED_OPERATIONS)
    if honours_duration(props):
        out[DURATION] = str(duration)
        out["maxexecutiontime"] = str(duration + math.ceil(startup_s))
    return out


def write_properties(path: Path, props: dict[str, str]) -> None:
    def esc(text: str) -> str:
        return (
            text.replace("\\", "\\\\")
            .replace("\n", "\\n")
            .replace("=", "\\=")
            .replace(":", "\\:")
            .replace("#", "\\#")
            .replace("!", "\\!")
        )

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for key, value in props.items():
            out.write(f"{esc(key)}={esc(value)}\n")


def command(
    home: Path,
    phase: str,
    *,
    props_file: Path,
    java_opts: list[str],
    binding_class: str = BINDING_CLASS,
    extra_classpath: tuple[Path, ...] = (),
) -> list[str]:
    classpath = os.pathsep.join([str(home / "lib" / "*"), *map(str, extra_classpath)])
    return [
        os.environ.get("JAVA", "java"),
        *java_opts,
        "-Duser.language=en",
        "-Duser.country=US",
        "-cp",
        classpath,
        "site.ycsb.Client",
        "-load" if phase == "load" else "-t",
        "-db",
        binding_class,
        "-P",
        str(props_file),
        "-s",
    ]


def parse_export(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Return codes per operation from the exporter ({op: {"OK": n, "ERROR": m}})."""
    codes: dict[str, dict[str, int]] = {}
    for row in rows:
        measurement = str(row.get("measurement", ""))
        if measurement.startswith("Return="):
            metric = str(row["metric"])
            codes.setdefault(metric, {})[measurement.removeprefix("Return=")] = int(row["value"])
    return codes


def export_operations(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The exporter's own per-operation numbers (a cross-check of the HDR logs)."""
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        metric = str(row.get("metric", ""))
        if metric == "OVERALL" or metric.startswith("TOTAL_G"):
            continue
        measurement = str(row.get("measurement", ""))
        if not measurement.startswith("Return="):
            out.setdefault(metric, {})[measurement] = float(row["value"])
    return out


def collect_operations(
    hdr_dir: Path, prefix: str, rows: list[dict[str, Any]]
) -> dict[str, OpResult]:
    """Per operation: HDR totals from the logs, failed-op histograms, return codes."""
    codes = parse_export(rows)
    histograms: dict[str, Any] = {}
    for path in sorted(hdr_dir.glob(f"{prefix}*.hdr")):
        name = path.name.removeprefix(prefix).removesuffix(".hdr")
        histograms[name] = hdr.read_ycsb_log(path)
    ops: dict[str, OpResult] = {}
    names = {n for n in histograms if not _is_failed_name(n)} | set(codes)
    for name in sorted(names):
        h = histograms.get(name, hdr.new_histogram())
        failed = [histograms[n] for n in histograms if _is_failed_name(n) and _base(n) == name]
        ops[name] = OpResult(
            histogram=h,
            return_codes=codes.get(name, {}),
            failed_histogram=hdr.merge(failed) if failed else None,
        )
    # A failed measurement whose base operation never succeeded nor reported codes.
    for n, h in histograms.items():
        if _is_failed_name(n) and _base(n) not in ops:
            ops[_base(n)] = OpResult(histogram=hdr.new_histogram(), failed_histogram=h)
    return ops


def _is_failed_name(name: str) -> bool:
    return "-" in name and name not in ("READ-MODIFY-WRITE",) and not name.startswith("Intended-")


def _base(name: str) -> str:
    return name.rsplit("-", 1)[0]


class _OutputReader:
    """Sorts YCSB's stdout and stderr lines as they come: status lines (counted and passed on),
    the binding's marked lines (errors, operation errors, timing) and the rest (a short tail)."""

    def __init__(self, on_status: Callable[[StatusLine], None] | None) -> None:
        self.binding_errors: list[str] = []
        self.op_errors: list[str] = []
        self.tail: list[str] = []
        self.timing: dict[str, Any] = {}
        self.status_count = 0
        self.lock = threading.Lock()  # two pump threads, and the start-gate keeper
        self._on_status = on_status

    def pump(self, stream: Any) -> None:
        for raw in stream:
            line = raw.rstrip("\n")
            status = parse_status_line(line)
            with self.lock:
                if status is not None:
                    self.status_count += 1
                else:
                    self._keep(line)
            if status is not None and self._on_status is not None:
                self._on_status(status)

    def _keep(self, line: str) -> None:
        if line.startswith(ERROR_MARKER):
            self.binding_errors.append(line.removeprefix(ERROR_MARKER).strip())
        elif line.startswith(TIMING_MARKER):
            try:
                self.timing.update(json.loads(line.removeprefix(TIMING_MARKER)))
            except ValueError:
                self.tail.append(line)
        elif line.startswith(OP_ERROR_MARKER):
            if len(self.op_errors) < 5:
                self.op_errors.append(line.removeprefix(OP_ERROR_MARKER).strip())
        else:
            self.tail.append(line)
            del self.tail[:-40]


def _wait_or_stop(proc: subprocess.Popen[str], timeout_s: float | None) -> bool:
    """Wait for YCSB; past the timeout, terminate it (then kill it); True when it timed out."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return True
    return False


def _read_export(
    export_file: Path, work: Path, prefix: str
) -> tuple[list[dict[str, Any]] | None, str | None, dict[str, OpResult]]:
    """YCSB's JSON export and the operations measured: (export, why it is unusable, operations)."""
    if not export_file.is_file():
        return None, "YCSB wrote no export file (it did not finish)", {}
    export: list[dict[str, Any]] | None = None
    try:
        loaded = json.loads(export_file.read_text())
        if not isinstance(loaded, list):
            raise ValueError("not a JSON array")
        export = loaded
        return export, None, collect_operations(work, prefix, export)
    except (ValueError, OSError) as e:
        return export, f"YCSB export {export_file.name} unreadable: {e}", {}


class YcsbProcess:
    """One YCSB client process; `run` blocks until it ends (or times out, or is interrupted)."""

    def __init__(
        self,
        *,
        phase: str,
        props: dict[str, str],
        home: Path | None = None,
        java_opts: list[str] | None = None,
        timeout_s: float | None = None,
        on_status: Callable[[StatusLine], None] | None = None,
        workdir: Path | None = None,
        gate: ClientGate | None = None,
        binding_class: str = BINDING_CLASS,
        extra_classpath: tuple[Path, ...] = (),
    ) -> None:
        self.phase = phase
        self.props = props
        self.home = home or ycsb_home()
        self.java_opts = (
            java_opts if java_opts is not None else shlex.split(os.environ.get("JAVA_OPTS", ""))
        )
        self.timeout_s = timeout_s
        self.on_status = on_status
        self.workdir = workdir
        self.gate = gate
        self.binding_class = binding_class  # tests inject a binding subclass
        self.extra_classpath = extra_classpath
        self._proc: subprocess.Popen[str] | None = None
        self._interrupted = threading.Event()

    def interrupt(self) -> None:
        """Ask the run to stop (SIGTERM to YCSB); the outcome is marked interrupted."""
        self._interrupted.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    def startup_allowance_s(self) -> float:
        """How long the JVM may take before its first operation: connecting, and the gate."""
        gated = self.gate.timeout_s + GATE_GRACE_S if self.gate is not None else 0.0
        return STARTUP_ALLOWANCE_S + gated

    def ycsb_properties(self, work: Path) -> dict[str, str]:
        """What the JVM is given (besides the TLS truststore): the run's properties bounded as
        YCSB can run them, the exporter and HDR logs in `work`, the start gate's files."""
        props = {
            **time_bound(self.props, self.phase, startup_s=self.startup_allowance_s()),
            "exporter": EXPORTER,
            "exportfile": str(work / EXPORT_FILE),
            "measurementtype": "hdrhistogram",
            "hdrhistogram.fileoutput": "true",
            "hdrhistogram.output.path": str(work / HDR_PREFIX),
            "hdrhistogram.percentiles": "50,95,99,99.9",
        }
        props.setdefault("status.interval", "10")
        if self.gate is not None:
            props["mongobench.startgate.readyfile"] = str(work / "gate-ready")
            props["mongobench.startgate.startfile"] = str(work / "gate-start")
            # The runner decides first (and says why); this only bounds a lost runner.
            props["mongobench.startgate.timeoutms"] = str(
                int((self.gate.timeout_s + GATE_GRACE_S) * 1000)
            )
        return props

    def run(self) -> YcsbOutcome:
        if not (self.home / "lib").is_dir():
            raise FileNotFoundError(
                f"YCSB home {self.home} has no lib/ folder: build the binding "
                "(hack/build-java.sh) or set MONGOBENCH_YCSB_HOME"
            )
        with tempfile.TemporaryDirectory(prefix="ycsb-", dir=self.workdir) as tmp:
            work = Path(tmp)
            export_file = work / EXPORT_FILE
            prefix = HDR_PREFIX
            props = self.ycsb_properties(work)
            java_opts = list(self.java_opts)
            ca_file = tls.ca_file_in(props.get("mongodb.url", ""))
            if ca_file is not None:  # the Java driver trusts the CA through a truststore
                props["mongodb.url"] = tls.without_ca_file(props["mongodb.url"])
                java_opts += tls.java_truststore_options(ca_file, work)
            props_file = work / "run.properties"
            write_properties(props_file, props)
            return self._execute(
                command(
                    self.home,
                    self.phase,
                    props_file=props_file,
                    java_opts=java_opts,
                    binding_class=self.binding_class,
                    extra_classpath=self.extra_classpath,
                ),
                work,
                prefix,
                export_file,
            )

    def _execute(self, cmd: list[str], work: Path, prefix: str, export_file: Path) -> YcsbOutcome:
        output = _OutputReader(self.on_status)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            cwd=work,
        )
        self._proc = proc
        if self._interrupted.is_set():
            proc.send_signal(signal.SIGTERM)
        readers = [
            threading.Thread(target=output.pump, args=(s,), daemon=True)
            for s in (proc.stdout, proc.stderr)
        ]
        for t in readers:
            t.start()
        gate_result: dict[str, Any] = {}
        keeper = None
        if self.gate is not None:
            keeper = threading.Thread(
                target=self._keep_gate,
                args=(proc, work, output.binding_errors, output.lock, gate_result),
                name="start-gate",
                daemon=True,
            )
            keeper.start()
        timed_out = _wait_or_stop(proc, self.timeout_s)
        for t in readers:
            t.join(timeout=10)
        if keeper is not None:
            keeper.join(timeout=10)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        export, export_error, operations = _read_export(export_file, work, prefix)
        return YcsbOutcome(
            returncode=proc.returncode,
            timed_out=timed_out,
            interrupted=self._interrupted.is_set(),
            export=export,
            export_error=export_error,
            operations=operations,
            binding_errors=output.binding_errors,
            op_error_samples=output.op_errors,
            stderr_tail=output.tail,
            status_lines=output.status_count,
            cpu_user_s=after.ru_utime - before.ru_utime,
            cpu_system_s=after.ru_stime - before.ru_stime,
            wall_s=wall,
            driver_version=f"ycsb {YCSB_VERSION}, {binding_version(self.home)}",
            first_op_us=_int_or_none(output.timing.get("firstOpStartUs")),
            last_op_us=_int_or_none(output.timing.get("lastOpEndUs")),
            ready_us=gate_result.get("ready_us"),
            gate_opening=gate_result.get("opening"),
            gate_error=gate_result.get("error"),
        )

    def _keep_gate(
        self,
        proc: subprocess.Popen[str],
        work: Path,
        binding_errors: list[str],
        lock: threading.Lock,
        result: dict[str, Any],
    ) -> None:
        """Waits until every YCSB thread is initialised (the binding's ready file), meets the
        step's other clients at the barrier, and hands the JVM the common start instant (or
        an abort, so the threads fail instead of waiting)."""
        gate = self.gate
        assert gate is not None
        ready, start = work / "gate-ready", work / "gate-start"
        deadline = time.monotonic() + gate.timeout_s
        reason = None
        while not ready.is_file():
            with lock:
                failed = list(binding_errors)
            if failed:
                reason = f"binding failed before the start: {failed[0]}"
            elif proc.poll() is not None:
                reason = f"YCSB exited with code {proc.returncode} before the start"
            elif time.monotonic() > deadline:
                reason = f"YCSB threads not initialised within {gate.timeout_s:g} s"
            elif self._interrupted.is_set():
                reason = "interrupted before the start"
            if reason is not None:
                gate.abandon(reason)
                result["error"] = reason
                _write_atomically(start, f"abort: {reason}")
                return
            time.sleep(0.01)
        ready_us = int(ready.read_text().strip())
        result["ready_us"] = ready_us
        try:
            start_us = gate.open(ready_us)
        except (BarrierError, OSError) as e:
            result["error"] = str(e)
            _write_atomically(start, f"abort: {e}")
            return
        _write_atomically(start, str(start_us))
        if gate.opening is not None:
            result["opening"] = describe(gate.opening)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def binding_version(home: Path) -> str:
    jars = sorted(p.name for p in (home / "lib").glob("mongodb-driver-sync-*.jar"))
    return "mongodb-driver-sync " + (
        jars[0].removeprefix("mongodb-driver-sync-").removesuffix(".jar") if jars else "?"
    )


def cross_check(outcome: YcsbOutcome) -> list[str]:
    """Warnings where the HDR logs disagree with YCSB's own export (a recording problem)."""
    warnings: list[str] = []
    exported = export_operations(outcome.export or [])
    for name, op in outcome.operations.items():
        own = exported.get(name)
        if own is None or name == "CLEANUP":
            continue
        summary = hdr.summarise(op.histogram)
        checks = (
            ("Operations", summary.count),
            ("99thPercentileLatency(us)", summary.p99),
            ("MaxLatency(us)", summary.max),
        )
        for measurement, mine in checks:
            theirs = own.get(measurement)
            if theirs is not None and int(theirs) != mine:
                warnings.append(
                    f"{name}: HDR log gives {measurement} {mine}, YCSB exported {theirs:g}"
                )
    return warnings
