"""Certificates for one plane, made with the openssl CLI (EC P-256: fast to generate).

A fresh CA per plane, so two planes never trust each other's clients.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class Pki:
    dir: Path

    @property
    def ca_crt(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def serving_crt(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def admin_crt(self) -> Path:
        return self.dir / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.dir / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise FileNotFoundError("openssl is not on PATH")
    proc = subprocess.run([openssl, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def make_pki(directory: Path, service_ip: str = "10.96.0.1") -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    _openssl(
        "req", "-x509", *_EC, "-keyout", str(pki.ca_key), "-out", str(pki.ca_crt),
        "-days", "3650", "-subj", "/CN=mongobench-localplane-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )  # fmt: skip
    sans = ",".join(
        [
            "IP:127.0.0.1",
            f"IP:{service_ip}",
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
        ]
    )
    _signed(pki, pki.serving_key, pki.serving_crt, "/CN=kube-apiserver", "serverAuth", sans)
    # O=system:masters: the admin bypasses RBAC, like kind's and kubeadm's admin.conf.
    _signed(
        pki, pki.admin_key, pki.admin_crt, "/O=system:masters/CN=mongobench-admin", "clientAuth"
    )
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(pki.sa_key))
    _openssl("ec", "-in", str(pki.sa_key), "-pubout", "-out", str(pki.sa_pub))
    for key in directory.glob("*.key"):
        key.chmod(0o600)
    return pki


def client_cert(pki: Pki, user: str, group: str = "system:masters") -> tuple[Path, Path]:
    """A client certificate and key for `user` in `group` (default: the admin's, bypassing
    RBAC): requests made with it carry that user name in the apiserver's audit log."""
    key, crt = pki.dir / f"user-{user}.key", pki.dir / f"user-{user}.crt"
    _signed(pki, key, crt, f"/O={group}/CN={user}", "clientAuth")
    key.chmod(0o600)
    return crt, key


def _signed(pki: Pki, key: Path, crt: Path, subject: str, usage: str, sans: str = "") -> None:
    args = [
        "req", "-x509", *_EC, "-keyout", str(key), "-out", str(crt), "-days", "365",
        "-subj", subject, "-CA", str(pki.ca_crt), "-CAkey", str(pki.ca_key),
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
        "-addext", f"extendedKeyUsage={usage}",
    ]  # fmt: skip
    if sans:
        args += ["-addext", f"subjectAltName={sans}"]
    _openssl(*args)
