"""Protocol tier (local processes only; third-party packages from the uv cache `make setup`
filled): the CLI's GitHub Release assets made by the commands the release workflow runs, in its
order: `cli/release.sh wheels` (job cli-wheels), `archive` (job cli-archives, this host's
platform), `assets` (job github-release). Every file the Release gets is in checksums.txt with
its sha256, and the krew manifest's sha256 is the archive's.

The self-contained executable comes from the build cache when its inputs are unchanged
(cli/release.sh), so after the first build this test takes seconds.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from test_krew import krew

pytestmark = pytest.mark.protocol

REPO = Path(__file__).resolve().parents[2]
URL = "https://github.com/mongobench/mongobench/releases/download/v0.1.0"


def uv() -> str:
    cache = Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))
    return str(cache / "uv-0.13.8" / "bin" / "uv")


def release_sh(*args: str) -> str:
    env = {**os.environ, "UV": uv(), "UV_OFFLINE": "1"}
    result = subprocess.run(
        ["bash", "cli/release.sh", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_release_assets_checksums_and_manifest_match_the_files(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    release_sh("wheels", str(out))
    release_sh("archive", "v0.1.0", str(out))
    listed = release_sh("assets", "v0.1.0", URL, str(out))

    names = sorted(p.name for p in out.iterdir())
    archive = next(out.glob("kubectl-mongobench_v0.1.0_*.tar.gz"))
    assert names == sorted(
        [
            archive.name,
            "checksums.txt",
            "mongobench.yaml",
            *(f"mongobench_{p}-0.1.0-py3-none-any.whl" for p in ("archive", "cli", "results")),
            *(f"mongobench_{p}-0.1.0.tar.gz" for p in ("archive", "cli", "results")),
        ]
    )
    assert all(str(out / n) in listed for n in names)

    # checksums.txt: `sha256sum -c` format, one line per other file, each sum the file's.
    lines = (out / "checksums.txt").read_text().splitlines()
    sums = dict(reversed(re.fullmatch(r"([0-9a-f]{64})  (\S+)", line).groups()) for line in lines)  # type: ignore[union-attr]
    assert sorted(sums) == sorted(set(names) - {"checksums.txt"})
    for name, digest in sums.items():
        assert digest == sha256(out / name), name
    check = subprocess.run(
        ["sha256sum", "-c", "checksums.txt"], cwd=out, capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr

    # The krew manifest: this host's platform, its archive's sha256 and download URL.
    manifest = yaml.safe_load((out / "mongobench.yaml").read_text())
    assert manifest["spec"]["version"] == "v0.1.0"
    (platform,) = manifest["spec"]["platforms"]
    assert platform["sha256"] == sha256(archive)
    assert platform["uri"] == f"{URL}/{archive.name}"
    with tarfile.open(archive) as tar:
        exe = tar.extractfile("kubectl-mongobench")
        assert exe is not None and exe.read(4) == b"\x7fELF"  # the executable itself

    # The platforms without an archive, for the Release's notes (here: all but this host's).
    others = sorted(f"{o}_{a}" for o, a in krew.PLATFORMS)
    host = archive.name.removeprefix("kubectl-mongobench_v0.1.0_").removesuffix(".tar.gz")
    assert sorted(release_sh("missing", "v0.1.0", str(out)).split()) == [
        p for p in others if p != host
    ]

    # A file changed after the fact is caught by the published sums.
    (out / "mongobench_cli-0.1.0-py3-none-any.whl").write_bytes(b"tampered")
    tampered = subprocess.run(["sha256sum", "--quiet", "-c", "checksums.txt"], cwd=out, check=False)
    assert tampered.returncode == 1


def test_the_workflow_runs_these_commands() -> None:
    """The jobs call cli/release.sh as this test does (its shell is not copied into YAML)."""
    workflow = (REPO / ".github" / "workflows" / "release.yaml").read_text()
    for command in (
        "bash cli/release.sh wheels dist/cli",
        'bash cli/release.sh archive "$GITHUB_REF_NAME" dist/cli',
        'bash cli/release.sh assets "$GITHUB_REF_NAME" '
        '"$SOURCE/releases/download/$GITHUB_REF_NAME" dist/cli',
        'bash cli/release.sh missing "$GITHUB_REF_NAME" dist/cli',
    ):
        assert command in workflow, command
    assert "sha256sum" not in workflow  # checksums come from the script only


def test_without_any_archive_the_release_still_gets_the_packages_and_their_sums(
    tmp_path: Path,
) -> None:
    """Every platform's archive failed: the Release job still attaches the wheels and sdists,
    with checksums.txt, and no manifest that would name no platform."""
    out = tmp_path / "dist"
    release_sh("wheels", str(out))
    release_sh("assets", "v0.1.0", URL, str(out))
    assert not (out / "mongobench.yaml").exists()
    lines = (out / "checksums.txt").read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in lines) == sorted(
        p.name for p in out.iterdir() if p.name != "checksums.txt"
    )
    assert len(lines) == 6
    assert release_sh("missing", "v0.1.0", str(out)).split() == [
        f"{o}_{a}" for o, a in krew.PLATFORMS
    ]
