"""The Locust driver's YCSB generators: same key names and skew as YCSB."""

import collections
import itertools
import random

import pytest

from mongobench_runner.workload import effective_properties, split_for_client
from mongobench_runner.ycsbgen import (
    KeyChooser,
    Permutation,
    Zipfian,
    fnvhash64,
    key_name,
    permutation_walk,
)

pytestmark = pytest.mark.unit


def test_key_names_equal_ycsb_core():
    # values read back from a collection YCSB 0.17.0 loaded with insertorder=hashed
    assert key_name(0, hashed=True) == "user6284781860667377211"
    assert key_name(1, hashed=True) == "user8517097267634966620"
    assert key_name(5, hashed=False) == "user5"
    assert key_name(5, hashed=False, zeropadding=4) == "user0005"
    assert fnvhash64(0) >= 0


def test_zipfian_is_skewed_towards_the_first_items():
    z = Zipfian(0, 999, random.Random(1))
    counts = collections.Counter(z.next() for _ in range(20_000))
    assert counts[0] > counts[10] > counts[500]
    assert counts[0] / 20_000 > 0.1
    assert all(0 <= k <= 999 for k in counts)


def test_scrambled_zipfian_stays_in_the_key_range_and_has_hot_keys():
    chooser = KeyChooser(
        {"requestdistribution": "zipfian", "recordcount": "1000"}, random.Random(2), [0]
    )
    counts = collections.Counter(chooser.next() for _ in range(20_000))
    assert min(counts) >= 0 and max(counts) <= 999
    assert counts.most_common(1)[0][1] > 20_000 / 1000 * 10  # far above uniform


def test_latest_only_picks_keys_this_process_inserted():
    last = [1000 + 1 + 3 * 40]  # worker 1 of 3 inserted 1001, 1004, ..., 1121
    chooser = KeyChooser(
        {"requestdistribution": "latest", "recordcount": "1000"},
        random.Random(3),
        last,
        stride=3,
        first_insert=1001,
    )
    keys = [chooser.next() for _ in range(5000)]
    assert all(k < 1000 or (k - 1000) % 3 == 1 for k in keys)
    counts = collections.Counter(keys)
    assert counts.most_common(1)[0][0] == last[0]  # the newest own key is the hottest
    assert counts[last[0]] > counts[last[0] - 3] > counts[1050]


def test_unsupported_distribution_is_a_clear_error():
    with pytest.raises(ValueError, match="hotspot"):
        KeyChooser({"requestdistribution": "hotspot", "recordcount": "10"}, random.Random(), [0])


def test_latest_skips_the_range_of_earlier_steps_and_other_clients():
    # client 1 of 2, one worker, step offset 10_000: owns 11_001, 11_003, ...
    last = [11_001 + 2 * 30]
    chooser = KeyChooser(
        {"requestdistribution": "latest", "recordcount": "1000"},
        random.Random(4),
        last,
        stride=2,
        first_insert=11_001,
    )
    keys = [chooser.next() for _ in range(5000)]
    assert all(k < 1000 or (k >= 11_001 and (k - 11_001) % 2 == 0) for k in keys)
    assert any(k < 1000 for k in keys) and collections.Counter(keys).most_common(1)[0][0] == last[0]


# The first keys of the permutation of 100 with seed 0: PartitionedInsertsWorkloadTest.java
# asserts the same, so both drivers read in one order.
FIRST_OF_100 = Permutation(100, 0)
JAVA_FIRST_OF_100 = [82, 7, 5, 27, 75, 50, 84, 26]


def test_a_permutation_holds_every_key_once_in_a_seeded_shuffled_order():
    for n in (1, 2, 3, 100, 1000, 4097):
        order = [Permutation(n, 7).at(i) for i in range(n)]
        assert sorted(order) == list(range(n)), n
    order = [Permutation(1000, 7).at(i) for i in range(1000)]
    assert order == [Permutation(1000, 7).at(i) for i in range(1000)]  # seeded: the same again
    assert order != [Permutation(1000, 8).at(i) for i in range(1000)]  # another seed, another
    assert order != sorted(order)  # shuffled: far from the loaded order
    assert sum(1 for a, b in itertools.pairwise(order) if b == a + 1) < 20
    assert Permutation(1000, 7).at(1000) == order[0]  # past the end it starts over


def _walks(n: int, ops: int, clients: int, parts: int, seed: str = "3") -> list[list[int]]:
    """Every process's keys, the processes split as the runner and the Locust base split them."""
    keys: list[list[int]] = []
    for c in range(clients):
        props = effective_properties(
            {"recordcount": str(n), "operationcount": str(ops)},
            {"requestdistribution": "permutation", "mongobench.permutationseed": seed},
            phase="run",
            client_index=c,
            clients=clients,
        )
        client_ops = int(props["operationcount"])
        for w in range(parts):
            count = split_for_client(0, client_ops, w, parts).operationcount
            walk = permutation_walk(props, w, parts, client_ops * w // parts)
            keys.append([walk.next() for _ in range(count)])
    return keys


@pytest.mark.parametrize(("clients", "parts"), [(1, 1), (2, 1), (3, 2), (7, 3)])
def test_parallel_clients_and_processes_read_each_loaded_key_once(clients, parts):
    keys = _walks(100, 100, clients, parts)
    everything = [k for part in keys for k in part]
    assert sorted(everything) == list(range(100))  # each once: none twice, none missed
    # contiguous slices in client order: together the permutation itself
    assert everything == [Permutation(100, 3).at(i) for i in range(100)]
    assert _walks(100, 100, clients, parts, seed="4") != keys


def test_a_single_client_reads_the_permutation_in_its_order():
    (keys,) = _walks(100, 100, 1, 1, seed="0")
    assert keys == [FIRST_OF_100.at(i) for i in range(100)]
    assert keys[:8] == JAVA_FIRST_OF_100


def test_a_duration_bounded_run_interleaves_the_clients_without_overlap():
    props = {"recordcount": "60", "mongobench.clients": "3", "requestdistribution": "permutation"}
    keys = []
    for c in range(3):
        for w in range(2):
            walk = permutation_walk({**props, "mongobench.client": str(c)}, w, 2, None)
            keys += [walk.next() for _ in range(10)]
    assert sorted(keys) == list(range(60))


def test_permutation_without_the_process_walk_is_refused():
    with pytest.raises(ValueError, match="permutation"):
        KeyChooser(
            {"requestdistribution": "permutation", "recordcount": "10"}, random.Random(), [0]
        )


def test_the_key_chooser_walks_the_permutation_from_the_first_loaded_key():
    props = {"requestdistribution": "permutation", "recordcount": "50", "insertstart": "10",
             "insertcount": "40"}  # fmt: skip
    walk = permutation_walk(props, 0, 1, 0)
    chooser = KeyChooser(props, random.Random(), [0], walk=walk)
    assert sorted(chooser.next() for _ in range(40)) == list(range(10, 50))
