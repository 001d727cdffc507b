"""Unit tier: the binding's mongodb.* properties as pymongo options (the Locust driver's)."""

from __future__ import annotations

import pymongo
import pytest

from mongobench_runner.client_options import client_options

pytestmark = pytest.mark.unit


def test_write_concern_read_preference_and_journal_mean_what_they_mean_in_the_binding():
    opts = client_options(
        {
            "mongodb.writeConcern": "journaled",
            "mongodb.readPreference": "secondaryPreferred",
            "mongodb.wtimeoutMs": "500",
        },
        {},
    )
    client = pymongo.MongoClient("mongodb://127.0.0.1:1/", connect=False, **opts)
    assert client.write_concern.document == {"w": 1, "j": True, "wtimeout": 500}
    assert client.read_preference.mongos_mode == "secondaryPreferred"
    assert client_options({"mongodb.writeConcern": "majority"}, {}) == {"w": "majority"}
    assert client_options({"mongodb.writeConcern": "2"}, {}) == {"w": 2}
    assert client_options({"mongodb.writeConcern": "unacknowledged"}, {}) == {"w": 0}


def test_password_from_an_environment_variable_and_tls():
    opts = client_options(
        {
            "mongodb.username": "bench",
            "mongodb.passwordEnv": "PW",
            "mongodb.authSource": "admin",
            "mongodb.tls": "true",
            "mongodb.tlsCAFile": "/etc/ca.pem",
        },
        {"PW": "s3cret"},
    )
    assert opts == {
        "username": "bench",
        "password": "s3cret",
        "authSource": "admin",
        "tls": True,
        "tlsCAFile": "/etc/ca.pem",
    }


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"mongodb.writeConcern": "w9x"}, "mongodb.writeConcern"),
        ({"mongodb.readPreference": "closest"}, "mongodb.readPreference"),
        ({"mongodb.tls": "maybe"}, "mongodb.tls"),
        ({"mongodb.username": "u", "mongodb.passwordEnv": "NOPE"}, "NOPE is not set"),
    ],
)
def test_bad_values_name_the_property(props, message):
    with pytest.raises(ValueError, match=message):
        client_options(props, {})


def test_per_thread_pool_uri_sizes_the_pool_to_the_threads_over_the_uris_own():
    from mongobench_runner.client_options import per_thread_pool_uri

    uri = per_thread_pool_uri("mongodb://u:p@h1:1,h2:2/db?maxPoolSize=5&replicaSet=rs", 16)
    client = pymongo.MongoClient(uri, connect=False)
    assert (
        client.options.pool_options.max_pool_size,
        client.options.pool_options.min_pool_size,
    ) == (
        16,
        16,
    )
    assert "replicaSet=rs" in uri and uri.startswith("mongodb://u:p@h1:1,h2:2/db?")


def test_the_connection_record_says_the_mode_and_the_pool_in_effect():
    from mongobench_runner.client_options import connection_record

    per_thread = {"mongobench.connectionPerThread": "true"}
    assert connection_record(per_thread, "locust", 8)["connections.maxPoolSize"] == "1"
    assert connection_record(per_thread, "ycsb", 8) == {
        "connections.mode": "perThread",
        "connections.mongoClients": "1 per process",
        "connections.maxPoolSize": "8",
        "connections.minPoolSize": "8",
    }
    # default: the shared pool, as each driver sizes it (the URI's for YCSB's Java driver)
    assert connection_record({}, "ycsb", 8)["connections.maxPoolSize"] == "100"
    given = {"mongodb.url": "mongodb://h/?maxPoolSize=7&minPoolSize=2"}
    assert connection_record(given, "ycsb", 8)["connections.maxPoolSize"] == "7"
    assert connection_record(given, "ycsb", 8)["connections.minPoolSize"] == "2"
    assert connection_record(given, "locust", 8)["connections.maxPoolSize"] == "unbounded"
    assert connection_record({}, "locust", 8)["connections.mode"] == "shared"
    with pytest.raises(ValueError, match=r"mongobench\.connectionPerThread"):
        connection_record({"mongobench.connectionPerThread": "maybe"}, "locust", 1)
