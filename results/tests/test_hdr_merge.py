"""HDR histograms: Java-compatible statistics, and exact merging of parallel clients."""

import random

import pytest

from mongobench_results import hdr
from mongobench_results.document import OpResult, Window, build_document, upgrade, utc_now
from mongobench_results.merge import merge_documents

pytestmark = pytest.mark.unit


def _samples(seed: int, n: int) -> list[int]:
    rnd = random.Random(seed)
    # a skewed latency mix: mostly ~1 ms, a slow tail up to seconds
    return [int(rnd.lognormvariate(7.0, 1.0 + seed * 0.2)) + 1 for _ in range(n)]


def _hist(values: list[int]):
    h = hdr.new_histogram()
    for v in values:
        h.record_value(v)
    return h


def test_summary_follows_java_hdrhistogram_semantics():
    # 512 samples: Java's p95 uses ceil(0.95 * 512) = 487 samples (Python's library uses 486).
    values = list(range(1, 513))
    s = hdr.summarise(_hist(values))
    assert (s.count, s.min, s.max) == (512, 1, 512)
    assert s.p95 == 487
    assert s.p50 == 256
    assert s.p99 == 507  # ceil(506.88)
    assert s.p999 == 512
    assert s.avg == pytest.approx(256.5)


def test_summary_of_values_beyond_exact_resolution_reports_bucket_bounds():
    s = hdr.summarise(_hist([1_000_003]))
    # 3 significant digits: the value lands in a 512-wide bucket [999936, 1000447]
    assert s.min == 999_936 and s.max == 1_000_447 and s.p50 == 1_000_447


def test_encode_decode_round_trip_is_lossless():
    h = _hist(_samples(1, 5000))
    back = hdr.decode(hdr.encode(h))
    assert hdr.summarise(back) == hdr.summarise(h)


@pytest.mark.parametrize("clients", [2, 3, 7])
def test_merged_client_histograms_equal_one_histogram_of_all_samples(clients):
    per_client = [_samples(seed, 2000 + 311 * seed) for seed in range(clients)]
    merged = hdr.merge([hdr.decode(hdr.encode(_hist(v))) for v in per_client])
    everything = _hist([v for values in per_client for v in values])
    assert hdr.summarise(merged) == hdr.summarise(everything)
    # and it is not what averaging per-client percentiles would have given
    mean_of_p99 = sum(hdr.summarise(_hist(v)).p99 for v in per_client) / clients
    assert hdr.summarise(merged).p99 != mean_of_p99


T0 = 1_700_000_000_000_000  # epoch microseconds


def _doc(
    index: int,
    clients: int,
    values: list[int],
    errors: int = 0,
    runtime: float = 10.0,
    offset: float = 0.0,
):
    """A client document whose operations ran `runtime` s from T0 + `offset` s."""
    start = utc_now()
    codes = {"OK": len(values), "ERROR": errors} if errors else {"OK": len(values)}
    return build_document(
        driver="ycsb",
        driver_version="test",
        phase="run",
        workload="c",
        properties={"threadcount": "2"},
        labels={},
        client_index=index,
        clients=clients,
        threads=2,
        start=start,
        end=start,
        window=Window(T0 + round(offset * 1e6), T0 + round((offset + runtime) * 1e6)),
        operations={
            "READ": OpResult(
                _hist(values),
                codes,
            )
        },
        transactions=len(values) + errors,
        cpu_user_s=1.0,
        cpu_system_s=0.5,
        error=None,
        expected_ops=None,
        throttled=False,
    )


def test_merge_documents_gives_exact_aggregate_percentiles_and_sums():
    per_client = [_samples(seed, 3000) for seed in range(4)]
    docs = [_doc(i, 4, values, errors=i) for i, values in enumerate(per_client)]
    merged = merge_documents(docs)
    everything = hdr.summarise(_hist([v for values in per_client for v in values]))
    read = merged["operations"]["READ"]
    assert read["count"] == 12000
    assert read["errors"] == 0 + 1 + 2 + 3
    assert read["returnCodes"] == {"ERROR": 6, "OK": 12000}
    assert (read["latencyUs"]["p50"], read["latencyUs"]["p99"], read["latencyUs"]["p999"]) == (
        everything.p50,
        everything.p99,
        everything.p999,
    )
    assert read["latencyUs"]["max"] == everything.max
    assert merged["client"] == {"index": None, "count": 4, "threads": 8, "host": None}
    # Same window for every client: all operations over it, which here is the sum of rates.
    assert merged["throughput"] == pytest.approx(merged["operationsTotal"] / 10.0, abs=1e-3)
    assert merged["throughput"] == pytest.approx(sum(d["throughput"] for d in docs), abs=1e-2)
    assert merged["clientCpu"]["totalSeconds"] == pytest.approx(6.0)
    assert [c["index"] for c in merged["clients"]] == [0, 1, 2, 3]


def test_merge_flags_missing_clients_and_refuses_mixed_workloads():
    docs = [_doc(0, 3, _samples(0, 100)), _doc(2, 3, _samples(1, 100))]
    merged = merge_documents(docs)
    assert any("do not cover clients 0..2" in w for w in merged["sanity"]["warnings"])
    other = _doc(1, 3, _samples(2, 100))
    other["workload"] = "a"
    with pytest.raises(ValueError, match="workload"):
        merge_documents([*docs, other])


def test_step_throughput_is_all_operations_over_the_one_window_not_a_sum_of_rates():
    # Client 1 starts 2 s late and both run 10 s: the step ran 12 s.
    docs = [_doc(0, 2, _samples(0, 1000)), _doc(1, 2, _samples(1, 1000), offset=2.0)]
    merged = merge_documents(docs)
    assert merged["window"]["seconds"] == pytest.approx(12.0)
    assert merged["runtimeSeconds"] == merged["window"]["seconds"]
    assert merged["throughput"] == pytest.approx(2000 / 12.0, abs=1e-3)
    sum_of_rates = sum(d["throughput"] for d in docs)
    assert sum_of_rates == pytest.approx(200.0)  # what v1 reported: 20% too high
    c0, c1 = merged["clients"]
    assert (c0["startSkewSeconds"], c1["startSkewSeconds"]) == (0.0, 2.0)
    assert (c0["endSkewSeconds"], c1["endSkewSeconds"]) == (2.0, 0.0)
    assert merged["startSkewSeconds"] == 2.0 and merged["endSpreadSeconds"] == 2.0
    assert any("started 2.000 s apart" in w for w in merged["sanity"]["warnings"])
    # Little's law expects the threads each client had inside the window: 2 x 10 + 2 x 10
    # thread-seconds over 12 s, not 4 threads all along.
    assert merged["sanity"]["littlesLaw"]["expectedConcurrency"] == pytest.approx(40 / 12, 1e-3)


def test_v1_documents_are_upgraded_by_the_documented_rule():
    v2 = _doc(0, 1, _samples(0, 500), runtime=5.0)
    v1 = {k: v for k, v in v2.items() if k not in ("window", "startGate", "driverRuntimeSeconds")}
    v1["apiVersion"] = "mongobench.io/result/v1"
    v1["endTime"] = "2026-01-01T00:00:10.000Z"
    v1["runtimeSeconds"] = 5.0
    up = upgrade(v1)
    assert up["apiVersion"] == "mongobench.io/result/v2"
    assert up["window"] == {
        "start": "2026-01-01T00:00:05.000000Z",
        "end": "2026-01-01T00:00:10.000000Z",
        "seconds": 5.0,
        "source": "driver",
    }
    assert up["throughput"] == v1["throughput"]
    # A merged v1 document: the process span, and throughput = operations over it.
    merged_v1 = dict(v1, client={"index": None, "count": 2, "threads": 4, "host": None})
    merged_v1.update(
        clients=[],
        startTime="2026-01-01T00:00:00.000Z",
        operationsTotal=1000,
        throughput=250.0,  # v1's sum of rates
        wallClockThroughput=100.0,
    )
    up = upgrade(merged_v1)
    assert up["window"]["source"] == "process" and up["window"]["seconds"] == 10.0
    assert up["throughput"] == 100.0 and "wallClockThroughput" not in up
    with pytest.raises(ValueError, match="unsupported result apiVersion"):
        upgrade({"apiVersion": "mongobench.io/result/v0"})
    # and merging reads v1 client documents
    assert merge_documents([v1])["window"]["source"] == "driver"


def test_merge_of_128_clients_counts_every_client_once():
    """More than the old 64-client limit: the step's merge is exact at 128."""
    per_client = [_samples(seed % 4, 50) for seed in range(128)]
    docs = [_doc(i, 128, values, offset=i / 1000) for i, values in enumerate(per_client)]
    merged = merge_documents(docs)
    assert merged["operations"]["READ"]["count"] == 128 * 50
    assert merged["client"]["count"] == 128 and merged["client"]["threads"] == 256
    assert [c["index"] for c in merged["clients"]] == list(range(128))
    assert not any("do not cover" in w for w in merged["sanity"]["warnings"])
