"""`kubectl mongobench` installed as krew installs it.

Unit tier: the archives and the manifest cli/krew/krew.py writes (krew's version spelling, one
platform per archive with its sha256, archives that depend on their files only). Cluster tier
(the tools the local plane builds from pinned Go modules; no apiserver is needed, no network
beyond loopback): the self-contained executable built with PyInstaller by cli/release.sh, the
manifest checked by krew's own validator (which installs it through `kubectl krew` from a
loopback HTTP server), then `kubectl krew install --manifest --archive` into a fresh KREW_ROOT,
`kubectl plugin list` and `kubectl mongobench` found through kubectl's plugin discovery,
comparing and reporting archives.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import os
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from builders import benchmark_run

from localplane.tools import binary
from mongobench_cli import export

REPO = Path(__file__).resolve().parents[2]


def load_krew() -> ModuleType:
    spec = importlib.util.spec_from_file_location("krew", REPO / "cli" / "krew" / "krew.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


krew = load_krew()


@pytest.mark.unit
def test_manifest_has_one_platform_per_archive_with_its_sha256(tmp_path: Path) -> None:
    for os_name, arch in krew.PLATFORMS:
        (tmp_path / krew.archive_name("v1.2.3", os_name, arch)).write_bytes(
            f"{os_name}/{arch}".encode()
        )
    doc = yaml.safe_load(krew.manifest("1.2.3", "https://example.org/r/v1.2.3/", tmp_path))
    assert doc["metadata"]["name"] == "mongobench"
    assert doc["spec"]["version"] == "v1.2.3"  # krew refuses 1.2.3
    assert doc["spec"]["homepage"] == "https://github.com/mongobench/mongobench"
    got = {
        (p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]): p
        for p in doc["spec"]["platforms"]
    }
    assert set(got) == set(krew.PLATFORMS)
    windows = got[("windows", "amd64")]
    assert (
        windows["uri"] == "https://example.org/r/v1.2.3/kubectl-mongobench_v1.2.3_windows_amd64.zip"
    )
    assert windows["bin"] == "kubectl-mongobench.exe"
    assert windows["sha256"] == hashlib.sha256(b"windows/amd64").hexdigest()
    assert {f["from"] for f in got[("linux", "arm64")]["files"]} == {
        "kubectl-mongobench",
        "LICENSE",
    }


@pytest.mark.unit
def test_manifest_says_which_glibc_the_linux_executable_needs(tmp_path: Path) -> None:
    (tmp_path / krew.archive_name("v1.2.3", "linux", "amd64")).write_bytes(b"x")
    doc = yaml.safe_load(krew.manifest("v1.2.3", "https://example.org", tmp_path))
    assert "Linux: glibc 2.28 or newer" in doc["spec"]["description"]


@pytest.mark.unit
def test_missing_names_the_platforms_whose_archive_did_not_build(tmp_path: Path) -> None:
    """The Release is created with the archives that built; its notes name the others."""
    assert krew.missing("v1.2.3", tmp_path) == [f"{o}_{a}" for o, a in krew.PLATFORMS]
    for os_name, arch in krew.PLATFORMS:
        if os_name != "darwin":
            (tmp_path / krew.archive_name("v1.2.3", os_name, arch)).write_bytes(b"x")
    assert krew.missing("1.2.3", tmp_path) == ["darwin_amd64", "darwin_arm64"]
    doc = yaml.safe_load(krew.manifest("v1.2.3", "https://example.org", tmp_path))
    assert len(doc["spec"]["platforms"]) == 3  # krew users on macOS: "not available" until then


@pytest.mark.unit
@pytest.mark.parametrize("version", ["latest", "1.2", "v1.2.3.4", "v01.2.3"])
def test_versions_krew_would_refuse_are_refused(version: str, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not semantic"):
        krew.manifest(version, "https://example.org", tmp_path)


@pytest.mark.unit
def test_archive_is_reproducible_and_holds_the_executable_and_license(tmp_path: Path) -> None:
    exe = tmp_path / "exe"
    exe.write_bytes(b"\x7fELF pretend")
    first = krew.write_archive("0.1.0", exe, REPO / "LICENSE", tmp_path / "a")
    second = krew.write_archive("v0.1.0", exe, REPO / "LICENSE", tmp_path / "b")
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {"kubectl-mongobench", "LICENSE"}
    assert members["kubectl-mongobench"].mode == 0o755


@pytest.mark.unit
def test_windows_archive_is_a_zip_with_the_exe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(krew, "host", lambda: ("windows", "amd64"))
    exe = tmp_path / "kubectl-mongobench.exe"
    exe.write_bytes(b"MZ pretend")
    path = krew.write_archive("v0.1.0", exe, REPO / "LICENSE", tmp_path / "out")
    assert path.name == "kubectl-mongobench_v0.1.0_windows_amd64.zip"
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["LICENSE", "kubectl-mongobench.exe"]
        assert z.read("kubectl-mongobench.exe") == b"MZ pretend"


# --- cluster tier: the real executable, krew and kubectl ----------------------------------------


def uv() -> str:
    cache = Path(os.environ.get("MONGOBENCH_CACHE", Path.home() / ".cache" / "mongobench"))
    return str(cache / "uv-0.13.8" / "bin" / "uv")


def run(*args: str, env: dict[str, str], timeout: int = 120) -> str:
    result = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
    )
    assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/cli as the release builds it on this host: wheels, the executable's archive."""
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "UV": uv(), "UV_OFFLINE": "1"}
    run("bash", "cli/release.sh", "archive", "v0.1.0", str(out), env=env, timeout=900)
    return out


@pytest.fixture
def served(built: Path) -> Iterator[str]:
    """The release's download URL, stood in for by a loopback HTTP server."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def kubectl_path(tmp_path: Path) -> Path:
    """A PATH folder with `kubectl` and the `kubectl-krew` plugin, as a krew user has them."""
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "kubectl").symlink_to(binary("kubectl"))
    (folder / "kubectl-krew").symlink_to(binary("krew"))
    return folder


@pytest.mark.cluster
def test_krew_validates_and_installs_the_plugin_and_kubectl_finds_it(
    built: Path, served: str, kubectl_path: Path, tmp_path: Path
) -> None:
    manifest_out = run(
        "bash", "cli/release.sh", "manifest", "0.1.0", served, str(built), env=dict(os.environ)
    )
    manifest = built / "mongobench.yaml"
    assert str(manifest) in manifest_out
    assert yaml.safe_load(manifest.read_text())["spec"]["version"] == "v0.1.0"
    base = {"PATH": f"{kubectl_path}:/usr/bin:/bin", "HOME": str(tmp_path)}

    # krew's own validation: structure, platforms, then an install of every platform through
    # `kubectl krew install` (downloading from the loopback server) and the LICENSE check.
    said = run(str(binary("validate-krew-manifest")), "-manifest", str(manifest), env=base)
    assert "structural validation OK" in said and "all 1 spec.platforms installed fine" in said

    # As a user installs a release archive they downloaded.
    root = tmp_path / "krew-root"
    env = {**base, "KREW_ROOT": str(root)}
    archive = next(built.glob("kubectl-mongobench_v0.1.0_linux_amd64.tar.gz"))
    installed = run(
        "kubectl",
        "krew",
        "install",
        f"--manifest={manifest}",
        f"--archive={archive}",
        env=env,
    )
    assert "Installed plugin: mongobench" in installed
    user = {**env, "PATH": f"{root / 'bin'}:{env['PATH']}", "KUBECONFIG": "/nonexistent"}
    assert str(root / "bin" / "kubectl-mongobench") in run("kubectl", "plugin", "list", env=user)
    assert "Usage: kubectl mongobench" in run("kubectl", "mongobench", "--help", env=user)
    # krew's receipt of the install (what `krew upgrade` and `krew uninstall` go by).
    receipt = yaml.safe_load((root / "receipts" / "mongobench.yaml").read_text())
    assert receipt["spec"]["version"] == "v0.1.0"

    # The bundled executable does the real work: statistics, archives, matplotlib figures.
    three, five = tmp_path / "plane-3", tmp_path / "plane-5"
    export.export(
        [benchmark_run("b", shards=3, throughput={"a": 1000, "c": 2000}, seed=1)], str(three)
    )
    export.export(
        [benchmark_run("b", shards=5, throughput={"a": 1300, "c": 2000}, seed=2)], str(five)
    )
    compared = run("kubectl", "mongobench", "compare", str(three), str(five), env=user)
    assert "faster on a" in compared  # the headline: 5 shards against the baseline's 3
    report = tmp_path / "report"
    run("kubectl", "mongobench", "report", str(three), str(five), "-o", str(report), env=user)
    assert (report / "figures" / "percentiles-a.png").stat().st_size > 10_000
    selected = run("kubectl", "mongobench", "list", str(three), "-l", "nothere", env=user)
    assert "No BenchmarkRuns found." in selected


@pytest.mark.cluster
def test_users_install_from_the_projects_krew_index_and_upgrade_from_it(
    built: Path, served: str, kubectl_path: Path, tmp_path: Path
) -> None:
    """The release's krew-index job commits its manifest as plugins/mongobench.yaml on the
    default branch; users add the repository as an index (here a git repository in a folder,
    the archives on a loopback server), install from it, and `kubectl krew upgrade` takes the
    next release from it."""
    index = tmp_path / "index"
    (index / "plugins").mkdir(parents=True)
    git = ("git", "-C", str(index), "-c", "user.name=t", "-c", "user.email=t@example.org")
    base = {"PATH": f"{kubectl_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    run("git", "init", "--quiet", str(index), env=base)

    def release(version: str) -> None:
        """What the release workflow publishes: the archive and the index's manifest."""
        [first] = built.glob("kubectl-mongobench_v0.1.0_linux_amd64.tar.gz")
        archive = built / krew.archive_name(version, "linux", "amd64")
        if not archive.exists():
            archive.write_bytes(first.read_bytes())
        (index / "plugins" / "mongobench.yaml").write_text(krew.manifest(version, served, built))
        run(*git, "add", "plugins/mongobench.yaml", env=base)
        run(*git, "commit", "--quiet", "-m", f"krew index: mongobench {version}", env=base)

    release("v0.1.0")
    root = tmp_path / "krew-root"
    env = {**base, "KREW_ROOT": str(root), "KREW_NO_UPGRADE_CHECK": "1"}
    run("kubectl", "krew", "index", "add", "mongobench", f"file://{index}", env=env)
    said = run("kubectl", "krew", "install", "mongobench/mongobench", env=env)
    assert "Installed plugin: mongobench" in said
    receipt = root / "receipts" / "mongobench.yaml"
    assert yaml.safe_load(receipt.read_text())["spec"]["version"] == "v0.1.0"
    assert yaml.safe_load(receipt.read_text())["status"]["source"]["name"] == "mongobench"

    release("v0.1.1")
    said = run("kubectl", "krew", "upgrade", env=env)
    assert "Upgraded plugin: mongobench" in said, said
    assert yaml.safe_load(receipt.read_text())["spec"]["version"] == "v0.1.1"
    user = {**env, "PATH": f"{root / 'bin'}:{env['PATH']}", "KUBECONFIG": "/nonexistent"}
    assert "Usage: kubectl mongobench" in run("kubectl", "mongobench", "--help", env=user)


@pytest.mark.cluster
def test_krew_validator_accepts_the_five_platform_manifest(tmp_path: Path) -> None:
    """The release's manifest (all five platforms, archives from the workflow's matrix):
    krew's structural validation, no overlapping selectors."""
    for os_name, arch in krew.PLATFORMS:
        (tmp_path / krew.archive_name("v0.1.0", os_name, arch)).write_bytes(b"x")
    manifest = tmp_path / "mongobench.yaml"
    manifest.write_text(krew.manifest("v0.1.0", "https://example.org/v0.1.0", tmp_path))
    said = run(
        str(binary("validate-krew-manifest")),
        "-manifest",
        str(manifest),
        "-skip-install",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert "structural validation OK" in said and "no overlapping" in said
