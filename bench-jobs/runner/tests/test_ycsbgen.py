"""The Locust driver's YCSB generators: same key names and skew as YCSB."""

import collections
import random

import pytest

from mongobench_runner.ycsbgen import KeyChooser, Zipfian, fnvhash64, key_name

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
