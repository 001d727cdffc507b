"""The files pymongo's TLS options name (``tlsCAFile``, ``tlsCertificateKeyFile``), written
from a cluster's client-certificate Secret: pymongo takes paths, never PEM text.

One directory per content (its digest), readable by the operator's user only, so a renewed
certificate is a new pair of paths (a new client: the pool's fingerprint includes the digest)
and two clusters never overwrite each other's files.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass


@dataclass(frozen=True)
class TLSFiles:
    ca_file: str
    certificate_key_file: str
    digest: str


def write_tls_files(ca_pem: str, certificate_key_pem: str, root: str | None = None) -> TLSFiles:
    digest = hashlib.sha256(f"{ca_pem}\0{certificate_key_pem}".encode()).hexdigest()
    base = os.path.join(root or tempfile.gettempdir(), "mongobench-tls")
    folder = os.path.join(base, digest[:32])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    files = TLSFiles(
        os.path.join(folder, "ca.crt"), os.path.join(folder, "tls-combined.pem"), digest
    )
    for path, text in ((files.ca_file, ca_pem), (files.certificate_key_file, certificate_key_pem)):
        if os.path.exists(path):
            continue
        fd = os.open(f"{path}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(f"{path}.tmp", path)  # never a half-written file under the final name
    return files
