"""Unit tier: error classification, secret hygiene and how member names become addresses."""

from __future__ import annotations

import pytest
from pymongo.errors import NotPrimaryError, OperationFailure, ServerSelectionTimeoutError

from mongobench.mongo import (
    Connector,
    Credentials,
    HostUnresolvable,
    MappedResolver,
    PermanentMongoError,
    TransientMongoError,
    identity_resolver,
    resolver_from_env,
)
from mongobench.mongo.connect import parse_host_map, split_host
from mongobench.mongo.errors import classify

pytestmark = pytest.mark.unit

HOST = "rs0-0.rs0-hl.ns.svc.cluster.local:27017"


@pytest.mark.parametrize(
    ("code", "name", "transient"),
    [
        (10107, "NotWritablePrimary", True),
        (94, "NotYetInitialized", False),
        (189, "PrimarySteppedDown", True),
        (216, "ElectionInProgress", True),
        (74, "NodeNotFound", True),
        (103, "NewReplicaSetConfigurationIncompatible", False),
        (13, "Unauthorized", False),
    ],
)
def test_server_codes_are_classified(code: int, name: str, transient: bool) -> None:
    exc = OperationFailure(
        "x", code, {"ok": 0, "errmsg": "server says", "code": code, "codeName": name}
    )
    err = classify(exc, "replSetReconfig", HOST)
    assert isinstance(err, TransientMongoError if transient else PermanentMongoError)
    assert (err.code, err.code_name) == (code, name)
    assert str(err) == f"replSetReconfig on {HOST} failed (code {code} {name}): server says"


def test_not_primary_raised_by_pymongo_keeps_the_server_code() -> None:
    exc = NotPrimaryError("not primary", {"ok": 0, "code": 10107, "errmsg": "not primary"})
    err = classify(exc, "replSetReconfig", HOST)
    assert isinstance(err, TransientMongoError) and err.code == 10107


def test_unreachable_is_transient_with_only_the_first_line() -> None:
    exc = ServerSelectionTimeoutError("localhost:1: [Errno 111] refused\nTopology Description: ...")
    err = classify(exc, "hello", HOST)
    assert isinstance(err, TransientMongoError)
    assert "Topology" not in str(err) and "refused" in str(err)


def test_credentials_and_connector_never_show_the_password() -> None:
    creds = Credentials("admin", "hunter2-secret")
    connector = Connector(creds, resolver=MappedResolver({HOST: "127.0.0.1:1"}))
    client = connector.client(HOST)
    try:
        assert "hunter2-secret" not in repr(creds) + repr(client) + str(client)
    finally:
        connector.close()


def test_unmapped_host_outside_the_cluster_names_host_and_variable() -> None:
    resolver = resolver_from_env({})
    with pytest.raises(HostUnresolvable) as err:
        resolver(HOST)
    assert HOST in str(err.value) and "MONGOBENCH_HOST_MAP" in str(err.value)


def test_in_cluster_uses_dns_names_and_the_map_wins_when_given() -> None:
    assert resolver_from_env({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) is identity_resolver
    mapped = resolver_from_env({"MONGOBENCH_HOST_MAP": f"{HOST}=127.0.0.1:30017, b:1=[::1]:2"})
    assert mapped(HOST) == "127.0.0.1:30017" and mapped("b:1") == "[::1]:2"


def test_host_map_rejects_entries_without_an_address() -> None:
    with pytest.raises(ValueError, match="name=host:port"):
        parse_host_map("rs0-0:27017")


@pytest.mark.parametrize(
    ("address", "expected"),
    [("a:1", ("a", 1)), ("a", ("a", 27017)), ("[::1]:5", ("::1", 5)), ("[::1]", ("::1", 27017))],
)
def test_split_host(address: str, expected: tuple[str, int]) -> None:
    assert split_host(address) == expected


def test_wired_cluster_releases_only_its_bootstrap_clients() -> None:
    # Clients connect lazily: nothing listens on these ports, nothing is contacted.
    connector = Connector(
        Credentials("operator", "pw"), bootstrap_credentials=Credentials("__system", "k", "local")
    )
    user = connector.client("127.0.0.1:1")
    hello = connector.client("127.0.0.1:1", authenticate=False)
    connector.client("127.0.0.1:1", bootstrap=True)
    connector.client("127.0.0.1:2", bootstrap=True)
    assert connector.release_bootstrap() == 2
    assert connector.client("127.0.0.1:1") is user  # the day-2 clients stay open
    assert connector.client("127.0.0.1:1", authenticate=False) is hello
    assert connector.release_bootstrap() == 0
    connector.close()


def test_without_keyfile_the_bootstrap_client_is_the_hello_client_and_stays() -> None:
    connector = Connector(Credentials("operator", "pw"))
    hello = connector.client("127.0.0.1:1", bootstrap=True)
    assert connector.release_bootstrap() == 0
    assert connector.client("127.0.0.1:1", authenticate=False) is hello
    connector.close()


def test_the_package_exports_each_name_from_its_submodule_and_nothing_else() -> None:
    """Unit tier: mongobench.mongo's exports (listed once, in __all__) are the submodules'
    objects; a model name loads no pymongo (pure builders import the package); others fail."""
    import subprocess
    import sys

    import mongobench.mongo as package
    from mongobench.mongo import admin, connect, errors, model

    assert package.MongoAdmin is admin.MongoAdmin
    assert package.Credentials is model.Credentials
    assert package.TransientMongoError is errors.TransientMongoError
    assert package.resolver_from_env is connect.resolver_from_env
    assert all(getattr(package, name) is not None for name in package.__all__)
    with pytest.raises(AttributeError):
        package.MEMBER_STATES  # noqa: B018 - defined in model, not exported
    code = "import sys\nfrom mongobench.mongo import Credentials\nprint('pymongo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
