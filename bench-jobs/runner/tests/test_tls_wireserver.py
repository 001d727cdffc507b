"""Protocol tier: every benchmark client over TLS against the project's wire server
(benchmarks/wireserver) with a TLS listener, certificates made by trustme.

pymongo, the runner's YCSB binding (the Java driver, trusting the CA through the truststore the
runner builds) and the Locust driver connect with the CA the Job mounts (MONGOBENCH_TLS_CA_FILE);
a client without that CA, or without TLS, is refused. A rotated server certificate (same CA,
file replaced, rotateCertificates) is what new connections get, and they still succeed.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
import trustme
from cryptography import x509
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError
from runner_support import run_runner, validate

from localplane.tools import binding_problem

pytestmark = pytest.mark.protocol

WIRESERVER = Path(__file__).resolve().parents[3] / "benchmarks" / "wireserver"
HOST = "127.0.0.1"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="mongobench test CA")


@pytest.fixture(scope="module")
def files(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    ca_file = folder / "ca.crt"
    ca.cert_pem.write_to_path(str(ca_file))
    combined = folder / "server.pem"  # as mongod's --tlsCertificateKeyFile: key and chain
    ca.issue_cert(HOST, "localhost").private_key_and_cert_chain_pem.write_to_path(str(combined))
    return {"ca": ca_file, "server": combined}


@pytest.fixture(scope="module")
def server(files: dict[str, Path]) -> Iterator[Any]:
    sys.path.insert(0, str(WIRESERVER))
    try:
        from wireserver import running_wireserver
    finally:
        sys.path.remove(str(WIRESERVER))
    with running_wireserver(tls_certificate_key_file=files["server"]) as ws:
        yield ws


def uri(server: Any, db: str) -> str:
    return f"mongodb://{HOST}:{server.port}/{db}?tls=true"


def client(server: Any, **options: Any) -> pymongo.MongoClient[dict[str, Any]]:
    return pymongo.MongoClient(
        HOST, server.port, serverSelectionTimeoutMS=3000, directConnection=True, **options
    )


def served_certificate(server: Any, ca_file: Path) -> x509.Certificate:
    """The certificate a new handshake gets (verified against the CA, host name included)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    import socket

    with (
        socket.create_connection((HOST, server.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=HOST) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def test_pymongo_connects_with_the_ca_and_is_refused_without_it(
    server: Any, files: dict[str, Path]
) -> None:
    with client(server, tls=True, tlsCAFile=str(files["ca"])) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        c.tls_pymongo.t.insert_one({"_id": 1})
        assert c.tls_pymongo.t.find_one({"_id": 1}) == {"_id": 1}
    with (
        client(server, tls=True) as untrusting,  # the system's CAs only
        pytest.raises(ServerSelectionTimeoutError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        untrusting.admin.command("ping")
    with client(server) as plain, pytest.raises(ServerSelectionTimeoutError):
        plain.admin.command("ping")


def test_ycsb_loads_and_runs_over_tls_with_the_truststore_it_builds(
    server: Any, files: dict[str, Path], tmp_path: Path
) -> None:
    if (problem := binding_problem()) is not None:  # not built, or older than its sources
        pytest.fail(problem)
    common = [
        "--workload", "a", "--uri", uri(server, "ycsb_tls"), "--threads", "2",
        "-p", "recordcount=200", "-p", "operationcount=200",
    ]  # fmt: skip
    env = {"MONGOBENCH_TLS_CA_FILE": str(files["ca"])}
    load = run_runner(["ycsb", "--phase", "load", *common], tmp_path, **env)
    assert load.returncode == 0, load.doc["error"]
    assert load.doc["operations"]["INSERT"]["count"] == 200
    run = run_runner(["ycsb", "--phase", "run", *common], tmp_path, **env)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert run.doc["status"] == "Succeeded" and run.doc["operationsTotal"] == 200
    assert all(op["errors"] == 0 for op in run.doc["operations"].values())
    # The document says which CA the clients trusted.
    assert run.doc["properties"]["mongodb.url"].endswith(f"tls=true&tlsCAFile={files['ca']}")
    with client(server, tls=True, tlsCAFile=str(files["ca"])) as c:
        assert c.ycsb_tls.usertable.estimated_document_count() == 200

    # Without the CA the Java driver refuses the server: the run fails, saying why. The handshake
    # fails at once; the driver's default 30 s of server selection would only wait it out.
    impatient = [*common]
    impatient[impatient.index("--uri") + 1] += "&serverSelectionTimeoutMS=5000"
    refused = run_runner(["ycsb", "--phase", "run", *impatient, "-p", "operationcount=5"], tmp_path)
    assert refused.returncode != 0
    assert refused.doc["status"] == "Failed"
    assert "PKIX path building failed" in refused.doc["error"]


def test_locust_loads_and_runs_over_tls(
    server: Any, files: dict[str, Path], tmp_path: Path
) -> None:
    common = [
        "--workload", "a", "--uri", uri(server, "locust_tls"), "--threads", "2",
        "-p", "recordcount=200", "-p", "operationcount=200",
    ]  # fmt: skip
    env = {"MONGOBENCH_TLS_CA_FILE": str(files["ca"])}
    load = run_runner(["locust", "--phase", "load", *common], tmp_path, **env)
    assert load.returncode == 0, load.doc["error"]
    run = run_runner(["locust", "--phase", "run", *common], tmp_path, **env)
    assert run.returncode == 0, run.doc["error"]
    validate(run.doc)
    assert (run.doc["status"], run.doc["operationsTotal"]) == ("Succeeded", 200)


def test_a_rotated_certificate_reaches_new_connections_under_the_same_ca(
    server: Any, files: dict[str, Path], ca: trustme.CA
) -> None:
    before = served_certificate(server, files["ca"])
    with client(server, tls=True, tlsCAFile=str(files["ca"])) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        renewed = ca.issue_cert(HOST, "localhost")
        renewed.private_key_and_cert_chain_pem.write_to_path(str(files["server"]))
        assert served_certificate(server, files["ca"]).serial_number == before.serial_number
        assert c.admin.command("rotateCertificates")["ok"] == 1.0
        after = served_certificate(server, files["ca"])
        assert after.serial_number != before.serial_number
        assert after == x509.load_pem_x509_certificate(renewed.cert_chain_pems[0].bytes())
        assert c.admin.command("ping")["ok"] == 1.0  # the open connection goes on

        # A file that is no certificate: refused, and the rotated one stays in use.
        good = files["server"].read_bytes()
        files["server"].write_text("not a certificate")
        try:
            with pytest.raises(OperationFailure, match="rotateCertificates"):
                c.admin.command("rotateCertificates")
        finally:
            files["server"].write_bytes(good)
        assert served_certificate(server, files["ca"]).serial_number == after.serial_number
    with client(server, tls=True, tlsCAFile=str(files["ca"])) as fresh:
        assert fresh.admin.command("ping")["ok"] == 1.0
