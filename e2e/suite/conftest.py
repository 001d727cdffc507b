"""The e2e suite's backend: MONGOBENCH_E2E_BACKEND=local (default, `make test`) or kind
(`make e2e-kind`, which sets it with the cluster's KUBECONFIG)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest

from backends.base import Backend
from backends.manifests import OLD_VERSION, SUPPORTED_VERSIONS

BACKENDS = ("local", "kind")


def _backend_name() -> str:
    return os.environ.get("MONGOBENCH_E2E_BACKEND", "local")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`version`: each supported MongoDB release series (5.0 to 8.0) on kind, where real mongod
    must accept what the operator sends; once on local, whose wire model answers alike for any
    version in those scenarios. `release`: every series on both backends (a scenario whose
    commands differ per release, which the model answers as binaries of that release do)."""
    if "version" in metafunc.fixturenames:
        kind = _backend_name() == "kind"
        metafunc.parametrize("version", list(SUPPORTED_VERSIONS) if kind else [OLD_VERSION])
    if "release" in metafunc.fixturenames:
        metafunc.parametrize("release", list(SUPPORTED_VERSIONS))


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
