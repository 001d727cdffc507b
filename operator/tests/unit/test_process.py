"""Unit tier: the operator process (`mongobench-operator run`): what it loads and how it
allocates. Each probe runs in a fresh interpreter, as the process starts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def test_the_operator_process_never_loads_the_kubernetes_package() -> None:
    """kopf imports `kubernetes` whenever it is installed (it is, beside the CLI): ~38 MiB."""
    code = (
        "import sys\n"
        "from mongobench.__main__ import without_kubernetes_package\n"
        "without_kubernetes_package()\n"
        "import mongobench.main\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] == 'kubernetes' and sys.modules[m]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == []
    # The probe is not vacuous: without the guard, kopf does load it here.
    code = code.replace("without_kubernetes_package()\n", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "kubernetes" in json.loads(out.stdout.replace("'", '"'))


def test_the_mongodb_driver_loads_without_cryptography_and_still_speaks_tls() -> None:
    """pymongo's pyOpenSSL probe imported cryptography (~7.8 MiB) only to fall back to the
    standard library's ssl, pyOpenSSL being absent (here as in the image)."""
    code = (
        "import sys\n"
        "from mongobench.__main__ import without_pyopenssl_probe\n"
        "print(without_pyopenssl_probe())\n"
        "import pymongo, pymongo.ssl_support as tls\n"
        "print(tls.HAVE_SSL, 'cryptography' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]
    # The probe is not vacuous: without the guard, pymongo does load cryptography here.
    code = code.replace("print(without_pyopenssl_probe())\n", "print(True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_the_cluster_controller_loads_cryptography_only_to_issue_certificates() -> None:
    """Every cluster loads its controller and the Secret watch its handler; `cryptography`
    (~7.8 MiB resident) is for a cluster whose certificates the operator issues from a CA."""
    code = (
        "import sys\n"
        "from mongobench.__main__ import without_pyopenssl_probe\n"
        "without_pyopenssl_probe()\n"
        "import mongobench.handlers.mongocluster, mongobench.mongocluster.act.reconcile\n"
        "print('cryptography' in sys.modules)\n"
        "import mongobench.mongocluster.build.certificates\n"
        "print('cryptography' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_operator_caps_glibcs_malloc_arenas() -> None:
    from mongobench.__main__ import fewer_malloc_arenas

    assert fewer_malloc_arenas()  # glibc here, as in the image (python:3.11-slim, Debian)


def test_run_blocks_kubernetes_and_caps_arenas_before_kopf_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guards above are what `mongobench-operator run` calls, before the operator runs."""
    import mongobench.__main__ as cli
    from mongobench import main

    calls: list[str] = []
    monkeypatch.setattr(cli, "without_kubernetes_package", lambda: calls.append("no kubernetes"))
    monkeypatch.setattr(cli, "without_pyopenssl_probe", lambda: calls.append("no probe") or True)
    monkeypatch.setattr(cli, "fewer_malloc_arenas", lambda: calls.append("arenas") or True)
    monkeypatch.setattr(main, "run", lambda config: calls.append("run"))
    assert cli.main(["run", "--plain-logs"]) == 0
    assert calls == ["no kubernetes", "no probe", "arenas", "run"]


def test_an_experiments_comparison_leaves_no_numeric_package_resident() -> None:
    """The comparison at an experiment's end is pure Python (mongobench_results.stats): numpy
    and scipy (installed here, for the reference tests) stay out of the operator's memory."""
    code = (
        "import sys, json\n"
        "import mongobench.main, mongobench.experiment.act.reconcile\n"
        "from mongobench_results import stats\n"
        "stats.difference([100.0, 104.0, 98.0], [110.0, 111.0, 108.5])\n"
        "stats.summarise([1.0, 2.0, 4.0])\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
    # The probe is not vacuous: it sees them once something imports them.
    control = code.replace("import sys, json\n", "import sys, json, scipy.stats\n")
    out = subprocess.run(
        [sys.executable, "-c", control], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == ["numpy", "scipy"]


def loaded_after(code: str, packages: tuple[str, ...]) -> list[str]:
    """Which of `packages` a fresh operator interpreter holds after running `code`."""
    probe = (
        "import json, sys\n"
        "from mongobench.__main__ import without_kubernetes_package\n"
        "without_kubernetes_package()\n"
        f"{code}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(packages)!r})))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def test_an_idle_operator_has_not_loaded_the_mongodb_driver() -> None:
    """pymongo and bson (~5.5 MiB resident, make bench-memory) load through
    mongobench.mongo.driver when the first client is built, not with the operator."""
    assert loaded_after("import mongobench.main", ("pymongo", "bson")) == []
    # The probe is not vacuous: building a member's client (dialled in the background, to a
    # loopback port nobody listens on, and closed) loads both.
    build = (
        "import mongobench.main\n"
        "from mongobench.mongo.connect import Connector\n"
        "with Connector(timeout_seconds=0.1) as c:\n"
        "    c.client('127.0.0.1:9')"
    )
    assert loaded_after(build, ("pymongo", "bson")) == ["bson", "pymongo"]
