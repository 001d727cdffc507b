"""The krew side of the CLI's release (called by cli/release.sh; standard library only, so the
release runners of every OS need nothing more than Python).

    krew.py archive VERSION EXECUTABLE LICENSE OUT   this host's archive of the executable
    krew.py manifest VERSION URL OUT                 OUT/mongobench.yaml for the archives in OUT
    krew.py missing VERSION OUT                      the platforms (os_arch) with no archive in OUT

Archives are named kubectl-mongobench_<version>_<os>_<arch>.tar.gz (.zip on Windows), hold the
executable and the LICENSE (krew's validation wants one), and add nothing variable (fixed
timestamps, owners and modes): the same executable always gives the same archive and sha256.
The manifest has one platform per archive found, with its sha256.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import platform
import re
import sys
import tarfile
import zipfile
from pathlib import Path

NAME = "mongobench"
BIN = f"kubectl-{NAME}"


def _project(key: str) -> str:
    """A value of hack/project.env (the project's public home, named once)."""
    env = Path(__file__).resolve().parents[2] / "hack" / "project.env"
    for line in env.read_text().splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1]
    raise SystemExit(f"krew.py: {env} names no {key}")


HOMEPAGE = _project("PROJECT_URL")
# The Linux archives are built in a manylinux_2_28 container (the release workflow, cli-archives):
# a PyInstaller executable needs the build host's glibc or newer.
GLIBC = (
    "Linux: glibc 2.28 or newer (RHEL/Rocky/Alma 8, Debian 10, Ubuntu 20.04 and later; "
    "not musl/Alpine)."
)
# The platforms the release workflow builds on native runners.
PLATFORMS = [
    ("linux", "amd64"),
    ("linux", "arm64"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
    ("windows", "amd64"),
]
_SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$")
_EPOCH = 1767225600  # 2026-01-01: fixed timestamps, so the archive depends on its files only


def krew_version(version: str) -> str:
    """vX.Y.Z as krew requires it (the tag's spelling); X.Y.Z is accepted and prefixed."""
    tagged = version if version.startswith("v") else f"v{version}"
    if not _SEMVER.match(tagged):
        raise SystemExit(f"krew.py: version {version!r} is not semantic (vX.Y.Z)")
    return tagged


def host() -> tuple[str, str]:
    os_name = {"linux": "linux", "darwin": "darwin", "win32": "windows"}[sys.platform]
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[machine]
    return os_name, arch


def archive_name(version: str, os_name: str, arch: str) -> str:
    ext = "zip" if os_name == "windows" else "tar.gz"
    return f"{BIN}_{version}_{os_name}_{arch}.{ext}"


def write_archive(version: str, executable: Path, license_file: Path, out: Path) -> Path:
    os_name, arch = host()
    members = [
        (BIN + (".exe" if os_name == "windows" else ""), executable.read_bytes(), 0o755),
        ("LICENSE", license_file.read_bytes(), 0o644),
    ]
    out.mkdir(parents=True, exist_ok=True)
    path = out / archive_name(krew_version(version), os_name, arch)
    if os_name == "windows":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, mode in members:
                entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                entry.external_attr = (0o100000 | mode) << 16
                z.writestr(entry, data, zipfile.ZIP_DEFLATED)
    else:
        raw = io.BytesIO()
        with (
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=_EPOCH) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name, data, mode in members:
                member = tarfile.TarInfo(name)
                member.size, member.mode, member.mtime = len(data), mode, _EPOCH
                tar.addfile(member, io.BytesIO(data))
        path.write_bytes(raw.getvalue())
    return path


def missing(version: str, out: Path) -> list[str]:
    """The platforms of PLATFORMS whose archive is not in `out` (a release job that failed)."""
    version = krew_version(version)
    return [
        f"{os_name}_{arch}"
        for os_name, arch in PLATFORMS
        if not (out / archive_name(version, os_name, arch)).is_file()
    ]


def manifest(version: str, url: str, out: Path) -> str:
    version = krew_version(version)
    platforms = []
    for os_name, arch in PLATFORMS:
        archive = out / archive_name(version, os_name, arch)
        if not archive.is_file():
            continue
        exe = BIN + (".exe" if os_name == "windows" else "")
        sha = hashlib.sha256(archive.read_bytes()).hexdigest()
        platforms.append(
            f"""  - selector:
      matchLabels:
        os: {os_name}
        arch: {arch}
    uri: {url.rstrip("/")}/{archive.name}
    sha256: {sha}
    bin: {exe}
    files:
      - from: {exe}
        to: .
      - from: LICENSE
        to: .
"""
        )
    if not platforms:
        raise SystemExit(f"krew.py: no archive of version {version} in {out}")
    return f"""# krew plugin manifest of the release's archives, written by cli/krew/krew.py.
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: {NAME}
spec:
  version: {version}
  homepage: {HOMEPAGE}
  shortDescription: List, watch, compare and report MongoDB benchmark runs
  description: |
    Works with the mongobench operator's BenchmarkRuns in the current kube context and with
    archived runs (S3 or folders): list (with label selectors), describe, watch (exit code for
    CI), compare with confidence intervals and benchstat-style verdicts, export, HTML
    reports and change points across an archive's history. A self-contained executable: no
    Python needed. {GLIBC}
  platforms:
{"".join(platforms)}"""


def main(argv: list[str]) -> None:
    if len(argv) == 5 and argv[0] == "archive":
        print(write_archive(argv[1], Path(argv[2]), Path(argv[3]), Path(argv[4])))
    elif len(argv) == 4 and argv[0] == "manifest":
        out = Path(argv[3])
        path = out / f"{NAME}.yaml"
        path.write_text(manifest(argv[1], argv[2], out))
        print(path)
    elif len(argv) == 3 and argv[0] == "missing":
        print(" ".join(missing(argv[1], Path(argv[2]))))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
