"""Build and run mongobench-wireserver (main.go beside this file) for `make bench-clients`.

The binary goes into the tool cache of hack/build-tools.sh (MONGOBENCH_CACHE, default
~/.cache/mongobench, bin/), keyed by a hash of go.mod, go.sum and the Go sources, so it is built
once per change; the module is pinned by go.mod/go.sum (-mod=readonly).

    python benchmarks/wireserver/wireserver.py build   # build when missing, print the path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "mongobench-wireserver"


def _cache_bin() -> Path:
    cache = Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))
    return cache / "bin"


def source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted([HERE / "go.mod", HERE / "go.sum", *HERE.glob("*.go")]):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def binary_path() -> Path:
    return _cache_bin() / f"{NAME}-{source_hash()}"


def build() -> Path:
    """The server binary, built first when the cache has none for these sources."""
    out = binary_path()
    if out.is_file():
        return out
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    print(f"wireserver: building {out.name}", file=sys.stderr)
    subprocess.run(
        [go, "build", "-mod=readonly", "-buildvcs=false", "-trimpath", "-o", str(tmp), "."],
        cwd=HERE,
        check=True,
        timeout=900,
    )
    tmp.replace(out)  # atomic: an interrupted build leaves nothing that counts as cached
    return out


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class WireServer:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def uri(self) -> str:
        return f"mongodb://{self.host}:{self.port}/"

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start(workdir: Path, port: int = 0, tls_certificate_key_file: Path | None = None) -> WireServer:
    """The server on loopback; with `tls_certificate_key_file` (chain and key in one PEM, as
    mongod takes it) it accepts TLS connections only and answers rotateCertificates."""
    log = workdir / "wireserver.log"
    tls = (
        ["-tlsCertificateKeyFile", str(tls_certificate_key_file)]
        if tls_certificate_key_file
        else []
    )
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(build()), "-port", str(port), *tls], stdout=subprocess.PIPE, stderr=err
        )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()  # "listening 127.0.0.1:PORT"
    if not line.startswith("listening "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{NAME} did not start: {line!r} {log.read_text()[-2000:]}")
    host, _, got = line.split()[1].rpartition(":")
    return WireServer(host, int(got), proc, log)


@contextmanager
def running_wireserver(
    workdir: Path | None = None, tls_certificate_key_file: Path | None = None
) -> Iterator[WireServer]:
    with tempfile.TemporaryDirectory(prefix="wireserver-") as tmp:
        server = start(workdir or Path(tmp), tls_certificate_key_file=tls_certificate_key_file)
        try:
            yield server
        finally:
            server.stop()


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        raise SystemExit(f"usage: {sys.argv[0]} build")
    print(build())
