"""Unit tier: the names the operator derives from metadata.name, at the largest sizes the spec
allows, are names Kubernetes accepts; one character more is refused, by the CRDs' CEL rules and
by the operator alike, with the same limit.

The name rules (localplane.specgen.name_problems) are Kubernetes' own (apimachinery
validation: DNS-1123 label and subdomain, DNS-1035 label, label values, and the 52-character
StatefulSet limit that the controller-revision-hash label imposes). The cluster tier checks
generated objects with a server-side dry run against a real apiserver
(e2e/local/tests/test_spec_dry_run.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localplane.specgen import DNS_1035_LABEL, DNS_1123_LABEL, name_problems
from mongobench.api import BenchmarkRunSpec, MongoClusterSpec, SpecError
from mongobench.api.names import (
    MAX_BENCHMARKRUN_NAME,
    MAX_MONGOCLUSTER_NAME,
    check_benchmarkrun_name,
    check_mongocluster_name,
)
from mongobench.benchmarkrun.build.jobs import RunRef, barrier_name, build_client_rbac, build_job
from mongobench.benchmarkrun.decide.plan import make_plan
from mongobench.mongocluster.build import secrets as cluster_secrets
from mongobench.mongocluster.build.generate import GeneratedSecrets
from mongobench.mongocluster.build.layout import cluster_layout
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PRESETS
from mongobench.mongocluster.build.secrets import build_secrets

pytestmark = pytest.mark.unit

CRDS = Path(__file__).resolve().parents[2].parent / "crds"

SECRETS = GeneratedSecrets("k" * 44, "a", "b", "c", "d")


def largest_cluster(topology: str) -> MongoClusterSpec:
    shape: dict[str, Any] = (
        {
            "type": "Sharded",
            "sharded": {"shards": 64, "membersPerShard": 50, "configServers": 50, "mongos": 64},
        }
        if topology == "Sharded"
        else {"type": "Standalone"}
        if topology == "Standalone"
        else {"type": "ReplicaSet", "replicaSet": {"members": 50}}
    )
    return MongoClusterSpec.parse({"version": "7.0.14", "topology": shape})


@pytest.mark.parametrize("topology", ["ReplicaSet", "Sharded", "Standalone"])
def test_longest_cluster_name_gives_valid_children_at_the_largest_shape(topology: str) -> None:
    name = "c" + "x" * (MAX_MONGOCLUSTER_NAME[topology] - 1)
    spec = largest_cluster(topology)
    layout = cluster_layout(name, "ns", spec)
    objects = build_secrets(spec, layout, SECRETS) + build_workload_objects(
        spec, layout, PRESETS["kind"]
    )
    assert len([o for o in objects if o["kind"] == "StatefulSet"]) == (
        65 if topology == "Sharded" else 1
    )
    assert [p for o in objects for p in name_problems(o)] == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my.cluster", "Service my.cluster-rs0-hl: not a DNS-1035 label"),
        ("c" * 60, "controller-revision-hash label would exceed 63"),
    ],
)
def test_the_names_of_the_issue_would_give_children_kubernetes_refuses(
    name: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above is not vacuous: without the name rule, these children are invalid."""
    monkeypatch.setattr("mongobench.mongocluster.build.layout._check_names", lambda *_: None)
    spec = largest_cluster("ReplicaSet")
    objects = build_workload_objects(spec, cluster_layout(name, "ns", spec), PRESETS["kind"])
    assert any(expected in p for o in objects for p in name_problems(o))


@pytest.mark.parametrize("topology", ["ReplicaSet", "Sharded", "Standalone"])
def test_one_character_more_is_refused_naming_the_limit(topology: str) -> None:
    longest = MAX_MONGOCLUSTER_NAME[topology]
    with pytest.raises(SpecError, match=rf"metadata.name: .* at most {longest} are allowed"):
        cluster_layout("c" * (longest + 1), "ns", largest_cluster(topology))


@pytest.mark.parametrize("name", ["my.cluster", "1cluster", "Cluster", "cluster-", "a_b"])
def test_cluster_names_that_are_no_dns_1035_label_are_refused(name: str) -> None:
    with pytest.raises(SpecError, match=r"metadata.name: .* is not a DNS-1035 label"):
        check_mongocluster_name(name, "ReplicaSet")


def test_longest_run_name_gives_valid_jobs_barriers_and_client_rbac() -> None:
    name = "r" + "x" * (MAX_BENCHMARKRUN_NAME - 1)
    spec = BenchmarkRunSpec.parse(
        {
            "clusterRef": {"name": "c"},
            "workloads": [{"name": "w" * 32, "base": "a"}, *({"name": x} for x in "abcdef")],
            "repetitions": 28,
            "warmup": {"operationCount": 1},
            "clients": {"parallelism": 64},
        }
    )
    run = RunRef(name, "ns", "uid", "c-connection", "uri", "c", "image")
    steps = make_plan(spec)
    objects = [build_job(spec, s, run) for s in steps if s.runs_job]
    objects += build_client_rbac(run, steps)
    objects += [{"kind": "ConfigMap", "metadata": {"name": barrier_name(run, s)}} for s in steps]
    # Results: <job>-c<index>-p<part>, for the last client and a large part number.
    objects += [
        {"kind": "ConfigMap", "metadata": {"name": f"{j['metadata']['name']}-c63-p999"}}
        for j in objects
        if j["kind"] == "Job"
    ]
    assert [p for o in objects for p in name_problems(o)] == []
    rbac = {o["metadata"]["name"] for o in build_client_rbac(run, steps)}
    assert rbac == {f"{name}-client"}  # not cut: two runs never share one


def test_run_name_one_character_longer_or_not_a_label_is_refused() -> None:
    with pytest.raises(SpecError, match=rf"at most {MAX_BENCHMARKRUN_NAME} are allowed"):
        check_benchmarkrun_name("r" * (MAX_BENCHMARKRUN_NAME + 1))
    with pytest.raises(SpecError, match="is not a DNS-1123 label"):
        check_benchmarkrun_name("my.run")


# --- the CRDs say the same ---------------------------------------------------------------------


def root_rules(filename: str) -> list[dict[str, Any]]:
    crd = yaml.safe_load((CRDS / filename).read_text())
    return list(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"])


def test_crd_name_rules_are_create_only_and_agree_with_the_operator() -> None:
    cluster = root_rules("mongobench.io_mongoclusters.yaml")
    run = root_rules("mongobench.io_benchmarkruns.yaml")
    for rule in [*cluster, *run]:
        # Names never change; an object stored before a rule must stay updatable (finalizers).
        assert rule["optionalOldSelf"] is True
        assert rule["rule"].startswith("oldSelf.hasValue() || ")
        assert rule["fieldPath"] == ".metadata.name"
    limits = {}
    for rule in cluster:
        found = re.search(
            r"type != '(\w+)' \|\|\s*size\(self.metadata.name\) <= (\d+)", rule["rule"]
        )
        if found:
            limits[found[1]] = int(found[2])
            assert f"at most {found[2]} characters with a {found[1]} topology" in " ".join(
                rule["message"].split()
            )
    assert limits == MAX_MONGOCLUSTER_NAME
    (size_rule,) = [r for r in run if "size(" in r["rule"]]
    assert size_rule["rule"].endswith(f"<= {MAX_BENCHMARKRUN_NAME}")
    assert f"at most {MAX_BENCHMARKRUN_NAME} characters" in size_rule["message"]
    patterns = {
        "mongobench.io_mongoclusters.yaml": DNS_1035_LABEL.pattern,
        "mongobench.io_benchmarkruns.yaml": DNS_1123_LABEL.pattern,
    }
    for filename, pattern in patterns.items():
        assert any(f"matches('^{pattern}$')" in r["rule"] for r in root_rules(filename))


def test_cluster_ref_allows_exactly_the_names_a_cluster_may_have() -> None:
    crd = yaml.safe_load((CRDS / "mongobench.io_benchmarkruns.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    ref = spec["properties"]["clusterRef"]["properties"]["name"]
    assert ref["maxLength"] == max(MAX_MONGOCLUSTER_NAME.values())
    assert ref["pattern"] == f"^{DNS_1035_LABEL.pattern}$"


def test_benchmark_user_may_not_be_one_of_the_operators_users() -> None:
    crd = yaml.safe_load((CRDS / "mongobench.io_mongoclusters.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    (rule,) = spec["properties"]["auth"]["properties"]["benchmarkUser"]["x-kubernetes-validations"]
    reserved = set(re.findall(r"'([^']+)'", rule["rule"]))
    assert reserved == {
        cluster_secrets.ADMIN_USERNAME,
        cluster_secrets.OPERATOR_USERNAME,
        cluster_secrets.EXPORTER_USERNAME,
    }
