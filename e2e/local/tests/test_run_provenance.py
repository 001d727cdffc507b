"""Cluster tier: a run's provenance, collected by the operator and archived with the run.

What is real: the apiserver (its /version, server-side dry run), the operator process, KWOK
nodes (their nodeInfo and the labels this test gives them), the harness kubelets (they report
each container's imageID), the benchmark clients against FerretDB, Prometheus with a real
node-exporter (the CPU model, the OS, huge pages), and the S3 store (moto on loopback). The
MongoCluster's members are the wire model (localplane.mongomodel): buildInfo, getCmdLineOpts,
serverStatus and the FCV as it answers them; the test makes it report the cluster's real
passwords on its command line, and none may reach the archive.

`compare` is shown a copy of the archived run whose provenance says another FCV and instance
type (edited, written with the archive package as the operator writes a run): it must flag both.
`rerun` writes the manifests that recreate the run; the apiserver admits them (server-side dry
run) and the recreated run's spec is the original's, but for names and images pinned by digest.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# One way to drive a real run, and to read its archive.
import test_archive as arch
import test_benchmarkrun as bmr
import yaml
from kubernetes import client as k8s
from typer.testing import CliRunner

from localplane.mongomodel import MongoModel
from localplane.plane import Plane
from localplane.s3server import ACCESS_KEY, SECRET_KEY, S3Server
from mongobench_archive import layout, open_root
from mongobench_cli.app import app
from mongobench_results.provenance import summary

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor
BUCKET = arch.BUCKET
LABELS = {
    "node.kubernetes.io/instance-type": "m5.xlarge",
    "topology.kubernetes.io/zone": "eu-west-1a",
    "topology.kubernetes.io/region": "eu-west-1",
}


@pytest.fixture
def labelled_nodes(kube_api: k8s.ApiClient) -> Iterator[list[str]]:
    """Every node labelled as a cloud node is (the plane's kind nodes carry no instance type);
    the labels are taken off again for the session's other tests."""
    core = k8s.CoreV1Api(kube_api)
    names = [n.metadata.name for n in core.list_node().items]
    for name in names:
        core.patch_node(name, {"metadata": {"labels": LABELS}})
    try:
        yield names
    finally:
        for name in names:
            core.patch_node(name, {"metadata": {"labels": dict.fromkeys(LABELS)}})


def cli(*args: str) -> str:
    env = {
        "COLUMNS": "250",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "KUBECONFIG": "/nonexistent",
    }
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def secret_values(core: k8s.CoreV1Api, namespace: str) -> list[str]:
    values = []
    for s in core.list_namespaced_secret(namespace).items:
        for k, v in (s.data or {}).items():
            if k in ("password", "keyfile", "uri"):  # not the usernames beside them
                values.append(base64.b64decode(v).decode(errors="replace"))
    return values


def edited_copy(archived: Any, folder: Path, name: str, edit: Any) -> None:
    """The archived run, object for object, into a folder under another name, its provenance
    changed by `edit`; the manifest last."""
    writer = open_root(str(folder)).writer(archived.namespace, name, archived.uid)
    for key in archived.keys():  # noqa: SIM118 - the manifest's keys
        if key in (layout.RUN, layout.PROVENANCE):
            continue
        writer.put_bytes(key, archived.read_bytes(key))
    prov = copy.deepcopy(archived.provenance)
    edit(prov)
    writer.put_json(layout.PROVENANCE, prov)
    run = copy.deepcopy(archived.run)
    run["metadata"]["name"] = name
    writer.put_manifest(run, archived.phase, archived.complete)


def test_archived_run_has_complete_provenance_no_secret_compare_flags_and_rerun_is_admitted(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: Any,
    prometheus: str,
    s3server: S3Server,
    labelled_nodes: list[str],
    tmp_path: Path,
) -> None:
    core = k8s.CoreV1Api(kube_api)
    env = arch.operator_env(
        s3server.endpoint,
        MONGOBENCH_REVISION="0123abc",
        MONGOBENCH_IMAGE="ghcr.io/mongobench/operator@sha256:" + "1" * 64,
    )
    operator = bmr.start(plane, namespace, model, tmp_path / "op.log", prometheus, kube_api, **env)
    try:
        bmr.cluster(plane, namespace, kube_api)
        secrets = secret_values(core, namespace)
        assert len(secrets) >= 4  # the keyfile and the users' passwords
        # mongod reports its command line verbatim: the real passwords are on it now.
        model.extra_options = {f"opt{i}": s for i, s in enumerate(secrets)}
        model.extra_options["ldapQueryPassword"] = secrets[0]
        bmr.apply(plane, namespace, bmr.run_manifest("prov", **arch.SMALL))
        run = bmr.wait_run(kube_api, namespace, "prov", ("Succeeded", "Failed"))
        assert run["status"]["phase"] == "Succeeded"
        run = arch.wait_archived(kube_api, namespace, "prov")
    finally:
        operator.stop()

    [archived] = arch.archived(s3server).runs()
    assert layout.PROVENANCE in archived.keys()  # noqa: SIM118 - listed by the manifest
    prov = archived.provenance
    assert prov is not None
    # The resolved specs, as the apiserver stored them.
    assert prov["specs"]["benchmarkRun"]["spec"] == run["spec"]
    cluster_obj = bmr.get(kube_api, namespace, "mongoclusters", "bc")
    assert prov["specs"]["mongoCluster"]["spec"] == cluster_obj["spec"]
    # The operator's version and build.
    assert prov["operator"]["version"] and prov["operator"]["revision"] == "0123abc"
    assert prov["operator"]["image"] == env["MONGOBENCH_IMAGE"]
    # Every container's image and digest as the kubelets reported them, database and clients.
    pods = core.list_namespaced_pod(namespace).items
    reported = {
        (p.metadata.name, c.name): c.image_id
        for p in pods
        for c in p.status.container_statuses or []
    }
    seen = {(c["pod"], c["container"]): c for c in prov["containers"]}
    assert {c["role"] for c in seen.values()} == {"database", "client"}
    assert all("@sha256:" in str(c["imageID"]) for c in seen.values())
    for key, image_id in reported.items():
        if key in seen:
            assert seen[key]["imageID"] == image_id
    assert any(c["role"] == "client" for c in seen.values())  # their pods are gone by now
    # What the servers say of themselves.
    [server] = prov["servers"]
    assert server["buildInfo"]["version"] == "7.0.14"
    assert server["buildInfo"]["gitVersion"] == model.git_version
    assert server["cmdLineOpts"]["parsed"]["security"]["keyFile"]
    assert "ldapQueryPassword=<redacted>" in server["cmdLineOpts"]["argv"]
    assert prov["featureCompatibilityVersion"] == "7.0"
    assert prov["storage"]["engine"] == "wiredTiger"
    assert prov["storage"]["cacheBytesInEffect"] == model.cache_bytes
    assert prov["storage"]["cacheStartedWithGB"] == model.cache_bytes / 1024**3
    # Node facts, from the Nodes and from node-exporter.
    assert prov["nodes"]
    for n in prov["nodes"]:
        assert n["name"] in labelled_nodes
        assert n["kernelVersion"] and n["osImage"] and n["containerRuntimeVersion"]
        assert n["kubeletVersion"] and n["capacity"]["cpu"] and n["allocatable"]["memory"]
        assert (n["instanceType"], n["zone"], n["region"]) == tuple(LABELS.values())
        assert n["cpuModel"] and n["os"]["pretty_name"]
        assert isinstance(n["transparentHugePages"]["anonHugePagesBytes"], int)
    assert prov["kubernetes"]["gitVersion"] == "v1.32.2"
    assert prov["prometheus"]["scrapeIntervalSeconds"] == 1.0
    assert prov["prometheus"]["window"]["start"] < prov["prometheus"]["window"]["end"]
    assert set(prov["seeds"]) >= {"ycsb", "locust"}
    # Its summary in status.
    assert run["status"]["provenance"] == summary(prov)
    assert run["status"]["provenance"]["instanceTypes"] == ["m5.xlarge"]

    # No secret anywhere in the archive: not the S3 keys, not the cluster's Secrets.
    client = s3server.client()
    for key in s3server.keys(BUCKET):
        data = client.get_object(BUCKET, key).read()
        for secret in [SECRET_KEY, *secrets]:
            assert secret.encode() not in data, key

    # compare: the same run against a copy whose FCV and instance type differ.
    def other_cluster(p: dict[str, Any]) -> None:
        p["featureCompatibilityVersion"] = "6.0"
        for n in p["nodes"]:
            n["instanceType"] = "m6i.xlarge"

    copy_root = tmp_path / "other"
    edited_copy(archived, copy_root, "prov-other", other_cluster)
    where = archived.location
    args = ("--s3-endpoint", s3server.endpoint, "--s3-region", "us-east-1")
    out = json.loads(
        cli("compare", where, str(copy_root), "-o", "json", "--allow-incomparable", *args)
    )
    flagged = {d["field"] for d in out["provenanceDifferences"] if d["changesResults"]}
    assert flagged == {"featureCompatibilityVersion", "instanceTypes"}
    table = cli("compare", where, str(copy_root), "--allow-incomparable", *args)
    assert "feature compatibility version 6.0 vs 7.0" in table
    assert "(changes results)" in table
    assert "Provenance" in cli("describe", where, *args)

    # rerun: admitted by the apiserver, and the same run but for names and pinned images.
    manifests = cli("rerun", where, "--name", "prov-again", *args)
    admitted = plane.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-o", "json", "-f", "-", input=manifests
    )
    objects = json.loads(admitted.stdout)
    items = objects["items"] if objects.get("kind") == "List" else [objects]
    by_kind = {o["kind"]: o for o in items}
    assert set(by_kind) == {"MongoCluster", "BenchmarkRun"}
    recreated = by_kind["BenchmarkRun"]["spec"]
    assert recreated["clusterRef"] == {"name": "prov-again-cluster"}
    assert "@sha256:" in recreated["image"]
    strip = ("clusterRef", "image")
    original = {k: v for k, v in run["spec"].items() if k not in strip}
    assert {k: v for k, v in recreated.items() if k not in strip} == original
    cluster_spec = by_kind["MongoCluster"]["spec"]
    assert cluster_spec["image"].startswith("mongo@sha256:")

    def unpinned(spec: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k != "image"}
        out["monitoring"] = {
            k: v for k, v in (spec.get("monitoring") or {}).items() if k != "exporterImage"
        }
        return out

    assert unpinned(cluster_spec) == unpinned(cluster_obj["spec"])
    assert yaml.safe_load_all(manifests)  # plain YAML documents, as kubectl takes them
