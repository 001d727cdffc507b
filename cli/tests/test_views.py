"""Unit tier: pure views of a run (progress and ETA for `watch`, CPU series, run keys, shape)
and the comparison table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import T0, benchmark_run

from mongobench_cli import render, sources
from mongobench_cli.watch import progress_view
from mongobench_results import compare, records

pytestmark = pytest.mark.unit


def test_progress_view_of_a_run_half_way() -> None:
    run = benchmark_run("half", workloads=("a",), repetitions=4).run
    steps = run["status"]["steps"]  # prepare, load, run a #1..#4, cleanup
    for s in steps[4:]:
        s["phase"] = "Pending"
        s.pop("result", None)
    steps[4]["phase"] = "Running"
    run["status"]["phase"] = "Running"
    run["status"]["progress"] = {"steps": 7, "current": "run a #3"}
    del run["status"]["completionTime"]
    finished_runs = [s for s in steps[2:4]]
    mean = (
        sum(
            (records.parse_time(s["completionTime"]) - records.parse_time(s["startTime"]))  # type: ignore[operator]
            .total_seconds()
            for s in finished_runs
        )
        / 2
    )
    started = records.parse_time(steps[4]["startTime"])
    assert started is not None
    now = started + timedelta(seconds=0.5)
    view = progress_view(run, now)
    assert (view.done, view.total, view.current, view.phase) == (4, 7, "run a #3", "Running")
    assert view.last_throughput == pytest.approx(records.throughput(steps[3]["result"]))
    # Remaining: the running step (mean minus 0.5 s elapsed), one more run step, and cleanup
    # (no cleanup finished yet: the mean of every finished step stands in).
    assert view.eta is not None and view.eta > max(0.0, mean - 0.5) + mean
    assert "4/7 steps done" in view.line() and "ETA" in view.line()
    assert view.elapsed == pytest.approx((now - T0).total_seconds())


def timed(run: dict[str, Any], seconds: dict[int, float]) -> None:
    """Steps `index` took `seconds`, one after another from T0; the others are pending."""
    t = T0
    for s in run["status"]["steps"]:
        if s["index"] in seconds:
            s["phase"] = "Succeeded"
            s["startTime"] = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            t += timedelta(seconds=seconds[s["index"]])
            s["completionTime"] = t.strftime("%Y-%m-%dT%H:%M:%SZ")
        else:
            s["phase"] = "Pending"
            for key in ("result", "startTime", "completionTime"):
                s.pop(key, None)
    run["status"]["phase"] = "Running"


def test_eta_expects_each_workload_to_take_what_its_own_steps_took() -> None:
    """Unit tier: the ETA of `watch` (issue: "ETA 38s" with three 60-second scan steps to
    run). Steps: prepare, load, run a #1-3, run e #1-3, cleanup."""
    run = benchmark_run("eta", workloads=("a", "e"), repetitions=3).run
    # Point reads took 5 s each; the first scan took 60 s: the two scans left take 60 s each,
    # not the 18.75 s mean of every measured step; the cleanup, none of its kind done yet,
    # the mean of all finished steps.
    timed(run, {0: 1, 1: 1, 2: 5, 3: 5, 4: 5, 5: 60})
    view = progress_view(run, T0 + timedelta(seconds=77))
    assert view.eta == pytest.approx(60 + 60 + 77 / 6)


def test_eta_of_a_time_bounded_workload_not_yet_seen_is_at_least_its_duration() -> None:
    run = benchmark_run("eta", workloads=("a", "e"), repetitions=3).run
    run["spec"]["run"] = {"durationSeconds": 60, "threads": 4}
    timed(run, {0: 1, 1: 1, 2: 5, 3: 5, 4: 5})  # a's steps were short: e's cannot be
    view = progress_view(run, T0 + timedelta(seconds=17))
    assert view.eta == pytest.approx(3 * 60 + 17 / 5)
    assert "ETA 3m03s" in view.line()


def test_watch_in_a_log_prints_a_line_per_change_of_progress_not_per_poll() -> None:
    import copy
    import io

    from rich.console import Console

    from mongobench_cli.watch import follow

    done = benchmark_run("w", workloads=("a",), repetitions=2).run
    running = copy.deepcopy(done)
    running["status"]["phase"] = "Running"
    running["status"]["progress"] = {"steps": 5, "current": "run a #2"}
    for s in running["status"]["steps"][3:]:
        s["phase"] = "Pending"
        s.pop("result", None)
    del running["status"]["completionTime"]
    # The clock moves between polls (elapsed 2 s more each time), the progress does not.
    later = []
    for shift in (0, 2, 4):
        r = copy.deepcopy(running)
        start = datetime.now(UTC) - timedelta(seconds=10 + shift)
        r["status"]["startTime"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
        later.append(r)
    polls = iter([*later, done])
    out = io.StringIO()
    code = follow(lambda: next(polls), Console(file=out, width=200), interval=0)
    lines = out.getvalue().splitlines()
    # Three polls of the same progress (only the elapsed time moved): one line; then the end.
    assert code == 0
    assert [ln.split(",")[0] for ln in lines] == [
        "w: Running 3/5 steps done",
        "w: Succeeded 5/5 steps done",
        "w: Succeeded",
    ]


def test_progress_view_of_a_finished_run() -> None:
    run = benchmark_run("done").run
    view = progress_view(run, T0 + timedelta(hours=1))
    assert (view.phase, view.eta, view.done) == ("Succeeded", 0.0, view.total)


def test_cpu_busy_series_from_per_mode_rates() -> None:
    modes = {
        "idle": [[1.0, 1.5], [2.0, 0.5]],
        "user": [[1.0, 0.4], [2.0, 1.2]],
        "system": [[1.0, 0.1], [2.0, 0.3]],
    }
    assert records.cpu_busy_series(modes) == [(1.0, 25.0), (2.0, 75.0)]
    assert records.cpu_busy_series({"user": [[1.0, 1.0]]}) == []  # no idle: unknown, not 100 %


def test_keys_are_short_and_unique() -> None:
    a = benchmark_run("x", namespace="n1")
    b = benchmark_run("x", namespace="n2")
    c = benchmark_run("y", namespace="n1")
    d = benchmark_run("x", namespace="n1")
    d.origin = "elsewhere"
    sources.assign_keys([a, b, c])
    assert [r.key for r in (a, b, c)] == ["n1/x", "n2/x", "y"]
    sources.assign_keys([a, d])
    assert [r.key for r in (a, d)] == ["n1/x@fixture", "n1/x@elsewhere"]


def test_shape_of_external_and_older_runs() -> None:
    run = benchmark_run("s", shards=4, mongos=3, version="8.0.4").run
    shape = records.shape(run)
    assert shape.text() == "4 shards x 3, 3 mongos" and shape.version == "8.0.4"
    assert shape.dimensions()["instanceTypes"] == "m5.large"
    run["status"]["clusterSnapshot"] = {"external": True}
    assert records.shape(run).text() == "external URI"
    # A result without the issue-10 window falls back to the merged throughput.
    result = {"throughput": 123.0, "operationsTotal": 1000}
    assert records.throughput(result) == 123.0
    assert records.throughput({**result, "window": {"seconds": 4.0}}) == 250.0


class _Kube:
    """Stands in for the API (unit tier): counts requests."""

    namespace = "ns"

    def __init__(self, names: list[str]) -> None:
        self.objects = {n: benchmark_run(n).run for n in names}
        self.lists = self.gets = 0

    def list_objects(self, namespace: str | None = None) -> list[dict[str, object]]:
        self.lists += 1
        return [
            {**o, "metadata": {**o["metadata"], "namespace": "ns"}} for o in self.objects.values()
        ]

    def loaded(self, obj: dict[str, object]) -> sources.LoadedRun:
        return sources.LoadedRun(obj, "context test")  # type: ignore[arg-type]

    def run(self, name: str) -> sources.LoadedRun:
        self.gets += 1
        if name not in self.objects:
            raise sources.SourceError(f'benchmarkrun "{name}" not found')
        return self.loaded(self.objects[name])


def test_many_runs_of_one_namespace_are_read_with_one_list() -> None:
    kube = _Kube([f"r{i}" for i in range(6)])
    resolver = sources.Resolver(_kube=kube)  # type: ignore[arg-type]
    runs = resolver.resolve([f"r{i}" for i in range(5)])
    assert [r.name for r in runs] == [f"r{i}" for i in range(5)]
    assert (kube.lists, kube.gets) == (1, 0)
    with pytest.raises(sources.SourceError, match='"nope" not found'):
        resolver.resolve(["r0", "r1", "r2", "r3", "nope"])
    few = _Kube(["a", "b"])
    sources.Resolver(_kube=few).resolve(["a", "b"])  # type: ignore[arg-type]
    assert (few.lists, few.gets) == (0, 2)


def test_describe_shows_the_steps_disk_network_and_memory() -> None:
    from rich.console import Console

    from mongobench_cli import render

    loaded = benchmark_run("profiled", workloads=("a",), repetitions=1)
    step = next(s for s in loaded.run["status"]["steps"] if s["kind"] == "run")
    step["resources"] = {
        "cluster": {
            "nodes": 2,
            "disk": {"writeIops": 200.0, "utilisationPercent": 33.3, "utilisationPercentMax": 91.3},
            "memory": {"usedPercent": 50.0, "usedPercentMax": 70.0},
        },
        "clients": None,
        "missing": ["mongod containers (no cAdvisor series)"],
    }
    console = Console(width=250, record=True)
    console.print(render.describe(loaded))
    text = console.export_text()
    assert "Disk, network and memory per node group" in text
    assert "disk writeIops 200 utilisationPercent 33.3/91.3; memory usedPercent 50.0/70.0" in text
    assert "mongod containers (no cAdvisor series)" in text


def test_describe_shows_each_steps_validity_with_its_reasons() -> None:
    from rich.console import Console

    loaded = benchmark_run("judged", workloads=("a",), repetitions=2)
    first, second = [s for s in loaded.run["status"]["steps"] if s["kind"] == "run"]
    first["validity"] = {
        "valid": False,
        "reasons": [
            {"reason": "ClientBound", "message": "client CPU 97% of its limit", "value": 0.97}
        ],
        "attempt": 1,
    }
    second["validity"] = {"valid": True, "reasons": [], "attempt": 2, "warmupSeconds": 3.0}
    console = Console(width=250, record=True)
    console.print(render.describe(loaded))
    text = console.export_text()
    assert "validity" in text
    assert "invalid: ClientBound" in text
    # Under the plan: what was seen on the trial, then what to change.
    assert "run a #1: ClientBound: client CPU 97% of its limit" in text
    assert "to change: ClientBound: raise clients.resources.limits.cpu" in text
    assert "valid (warm-up 3 s) [attempt 2]" in text
    # A reason the policy accepts (spec.validity.accept): said, and the trial valid.
    first["validity"] = {
        "valid": True,
        "reasons": [{"reason": "ClientBound", "message": "client CPU 97%", "accepted": True}],
        "attempt": 1,
    }
    console = Console(width=250, record=True)
    console.print(render.describe(loaded))
    text = console.export_text()
    assert "invalid" not in text
    assert "valid (accepted: ClientBound)" in text
    assert "run a #1: ClientBound (accepted): client CPU 97%" in text
    assert "to change" not in text  # an accepted reason needs no change


def test_describe_shows_documents_data_and_chunks_per_shard_after_each_load() -> None:
    from rich.console import Console

    loaded = benchmark_run("sharded", workloads=("a",), repetitions=1)
    load = next(s for s in loaded.run["status"]["steps"] if s["kind"] == "load")
    load["distribution"] = {
        "collection": "ycsb.usertable",
        "sharded": True,
        "documents": 1000,
        "shards": [
            {
                "shard": "c-shard0",
                "documents": 600,
                "percent": 60.0,
                "chunks": 3,
                "dataBytes": 660 * 2**10,
            },
            {"shard": "c-shard1", "documents": 400, "percent": 40.0, "chunks": 2},
        ],
    }
    console = Console(width=200, record=True)
    console.print(render.describe(loaded))
    text = console.export_text()
    assert "Shard distribution after each load" in text
    rows = [" ".join(line.split()) for line in text.splitlines()]
    assert f"{load['label']} c-shard0 600 60.0 0.6 MiB 3" in rows
    assert "c-shard1 400 40.0 - 2" in rows  # no data size reported: a dash, not a zero
    assert records.distribution(loaded.run) == load["distribution"]
    assert records.distribution(benchmark_run("replica", workloads=("a",)).run) is None


def _running(name: str) -> dict[str, Any]:
    import copy

    run = copy.deepcopy(benchmark_run(name, workloads=("a",)).run)
    run["status"]["phase"] = "Running"
    del run["status"]["completionTime"]
    return run


def _watch(polls: list[dict[str, Any] | None], **kw: Any) -> tuple[int, list[str]]:
    import io

    from rich.console import Console

    from mongobench_cli.watch import follow

    answers = iter(polls)
    out = io.StringIO()
    code = follow(lambda: next(answers), Console(file=out, width=200), interval=0, **kw)
    return code, out.getvalue().splitlines()


def test_watch_says_when_the_run_is_gone_before_or_while_it_is_watched() -> None:
    from mongobench_cli.watch import EXIT_GONE

    assert _watch([None]) == (EXIT_GONE, ["error: the run does not exist"])
    code, lines = _watch([_running("w"), None])
    assert code == EXIT_GONE
    assert lines[-1] == "w: deleted while watched"


def test_watch_gives_up_at_its_timeout_and_says_how_far_the_run_got() -> None:
    from mongobench_cli.watch import EXIT_GONE

    ticks = iter([0.0, 1.0, 4.0, 6.0])  # the deadline (5 s) passes on the third look
    code, lines = _watch([_running("w")] * 3, timeout=5, clock=lambda: next(ticks))
    assert code == EXIT_GONE
    assert lines[-1] == "w: still Running after 5s"
    assert len(lines) == 2  # one progress line (nothing changed), then the verdict


def test_watch_of_a_failed_run_exits_1_with_the_reason() -> None:
    from mongobench_cli.watch import EXIT_FAILED

    failed = _running("w")
    failed["status"]["phase"] = "Failed"
    failed["status"]["conditions"] = [
        {"type": "Succeeded", "status": "False", "reason": "StepFailed", "message": "load broke"}
    ]
    code, lines = _watch([_running("w"), failed])
    assert code == EXIT_FAILED
    assert lines[-1] == "w: Failed: load broke"


def test_the_table_shows_short_flags_inline_and_the_long_ones_as_notes() -> None:
    import io

    from rich.console import Console

    base = benchmark_run("base", repetitions=2, seed=5)
    noisy = benchmark_run("noisy", repetitions=3, sd=250, seed=6, little_broken=("a#1", "a#3"))
    result = compare.compare(
        [compare.RunInput(r.key, r.run) for r in (base, noisy)], metrics=("throughput",)
    )
    out = io.StringIO()
    Console(file=out, width=220).print(render.compare_table(result))
    text = out.getvalue()
    noisy_row = next(r for r in result.rows if (r.workload, r.configuration) == ("a", "noisy"))
    cv = next(f for f in noisy_row.flags if f.startswith("CV"))
    noisy_line = next(ln for ln in text.splitlines() if " noisy " in ln)
    # "CV 31%" beside its figures, one legend line for every CV; Little's law as a note.
    assert cv.rsplit(" > ", 1)[0] in noisy_line and "[1]" in noisy_line
    assert "n=2" in next(ln for ln in text.splitlines() if " base " in ln)
    assert text.count("CV: the coefficient of variation is over 10%") == 1
    assert "[1] Little's law fails in 2 of 3 steps" in text
    assert "> 10%" not in text
