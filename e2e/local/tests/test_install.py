"""Cluster tier: the install page's commands (docs/install.md), as written, on a fresh plane.

The commands are read from the page's `sh` blocks (and the chart README's upgrade block), so
the documentation cannot drift from what runs here. Each line runs verbatim in bash with the
real kubectl and helm on PATH, from the repository's root, except what cannot run on this
machine; `SUBSTITUTED` names each of those and what stands in for it, and a test fails when a
substituted line is no longer on the page (a stale substitution would hide a new command):

- `kind create cluster` / `eksctl create cluster`: a fresh local plane (real apiserver, KWOK
  nodes) with the nodes the recipe declares (roles and counts read from the recipe's file);
- `make images kind-load`: no container engine; KWOK runs the operator's pod as a fake, so the
  operator runs as a process with the installed ServiceAccount's token and the environment of the
  installed Deployment (its Prometheus URL pointed at a local Prometheus);
- `helm install kube-prometheus-stack`: its chart is not reachable here; the real Prometheus
  Operator (its CRDs and operator from the Go module) runs a Prometheus configured as the
  chart's, in namespace `monitoring` (localplane.monitoring), and the test reads which monitors
  it selected from Prometheus's own scrape pools and targets;
- `oci://ghcr.io/mongobench/charts/<chart>`: the chart folder of this checkout;
- `kubectl get ... -w`: the test's own wait (the kind samples: until ycsb-a Succeeded, as the
  page's comment says; the EKS samples: both reconciled, their volumes having no EBS CSI
  driver here).

The Magnum block shares the kustomize commands of the kind block (its overlay only adds a
StorageClass and a nodeSelector, rendered by manifests/tests) and is not run here.

What stands in beyond that, as in test_chart.py: the wire model for mongod's replica-set state,
FerretDB as the data path of the client pods the harness kubelet executes.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from localplane import grafana
from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.monitoring import Monitoring, running_monitoring, serve_pods
from localplane.nodes import NodeSet
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO, binary, prometheus_operator_crds

pytestmark = pytest.mark.cluster

INSTALL_PAGE = REPO / "docs" / "install.md"
CHART_README = REPO / "charts" / "mongobench" / "README.md"
OCI = "oci://ghcr.io/mongobench/charts/"
GROUP, VERSION = "mongobench.io", "v1alpha1"
STACK_LABELS = {"release": "kube-prometheus-stack"}

# Line prefix -> what stands in for it (see the module docstring).
SUBSTITUTED = {
    "kind create cluster": "a fresh plane with kind-config.yaml's workers",
    "make images kind-load": "the operator as a process (no container engine)",
    "eksctl create cluster": "a fresh plane with cluster.yaml's node groups",
    "helm install kube-prometheus-stack": "the real Prometheus Operator and a Prometheus as its",
}


# --- the install page, read --------------------------------------------------------------------
def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def command_lines(block: str) -> list[str]:
    """One string per command, backslash continuations joined."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def install_section() -> str:
    return INSTALL_PAGE.read_text()


def block_after(section: str, marker: str) -> list[str]:
    """The commands of the first `sh` block after `marker` in the section."""
    return command_lines(sh_blocks(section[section.index(marker) :])[0])


def substitution(line: str) -> str | None:
    return next((k for k in SUBSTITUTED if line.startswith(k)), None)


# --- running it -------------------------------------------------------------------------------
class Shell:
    """Runs the page's lines in bash with the pinned kubectl and helm, KUBECONFIG the plane's."""

    def __init__(self, plane: Plane, tmp: Path, charts: dict[str, Path]) -> None:
        bindir = tmp / "bin"
        bindir.mkdir(exist_ok=True)
        for tool in ("kubectl", "helm"):
            link = bindir / tool
            if not link.exists():
                link.symlink_to(binary(tool))
        self.env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                    "KUBECONFIG": str(plane.kubeconfig)}  # fmt: skip
        self.charts = charts
        self.ran: list[str] = []

    def run(self, line: str, **replace: str) -> str:
        command = line
        for name, path in self.charts.items():
            command = command.replace(f"{OCI}{name} ", f"{path} ")
        for old, new in replace.items():
            command = command.replace(old, new)
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command], cwd=REPO, env=self.env,
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"{line}\nexit {proc.returncode}\n{proc.stderr}"
        self.ran.append(line)
        return proc.stdout


def run_block(shell: Shell, lines: list[str], stand_in: dict[str, Any]) -> list[str]:
    """Run each line, or its stand-in; returns the `-w` lines left to the caller's wait."""
    waits = []
    for line in lines:
        key = substitution(line)
        if key is not None:
            stand_in[key]()
        elif re.search(r"\bkubectl get\b.* -w\b", line):
            waits.append(line)
        else:
            shell.run(line)
    return waits


def monitoring_prerequisite(plane: Plane, tmp: Path, stack: ExitStack) -> Monitoring:
    """What `helm install kube-prometheus-stack` gives the install: its CRDs, namespace
    `monitoring`, the Prometheus Operator and a Prometheus selecting `release` monitors."""
    plane.apply(prometheus_operator_crds())
    return stack.enter_context(running_monitoring(plane, tmp / "monitoring"))


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """What a test started on its private plane, stopped before the plane is (set up after)."""
    with ExitStack() as started:
        yield started


def scraped_cluster(monitoring: Monitoring, namespace: str, name: str) -> list[dict[str, Any]]:
    """The targets Prometheus has for the MongoCluster's PodMonitor: it selected the monitor."""
    pool = f"podMonitor/{namespace}/{name}/0"
    return [t for t in monitoring.targets() if t["scrapePool"] == pool]


def local_charts(root: Path = REPO / "charts") -> dict[str, Path]:
    return {"mongobench-crds": root / "mongobench-crds", "mongobench": root / "mongobench"}


# --- the operator, as the installed Deployment would run it -------------------------------------
def service_account_kubeconfig(plane: Plane, namespace: str, sa: str, path: Path) -> Path:
    token = plane.kubectl("create", "token", sa, "-n", namespace, "--duration=1h").stdout.strip()
    ca = base64.b64encode(plane.pki.ca_crt.read_bytes()).decode()
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "p",
        "clusters": [{"name": "p", "cluster": {"server": plane.server,
                                               "certificate-authority-data": ca}}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "p", "context": {"cluster": "p", "user": sa}}],
    }  # fmt: skip
    path.write_text(json.dumps(config))
    return path


def deployment_env(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, str]:
    deployment = k8s.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    (container,) = deployment.spec.template.spec.containers
    # An empty value is omitted by the API: "" again (e.g. MONGOBENCH_NAMESPACES, all of them).
    return {e.name: e.value or "" for e in container.env if e.value_from is None}


def installed_operator(
    plane: Plane, tmp: Path, namespace: str, name: str, **overrides: str
) -> OperatorProcess:
    """The operator with the installed Deployment's environment and ServiceAccount token."""
    api = plane.api_client()
    env = deployment_env(api, namespace, name)
    env.pop("MONGOBENCH_METRICS_PORT")  # the process picks free ports
    watched = [n for n in env.pop("MONGOBENCH_NAMESPACES").split(",") if n]
    kubeconfig = service_account_kubeconfig(plane, namespace, name, tmp / "sa.kubeconfig")
    return start_operator(kubeconfig, watched, tmp / "operator.log", **{**env, **overrides})


def custom(api: k8s.ApiClient) -> Any:
    return k8s.CustomObjectsApi(api)


def phase(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> str | None:
    obj = custom(api).get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    return (obj.get("status") or {}).get("phase")


def pod_monitor_labels(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, str]:
    monitor = custom(api).get_namespaced_custom_object(
        "monitoring.coreos.com", "v1", namespace, "podmonitors", name
    )
    return dict(monitor["metadata"]["labels"])


# --- recipes' nodes ---------------------------------------------------------------------------
def kind_nodes() -> list[NodeSet]:
    config = yaml.safe_load((REPO / "manifests/platforms/kind/kind-config.yaml").read_text())
    workers = [n.get("labels", {}) for n in config["nodes"] if n["role"] == "worker"]
    return [NodeSet(profile="kind", count=1, start=i, extra_labels=labels)
            for i, labels in enumerate(workers)]  # fmt: skip


def eks_nodes() -> list[NodeSet]:
    config = yaml.safe_load((REPO / "manifests/platforms/eks/cluster.yaml").read_text())
    sets, start = [], 0
    for group in config["managedNodeGroups"]:
        count = group["desiredCapacity"]
        sets.append(NodeSet(profile="eks", count=count, start=start, extra_labels=group["labels"],
                            instance_type=group["instanceType"]))  # fmt: skip
        start += count
    return sets


@contextmanager
def data_path(
    plane: Plane, namespace: str, members: list[str], pods: Path
) -> Iterator[dict[str, str]]:
    """FerretDB behind the client pods, the wire model behind the members: the operator's env.
    The client pods' output stays in `pods` (the test's tmp folder) for a failure's reader."""
    api = plane.api_client()
    with (
        running_ferretdb() as ferretdb,
        MongoModel(keyfile=keyfile_from_pods(api), catch_up_seconds=0.1) as model,
        pod_executor(
            plane,
            namespace,
            workdir=pods,
            uri_rewrite=rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}"),
        ),
    ):
        for member in members:
            model.member(member)
        yield {"MONGOBENCH_HOST_MAP": ",".join(f"{k}={v}" for k, v in model.host_map.items())}


# --- the tests --------------------------------------------------------------------------------
def test_install_page_substitutions_all_name_lines_of_the_page() -> None:
    """Unit-fast guard, run with the cluster tier: every substitution still matches a line."""
    lines = [line for block in sh_blocks(install_section()) for line in command_lines(block)]
    for prefix in SUBSTITUTED:
        assert any(line.startswith(prefix) for line in lines), f"stale substitution: {prefix}"


def test_install_page_kustomize_install_on_kind_ends_with_the_sample_run_succeeded(
    make_plane: Any, stack: ExitStack, tmp_path: Path
) -> None:
    section = install_section()
    plane = make_plane(nodes=kind_nodes())
    api = plane.api_client()
    shell = Shell(plane, tmp_path, local_charts())
    stand_in = {k: (lambda: None) for k in SUBSTITUTED}
    stacks: list[Monitoring] = []
    stand_in["helm install kube-prometheus-stack"] = lambda: stacks.append(
        monitoring_prerequisite(plane, tmp_path, stack)
    )

    run_block(shell, block_after(section, "## Prerequisite: kube-prometheus-stack"), stand_in)
    started = time.time()
    waits = run_block(shell, block_after(section, "## kind"), stand_in)
    assert waits == [next(x for x in block_after(section, "## kind") if " -w" in x)]
    # The install's monitors scrape every 2 s, not 30 s and 10 s, as the stack's Prometheus is
    # shortened to 1 s: the dashboards' rates see this short run (SCRAPE_SECONDS).
    for kind, name, field in MONITORS:
        patch = [
            {"op": "replace", "path": f"/spec/{field}/0/interval", "value": f"{SCRAPE_SECONDS}s"}
        ]
        plane.kubectl("patch", kind, name, "-n", "mongobench", "--type=json",
                      "-p", json.dumps(patch))  # fmt: skip
    # The CRDs were applied on their own before the operator, which needs them served.
    assert shell.ran.index(next(x for x in shell.ran if "install/crds" in x)) < shell.ran.index(
        next(x for x in shell.ran if "overlays/kind" in x)
    )

    members = [f"rs3-rs0-{i}.rs3-rs0-hl.bench.svc.cluster.local:27017" for i in range(3)]
    (monitoring,) = stacks
    with data_path(plane, "bench", members, tmp_path / "pods") as env:
        # The private plane's stack: node CPU from its own nodes' node-exporters.
        operator = installed_operator(
            plane, tmp_path, "mongobench", "mongobench", MONGOBENCH_PROMETHEUS_URL=monitoring.url,
            MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL="1", **env,
        )  # fmt: skip
        try:
            # The operator's own /metrics through the install's ServiceMonitor, during the run:
            # its (KWOK) pod says where the operator process serves them, as the harness kubelet
            # says it of the pods it runs (localplane.monitoring).
            serve_pods(plane, "mongobench", "app.kubernetes.io/component=operator",
                       {"metrics": operator.metrics_port}, ["mongobench-metrics"])  # fmt: skip
            # `kubectl get -n bench mongoclusters,benchmarkruns -w  # until ycsb-a Succeeded`
            wait_until(lambda: phase(api, "bench", "mongoclusters", "rs3") == "Ready", 120,
                       what="rs3 Ready")  # fmt: skip
            wait_until(
                lambda: phase(api, "bench", "benchmarkruns", "ycsb-a") in ("Succeeded", "Failed"),
                600, 1, what="ycsb-a finished",
            )  # fmt: skip
            info = 'mongobench_operator_info{job="mongobench-metrics"}'
            wait_until(lambda: monitoring.query(info), 60,
                       what="the operator scraped through its ServiceMonitor")  # fmt: skip
            # Rates need a few of its scrapes, and the run's summary gauges (exported as it
            # ended) one scrape after its end: then every dashboard as Grafana shows this run.
            wait_until(lambda: monitoring.query(f"count_over_time({info}[1m]) >= 5"), 60,
                       what="five scrapes of the operator")  # fmt: skip
            assert phase(api, "bench", "benchmarkruns", "ycsb-a") == "Succeeded", run_said(api)
            summary = 'mongobench_run_repetitions{namespace="bench", run="ycsb-a"}'
            wait_until(lambda: monitoring.query(summary), 60,
                       what="the run's summary scraped from the operator")  # fmt: skip
            answers = dashboards_answer(monitoring, started)
        finally:
            operator.stop()
    assert phase(api, "bench", "benchmarkruns", "ycsb-a") == "Succeeded", run_said(api)
    # A stock kube-prometheus-stack scrapes the cluster: its PodMonitor carries the release label
    # and the stack's Prometheus has a target per member (their exporters are KWOK's: not up).
    assert pod_monitor_labels(api, "bench", "rs3").items() >= STACK_LABELS.items()
    targets = wait_until(lambda: len(found := scraped_cluster(monitoring, "bench", "rs3")) == 3
                         and found, 60, what="rs3's members as targets")  # fmt: skip
    assert {t["labels"]["mongobench_io_cluster"] for t in targets} == {"rs3"}
    # ... and the install's own monitors, labelled alike, are selected too.
    assert {
        "serviceMonitor/mongobench/mongobench/0",
        "podMonitor/mongobench/mongobench-clients/0",
    } <= monitoring.scrape_pools()
    assert "Forbidden" not in (tmp_path / "operator.log").read_text()
    assert_dashboards_answer(answers)


# Dashboard panels that stay empty after the sample run on this plane, and why. Every other panel
# query must return series; each of these must not (a panel listed here that shows data is no
# longer empty: the list is corrected, never left wider than the truth).
MONITORS = (
    ("servicemonitor", "mongobench", "endpoints"),
    ("podmonitor", "mongobench-clients", "podMetricsEndpoints"),
)
SCRAPE_SECONDS = 2
EXPORTER_SERIES = (
    "the MongoDB pods are KWOK's, so their mongodb_exporter sidecars do not run and every "
    "mongodb_* series is absent (test_dashboards proves these panels against the real exporter)"
)
ONE_REPETITION = "the sample run has one repetition: a standard deviation needs two"
NO_FAILURE = "no handler failed or asked to be retried during the sample run"
EMPTY_AFTER_THE_SAMPLE_RUN: dict[tuple[str, str, str], str] = {
    ("benchmark-comparison", "Coefficient of variation (SD / mean)", "A"): ONE_REPETITION,
    ("benchmark-comparison", "Throughput summary", "B"): ONE_REPETITION,
    ("benchmark-comparison", "Throughput summary", "C"): ONE_REPETITION,
    ("operator", "Errors/s", "A"): NO_FAILURE,
    ("operator", "Error ratio", "A"): NO_FAILURE,
    ("operator", "Error ratio by handler", "A"): NO_FAILURE,
    ("operator", "Errors and retries/s by handler", "A"): NO_FAILURE,
    ("operator", "Errors and retries/s by handler", "B"): NO_FAILURE,
}


def empty_because(answer: grafana.Answer) -> str | None:
    key = (answer.target.board, answer.target.panel, answer.target.ref)
    if key in EMPTY_AFTER_THE_SAMPLE_RUN:
        return EMPTY_AFTER_THE_SAMPLE_RUN[key]
    # A query with a fallback (`or vector(0)`) answers 0 with no series at all.
    if re.search(r"\bmongodb_", answer.target.expr) and "or vector(" not in answer.target.expr:
        return EXPORTER_SERIES
    return None


def dashboards_answer(monitoring: Monitoring, since: float) -> list[grafana.Answer]:
    """Every dashboard's panel queries as Grafana sends them for the time since the install
    began, with the dropdowns on the sample run (namespace bench, run ycsb-a) where a board has
    them, the others as a dashboard opens (All)."""
    return grafana.evaluate_boards(
        monitoring.url,
        grafana.load_boards(REPO / "dashboards" / "json"),
        {
            "benchmark-clients": {"namespace": "bench"},
            "benchmark-comparison": {"namespace": "bench", "run": "ycsb-a"},
            "benchmark-run": {"namespace": "bench", "run": "ycsb-a"},
        },
        since - 60,
        time.time(),
        scrape_interval=SCRAPE_SECONDS,
    )


def assert_dashboards_answer(answers: list[grafana.Answer]) -> None:
    shown = [a for a in answers if a.series]
    wrong = [
        f"{a.target.board} / {a.target.panel} ({a.target.ref}): "
        + ("empty" if not a.series else f"listed as empty ({why}) but shows data")
        + f": {a.promql}"
        for a in answers
        if bool(a.series) == bool(why := empty_because(a))
    ]
    print(f"dashboards: {len(answers)} panel queries checked, {len(shown)} returned data")
    assert not wrong, "\n".join(wrong)


def run_said(api: k8s.ApiClient) -> tuple[Any, list[Any]]:
    """What the sample run's status says, for a failure's message."""
    run = custom(api).get_namespaced_custom_object(GROUP, VERSION, "bench", "benchmarkruns",
                                                   "ycsb-a")  # fmt: skip
    status = run.get("status") or {}
    return status.get("conditions"), [step.get("message") for step in status.get("steps", [])]


def newer_charts(tmp: Path) -> dict[str, Path]:
    """This checkout's charts as a release 0.2.0 would change them: a CRD gains a printer column,
    a default changes (workers), both versions bump."""
    root = tmp / "charts-0.2.0"
    shutil.copytree(REPO / "charts", root, ignore=shutil.ignore_patterns("tests"))
    for chart in ("mongobench", "mongobench-crds"):
        meta = root / chart / "Chart.yaml"
        meta.write_text(meta.read_text().replace("version: 0.1.0", "version: 0.2.0"))
    crd_file = root / "mongobench-crds" / "files" / "mongobench.io_mongoclusters.yaml"
    crd = crd_file.read_text()
    assert "additionalPrinterColumns:\n" in crd
    column = "        - {name: Upgraded, type: string, jsonPath: .spec.version}\n"
    crd_file.write_text(
        crd.replace("additionalPrinterColumns:\n", f"additionalPrinterColumns:\n{column}", 1)
    )
    values = root / "mongobench" / "values.yaml"
    values.write_text(values.read_text().replace("workers: 16", "workers: 12"))
    return local_charts(root)


def printer_columns(api: k8s.ApiClient) -> list[str]:
    crd = k8s.ApiextensionsV1Api(api).read_custom_resource_definition(f"mongoclusters.{GROUP}")
    return [c.name for v in crd.spec.versions for c in v.additional_printer_columns or []]


def test_install_page_helm_install_on_eks_then_chart_readme_upgrade_changes_the_crds(
    make_plane: Any, stack: ExitStack, tmp_path: Path
) -> None:
    section = install_section()
    plane = make_plane(nodes=eks_nodes())
    api = plane.api_client()
    shell = Shell(plane, tmp_path, local_charts())
    stand_in = {k: (lambda: None) for k in SUBSTITUTED}
    stacks: list[Monitoring] = []
    stand_in["helm install kube-prometheus-stack"] = lambda: stacks.append(
        monitoring_prerequisite(plane, tmp_path, stack)
    )

    run_block(shell, block_after(section, "## Prerequisite: kube-prometheus-stack"), stand_in)
    waits = run_block(shell, block_after(section, "## EKS"), stand_in)
    assert len(waits) == 1 and "ycsb-a" in waits[0]
    operator = installed_operator(plane, tmp_path, "mongobench", "mongobench")
    try:
        # The operator reconciles the samples. Their gp3 volumes have no EBS CSI driver here, so
        # the members stay Pending: the run waits for its cluster (what this test stops at).
        wait_until(lambda: phase(api, "bench", "mongoclusters", "rs3"), 60, what="rs3 status")
        wait_until(lambda: phase(api, "bench", "benchmarkruns", "ycsb-a"), 60, what="run status")
        assert pod_monitor_labels(api, "bench", "rs3").items() >= STACK_LABELS.items()
        # Selected by the stack's Prometheus: a scrape job (its members, Pending, no target yet).
        (monitoring,) = stacks
        wait_until(lambda: "podMonitor/bench/rs3/0" in monitoring.scrape_pools(), 60,
                   what="rs3's scrape job")  # fmt: skip
        k8s.AppsV1Api(api).read_namespaced_stateful_set("rs3-rs0", "bench")
    finally:
        operator.stop()
    assert "Forbidden" not in (tmp_path / "operator.log").read_text()
    assert "Upgraded" not in printer_columns(api)

    # The chart README's upgrade, to a newer chart whose CRD changed.
    upgrade = command_lines(sh_blocks(CHART_README.read_text().split("## CRDs and upgrades")[1])[0])
    assert [line.split()[:3] for line in upgrade] == [
        ["helm", "upgrade", "mongobench-crds"],
        ["helm", "upgrade", "mongobench"],
    ]
    shell.charts = newer_charts(tmp_path)
    for line in upgrade:
        shell.run(line, **{"<new>": "0.2.0"})
    assert "Upgraded" in printer_columns(api)
    env = deployment_env(api, "mongobench", "mongobench")
    assert env["MONGOBENCH_WORKERS"] == "12"  # the new chart's default, taken
    assert env["MONGOBENCH_PROMETHEUS_URL"].startswith("http://kube-prometheus-stack")  # kept
    releases = json.loads(shell.run("helm list -n mongobench -o json"))
    assert {r["name"]: r["chart"] for r in releases} == {
        "mongobench-crds": "mongobench-crds-0.2.0",
        "mongobench": "mongobench-0.2.0",
    }
    # The user's resources went through the CRD upgrade untouched.
    assert phase(api, "bench", "mongoclusters", "rs3")
