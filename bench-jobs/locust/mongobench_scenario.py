"""mongobench's Locust scenario base: `MongoScenario`, what every Locust run shares.

The built-in YCSB driver (locustfile.py) is one subclass; a user scenario file (a BenchmarkRun
workload's `scenario`, from a ConfigMap) is another. Both are started by `mongobench-runner
locust` (standalone, or a master with workers), never imported next to pymongo in another process
(Locust monkey-patches the interpreter with gevent). Configuration comes as JSON in the file named
by MONGOBENCH_LOCUST_CONFIG: {"phase", "props" (YCSB properties), "workers", "out"}.

A scenario subclasses MongoScenario and says what one operation is, per phase:

    from mongobench_scenario import MongoScenario

    class Lookups(MongoScenario):
        def run_operation(self) -> None:  # one call: one operation of the budget
            with self.measure("FIND"):  # latency, return code, Locust stats
                self.collection.find_one({"customer": self.rnd.randrange(1000)})

What the base does, for the built-in driver and every scenario alike:

- Budget. Each user is one client thread; it takes an operation ticket (run phase:
  `operationcount`; load phase: `insertcount`/`recordcount`; split over the client's processes)
  before every call of `load_operation()` or `run_operation()`, and stops when the budget or
  `maxexecutiontime` is spent. `target` paces with Locust's constant_throughput per user. The
  measured window runs from the first ticket's start to the last one's end.
- Measurements. `measure(name)` records the latency in an HDR histogram per operation name
  (microseconds), the return code (OK; ERROR when the block raises; or what the block sets in
  `outcome.code`), and a Locust request. Codes other than OK and BATCHED_OK are errors: the
  runner fails the run above `--max-error-ratio`, naming the first error. An exception outside
  any `measure` counts as a failed operation named SCENARIO.
- Reporting. Every `status.interval` seconds each process sends its interval histograms to the
  master (or a standalone process keeps its own), which prints one status line in YCSB's format
  (the runner turns it into the live metrics); at the end each process reports its histograms,
  return codes, window and CPU, and the master writes them to "out" for the result document.

What a scenario gets (set before `setup()` runs, once per user): `self.mongo` (a MongoClient from
the target URI and the `mongodb.*` options, one per process; one per user, a pool of one connection,
under `mongobench.connectionPerThread=true`), `self.db` (`mongodb.database`), `self.collection`
(`table`), `self.props` (every property, strings; `param()` reads one typed), `self.phase` ("load"
or "run"), `self.rnd` (random.Random per user), `self.client_index`, `self.clients`; for reads
`existing_key()` (a loaded record's key number by `requestdistribution`, `permutation` included);
for inserts `next_key()` (key numbers that never collide across users, processes, clients and
steps), `key()` (YCSB's key name for a number, by `insertorder`), `insert()` and `insert_batched()`
(insertMany of `batchsize` documents, BATCHED_OK for the queued ones, as the YCSB binding does). The
default `load_operation()` inserts `document(next_key())`, a YCSB record unless the scenario
overrides `document`. Scenarios do not use Locust's `@task`: the base's one task is what keeps the
budget.
"""

from __future__ import annotations

import json
import os
import random
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import gevent
import pymongo
from bson.binary import Binary
from locust import User, constant, constant_throughput, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from mongobench_results import hdr
from mongobench_runner.client_options import client_options, connection_per_thread
from mongobench_runner.status import format_status_line, interval_stats
from mongobench_runner.workload import CLIENT, CLIENTS, INSERT_OFFSET, split_for_client
from mongobench_runner.ycsbgen import (
    PERMUTATION,
    KeyChooser,
    PermutationWalk,
    field_value,
    key_name,
    permutation_walk,
)

CONFIG: dict[str, Any] = json.loads(Path(os.environ["MONGOBENCH_LOCUST_CONFIG"]).read_text())
PROPS: dict[str, str] = CONFIG["props"]
PHASE: str = CONFIG["phase"]
WORKERS: int = max(int(CONFIG.get("workers", 0)), 1)
STATUS_INTERVAL = float(PROPS.get("status.interval", "10") or 10)
# Operations per second of this client over all its users (0: as fast as possible).
TARGET = float(PROPS.get("target", "0") or 0)
THREADS = int(PROPS.get("threadcount", "1"))
OK, BATCHED_OK, ERROR = "OK", "BATCHED_OK", "ERROR"
SCENARIO_OP = "SCENARIO"  # failures outside any measure()
ERROR_SAMPLES = 3
# spec.clients.connectionPerThread: a MongoClient (one pooled connection) per user.
PER_THREAD = connection_per_thread(PROPS)

T = TypeVar("T", str, int, float, bool)


def new_client(**pool: int) -> pymongo.MongoClient[dict[str, Any]]:
    """A MongoClient on the target URI with the binding's `mongodb.*` options."""
    options: dict[str, Any] = {**pool, **client_options(PROPS, os.environ)}
    return pymongo.MongoClient(PROPS["mongodb.url"], **options)


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
        self.error_samples: list[str] = []
        self.transactions = 0
        self.next_insert = 0
        self.insert_stride = 1
        self.first_insert = 0
        self.last_inserted = [0]
        self.acked: set[int] = set()
        self.worker_index = 0
        # requestdistribution=permutation: this process's part, shared by its users
        self.walk: PermutationWalk | None = None
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
        if PHASE == "run" and PROPS.get("requestdistribution") == PERMUTATION:
            # This process's operations start at ops*w//W among the client's (split_for_client).
            offset = ops * worker_index // WORKERS if self.limit > 0 else None
            self.walk = permutation_walk(PROPS, worker_index, WORKERS, offset)
        if limit_s > 0:
            self.deadline = time.monotonic() + limit_s
            if self.limit == 0:
                self.limit = 1 << 62
        if not PER_THREAD:  # else each user opens its own (MongoScenario.on_start)
            self.client = new_client(maxPoolSize=0)
        self.ready = True

    def take(self) -> bool:
        if self.issued >= self.limit or time.monotonic() >= self.deadline:
            return False
        self.issued += 1
        self.in_flight += 1
        return True

    def take_key(self) -> int:
        keynum = self.next_insert
        self.next_insert += self.insert_stride
        return keynum

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

    def note_error(self, op: str, error: BaseException) -> None:
        """The first few distinct failures, for the document's error message."""
        text = f"{op}: {type(error).__name__}: {error}"[:300]
        if len(self.error_samples) < ERROR_SAMPLES and text not in self.error_samples:
            self.error_samples.append(text)

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
            "errorSamples": self.error_samples,
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
        stats = {name: interval_stats(h) for name, h in self.pending.items()}
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


class Outcome:
    """What `measure` records. Set `code` to another return code (NOT_FOUND, ...) to count the
    operation as failed without raising; `ok` says whether it counts as successful."""

    def __init__(self) -> None:
        self.code = OK
        self.error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.code == OK


class MongoScenario(User):
    """Base of the built-in YCSB driver and of user scenarios (module docstring)."""

    abstract = True
    # `target` is the client's operations per second over its `threadcount` users.
    wait_time = constant_throughput(TARGET / THREADS) if TARGET > 0 else constant(0)
    # Documents per insertMany of insert_batched() when no `batchsize` property is given.
    default_batch_size = 1
    _keys: KeyChooser | None  # existing_key()'s chooser, made at its first call

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, value in vars(cls).items() if hasattr(value, "locust_task_weight")]
        if own:
            raise TypeError(
                f"{cls.__name__}: a MongoScenario defines load_operation() and run_operation(), "
                f"not @task methods ({', '.join(own)}): the base's one task keeps the budget"
            )

    # -- what a scenario defines -----------------------------------------------------------------

    def setup(self) -> None:
        """Once per user, after connecting (use instead of on_start)."""

    def load_operation(self) -> None:
        """One operation of the load phase: by default insert `document(next_key())`, with
        insertMany batches when `batchsize` > 1 (as YCSB's load)."""
        doc = self.document(self.next_key())
        if self.batch_size > 1:
            self.insert_batched(doc)
        else:
            self.insert(doc)

    def run_operation(self) -> None:
        """One operation of the run phase."""
        raise NotImplementedError(f"{type(self).__name__} defines no run_operation()")

    def document(self, keynum: int) -> dict[str, Any]:
        """The record for key number `keynum`: a YCSB record (`_id` and `fieldcount` fields of
        `fieldlength` random bytes) unless the scenario overrides it."""
        return {"_id": self.key(keynum), **self.ycsb_values(True)}

    # -- helpers -------------------------------------------------------------------------------

    def param(self, name: str, default: T) -> T:
        """Property `name` (a workload property of the BenchmarkRun, or `-p`) as the type of
        `default`; `default` when unset."""
        raw = self.props.get(name)
        if raw is None or raw == "":
            return default
        if isinstance(default, bool):
            return raw.strip().lower() in ("true", "yes", "1")
        return type(default)(raw)

    def key(self, keynum: int) -> str:
        """YCSB's key name for a key number (`insertorder`: hashed, or ordered)."""
        return key_name(keynum, hashed=self.hashed)

    def existing_key(self) -> int:
        """The key number of a loaded record, chosen by `requestdistribution` as YCSB's
        CoreWorkload does (uniform unless set; `permutation`: each loaded key once over the run's
        clients, in a seeded shuffled order, when operationcount = recordcount)."""
        if self._keys is None:
            self._keys = KeyChooser(
                PROPS,
                self.rnd,
                BUDGET.last_inserted,
                stride=BUDGET.insert_stride,
                first_insert=BUDGET.first_insert,
                walk=BUDGET.walk,
            )
        return self._keys.next()

    def next_key(self) -> int:
        """The next key number this user inserts: the load phase's share of `insertstart` ..
        `insertstart + insertcount`; in the run phase numbers beyond `recordcount` that no other
        user, process, client or step takes."""
        return BUDGET.take_key()

    def ycsb_fields(self, all_fields: bool) -> list[str]:
        """YCSB's field names: all `fieldcount` of them, or one at random."""
        if all_fields:
            return [f"field{i}" for i in range(self.fieldcount)]
        return [f"field{self.rnd.randrange(self.fieldcount)}"]

    def ycsb_values(self, all_fields: bool) -> dict[str, Binary]:
        """Random values (`fieldlength` printable bytes) for YCSB's fields."""
        return {
            f: Binary(field_value(self.rnd, self.fieldlength)) for f in self.ycsb_fields(all_fields)
        }

    @contextmanager
    def measure(self, op: str) -> Iterator[Outcome]:
        """Time the block as one operation named `op`. An exception in it is a failed operation
        (code ERROR, the first few kept for the error message) and goes no further."""
        outcome = Outcome()
        start = time.perf_counter()
        try:
            yield outcome
        except StopUser:
            raise
        except Exception as e:
            outcome.code, outcome.error = ERROR, e
        self._record(op, outcome, int((time.perf_counter() - start) * 1e6))

    def timed(self, op: str, fn: Callable[[], Any]) -> bool:
        """`fn()` measured as `op`; a False result counts as NOT_FOUND (YCSB's meaning)."""
        with self.measure(op) as outcome:
            if fn() is False:
                outcome.code = "NOT_FOUND"
        return outcome.ok

    def insert(self, doc: dict[str, Any], op: str = "INSERT") -> bool:
        """insertOne, or replaceOne with upsert under mongodb.upsert (as the binding does)."""
        if self.upsert:
            return self.timed(
                op, lambda: self.collection.replace_one({"_id": doc["_id"]}, doc, upsert=True)
            )
        return self.timed(op, lambda: self.collection.insert_one(doc))

    def insert_batched(self, doc: dict[str, Any], op: str = "INSERT") -> None:
        """The binding's batching: a queued insert returns BATCHED_OK at once, the one that fills
        the batch (`batch_size`) writes it with one unordered insertMany (its latency is the
        insertMany's); the base writes a partial batch when the user's budget ends."""
        start = time.perf_counter()
        self.batch.append(doc)
        self.batch_op = op
        BUDGET.buffered += 1
        if len(self.batch) < self.batch_size:
            BUDGET.record(op, True, BATCHED_OK, int((time.perf_counter() - start) * 1e6))
            return
        self.timed(op, self._flush)

    # -- the base's machinery ------------------------------------------------------------------

    def on_start(self) -> None:
        assert BUDGET.ready
        self.props = PROPS
        self.phase = PHASE
        self.rnd = random.Random()
        if PER_THREAD:
            # minPoolSize=1: its connection opens at once, not at the user's first operation
            self.mongo = new_client(maxPoolSize=1, minPoolSize=1)
        else:
            assert BUDGET.client is not None
            self.mongo = BUDGET.client
        self.db = self.mongo.get_database(
            PROPS.get("mongodb.database") or self.mongo.get_default_database("ycsb").name
        )
        self.collection = self.db[PROPS.get("table", "usertable")]
        self.client_index = int(PROPS.get(CLIENT, "0"))
        self.clients = int(PROPS.get(CLIENTS, "1"))
        self.fieldcount = int(PROPS.get("fieldcount", "10"))
        self.fieldlength = int(PROPS.get("fieldlength", "100"))
        self.hashed = PROPS.get("insertorder", "hashed") != "ordered"
        self.upsert = PROPS.get("mongodb.upsert", "false").lower() == "true"
        batch = PROPS.get("batchsize", PROPS.get("mongodb.batchsize", ""))
        self.batch_size = int(batch or self.default_batch_size)
        self.batch: list[dict[str, Any]] = []
        self.batch_op = "INSERT"
        self._keys = None
        self.setup()

    def on_stop(self) -> None:
        if PER_THREAD:
            self.mongo.close()

    def _record(self, op: str, outcome: Outcome, micros: int) -> None:
        BUDGET.record(op, outcome.ok, outcome.code, micros)
        if outcome.error is not None:
            BUDGET.note_error(op, outcome.error)
        self.environment.events.request.fire(
            request_type="mongodb",
            name=op,
            response_time=micros / 1000,
            response_length=0,
            exception=outcome.error or (None if outcome.ok else LookupError(outcome.code)),
            context={},
        )

    def _flush(self) -> Any:
        docs, self.batch = self.batch, []
        BUDGET.buffered -= len(docs)
        if self.upsert:
            ops = [pymongo.ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs]
            return self.collection.bulk_write(ops, ordered=False)
        return self.collection.insert_many(docs, ordered=False)

    def _flush_rest(self) -> None:
        """A partial batch at the end, as the binding writes it in cleanup: no operation of its
        own (its inserts were counted as BATCHED_OK), but a failure counts as an error."""
        try:
            self._flush()
        except pymongo.errors.PyMongoError as e:
            BUDGET.record(self.batch_op, False, ERROR, 1)
            BUDGET.note_error(self.batch_op, e)

    def _operation(self) -> None:
        start = time.perf_counter()
        try:
            self.load_operation() if PHASE == "load" else self.run_operation()
        except StopUser:
            raise
        except Exception as e:  # a scenario's own error, outside any measure()
            outcome = Outcome()
            outcome.code, outcome.error = ERROR, e
            self._record(SCENARIO_OP, outcome, int((time.perf_counter() - start) * 1e6))

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
            self._operation()
            BUDGET.transactions += 1
        finally:
            BUDGET.in_flight -= 1
            BUDGET.last_end = time.time()
        if BUDGET.issued >= BUDGET.limit and BUDGET.in_flight == 0 and BUDGET.buffered == 0:
            _finish(self.environment)
