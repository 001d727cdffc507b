"""Unit tier: how the cluster's CA reaches each driver's connection string (runner's tls)."""

from __future__ import annotations

import pytest

from mongobench_runner import tls

pytestmark = pytest.mark.unit

URI = "mongodb://u:p@demo-mongos.bench.svc.cluster.local:27017/ycsb?authSource=admin&tls=true"


def test_pymongo_gets_the_ca_file_only_over_tls() -> None:
    with_ca = tls.with_ca_file(URI, "/etc/mongobench-tls/ca.crt")
    assert with_ca == URI + "&tlsCAFile=/etc/mongobench-tls/ca.crt"
    plain = URI.replace("&tls=true", "")
    assert tls.with_ca_file(plain, "/etc/mongobench-tls/ca.crt") == plain
    assert tls.with_ca_file(URI, None) == URI


def test_a_ca_file_the_uri_names_already_wins() -> None:
    mine = URI + "&tlsCAFile=/mine/ca.pem"
    assert tls.with_ca_file(mine, "/etc/mongobench-tls/ca.crt") == mine
    assert tls.ca_file_in(mine) == "/mine/ca.pem"


def test_the_java_driver_gets_the_uri_without_the_option_it_does_not_know() -> None:
    with_ca = tls.with_ca_file(URI, "/etc/mongobench-tls/ca.crt")
    assert tls.without_ca_file(with_ca) == URI
    assert tls.without_ca_file(URI) == URI
    assert tls.uses_tls("mongodb://h/?ssl=true")


def test_the_ca_file_comes_from_the_jobs_environment() -> None:
    assert tls.ca_file_from_env({tls.CA_FILE_ENV: "/etc/mongobench-tls/ca.crt"}) == (
        "/etc/mongobench-tls/ca.crt"
    )
    assert tls.ca_file_from_env({}) is None
