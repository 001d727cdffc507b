"""Pytest fixtures for the cluster tier: a shared plane per session, fresh namespaces per test.

    bare_plane                session: the one shared Plane (3 kind nodes), nothing applied
    plane                     session: the same Plane with the repo's crds/ applied
    prometheus_operator_crds  session: ServiceMonitor/PodMonitor/PrometheusRule CRDs on `plane`
    namespace                 function: a fresh namespace enforcing Pod Security `restricted`
    kube_api                  function: a kubernetes.client.ApiClient for `plane`
    kubectl                   function: kubectl(*args) against `plane`
    make_plane                function: factory for a private plane (e.g. another platform)
    prometheus_server         session: the monitoring stack of `bare_plane`, as
                              kube-prometheus-stack runs it (the real Prometheus Operator,
                              Prometheus 3 scraping every 1 s; localplane.monitoring): one per
                              pytest-xdist worker, as one per cluster
    prometheus                session: its URL
    monitoring                function: the same stack (a test filters by its namespace/job;
                              a private plane starts its own: running_monitoring)
    s3server                  function: a fresh S3-compatible server (moto) with bucket `mongobench`

and the hook pytest_collection_modifyitems: the slowest files first (SLOWEST_FIRST).

Set MONGOBENCH_KEEP_PLANE=1 to keep plane workdirs (logs, kubeconfig) after the session.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from kubernetes import client as k8s

from localplane.monitoring import Monitoring, running_monitoring
from localplane.nodes import NodeSet
from localplane.plane import Plane, cleanup_stale
from localplane.s3server import S3Server, start_s3server
from localplane.tools import REPO, binding_problem
from localplane.tools import prometheus_operator_crds as promop_crds_dir

CRDS_DIR = REPO / "crds"
RESTRICTED_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}


# The cluster tier's slowest files, slowest first (measured: --durations of `make test-cluster`).
# pytest-xdist (--dist loadfile --no-loadscope-reorder; without it, the files with the most tests
# go first) hands files to workers in collection order, so a slow file
# collected last runs alone at the end while the other workers idle: started first, the
# tier's tail is the short files'. A file missing here runs in its usual place, after these.
SLOWEST_FIRST = (
    "e2e/local/tests/test_benchmarkexperiment.py",
    "e2e/local/tests/test_trial_validity.py",
    "e2e/local/tests/test_demo.py",
    "e2e/local/tests/test_saturation_knee.py",
    "e2e/local/tests/test_install.py",
    "e2e/suite/test_e2e_benchmarks.py",
    "e2e/local/tests/test_chaos.py",
    "e2e/local/tests/test_regressed.py",
    "e2e/local/tests/test_cpu_resolution.py",
    "e2e/local/tests/test_studies.py",
    "e2e/local/tests/test_chart.py",
    "e2e/local/tests/test_tls.py",
    "e2e/local/tests/test_loads_across_clusters.py",
    "e2e/local/tests/test_role_cpu.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest files first (SLOWEST_FIRST); a stable sort keeps each file's own order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}

    def key(item: pytest.Item) -> int:
        try:
            path = item.path.relative_to(REPO).as_posix()
        except ValueError:  # collected outside this checkout
            return len(rank)
        return rank.get(path, len(rank))

    items.sort(key=key)


# The tiers whose tests start YCSB from this checkout's build.
_YCSB_TIERS = ("protocol", "cluster", "e2e")


def pytest_sessionstart(session: pytest.Session) -> None:
    """A `-m protocol`/`cluster`/`e2e` session stops at once on a YCSB binding older than its
    sources (hack/build-java.sh check) rather than in its first YCSB step, minutes later and
    unexplained. Once, in the controller (an xdist worker has `workerinput`)."""
    config = session.config
    markexpr = str(config.getoption("markexpr", "") or "")
    if hasattr(config, "workerinput") or not any(t in markexpr for t in _YCSB_TIERS):
        return
    if (problem := binding_problem()) is not None:
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """A failed cluster test's report ends with what the operator and the controller-manager
    said last: the operator logs it wrote in its tmp_path (kopf's per-handler lines left out)
    and the plane's kube-controller-manager errors. CI keeps neither once the session ends."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or item.get_closest_marker("cluster") is None:
        return
    funcargs = getattr(item, "funcargs", {})
    tmp = funcargs.get("tmp_path")
    for log in sorted(Path(tmp).glob("*.log")) if tmp is not None else []:
        lines = [line for line in _tail(log, 400) if "Handler '" not in line]
        report.sections.append((f"{log.name}, last lines", "\n".join(lines[-25:])))
    plane = funcargs.get("plane") or funcargs.get("bare_plane")
    if isinstance(plane, Plane):
        kcm = plane.logs / "kube-controller-manager.log"
        errors = [line for line in _tail(kcm, 4000) if line.startswith("E")]
        report.sections.append(("kube-controller-manager errors, last", "\n".join(errors[-15:])))


def _tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _keep() -> bool:
    return os.environ.get("MONGOBENCH_KEEP_PLANE", "") not in ("", "0", "false")


def apply_repo_crds(plane: Plane) -> list[str]:
    """Apply crds/*.yaml if the folder has any; returns the CRD names (Established)."""
    if not CRDS_DIR.is_dir() or not any(CRDS_DIR.glob("*.y*ml")):
        return []
    return plane.apply(CRDS_DIR)


@pytest.fixture(scope="session")
def bare_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    cleanup_stale()  # planes of an earlier session that was killed
    p = Plane.start(
        tmp_path_factory.mktemp("plane"),
        nodes=NodeSet(profile="kind", count=3),
        keep_workdir=_keep(),
    )
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="session")
def plane(bare_plane: Plane) -> Plane:
    # A separate fixture so a CRD the apiserver rejects fails the tests that need the CRDs,
    # not the plane's own tests.
    if apply_repo_crds(bare_plane):
        # Its garbage collector learns the CRDs at once (Plane.restart_controller_manager says
        # why): a MongoCluster's children then go with it, as on a cluster installed beforehand.
        bare_plane.restart_controller_manager()
    return bare_plane


@pytest.fixture(scope="session")
def prometheus_operator_crds(bare_plane: Plane) -> list[str]:
    crds = promop_crds_dir()
    if not crds.is_dir():
        pytest.fail(f"{crds} is missing: run `make setup` (hack/build-tools.sh fetches it)")
    return bare_plane.apply(crds)


@pytest.fixture
def kube_api(bare_plane: Plane) -> Iterator[k8s.ApiClient]:
    api = bare_plane.api_client()
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def namespace(bare_plane: Plane, request: pytest.FixtureRequest) -> Iterator[str]:
    slug = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    api = bare_plane.api_client()
    core = k8s.CoreV1Api(api)
    body: Any = {"metadata": {"name": name, "labels": RESTRICTED_LABELS}}
    core.create_namespace(body)
    try:
        yield name
    finally:
        # Background: the namespace controller finishes the deletion while later tests run.
        try:
            core.delete_namespace(name, propagation_policy="Background", _request_timeout=10)
        except k8s.ApiException as e:
            if e.status != 404:
                raise
        finally:
            api.close()  # type: ignore[no-untyped-call]


Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def kubectl(bare_plane: Plane) -> Kubectl:
    """kubectl(*args, input=None, check=True) -> CompletedProcess (text)."""
    return bare_plane.kubectl


@pytest.fixture
def make_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Plane]]:
    """make_plane(nodes=NodeSet("eks", 3), **Plane.start kwargs) -> a started private Plane."""
    planes: list[Plane] = []

    def make(**kw: Any) -> Plane:
        kw.setdefault("keep_workdir", _keep())
        workdir = kw.pop("workdir", None) or tmp_path_factory.mktemp("plane")
        p = Plane.start(workdir, **kw)
        planes.append(p)
        return p

    try:
        yield make
    finally:
        for p in planes:
            p.stop()


@pytest.fixture(scope="session")
def prometheus_server(
    bare_plane: Plane, prometheus_operator_crds: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Monitoring]:
    """kube-prometheus-stack's monitoring of the session's plane, started once (seconds):
    node CPU, cAdvisor, the operator's metrics and rules all pass through it."""
    with running_monitoring(bare_plane, tmp_path_factory.mktemp("monitoring")) as stack:
        yield stack


@pytest.fixture(scope="session")
def prometheus(prometheus_server: Monitoring) -> str:
    return prometheus_server.url


@pytest.fixture
def monitoring(prometheus_server: Monitoring) -> Monitoring:
    """The session's stack, as a cluster has one kube-prometheus-stack for all its tenants."""
    return prometheus_server


S3_BUCKET = "mongobench"


@pytest.fixture
def s3server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (moto, HTTP on loopback) holding an empty bucket `mongobench`;
    see localplane.s3server (stop()/start() to take it down and back)."""
    server = start_s3server(
        tmp_path_factory.mktemp("s3server"), buckets=[S3_BUCKET], keep_workdir=_keep()
    )
    try:
        yield server
    finally:
        server.close()
