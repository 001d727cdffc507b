"""Debian's PostgreSQL server on a free loopback port: FerretDB's PostgreSQL backend for the demo.

A throwaway cluster (initdb into a temporary directory, trust authentication on loopback only),
stopped and removed on exit. PostgreSQL refuses to run as root, so as root the server runs as
Debian's `postgres` user (the package creates it) in a directory that user owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from localplane.net import free_port, wait_for_port

DATABASE = "ferretdb"
USER = "ferretdb"


def bin_dir() -> Path | None:
    """The newest PostgreSQL server's bin directory Debian installed, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    return Path(found[-1]).parent if found else None


@dataclass
class Postgres:
    port: int
    data: Path
    bin: Path
    as_user: list[str]

    @property
    def pid(self) -> int:
        """The postmaster's process id (its pid file's first line)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    @property
    def url(self) -> str:
        """FerretDB's --postgresql-url."""
        return f"postgres://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def stop(self) -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), "stop", "-m", "fast"],
            capture_output=True,
            check=False,
        )


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    pg_bin = bin_dir()
    if pg_bin is None:
        raise FileNotFoundError("PostgreSQL is not installed (`make setup` installs Debian's)")
    root = os.geteuid() == 0
    as_user = ["runuser", "-u", "postgres", "--"] if root else []
    top = Path(tempfile.mkdtemp(prefix="mongobench-postgres-"))
    try:
        if root:
            pw = pwd.getpwnam("postgres")
            os.chown(top, pw.pw_uid, pw.pw_gid)
        data, log, port = top / "data", top / "postgres.log", free_port()
        subprocess.run(
            [*as_user, str(pg_bin / "initdb"), "-D", str(data), "-A", "trust", "-U", USER],
            capture_output=True,
            check=True,
        )
        options = f"-p {port} -k {top} -c listen_addresses=127.0.0.1"
        start = ["-D", str(data), "-o", options, "-l", str(log), "-w", "start"]
        subprocess.run(
            [*as_user, str(pg_bin / "pg_ctl"), *start],
            capture_output=True,
            check=True,
        )
        server = Postgres(port, data, pg_bin, as_user)
        try:
            wait_for_port(port, timeout=30)
            where = ["-h", str(top), "-p", str(port), "-U", USER]
            subprocess.run(
                [*as_user, str(pg_bin / "createdb"), *where, DATABASE],
                capture_output=True,
                check=True,
            )
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)
