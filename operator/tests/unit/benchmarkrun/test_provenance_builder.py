"""Unit tier: a run's provenance. The pure builder (benchmarkrun.build.provenance) is kept byte for
byte
in golden/provenance.json; regenerate after an intended change with

    UPDATE_GOLDEN=1 .venv/bin/pytest operator/tests/unit/benchmarkrun/test_provenance_builder.py

and read the diff. The I/O half (benchmarkrun.act.facts) runs against a MongoCluster the operator
provisioned in an in-memory API (fake_kube: its Secrets are the real generated ones) and an
in-memory MongoDB (fake_mongo) that reports those secrets on its command line: none may reach
the document."""

from __future__ import annotations

import base64
import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeKube, unit_clock
from fake_mongo import FakeMongo

from mongobench.benchmarkrun.act import facts
from mongobench.benchmarkrun.build import provenance as prov
from mongobench.config import OperatorConfig
from mongobench.k8s import conditions as cond
from mongobench.mongo.pool import AdminPool
from mongobench.mongocluster.act import reconcile
from mongobench_archive import layout
from mongobench_results import provenance as results_prov

pytestmark = pytest.mark.unit

NS = "ns"
GOLDEN = Path(__file__).parent / "golden" / "provenance.json"


def pod(name: str, node: str, image: str, digest: str | None, **labels: str) -> dict[str, Any]:
    status = {
        "image": image,
        "name": "main",
        "imageID": f"{image}@sha256:{digest}" if digest else "",
    }
    return {
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"nodeName": node},
        "status": {"containerStatuses": [status]},
    }


def node(name: str, instance_type: str, zone: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {
                prov.INSTANCE_TYPE: instance_type,
                prov.ZONE: zone,
                prov.REGION: "eu-west-1",
            },
        },
        "status": {
            "nodeInfo": {
                "kernelVersion": "6.1.0-18-cloud-amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.13",
                "kubeletVersion": "v1.32.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": "not kept",
            },
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "x"},
            "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "110"},
        },
    }


RUN = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "BenchmarkRun",
    "metadata": {"namespace": NS, "name": "r", "uid": "u-1", "generation": 1},
    "spec": {
        "clusterRef": {"name": "c"},
        "workloads": [{"name": "a", "properties": {"insertstart": "0"}}],
        "repetitions": 1,
    },
    "status": {
        "steps": [
            {
                "index": 1,
                "cpu": {"window": {"start": "2026-01-01T10:00:00Z", "end": "2026-01-01T10:01:00Z"}},
            },
            {
                "index": 2,
                "cpu": {"window": {"start": "2026-01-01T10:02:00Z", "end": "2026-01-01T10:03:00Z"}},
            },
        ]
    },
}
CLUSTER = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "MongoCluster",
    "metadata": {"namespace": NS, "name": "c", "uid": "c-1"},
    "spec": {"version": "7.0.14", "storage": {"size": "10Gi", "wiredTigerCacheSizeGB": 0.25}},
}
SECRET = "pa55-Word-from-a-Secret"


def golden_facts(previous: dict[str, Any] | None = None) -> prov.Facts:
    argv = ["mongod", "--replSet", "c-rs0", "--keyFile", "/etc/keyfile"]
    argv += ["--tlsCertificateKeyFilePassword", "pem-pass", "--setParameter", f"x={SECRET}"]
    return prov.Facts(
        run=RUN,
        cluster=CLUSTER,
        operator={
            "version": "0.1.0",
            "revision": "abc123",
            "image": "ghcr.io/mongobench/op@sha256:00",
        },
        kubernetes={"major": "1", "gitVersion": "v1.32.2", "platform": "linux/amd64"},
        pods=[
            ("database", pod("c-rs0-0", "n1", "mongo:7.0.14", "aa")),
            ("client", pod("r-run-a-1-0", "n2", "ghcr.io/mongobench/ycsb:0.1.0", "bb")),
        ],
        nodes=[node("n2", "m5.large", "eu-west-1b"), node("n1", "m5.xlarge", "eu-west-1a")],
        node_metrics={"n1": {"cpuModel": "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"}},
        servers=[
            prov.ServerObservation(
                "c-rs0-0.c-rs0-hl.ns.svc.cluster.local:27017",
                "replica",
                "c-rs0",
                {"version": "7.0.14", "gitVersion": "ce59cfc", "ok": 1.0},
                {
                    "argv": argv,
                    "parsed": {
                        "security": {"keyFile": "/etc/keyfile"},
                        "net": {"tls": {"certificateKeyFilePassword": "pem-pass"}},
                        "setParameter": {"x": SECRET},
                        "storage": {"wiredTiger": {"engineConfig": {"cacheSizeGB": 0.25}}},
                    },
                },
                {
                    "process": "mongod",
                    "storageEngine": {"name": "wiredTiger"},
                    "wiredTiger": {"cache": {"maximum bytes configured": 268435456}},
                },
            )
        ],
        fcv="7.0",
        prometheus=prov.prometheus_window(RUN["status"]["steps"], 15.0, "http://prom:9090"),
        seeds=prov.seeds(RUN, None),
        previous=previous,
        missing=["node-exporter info metrics: n2 has none"],
        secrets=[SECRET],
    )


def test_provenance_document_matches_golden() -> None:
    rendered = json.dumps(prov.build(golden_facts()), indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(rendered)
    assert GOLDEN.read_text() == rendered, "provenance changed; see the module docstring"


def test_golden_document_has_every_fact_and_its_summary_says_what_ran() -> None:
    doc = prov.build(golden_facts())
    assert [c["imageID"] for c in doc["containers"]] == [
        "mongo:7.0.14@sha256:aa",
        "ghcr.io/mongobench/ycsb:0.1.0@sha256:bb",
    ]
    assert {n["name"]: n["roles"] for n in doc["nodes"]} == {"n1": ["database"], "n2": ["client"]}
    assert doc["storage"] == {
        "engine": "wiredTiger",
        "cacheConfiguredGB": 0.25,
        "cacheStartedWithGB": 0.25,
        "cacheBytesInEffect": 268435456,
    }
    assert doc["prometheus"]["window"] == {
        "start": "2026-01-01T10:00:00Z",
        "end": "2026-01-01T10:03:00Z",
    }
    assert results_prov.summary(doc) == {
        "mongodVersion": "7.0.14",
        "gitVersion": "ce59cfc",
        "featureCompatibilityVersion": "7.0",
        "storageEngine": "wiredTiger",
        "cacheBytes": 268435456,
        "cacheConfiguredGB": 0.25,
        "imageDigests": 2,
        "instanceTypes": ["m5.large", "m5.xlarge"],
        "kubernetesVersion": "v1.32.2",
        "operatorVersion": "0.1.0",
    }


def test_secrets_are_redacted_by_option_name_and_by_value() -> None:
    text = json.dumps(prov.build(golden_facts()))
    assert SECRET not in text and "pem-pass" not in text
    server = prov.build(golden_facts())["servers"][0]
    assert server["cmdLineOpts"]["argv"][-3:] == [
        prov.REDACTED,
        "--setParameter",
        f"x={prov.REDACTED}",
    ]
    assert server["cmdLineOpts"]["parsed"]["security"]["keyFile"] == "/etc/keyfile"  # a path


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--auth", "--keyFile", "/k"], ["--auth", "--keyFile", "/k"]),
        (["--ldapQueryPassword=x1"], [f"--ldapQueryPassword={prov.REDACTED}"]),
        (
            ["--ldapQueryPassword", "x1", "--port", "1"],
            ["--ldapQueryPassword", prov.REDACTED, "--port", "1"],
        ),
        (
            ["--setParameter", "awsSecretKey=x1"],
            ["--setParameter", f"awsSecretKey={prov.REDACTED}"],
        ),
        (["--setParameter=oidcToken=x1"], [f"--setParameter=oidcToken={prov.REDACTED}"]),
        (["--setParameter", "x=1"], ["--setParameter", "x=1"]),
    ],
)
def test_argv_redaction(argv: list[str], expected: list[str]) -> None:
    assert prov.redact_argv(argv) == expected


def test_containers_of_pods_gone_since_are_kept_with_their_digests() -> None:
    first = prov.build(golden_facts())
    later = prov.build(
        prov.Facts(
            **{
                **golden_facts(first).__dict__,
                "pods": [("database", pod("c-rs0-0", "n1", "mongo:7.0.14", None))],
                "nodes": [node("n1", "m5.xlarge", "eu-west-1a")],
                "servers": [],
                "fcv": None,
            }
        )
    )
    assert [c["pod"] for c in later["containers"]] == ["c-rs0-0", "r-run-a-1-0"]
    assert later["containers"][0]["imageID"] == "mongo:7.0.14@sha256:aa"  # not forgotten
    assert [n["name"] for n in later["nodes"]] == ["n1", "n2"]
    assert later["servers"] == first["servers"] and later["featureCompatibilityVersion"] == "7.0"


def test_node_exporter_info_matches_nodes_by_uname_or_by_label() -> None:
    def series(value: str = "1", **labels: str) -> dict[str, Any]:
        return {"metric": labels, "value": [0, value]}

    got = prov.info_by_node(
        ["n1", "n2"],
        {"n1": "host-a", "n2": "n2"},
        uname=[series(instance="10.0.0.1:9100", nodename="host-a")],
        cpu_info=[series(instance="10.0.0.1:9100", model_name="AMD EPYC 7R13", cpu="0")],
        os_info=[series(instance="10.0.0.1:9100", pretty_name="Debian 12", id="debian")],
        huge_pages=[series("2097152", instance="10.0.0.1:9100")],
    )
    assert got == {
        "n1": {
            "cpuModel": "AMD EPYC 7R13",
            "os": {"pretty_name": "Debian 12", "id": "debian"},
            "transparentHugePages": {"anonHugePagesBytes": 2097152, "inUse": True},
        }
    }  # n2 exposes nothing: absent, not an error
    shared = prov.info_by_node(  # two nodes aliased to one host (the local plane's)
        ["n1", "n2"],
        {"n1": "host-a", "n2": "host-a"},
        uname=[series(instance="h:9100", nodename="host-a")],
        cpu_info=[series(instance="h:9100", model_name="AMD EPYC 7R13")],
        os_info=[],
        huge_pages=[],
    )
    assert shared == {"n1": {"cpuModel": "AMD EPYC 7R13"}, "n2": {"cpuModel": "AMD EPYC 7R13"}}
    by_label = prov.info_by_node(
        ["n2"], {}, uname=[], cpu_info=[series(node="n2", model_name="Graviton3")],
        os_info=[], huge_pages=[], label="node",
    )  # fmt: skip
    assert by_label == {"n2": {"cpuModel": "Graviton3"}}


# --- the I/O half, against a provisioned cluster ------------------------------------------------


@pytest.fixture
def mongo(monkeypatch: pytest.MonkeyPatch) -> FakeMongo:
    fake = FakeMongo()
    monkeypatch.setattr(reconcile, "MongoAdmin", lambda connector: fake)
    return fake


@pytest.fixture
def admins() -> Iterator[AdminPool]:
    pool = AdminPool()
    yield pool
    pool.close()


def secret_values(kube: FakeKube) -> list[str]:
    return [
        base64.b64decode(v).decode()
        for s in kube.list("Secret", NS)
        for k, v in (s.get("data") or {}).items()
        if k in ("password", "keyfile", "uri")
    ]


def test_collected_provenance_holds_no_secret_of_the_cluster(
    mongo: FakeMongo, admins: AdminPool
) -> None:
    kube = FakeKube()
    cluster = kube.put(
        {
            **copy.deepcopy(CLUSTER),
            "spec": {"version": "7.0.14", "topology": {"type": "ReplicaSet"}},
            "status": {"phase": cond.PHASE_READY},
        }
    )
    reconcile.provision(kube, cluster, unit_clock(), OperatorConfig())
    secrets = secret_values(kube)
    assert len(secrets) >= 4  # keyfile, admin, operator, benchmark passwords
    # A server started with every one of them on its command line, as mongod reports it.
    mongo.argv_extra = [arg for s in secrets for arg in ("--setParameter", f"opt={s}")]
    mongo.argv_extra += ["--clusterAuthPassword", secrets[0]]
    kube.put(
        {
            **pod("c-rs0-0", "n1", "mongo:7.0.14", "aa", **{"mongobench.io/cluster": "c"}),
            "kind": "Pod",
        }
    )
    kube.put({**node("n1", "m5.xlarge", "eu-west-1a"), "kind": "Node", "apiVersion": "v1"})
    observed = facts.collect(
        kube, RUN, kube.get("MongoCluster", NS, "c"), OperatorConfig(), admins=admins, previous=None
    )
    doc = prov.build(observed)
    data = layout.encode(doc)
    assert not layout.find_secret(data, secrets)
    assert doc["specs"]["mongoCluster"]["spec"]["topology"] == {"type": "ReplicaSet"}  # intact
    assert doc["featureCompatibilityVersion"] == "7.0"
    assert [(s["role"], s["buildInfo"]["gitVersion"]) for s in doc["servers"]] == [
        ("replica", "ce59cfc6a3c5e5c067dca0d30697edd68d4f5188")
    ] * 3  # every member of the default three
    assert doc["kubernetes"]["gitVersion"] == "v1.32.2"
    assert doc["nodes"][0]["instanceType"] == "m5.xlarge"
    assert doc["containers"][0]["imageID"] == "mongo:7.0.14@sha256:aa"
    # Asked once: the next upload keeps what the servers said.
    calls = len(mongo.calls)
    again = facts.collect(
        kube, RUN, kube.get("MongoCluster", NS, "c"), OperatorConfig(), admins=admins, previous=doc
    )
    assert len(mongo.calls) == calls and prov.build(again)["servers"] == doc["servers"]


def test_node_metrics_come_from_prometheus_and_a_failure_is_named_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {
        "node_uname_info": [
            {"metric": {"instance": "h:9100", "nodename": "host-a"}, "value": [0, "1"]}
        ],
        "node_cpu_info": [
            {"metric": {"instance": "h:9100", "model_name": "Xeon"}, "value": [0, "1"]}
        ],
        "node_os_info": [],
        "node_memory_AnonHugePages_bytes": [],
    }
    asked: list[str] = []

    def instant(url: str, promql: str) -> list[dict[str, Any]]:
        asked.append(promql)
        return vectors[promql]

    monkeypatch.setattr(facts, "_instant", instant)
    config = OperatorConfig(
        prometheus_url="http://127.0.0.1:9090", prometheus_node_aliases=(("n1", "host-a"),)
    )
    missing: list[str] = []
    assert facts.node_metrics(config, ["n1"], missing) == {"n1": {"cpuModel": "Xeon"}}
    assert missing == [] and set(asked) == set(vectors)
    assert facts.node_metrics(OperatorConfig(), ["n1"], missing) == {}  # no Prometheus

    def down(url: str, promql: str) -> list[dict[str, Any]]:
        raise OSError("connection refused")

    monkeypatch.setattr(facts, "_instant", down)
    assert facts.node_metrics(config, ["n1"], missing) == {}
    assert missing == ["node-exporter info metrics: connection refused"]


def test_operator_build_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(facts.REVISION_ENV, "0123abc")
    monkeypatch.setenv(facts.IMAGE_ENV, "ghcr.io/mongobench/operator@sha256:00")
    build = facts.operator_build()
    assert build["version"] and build["revision"] == "0123abc"
    assert build["image"] == "ghcr.io/mongobench/operator@sha256:00"
