"""FerretDB (a MongoDB wire-protocol server, SQLite backend by default) on a free loopback port.

The protocol tier's data-path peer: pymongo and the Java driver talk to it for real. It does not
implement replica sets, sharding or users (see ../shared/toolchain.md).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from localplane.cgroups import ContainerCgroup
from localplane.net import free_port, wait_for_port
from localplane.tools import binary


@dataclass
class FerretDB:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    tls_port: int | None = None  # a TLS listener beside the plain one (same data)

    @property
    def uri(self) -> str:
        return f"mongodb://{self.host}:{self.port}/"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_ferretdb(
    workdir: Path,
    tls: tuple[Path, Path] | None = None,
    cgroup: ContainerCgroup | None = None,
    *,
    plain_too: bool = False,
    postgresql_url: str | None = None,
) -> FerretDB:
    """`postgresql_url`: FerretDB's PostgreSQL backend on that server instead of SQLite.
    `tls`: (certificate, key) files; FerretDB then listens with TLS only (clients verify it
    with the CA that signed the certificate; it asks for no client certificate), or with
    `plain_too` on `port` plain and on `tls_port` with TLS, one database behind both. `cgroup`
    (created already): moved in as soon as it runs, as a kubelet starts a container in its
    cgroup, so its CPU and memory are the cgroup's."""
    port = free_port()
    tls_port = free_port() if tls and plain_too else None
    state = workdir / "ferretdb-state"
    state.mkdir(parents=True, exist_ok=True)
    log = workdir / "ferretdb.log"
    cmd = [
        str(binary("ferretdb")),
        *_backend(state, postgresql_url),
        *(
            [
                f"--listen-addr=127.0.0.1:{port}",
                f"--listen-tls=127.0.0.1:{tls_port}",
                f"--listen-tls-cert-file={tls[0]}",
                f"--listen-tls-key-file={tls[1]}",
            ]
            if tls and tls_port
            else [
                "--listen-addr=",
                f"--listen-tls=127.0.0.1:{port}",
                f"--listen-tls-cert-file={tls[0]}",
                f"--listen-tls-key-file={tls[1]}",
            ]
            if tls
            else [f"--listen-addr=127.0.0.1:{port}"]
        ),
        "--debug-addr=-",
        "--telemetry=disable",
        "--log-level=warn",
        "--state-dir",
        str(state),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    if cgroup is not None:
        cgroup.add(proc.pid)
    server = FerretDB("127.0.0.1", port, proc, log, tls_port)
    try:
        wait_for_port(port, timeout=30)
        if tls_port:
            wait_for_port(tls_port, timeout=30)
    except TimeoutError:
        server.stop()
        raise RuntimeError(f"FerretDB did not start: {log.read_text()[-2000:]}") from None
    return server


def _backend(state: Path, postgresql_url: str | None) -> list[str]:
    if postgresql_url:
        return ["--handler=postgresql", f"--postgresql-url={postgresql_url}"]
    return [
        "--handler=sqlite",
        # BEGIN IMMEDIATE: concurrent updaters queue on SQLite's write lock (busy_timeout) instead
        # of failing with SQLITE_BUSY when a read transaction cannot be upgraded to a write. They
        # queue up to a minute (FerretDB's default, 10 s, ran out with 8 YCSB threads on a
        # 2-core machine at load 20: "database is locked (5)", a failed step).
        f"--sqlite-url=file:{state}/?_txlock=immediate&_pragma=busy_timeout(60000)",
    ]


@contextmanager
def running_ferretdb(
    workdir: Path | None = None,
    tls: tuple[Path, Path] | None = None,
    cgroup: ContainerCgroup | None = None,
    *,
    plain_too: bool = False,
    postgresql_url: str | None = None,
) -> Iterator[FerretDB]:
    with tempfile.TemporaryDirectory(prefix="ferretdb-") as tmp:
        server = start_ferretdb(
            workdir or Path(tmp), tls, cgroup, plain_too=plain_too, postgresql_url=postgresql_url
        )
        try:
            yield server
        finally:
            server.stop()
