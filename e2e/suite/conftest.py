"""The e2e suite's backend: MONGOBENCH_E2E_BACKEND=local (default, `make test`) or kind
(`make e2e-kind`, which sets it with the cluster's KUBECONFIG)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Generator, Iterator

import pytest

from backends.base import Backend
from backends.manifests import NEW_VERSION, OLD_VERSION, SUPPORTED_VERSIONS

BACKENDS = ("local", "kind")


def _backend_name() -> str:
    return os.environ.get("MONGOBENCH_E2E_BACKEND", "local")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`version`: each supported MongoDB release series (5.0 to 8.0) on kind, where real mongod
    must accept what the operator sends; once on local, whose wire model answers alike for any
    version in those scenarios. `release`: every series on both backends (a scenario whose
    commands differ per release, which the model answers as binaries of that release do).
    `upgrade`: (old, new) release pairs."""
    kind = _backend_name() == "kind"
    if "version" in metafunc.fixturenames:
        metafunc.parametrize("version", list(SUPPORTED_VERSIONS) if kind else [OLD_VERSION])
    if "release" in metafunc.fixturenames:
        metafunc.parametrize("release", list(SUPPORTED_VERSIONS))
    if "upgrade" in metafunc.fixturenames:
        # kind: each one-major step of the range. local: the 7.0 -> 8.0 pair only, as the model
        # answers as one release (the old) throughout an upgrade, and confirm starts at 7.0.
        steps = list(itertools.pairwise(SUPPORTED_VERSIONS))
        pairs = steps if kind else [(OLD_VERSION, NEW_VERSION)]
        metafunc.parametrize("upgrade", pairs, ids=[f"{a}-{b}" for a, b in pairs])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # A failed test whose Env outlives it (a module fixture's): collect before teardown deletes
    # its namespace. Failures inside `with backend.env(...)` are collected by the Env itself.
    report = yield
    chosen = getattr(item, "funcargs", {}).get("backend")
    if report.when == "call" and report.failed and isinstance(chosen, Backend):
        chosen.collect_open()
    return report


@pytest.fixture(scope="session")
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    name = _backend_name()
    chosen: Backend
    if name == "kind":
        from backends.kind import KindBackend

        chosen = KindBackend.from_environment()
    elif name == "local":
        from backends.local import LocalBackend

        chosen = LocalBackend(
            request.getfixturevalue("plane"),
            request.getfixturevalue("prometheus_server"),
            tmp_path_factory.mktemp("e2e-local"),
        )
    else:
        raise pytest.UsageError(f"MONGOBENCH_E2E_BACKEND={name!r}: one of {BACKENDS}")
    try:
        yield chosen
    finally:
        chosen.close()
