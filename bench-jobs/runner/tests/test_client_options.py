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
