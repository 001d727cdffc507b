"""A real S3-compatible server on a loopback port: moto in server mode (HTTP, SigV4, the S3 API).

moto lives in its own locked environment in the tool cache (hack/s3server, installed by
`make setup`): it needs botocore, which cannot share the project's environment with the
kubernetes client. Its state is in memory: `stop()` then `start()` on the same port is an object
store that went down and came back empty (tests create their buckets again).

    s3 = start_s3server(workdir, buckets=["runs"])
    s3.endpoint        # http://127.0.0.1:PORT
    s3.env()           # AWS_* variables for a client or the operator
    s3.stop(); s3.start()

`StallingProxy` sits in front of it to hold chosen requests (an upload that never finishes).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from minio import Minio

from localplane import procs
from localplane.net import free_port, wait_for_port
from localplane.tools import REPO, cache_dir

PROJECT = REPO / "hack" / "s3server"
# Test credentials: moto accepts any; they exist so clients sign requests as against real S3.
ACCESS_KEY = "mongobench-test"
SECRET_KEY = "mongobench-test-secret-key"
REGION = "us-east-1"


def environment() -> Path:
    """The cached environment of hack/s3server/uv.lock (keyed by the lock's content)."""
    digest = hashlib.sha256((PROJECT / "uv.lock").read_bytes()).hexdigest()[:12]
    return cache_dir() / f"s3server-{digest}"


def python() -> Path:
    py = environment() / "bin" / "python"
    if not py.exists():
        raise FileNotFoundError(f"{py} is missing: run `make setup` (hack/setup.sh installs moto)")
    return py


@dataclass
class S3Server:
    port: int
    workdir: Path
    keep_workdir: bool = False
    proc: procs.Proc | None = None
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def running(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def start(self, buckets: Iterable[str] = (), timeout: float = 30) -> None:
        """Start (again) on the same port; create `buckets`."""
        if self.running():
            raise RuntimeError(f"the S3 server on {self.endpoint} already runs")
        self.workdir.mkdir(parents=True, exist_ok=True)
        cmd = [str(python()), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        proc, popen = procs.spawn(
            "moto-s3", cmd, self.workdir / "moto.log", detached=False, cwd=self.workdir
        )
        self.proc = proc
        self._children[proc.pid] = popen
        try:
            wait_for_port(self.port, timeout=timeout)
        except TimeoutError:
            self.stop()
            raise RuntimeError(
                f"moto did not listen on {self.port}\n{procs.tail(self.workdir / 'moto.log')}"
            ) from None
        for b in buckets:
            self.make_bucket(b)

    def make_bucket(self, name: str) -> None:
        client = self.client()
        deadline = time.monotonic() + 10
        while True:
            try:
                if not client.bucket_exists(name):
                    client.make_bucket(name)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def client(self) -> Minio:
        """A MinIO client for checks in tests (the archive package has its own)."""
        return Minio(
            f"127.0.0.1:{self.port}",
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            secure=False,
            region=REGION,
        )

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        return sorted(
            o.object_name
            for o in self.client().list_objects(bucket, prefix=prefix, recursive=True)
            if o.object_name is not None
        )

    def stop(self) -> None:
        """Stop the server: the store is down (and comes back empty after `start`)."""
        if self.proc is not None:
            procs.terminate([self.proc], self._children)
        self.proc = None

    def close(self) -> None:
        self.stop()
        if not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def start_s3server(
    workdir: Path,
    *,
    buckets: Iterable[str] = (),
    port: int | None = None,
    keep_workdir: bool = False,
) -> S3Server:
    server = S3Server(port or free_port(), workdir, keep_workdir=keep_workdir)
    server.start(buckets)
    return server


@contextmanager
def running_s3server(workdir: Path, buckets: Iterable[str] = ()) -> Iterator[S3Server]:
    server = start_s3server(workdir, buckets=buckets)
    try:
        yield server
    finally:
        server.close()


class StallingProxy:
    """A loopback HTTP proxy in front of an S3 server that can hold requests whose
    "METHOD /path" matches a pattern (an upload that never completes: the moment to kill an
    operator mid-upload), and records the access key id each request was signed with.

    One request per connection (it asks the server to close after answering), which every HTTP
    client handles; request bodies must carry Content-Length (S3 clients send it)."""

    _CREDENTIAL = re.compile(rb"Credential=([^/,\s]+)/")

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.stalled = threading.Event()  # set once a request is being held
        self.stalled_paths: list[str] = []
        self.access_keys: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._release = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", self.port))
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stall(self, pattern: str) -> None:
        self._release.clear()
        self.stalled.clear()
        self._pattern = re.compile(pattern)

    def release(self) -> None:
        """Stop holding: held requests are dropped (connection closed), later ones pass."""
        self._pattern = None
        self._release.set()

    def close(self) -> None:
        self._closed = True
        self.release()
        with contextlib.suppress(OSError):
            self._sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> tuple[str, str, list[bytes], bytes] | None:
        """One HTTP request: method, path, its head lines less Connection, and its body; None
        when the client hangs up first."""
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            head += chunk
        head, _, body = head.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        method, path = (p.decode() for p in lines[0].split(b" ")[:2])
        kept, length = self._headers(lines)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        return method, path, kept, body

    def _headers(self, lines: list[bytes]) -> tuple[list[bytes], int]:
        """The request line and headers to pass on (without Connection), and Content-Length;
        notes the access key of an Authorization header."""
        length = 0
        kept = [lines[0]]
        for line in lines[1:]:
            name = line.split(b":", 1)[0].strip().lower()
            if name == b"content-length":
                length = int(line.split(b":", 1)[1])
            if name == b"authorization" and (m := self._CREDENTIAL.search(line)):
                self.access_keys.add(m.group(1).decode())
            if name != b"connection":
                kept.append(line)
        return kept, length

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            request = self._read_request(conn)
            if request is None:
                return
            method, path, kept, body = request
            pattern = self._pattern
            if pattern is not None and pattern.search(f"{method} {path}"):
                self.stalled_paths.append(path)
                self.stalled.set()
                self._release.wait()
                return  # dropped: the client sees the connection close without an answer
            with socket.create_connection(("127.0.0.1", self.upstream_port)) as up:
                up.sendall(b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n" + body)
                while chunk := up.recv(65536):
                    conn.sendall(chunk)
