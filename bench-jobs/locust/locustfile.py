"""mongobench's Locust driver: YCSB workloads A-F on pymongo, headless, standalone or distributed.

Started by `mongobench-runner locust` (never import this next to pymongo in another process:
Locust monkey-patches the interpreter with gevent). Configuration comes as JSON in the file named
by MONGOBENCH_LOCUST_CONFIG: {"phase", "props" (YCSB properties), "workers", "out"}.

Each user is one YCSB client thread: it takes an operation ticket (operationcount / recordcount
per process), picks the operation by the workload mix and the key by `requestdistribution`, and
records the latency in an HDR histogram per operation (microseconds) as well as in Locust's
stats. A process whose budget or `maxexecutiontime` is spent reports its histograms, return
codes and CPU: a worker to the master (message `mongobench_done`); the master, or a standalone
process, writes them to "out" and quits.

Live progress, as YCSB's `-s`: every `status.interval` seconds each process sends its interval
histograms (message `mongobench_status` from a worker), and the master, or a standalone process,
prints one status line in YCSB's format on stdout, which the runner parses into the same live
metrics as for YCSB. Pacing (`target`) is Locust's constant_throughput per user; in the load
phase `batchsize` > 1 buffers inserts per user into insertMany, as the YCSB binding does.
"""

from __future__ import annotations

import json
import os
import random
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gevent
import pymongo
from bson.binary import Binary
from locust import User, constant, constant_throughput, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from mongobench_runner import hdr
from mongobench_runner.client_options import client_options
from mongobench_runner.status import format_status_line
from mongobench_runner.workload import CLIENT, CLIENTS, INSERT_OFFSET, split_for_client
from mongobench_runner.ycsbgen import KeyChooser, OperationChooser, field_value, key_name

CONFIG: dict[str, Any] = json.loads(Path(os.environ["MONGOBENCH_LOCUST_CONFIG"]).read_text())
PROPS: dict[str, str] = CONFIG["props"]
PHASE: str = CONFIG["phase"]
WORKERS: int = max(int(CONFIG.get("workers", 0)), 1)
STATUS_INTERVAL = float(PROPS.get("status.interval", "10") or 10)
# Operations per second of this client over all its users (0: as fast as possible).
TARGET = float(PROPS.get("target", "0") or 0)
THREADS = int(PROPS.get("threadcount", "1"))
# Inserts per insertMany in the load phase (the binding's `batchsize`, alias mongodb.batchsize).
BATCH = int(PROPS.get("batchsize", PROPS.get("mongodb.batchsize", "1")) or 1)


class Budget:
    """Per-process state shared by this process's users (greenlets: no locking needed)."""

    def __init__(self) -> None:
        self.ready = False
        self.finished = False
        self.issued = 0
        self.in_flight = 0
        self.limit = 0
        self.deadline = float("inf")
        self.first_start: float | None = None
        self.last_end: float | None = None
        self.histograms: dict[str, Any] = {}
        self.failed: dict[str, Any] = {}
        self.interval: dict[str, Any] = {}  # since the last status: YCSB's interval histograms
        self.buffered = 0  # inserts queued in users' batches, not yet written
        self.codes: dict[str, dict[str, int]] = {}
        self.transactions = 0
        self.next_insert = 0
        self.insert_stride = 1
        self.first_insert = 0
        self.last_inserted = [0]
        self.acked: set[int] = set()
        self.worker_index = 0
        self.client: pymongo.MongoClient[dict[str, Any]] | None = None

    def setup(self, worker_index: int) -> None:
        records = int(PROPS.get("recordcount", "0"))
        if PHASE == "load":
            start = int(PROPS.get("insertstart", "0"))
            count = int(PROPS.get("insertcount", str(records - start)))
            share = split_for_client(count, 0, worker_index, WORKERS)
            self.limit = share.insertcount
            self.next_insert = start + share.insertstart
        else:
            ops = int(PROPS.get("operationcount", "0"))
            self.limit = split_for_client(0, ops, worker_index, WORKERS).operationcount
            # Run-phase inserts, as PartitionedInsertsWorkload.java maps YCSB's: worker w of W
            # in client c of C takes records + offset + (c*W + w) + k*C*W, so parallel clients,
            # their workers and successive runs (distinct offsets) never insert the same key.
            clients = int(PROPS.get(CLIENTS, "1"))
            self.first_insert = (
                records
                + int(PROPS.get(INSERT_OFFSET, "0"))
                + int(PROPS.get(CLIENT, "0")) * WORKERS
                + worker_index
            )
            self.next_insert = self.first_insert
            self.insert_stride = WORKERS * clients
            self.last_inserted[0] = records - 1
        self.worker_index = worker_index
        limit_s = int(PROPS.get("maxexecutiontime", "0") or 0)
        if limit_s > 0:
            self.deadline = time.monotonic() + limit_s
            if self.limit == 0:
                self.limit = 1 << 62
        uri = PROPS["mongodb.url"]
        self.client = pymongo.MongoClient(uri, maxPoolSize=0, **client_options(PROPS, os.environ))
        self.ready = True

    def take(self) -> bool:
        if self.issued >= self.limit or time.monotonic() >= self.deadline:
            return False
        self.issued += 1
        self.in_flight += 1
        return True

    def acknowledge(self, keynum: int) -> None:
        """Advance the newest readable key only over a gap-free run of acknowledged inserts."""
        self.acked.add(keynum)
        records = int(PROPS.get("recordcount", "0"))
        while True:
            nxt = (
                self.first_insert
                if self.last_inserted[0] < records
                else self.last_inserted[0] + self.insert_stride
            )
            if nxt not in self.acked:
                return
            self.acked.discard(nxt)
            self.last_inserted[0] = nxt

    def record(self, op: str, ok: bool, code: str, micros: int) -> None:
        bucket = self.histograms if ok else self.failed
        for histograms, name in ((bucket, op), (self.interval, op if ok else f"{op}-FAILED")):
            h = histograms.get(name)
            if h is None:
                h = histograms[name] = hdr.new_histogram()
            h.record_value(max(micros, 1))
        codes = self.codes.setdefault(op, {})
        codes[code] = codes.get(code, 0) + 1

    def take_interval(self) -> dict[str, Any]:
        """This process's progress since the last status, for the status line."""
        snapshot = {
            "total": self.transactions,
            "interval": {k: hdr.encode(v) for k, v in self.interval.items()},
        }
        self.interval = {}
        return snapshot

    def payload(self) -> dict[str, Any]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "histograms": {k: hdr.encode(v) for k, v in self.histograms.items()},
            "failed": {k: hdr.encode(v) for k, v in self.failed.items()},
            "codes": self.codes,
            "transactions": self.transactions,
            "firstStart": self.first_start,
            "lastEnd": self.last_end,
            "cpuUser": usage.ru_utime,
            "cpuSystem": usage.ru_stime,
        }


BUDGET = Budget()
REPORTS: list[dict[str, Any]] = []


class Status:
    """Status lines of the master or a standalone process, from every process's snapshots."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.totals: dict[str, int] = {}  # per process: operations so far
        self.pending: dict[str, Any] = {}  # interval histograms received since the last line
        self.last = (self.started, 0)

    def add(self, process: str, snapshot: dict[str, Any]) -> None:
        self.totals[process] = int(snapshot["total"])
        for name, payload in snapshot["interval"].items():
            h = self.pending.get(name)
            if h is None:
                h = self.pending[name] = hdr.new_histogram()
            hdr.add(h, hdr.decode(payload))

    def emit(self) -> None:
        now = time.monotonic()
        total = sum(self.totals.values())
        rate = (total - self.last[1]) / max(now - self.last[0], 1e-9)
        stats = {name: hdr.interval_stats(h) for name, h in self.pending.items()}
        line = format_status_line(datetime.now(UTC), int(now - self.started), total, rate, stats)
        print(line, flush=True)  # the runner reads Locust's stdout
        self.pending, self.last = {}, (now, total)


STATUS = Status()


def _report_status(environment: Any) -> None:
    """This process's snapshot: to the master from a worker, else into its own status line."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message("mongobench_status", BUDGET.take_interval())
    else:
        STATUS.add("self", BUDGET.take_interval())
        STATUS.emit()


def _status_loop(environment: Any) -> None:
    while not BUDGET.finished:
        gevent.sleep(STATUS_INTERVAL)
        if not BUDGET.finished:
            _report_status(environment)


def _master_status_loop() -> None:
    while True:
        gevent.sleep(STATUS_INTERVAL)
        STATUS.emit()


def _write_out_and_quit(environment: Any) -> None:
    STATUS.emit()  # the final line, as YCSB prints one at its end
    own = resource.getrusage(resource.RUSAGE_SELF)
    data = {"reports": REPORTS, "masterCpuUser": own.ru_utime, "masterCpuSystem": own.ru_stime}
    out = Path(CONFIG["out"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(out)
    # not from this (user) greenlet: quit() kills the users, and with them its own caller
    gevent.spawn(environment.runner.quit)


def _init(environment: Any, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, MasterRunner):

        def on_done(msg: Any, **_: Any) -> None:
            REPORTS.append(msg.data)
            if len(REPORTS) >= WORKERS:
                _write_out_and_quit(environment)

        def on_status(msg: Any, **_: Any) -> None:
            STATUS.add(str(msg.node_id), msg.data)

        runner.register_message("mongobench_done", on_done)
        runner.register_message("mongobench_status", on_status)
        gevent.spawn(_master_status_loop)


# Registered by call, not as decorators: Locust's hooks are untyped, and a decorator would
# make the functions untyped to mypy as well.
events.init.add_listener(_init)  # type: ignore[no-untyped-call]


def _test_start(environment: Any, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, MasterRunner) or BUDGET.ready:
        return
    BUDGET.setup(runner.worker_index if isinstance(runner, WorkerRunner) else 0)
    STATUS.started = time.monotonic()
    STATUS.last = (STATUS.started, 0)
    gevent.spawn(_status_loop, environment)


events.test_start.add_listener(_test_start)  # type: ignore[no-untyped-call]


def _finish(environment: Any) -> None:
    if BUDGET.finished:
        return
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        _report_status(environment)  # the last interval, before the results
    else:
        STATUS.add("self", BUDGET.take_interval())
    BUDGET.finished = True
    if isinstance(runner, WorkerRunner):
        runner.send_message("mongobench_done", BUDGET.payload())
    else:
        REPORTS.append(BUDGET.payload())
        _write_out_and_quit(environment)


class MongoUser(User):
    # `target` is the client's operations per second over its `threadcount` users.
    wait_time = constant_throughput(TARGET / THREADS) if TARGET > 0 else constant(0)

    def on_start(self) -> None:
        self.rnd = random.Random()
        self.keys = (
            KeyChooser(
                PROPS,
                self.rnd,
                BUDGET.last_inserted,
                stride=BUDGET.insert_stride,
                first_insert=BUDGET.first_insert,
            )
            if PHASE == "run"
            else None
        )
        self.ops = OperationChooser(PROPS, self.rnd)
        self.fieldcount = int(PROPS.get("fieldcount", "10"))
        self.fieldlength = int(PROPS.get("fieldlength", "100"))
        self.readall = PROPS.get("readallfields", "true") == "true"
        self.writeall = PROPS.get("writeallfields", "false") == "true"
        self.hashed = PROPS.get("insertorder", "hashed") != "ordered"
        self.upsert = PROPS.get("mongodb.upsert", "false").lower() == "true"
        self.maxscan = int(PROPS.get("maxscanlength", "1000"))
        assert BUDGET.client is not None
        db = BUDGET.client.get_database(
            PROPS.get("mongodb.database") or BUDGET.client.get_default_database("ycsb").name
        )
        self.coll = db[PROPS.get("table", "usertable")]
        self.batch: list[dict[str, Any]] = []

    def _fields(self, all_fields: bool) -> list[str]:
        if all_fields:
            return [f"field{i}" for i in range(self.fieldcount)]
        return [f"field{self.rnd.randrange(self.fieldcount)}"]

    def _values(self, all_fields: bool) -> dict[str, Binary]:
        return {
            f: Binary(field_value(self.rnd, self.fieldlength)) for f in self._fields(all_fields)
        }

    def _timed(self, op: str, fn: Any) -> bool:
        start = time.perf_counter()
        code, exc = "OK", None
        try:
            if fn() is False:
                code = "NOT_FOUND"
        except pymongo.errors.PyMongoError as e:
            code, exc = "ERROR", e
        micros = int((time.perf_counter() - start) * 1e6)
        BUDGET.record(op, code == "OK", code, micros)
        self.environment.events.request.fire(
            request_type="mongodb",
            name=op,
            response_time=micros / 1000,
            response_length=0,
            exception=exc if exc is not None else (None if code == "OK" else LookupError(code)),
            context={},
        )
        return code == "OK"

    def _insert_key(self) -> int:
        keynum = BUDGET.next_insert
        BUDGET.next_insert += BUDGET.insert_stride
        return keynum

    def _read(self, key: str) -> bool:
        proj = None if self.readall else dict.fromkeys(self._fields(False), 1)
        return self.coll.find_one({"_id": key}, proj) is not None

    def _update(self, key: str) -> bool:
        return (
            self.coll.update_one({"_id": key}, {"$set": self._values(self.writeall)}).matched_count
            > 0
        )

    def _insert(self, doc: dict[str, Any]) -> Any:
        """insertOne, or replaceOne with upsert under mongodb.upsert (as the binding does)."""
        if self.upsert:
            return self.coll.replace_one({"_id": doc["_id"]}, doc, upsert=True)
        return self.coll.insert_one(doc)

    def _insert_many(self, docs: list[dict[str, Any]]) -> Any:
        """One unordered insertMany (bulk replace-upserts under mongodb.upsert), as the binding
        writes a full batch."""
        if self.upsert:
            ops = [pymongo.ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs]
            return self.coll.bulk_write(ops, ordered=False)
        return self.coll.insert_many(docs, ordered=False)

    def _batched_insert(self, doc: dict[str, Any]) -> None:
        """The binding's batching: queued inserts return BATCHED_OK at once, the one that fills
        the batch writes it (its latency is the insertMany's)."""
        start = time.perf_counter()
        self.batch.append(doc)
        BUDGET.buffered += 1
        if len(self.batch) < BATCH:
            micros = int((time.perf_counter() - start) * 1e6)
            BUDGET.record("INSERT", True, "BATCHED_OK", micros)
            return
        self._timed("INSERT", self._flush)

    def _flush(self) -> Any:
        docs, self.batch = self.batch, []
        BUDGET.buffered -= len(docs)
        return self._insert_many(docs)

    def _flush_rest(self) -> None:
        """A partial batch at the end, as the binding writes it in cleanup: no operation of its
        own (its inserts were counted as BATCHED_OK), but a failure counts as an INSERT error."""
        try:
            self._flush()
        except pymongo.errors.PyMongoError:
            BUDGET.record("INSERT", False, "ERROR", 1)

    def _do(self) -> None:
        if PHASE == "load":
            keynum = self._insert_key()
            doc = {"_id": key_name(keynum, hashed=self.hashed), **self._values(True)}
            if BATCH > 1:
                self._batched_insert(doc)
            else:
                self._timed("INSERT", lambda: self._insert(doc))
            return
        op = self.ops.next()
        assert self.keys is not None
        if op == "INSERT":
            keynum = self._insert_key()
            doc = {"_id": key_name(keynum, hashed=self.hashed), **self._values(True)}
            if self._timed("INSERT", lambda: self._insert(doc)):
                BUDGET.acknowledge(keynum)
            return
        key = key_name(self.keys.next(), hashed=self.hashed)
        if op == "READ":
            self._timed("READ", lambda: self._read(key))
        elif op == "UPDATE":
            self._timed("UPDATE", lambda: self._update(key))
        elif op == "SCAN":
            n = self.rnd.randint(1, self.maxscan)
            self._timed(
                "SCAN",
                lambda: (
                    len(list(self.coll.find({"_id": {"$gte": key}}).sort("_id", 1).limit(n))) > 0
                ),
            )
        elif op == "READ-MODIFY-WRITE":
            start = time.perf_counter()
            ok = self._timed("READ", lambda: self._read(key))
            ok = self._timed("UPDATE", lambda: self._update(key)) and ok
            micros = int((time.perf_counter() - start) * 1e6)
            BUDGET.record("READ-MODIFY-WRITE", ok, "OK" if ok else "ERROR", micros)

    @task
    def step(self) -> None:
        if not BUDGET.take():
            if self.batch:
                BUDGET.in_flight += 1
                try:
                    self._flush_rest()
                finally:
                    BUDGET.in_flight -= 1
            if BUDGET.in_flight == 0 and BUDGET.buffered == 0:
                _finish(self.environment)
            raise StopUser()
        now = time.time()
        if BUDGET.first_start is None:
            BUDGET.first_start = now
        try:
            self._do()
            BUDGET.transactions += 1
        finally:
            BUDGET.in_flight -= 1
            BUDGET.last_end = time.time()
        if BUDGET.issued >= BUDGET.limit and BUDGET.in_flight == 0 and BUDGET.buffered == 0:
            _finish(self.environment)
