"""Workload files, key-space split of parallel clients, redaction, and the Little's law check."""

import pytest

from mongobench_results import hdr
from mongobench_results.document import (
    OpResult,
    Window,
    build_document,
    littles_law,
    summary_line,
    utc_now,
)
from mongobench_runner import workload as wl

pytestmark = pytest.mark.unit

STANDARD_MIX = {
    "a": {"READ": 0.5, "UPDATE": 0.5},
    "b": {"READ": 0.95, "UPDATE": 0.05},
    "c": {"READ": 1.0},
    "d": {"READ": 0.95, "INSERT": 0.05},
    "e": {"SCAN": 0.95, "INSERT": 0.05},
    "f": {"READ": 0.5, "READ-MODIFY-WRITE": 0.5},
}
DISTRIBUTION = {
    "a": "zipfian",
    "b": "zipfian",
    "c": "zipfian",
    "d": "latest",
    "e": "zipfian",
    "f": "zipfian",
}


@pytest.mark.parametrize("name", wl.STANDARD)
def test_workload_files_have_the_standard_mixes(name):
    props = wl.load_workload(name)
    mix = {op: p for op, p in wl.proportions(props).items() if p}
    assert mix == STANDARD_MIX[name]
    assert props["requestdistribution"] == DISTRIBUTION[name]
    assert props["workload"] == "site.ycsb.workloads.CoreWorkload"
    assert int(props["recordcount"]) > 0 and int(props["operationcount"]) > 0


def test_properties_parser_handles_comments_and_separators():
    assert wl.parse_properties("# c\n! c\na=1\nb : two words\nc 3\n\n") == {
        "a": "1",
        "b": "two words",
        "c": "3",
    }


@pytest.mark.parametrize("records,clients", [(1000, 1), (1000, 3), (7, 4), (10, 10)])
def test_load_split_covers_the_key_space_exactly_once(records, clients):
    covered: list[int] = []
    for i in range(clients):
        props = wl.effective_properties(
            {"recordcount": str(records), "operationcount": "100"},
            {},
            phase="load",
            client_index=i,
            clients=clients,
        )
        if clients == 1:
            assert "insertstart" not in props
            covered = list(range(records))
            break
        start, count = int(props["insertstart"]), int(props["insertcount"])
        covered.extend(range(start, start + count))
        assert props["recordcount"] == str(records)
    assert covered == list(range(records))


def test_run_split_shares_the_operations():
    total = 0
    for i in range(3):
        props = wl.effective_properties(
            {"recordcount": "1000", "operationcount": "1000"},
            {},
            phase="run",
            client_index=i,
            clients=3,
        )
        total += int(props["operationcount"])
        assert "insertstart" not in props
    assert total == 1000
    with pytest.raises(ValueError):
        wl.split_for_client(10, 10, 3, 3)


def test_run_inserts_get_the_partitioned_workload_and_the_client_identity():
    props = wl.effective_properties(
        wl.load_workload("d"),
        {"mongobench.insertoffset": "2199023255552"},
        phase="run",
        client_index=1,
        clients=2,
    )
    assert props["workload"] == "io.mongobench.ycsb.PartitionedInsertsWorkload"
    assert (props["mongobench.client"], props["mongobench.clients"]) == ("1", "2")
    assert props["mongobench.insertoffset"] == "2199023255552"
    # A workload class of the user's own is left alone.
    custom = wl.effective_properties(
        {"workload": "com.example.MyWorkload"}, {}, phase="run", client_index=0, clients=1
    )
    assert custom["workload"] == "com.example.MyWorkload"


def test_overrides_win_and_secrets_are_redacted():
    props = wl.effective_properties(
        wl.load_workload("a"),
        wl.parse_overrides(
            [
                "recordcount=50",
                "mongodb.url=mongodb://bench:s3cret@db:27017/ycsb?tls=true",
                "mongodb.password=hunter2",
            ]
        ),
        phase="run",
        client_index=0,
        clients=1,
    )
    assert props["recordcount"] == "50"
    shown = wl.redacted(props)
    assert shown["mongodb.url"] == "mongodb://bench:***@db:27017/ycsb?tls=true"
    assert shown["mongodb.password"] == "***"
    assert "s3cret" not in str(shown) and "hunter2" not in str(shown)
    with pytest.raises(ValueError):
        wl.parse_overrides(["novalue"])


def _ops(count: int, latency_us: int) -> dict:
    h = hdr.new_histogram()
    h.record_value(latency_us, count)
    return {"READ": {"count": count, "errors": 0, "latencyUs": hdr_latency(h)}}


def hdr_latency(h):
    s = hdr.summarise(h)
    return {"avg": s.avg}


def test_littles_law_accepts_a_consistent_closed_loop():
    # 8 threads, 2 ms per operation, 4000 ops/s over 10 s => 8 in flight
    law = littles_law(_ops(40_000, 2000), 10.0, 8, throttled=False)
    assert law["ok"] and law["ratio"] == pytest.approx(1.0, abs=0.01)


def test_littles_law_flags_a_published_table_that_cannot_be_true():
    # A thesis-style row: 200 threads, 4745 ops/s, average latency 80 ms => 380 ops in flight.
    runtime = 600.0
    law = littles_law(_ops(int(4745 * runtime), 80_000), runtime, 200, throttled=False)
    assert not law["ok"] and law["ratio"] > 1.8


def test_littles_law_lower_bound_only_without_a_target_rate():
    law = littles_law(_ops(1000, 1000), 10.0, 8, throttled=False)  # 0.1 in flight for 8 threads
    assert not law["ok"]
    assert littles_law(_ops(1000, 1000), 10.0, 8, throttled=True)["ok"]


def test_a_mismatch_is_flagged_in_the_document_not_hidden():
    h = hdr.new_histogram()
    h.record_value(80_000, 47_450)
    start = utc_now()
    doc = build_document(
        driver="ycsb",
        driver_version="t",
        phase="run",
        workload="a",
        properties={},
        labels={},
        client_index=0,
        clients=1,
        threads=200,
        start=start,
        end=start,
        window=Window(0, 10_000_000),
        operations={"READ": OpResult(h, {"OK": 47_450})},
        transactions=47_450,
        cpu_user_s=0,
        cpu_system_s=0,
        error=None,
        expected_ops=47_450,
        throttled=False,
    )
    assert doc["status"] == "Succeeded"
    assert doc["sanity"]["littlesLaw"]["ok"] is False
    assert any("more than the 200.00 threads allow" in w for w in doc["sanity"]["warnings"])
    assert "Little's law ratio" in summary_line(doc)
