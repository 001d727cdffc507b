"""TLS for the benchmark clients: the cluster's CA, mounted at MONGOBENCH_TLS_CA_FILE by the
Job, reaches each driver the way that driver takes it.

- pymongo (data preparation, the Locust driver and scenarios): ``tlsCAFile`` in the URI.
- The Java driver (the YCSB binding) has no URI option for a CA file: a PKCS12 truststore is
  built from the CA at start-up (the JDK's ``keytool``) and named with
  ``-Djavax.net.ssl.trustStore``; the URI keeps ``tls=true``.

The connection Secret's URI stays portable (no pod path in it): only the runner adds the file.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

CA_FILE_ENV = "MONGOBENCH_TLS_CA_FILE"
TRUSTSTORE = "truststore.p12"


def _query(uri: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(uri).query, keep_blank_values=True)


def _with_query(uri: str, query: list[tuple[str, str]]) -> str:
    parts = urlsplit(uri)
    # Keep '/' readable (a file path); everything else encoded as usual.
    return urlunsplit(parts._replace(query=urlencode(query, safe="/")))


def uses_tls(uri: str) -> bool:
    return any(k.lower() in ("tls", "ssl") and v.lower() == "true" for k, v in _query(uri))


def ca_file_from_env(env: Mapping[str, str] | None = None) -> str | None:
    value = (os.environ if env is None else env).get(CA_FILE_ENV, "")
    return value or None


def with_ca_file(uri: str, ca_file: str | None) -> str:
    """The URI pymongo dials: ``tlsCAFile`` added when TLS is on and none is given."""
    if ca_file is None or not uses_tls(uri):
        return uri
    query = _query(uri)
    if any(k.lower() == "tlscafile" for k, _ in query):
        return uri
    return _with_query(uri, [*query, ("tlsCAFile", ca_file)])


def without_ca_file(uri: str) -> str:
    """The URI the Java driver dials: it does not know ``tlsCAFile`` (the truststore does it)."""
    query = _query(uri)
    kept = [(k, v) for k, v in query if k.lower() != "tlscafile"]
    return uri if kept == query else _with_query(uri, kept)


def ca_file_in(uri: str) -> str | None:
    return next((v for k, v in _query(uri) if k.lower() == "tlscafile"), None)


def keytool_path(java: str | None = None) -> str:
    """The JDK's keytool beside the java the runner starts (JAVA), else on PATH."""
    java = java or os.environ.get("JAVA", "java")
    resolved = shutil.which(java)
    if resolved:
        sibling = Path(resolved).resolve().parent / "keytool"
        if sibling.exists():
            return str(sibling)
    return "keytool"


def java_truststore_options(ca_file: str, workdir: Path, keytool: str | None = None) -> list[str]:
    """Build a PKCS12 truststore holding the CA in `workdir`; the JVM options that use it.

    The store's password protects nothing secret (a CA certificate is public): it is random
    only because PKCS12 wants one, and it lives as long as the work folder."""
    store = workdir / TRUSTSTORE
    password = secrets.token_urlsafe(16)
    subprocess.run(
        [
            keytool or keytool_path(),
            "-importcert",
            "-noprompt",
            "-alias",
            "mongobench-ca",
            "-file",
            ca_file,
            "-keystore",
            str(store),
            "-storetype",
            "PKCS12",
            "-storepass",
            password,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return [
        f"-Djavax.net.ssl.trustStore={store}",
        "-Djavax.net.ssl.trustStoreType=PKCS12",
        f"-Djavax.net.ssl.trustStorePassword={password}",
    ]
