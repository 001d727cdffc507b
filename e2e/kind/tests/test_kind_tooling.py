"""What of `make e2e-kind` can be checked without Docker.

Unit tier: the kind config as kind itself loads it (kind's own loader and validation, built from
the pinned kind module: kind-configcheck); the chart as the suite installs it, rendered by helm and
valid for kubeconform -strict; the suite's custom resources valid for the CRDs; e2e.sh refusing
clearly when Docker, kind or kubectl is missing. Cluster tier: collect.sh against the local plane.
Not run here: kind itself, Docker, the images, kube-prometheus-stack, real mongod (the suite on
its kind backend, in CI: .github/workflows/e2e-kind.yaml).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from backends.kind import OPERATOR_NAMESPACE, PROMETHEUS
from backends.manifests import (
    CLIENT_NODES,
    DATABASE_NODES,
    NEW_VERSION,
    OLD_VERSION,
    RESULT_PART_BYTES,
    SUPPORTED_VERSIONS,
    benchmarkrun,
    mongocluster,
    replica_set,
    sharded,
)
from localplane.monitoring import prometheus_resource
from localplane.plane import Plane, kubectl_path
from localplane.schemas import REPO_CRDS, load_crds, validate
from localplane.tools import REPO, binary, prometheus_operator_crds, versions

KIND = REPO / "e2e" / "kind"
E2E_SH = KIND / "e2e.sh"
COLLECT = KIND / "collect.sh"


def configcheck(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary("kind-configcheck")), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


@pytest.mark.unit
def test_kind_config_is_what_kinds_own_loader_makes_of_it() -> None:
    proc = configcheck(
        KIND / "kind-config.yaml", REPO / "manifests/platforms/kind/kind-config.yaml"
    )
    assert proc.returncode == 0, proc.stderr
    e2e, recipe = (json.loads(line) for line in proc.stdout.splitlines())
    assert e2e["name"] == "mongobench-e2e"
    assert [n["role"] for n in e2e["nodes"]] == ["control-plane", "worker", "worker", "worker"]
    workers = [n["labels"] for n in e2e["nodes"] if n["role"] == "worker"]
    assert workers == [DATABASE_NODES, DATABASE_NODES, CLIENT_NODES]  # as the suite places pods
    # kind's CNI replaced by Calico (e2e.sh), on Calico's default pool, so policies are enforced
    # (the loader above accepted the fields; read from the file, as it prints nodes only).
    networking = yaml.safe_load((KIND / "kind-config.yaml").read_text())["networking"]
    assert networking == {"disableDefaultCNI": True, "podSubnet": "192.168.0.0/16"}
    # Every node on the pinned image, by digest, named in both files: a kind of another version
    # than the pinned one would otherwise pick its own default node image.
    assert {n["image"] for n in e2e["nodes"]} == {versions()["KIND_NODE_IMAGE"]}
    assert {n["image"] for n in recipe["nodes"]} == {versions()["KIND_NODE_IMAGE"]}
    for path in (KIND / "kind-config.yaml", REPO / "manifests/platforms/kind/kind-config.yaml"):
        nodes = yaml.safe_load(path.read_text())["nodes"]
        assert {n.get("image") for n in nodes} == {versions()["KIND_NODE_IMAGE"]}, path
    # ... a Kubernetes the chart accepts (kubeVersion >=1.30).
    minor = re.match(r"kindest/node:v1\.(\d+)\.", versions()["KIND_NODE_IMAGE"])
    assert minor and int(minor.group(1)) >= 30


@pytest.mark.unit
def test_kind_config_checker_refuses_what_kind_would(tmp_path: Path) -> None:
    config = yaml.safe_load((KIND / "kind-config.yaml").read_text())
    typo = config | {"nodes": [{**config["nodes"][0], "lables": {"a": "b"}}]}
    no_control_plane = config | {"nodes": config["nodes"][1:]}
    bad_name = config | {"name": "Mongobench_E2E"}
    for name, doc, words in (
        ("typo", typo, "field lables not found"),
        ("workers-only", no_control_plane, "must have at least one control-plane node"),
        ("name", bad_name, "is not a valid cluster name"),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        proc = configcheck(path)
        assert proc.returncode == 1 and words in proc.stderr, (name, proc.stderr)


def helm_template(*args: str) -> str:
    proc = subprocess.run(
        [str(binary("helm")), "template", "mongobench", str(REPO / "charts" / "mongobench"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.unit
def test_the_chart_as_the_suite_installs_it_is_valid_and_wired_to_the_stack() -> None:
    text = helm_template(
        "--namespace",
        OPERATOR_NAMESPACE,
        "-f",
        str(KIND / "values" / "mongobench.yaml"),
        "--api-versions=monitoring.coreos.com/v1/ServiceMonitor",
        "--api-versions=monitoring.coreos.com/v1/PodMonitor",
    )
    promop = prometheus_operator_crds()
    crds = load_crds(REPO_CRDS) + load_crds(
        promop / "monitoring.coreos.com_servicemonitors.yaml",
        promop / "monitoring.coreos.com_podmonitors.yaml",
    )
    assert validate(text, crds, kubernetes="1.32.0") == []
    docs = [d for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    namespace, service, port = PROMETHEUS
    assert env["MONGOBENCH_PROMETHEUS_URL"] == (
        f"http://{service.removeprefix('svc/')}.{namespace}:{port}"
    )
    assert env["MONGOBENCH_NAMESPACES"] == ""  # every namespace: each scenario makes its own
    assert env["MONGOBENCH_RESULT_PART_BYTES"] == RESULT_PART_BYTES  # as the local backend
    # The image `make images` builds and `make kind-load` loads, never pulled.
    images = subprocess.run(
        ["bash", str(REPO / "hack" / "images.sh"), "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert container["image"] in images and container["imagePullPolicy"] == "Never"
    monitors = [d for d in docs if d["kind"] in ("ServiceMonitor", "PodMonitor")]
    assert sorted(d["kind"] for d in monitors) == ["PodMonitor", "ServiceMonitor"]
    assert all(d["metadata"]["labels"]["release"] == "kube-prometheus-stack" for d in monitors)
    # ... and the operator labels the MongoClusters' PodMonitors alike (chart defaults).
    assert env["MONGOBENCH_MONITOR_LABELS"] == '{"release":"kube-prometheus-stack"}'


@pytest.mark.unit
def test_the_stack_selects_monitors_as_a_stock_install_does() -> None:
    # No `*SelectorNilUsesHelmValues: false`: the suite proves the labels a user gets by default.
    values = (KIND / "values" / "kube-prometheus-stack.yaml").read_text()
    assert "NilUsesHelmValues" not in values


@pytest.mark.unit
def test_the_local_planes_prometheus_selects_the_chart_as_this_suites_stack_does() -> None:
    # Unit tier: the cluster tier's kube-prometheus-stack (localplane.monitoring, the real
    # Prometheus Operator) selects the monitors of the chart installed as this suite installs
    # it, by the same stock labels, so both tiers scrape the same monitors.
    text = helm_template(
        "--namespace", OPERATOR_NAMESPACE, "-f", str(KIND / "values" / "mongobench.yaml"),
        "--api-versions=monitoring.coreos.com/v1/ServiceMonitor",
        "--api-versions=monitoring.coreos.com/v1/PodMonitor",
    )  # fmt: skip
    spec = prometheus_resource("5s")["spec"]
    wanted = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor"}
    monitors = [d for d in yaml.safe_load_all(text) if d and d["kind"] in wanted]
    assert len(monitors) == 2
    for monitor in monitors:
        selector = spec[f"{wanted[monitor['kind']]}Selector"]["matchLabels"]
        assert selector.items() <= monitor["metadata"]["labels"].items(), monitor["metadata"]
        assert spec[f"{wanted[monitor['kind']]}NamespaceSelector"] == {}  # every namespace


@pytest.mark.unit
def test_the_suites_custom_resources_are_valid_for_the_crds() -> None:
    fcv = ".".join(NEW_VERSION.split(".")[:2])
    documents: list[dict[str, Any]] = [
        mongocluster("rs3", replica_set(3), OLD_VERSION),
        mongocluster("up", replica_set(3), NEW_VERSION, featureCompatibilityVersion=fcv),
        mongocluster("sh", sharded(2, members_per_shard=3, config_servers=3, mongos=2)),
        mongocluster("del", replica_set(1), deletionPolicy="Delete"),
        mongocluster("guarded", replica_set(1), networkPolicy={"enabled": True}),
        benchmarkrun("af", "sh", sharding={"key": "_id", "hashed": True, "preSplitChunks": 4}),
        benchmarkrun(  # the hashed-zones scenario's run
            "hz", "sh", sharding={"key": "_id", "zones": [{"name": "all", "shards": ["sh-shard1"]}]}
        ),
        mongocluster("shup", sharded(1), OLD_VERSION, featureCompatibilityVersion="6.0"),
        benchmarkrun(
            "c", "sh", workloads=[{"name": "c"}], cleanup={"jobs": "Never", "data": "OnSuccess"}
        ),
    ]
    text = "\n---\n".join(yaml.safe_dump(d) for d in documents)
    assert validate(text, load_crds(REPO_CRDS)) == []


def fake_tool(bindir: Path, name: str, script: str) -> None:
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


@pytest.mark.unit
def test_kind_loads_a_mongo_image_for_every_release_the_suite_runs() -> None:
    # The suite parametrises `version` over SUPPORTED_VERSIONS on kind; an image it does not load
    # onto the database nodes would be pulled mid-scenario (or not at all offline).
    proc = subprocess.run(
        ["bash", str(E2E_SH), "images"], capture_output=True, text=True, check=True, timeout=30
    )
    mongo = [i for i in proc.stdout.split() if i.startswith("mongo:")]
    assert mongo == [f"mongo:{v}" for v in SUPPORTED_VERSIONS]
    assert [v.split(".")[:2] for v in SUPPORTED_VERSIONS] == [
        ["5", "0"],
        ["6", "0"],
        ["7", "0"],
        ["8", "0"],
    ]
    assert {OLD_VERSION, NEW_VERSION} <= set(SUPPORTED_VERSIONS)  # the upgrade scenario's pair


@pytest.mark.unit
def test_e2e_kind_refuses_clearly_without_docker_kind_or_kubectl(tmp_path: Path) -> None:
    # Only what the script needs before it refuses: no docker, kind or kubectl of this machine.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "dirname", "date", "awk", "cat"):
        found = subprocess.run(
            ["sh", "-c", f"command -v {tool}"], capture_output=True, text=True, check=True
        )
        (bindir / tool).symlink_to(found.stdout.strip())

    def check() -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(bindir), "HOME": str(tmp_path)}
        return subprocess.run(
            [str(bindir / "bash"), str(E2E_SH), "check"],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )

    no_docker = check()
    assert no_docker.returncode == 2
    assert "Docker is not installed" in no_docker.stderr and "make test-e2e" in no_docker.stderr

    fake_tool(bindir, "docker", "exit 1")  # installed, daemon down
    assert "does not answer" in check().stderr

    fake_tool(bindir, "docker", "exit 0")
    no_kind = check()
    assert no_kind.returncode == 2
    assert f"go install sigs.k8s.io/kind@{versions()['KIND_VERSION']}" in no_kind.stderr

    fake_tool(bindir, "kind", "echo 'kind v0.20.0 go1.20 linux/amd64'")
    old_kind = check()
    assert old_kind.returncode == 2 and "kubectl is not installed" in old_kind.stderr
    assert f"the suite pins {versions()['KIND_VERSION']}" in old_kind.stderr  # a warning


@pytest.mark.cluster
def test_collect_gathers_objects_events_and_logs_but_no_secret(
    plane: Plane, namespace: str, tmp_path: Path
) -> None:
    secret_value = "not-to-be-collected-4711"
    plane.kubectl(
        "create", "secret", "generic", "mc-admin", "-n", namespace,
        f"--from-literal=password={secret_value}",
    )  # fmt: skip
    cluster = mongocluster("mc", replica_set(1))
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(cluster))
    plane.kubectl(
        "create", "configmap", "notes", "-n", namespace, "--from-literal=k=v",
    )  # fmt: skip
    bindir = tmp_path / "bin"
    bindir.mkdir()
    kubectl = bindir / "kubectl"
    kubectl.write_text(
        f'#!/bin/sh\nexec "{kubectl_path()}" --kubeconfig="{plane.kubeconfig}" "$@"\n'
    )
    kubectl.chmod(0o755)
    out = tmp_path / "artifacts"
    proc = subprocess.run(
        ["bash", str(COLLECT), str(out), namespace],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECTL": str(kubectl)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "kind-worker" in (out / "nodes.txt").read_text()
    ns = out / namespace
    assert "Kind:         MongoCluster" in (ns / "describe-custom.txt").read_text()
    assert "name: mc" in (ns / "custom-resources.yaml").read_text()
    assert "notes" in (ns / "describe.txt").read_text()
    assert (ns / "events.txt").is_file() and (ns / "logs").is_dir()
    encoded = base64.b64encode(secret_value.encode()).decode()
    for f in out.rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert secret_value not in text and encoded not in text, f
