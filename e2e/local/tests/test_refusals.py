"""Cluster tier: a name or spec the operator cannot use is refused by the apiserver, and whatever
got stored anyway never blocks deletion (issue 12).

What is real: the kube-apiserver (its CEL admission and validation ratcheting), etcd, the
controllers (StatefulSet, PVC binding, garbage collection), and the operator process. How an
unusable object gets stored is real too: it is created while the cluster has an older CRD
without the rules (here: the repo's CRDs with the name rules removed and the spec schema
open), then the CRDs are upgraded to the repo's, which refuses such objects from then on but
keeps the stored ones. No MongoDB takes part: nothing here gets as far as wiring.
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from localplane.operator import start_operator, wait_until
from localplane.plane import Plane

pytestmark = pytest.mark.cluster

GROUP, VERSION = "mongobench.io", "v1alpha1"
CRDS = Path(__file__).resolve().parents[3] / "crds"
LONG = "c" + "x" * 59  # 60 characters, as in the issue
DOTTED = "my.cluster"


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": name},
        "spec": {"version": "7.0.14", **spec},
    }


def test_the_names_of_the_issue_are_refused_at_admission_with_the_reason(
    plane: Plane, namespace: str
) -> None:
    for name, reason in (
        (LONG, "metadata.name may have at most 48 characters with a ReplicaSet topology"),
        (DOTTED, "metadata.name must be a DNS-1035 label"),
    ):
        proc = plane.kubectl(
            "apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(cluster(name)), check=False
        )
        assert proc.returncode != 0, f"{name} was admitted"
        assert reason in proc.stderr
        assert "controller-revision-hash" in proc.stderr or "Services" in proc.stderr  # why
        got = plane.kubectl("get", "mongocluster", name, "-n", namespace, check=False)
        assert got.returncode != 0  # nothing stored


# --- stored before the rules ---------------------------------------------------------------------


def older_crds(target: Path) -> Path:
    """The repo's CRDs as an older release might have had them: no name rules, spec unchecked."""
    target.mkdir()
    for name in ("mongobench.io_mongoclusters.yaml", "mongobench.io_benchmarkruns.yaml"):
        crd = yaml.safe_load((CRDS / name).read_text())
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        schema.pop("x-kubernetes-validations")
        open_spec = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        schema["properties"]["spec"] = open_spec
        (target / name).write_text(yaml.safe_dump(crd))
    return target


def custom(api: k8s.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(
            k8s.CustomObjectsApi(api).get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name
            )
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def refusal(
    api: k8s.ApiClient, namespace: str, plural: str, name: str, condition: str
) -> str | None:
    """The refusal's message where the user finds it: an InvalidSpec Event, and the condition
    (or, where the apiserver takes no status for the object, the mongobench.io/refused
    annotation: Kubernetes before 1.33, kubernetes#129503)."""
    obj = custom(api, namespace, plural, name) or {}
    status = obj.get("status") or {}
    found = {c["type"]: c for c in status.get("conditions") or []}.get(condition)
    annotation = (obj.get("metadata", {}).get("annotations") or {}).get("mongobench.io/refused")
    if status.get("phase") == "Failed" and found and found["reason"] == "InvalidSpec":
        recorded = str(found["message"])
    elif annotation and json.loads(annotation)["reason"] == "InvalidSpec":
        recorded = str(json.loads(annotation)["message"])
    else:
        return None
    events = [m for m in event_messages(api, namespace, name, "InvalidSpec") if recorded in m]
    return recorded if events else None


def handler_runs(metrics: str) -> dict[str, float]:
    """Runs per handler so far (all kinds and outcomes), from the operator's /metrics."""
    runs: dict[str, float] = {}
    for labels, count in re.findall(
        r"^mongobench_reconciles_total\{([^}]*)\} ([0-9.e+]+)$", metrics, re.M
    ):
        handler = re.search(r'handler="([^"]+)"', labels)
        assert handler is not None
        runs[handler[1]] = runs.get(handler[1], 0) + float(count)
    return runs


def event_messages(api: k8s.ApiClient, namespace: str, name: str, reason: str) -> list[str]:
    events = k8s.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return [str(e.message) for e in events.items if e.reason == reason for _ in range(e.count or 1)]


def test_objects_stored_before_the_rules_fail_visibly_and_are_deleted_cleanly(
    make_plane: Any, tmp_path: Path
) -> None:
    private: Plane = make_plane()
    private.apply(older_crds(tmp_path / "older"))
    ns = "stored"
    private.kubectl("create", "namespace", ns)
    api = private.api_client()
    log = tmp_path / "operator.log"
    operator = start_operator(private.kubeconfig, [ns], log)
    try:
        # A cluster provisioned while its spec was fine (volume claims deleted with it), whose
        # spec then changed into one the operator cannot read: refused at once.
        keep = cluster("keep", topology={"replicaSet": {"members": 1}}, deletionPolicy="Delete")
        private.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(keep))
        claim = "data-keep-rs0-0"
        wait_until(
            lambda: k8s.CoreV1Api(api).list_namespaced_persistent_volume_claim(ns).items,
            timeout=60,
            what="the member's volume claim",
        )
        changed = copy.deepcopy(keep)
        changed["spec"]["deletionPolicy"] = "Sometimes"
        private.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(changed))
        wait_until(lambda: refusal(api, ns, "mongoclusters", "keep", "Ready"), what="keep refused")
        operator.stop()

        # Objects the repo's CRDs refuse, stored while the older CRDs were installed and the
        # operator was down; it meets them only after the upgrade. (Values a later rule
        # refuses, of the schema's types: a stored value whose type no longer matches the
        # schema blocks every write to the object in the apiserver itself, finalizer removal
        # included, since CEL rules cannot evaluate it. A CRD version never changes a type.)
        broken = cluster("broken", topology={"type": "Sharded"})
        run = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchmarkRun",
            "metadata": {"name": "broken-run"},
            "spec": {
                "clusterRef": {"name": "keep"},
                "workloads": [{"name": "a"}],
                "driver": "gatling",
                "cleanup": {"data": "Always"},
            },
        }
        for obj in (cluster(LONG), cluster(DOTTED), broken, run):
            private.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(obj))
        private.apply(CRDS)  # the upgrade: from now on such objects are refused
        operator = start_operator(private.kubeconfig, [ns], log)

        expected = {
            ("mongoclusters", LONG, "Ready"): "at most 48 are allowed",
            ("mongoclusters", DOTTED, "Ready"): "is not a DNS-1035 label",
            ("mongoclusters", "broken", "Ready"): "spec.topology.sharded: required",
            ("mongoclusters", "keep", "Ready"): "spec.deletionPolicy: 'Sometimes' is not one of",
            ("benchmarkruns", "broken-run", "Succeeded"): "spec.driver: 'gatling' is not one of",
        }
        for (plural, name, condition), message in expected.items():
            found = wait_until(
                lambda p=plural, n=name, c=condition: refusal(api, ns, p, n, c),
                timeout=30,
                what=f"{name} refused",
            )
            assert message in found, found
        # Refused means settled: one Event each, no timer writing, not after a restart either
        # (resume handlers run again and find the refusal already reported).
        before = {n: custom(api, ns, p, n) for p, n, _ in expected}
        operator.stop()
        operator = start_operator(private.kubeconfig, [ns], log)
        # The resume handlers run (and are counted): waited for, not slept on.
        runs = wait_until(
            lambda: (
                (counted := handler_runs(operator.metrics())).get("provision", 0) >= 4
                and counted.get("start", 0) >= 1
                and counted
            ),
            timeout=30,
            what="the resume handlers",
        )
        assert runs["provision"] >= 4 and runs["start"] >= 1  # they did run (and were counted)
        time.sleep(4)  # the timers (every 1-2 s) would have run twice
        later = handler_runs(operator.metrics())
        assert (later.get("sync"), later.get("tick")) == (runs.get("sync"), runs.get("tick"))
        for plural, name, _ in expected:
            assert len(event_messages(api, ns, name, "InvalidSpec")) == 1, name
            after = custom(api, ns, plural, name)
            assert after is not None and before[name] is not None
            assert after.get("status") == before[name].get("status"), name  # type: ignore[union-attr]

        for plural, name, _ in expected:
            private.kubectl("delete", plural, name, "-n", ns, "--wait=false")
        for plural, name, _ in expected:
            wait_until(
                lambda p=plural, n=name: custom(api, ns, p, n) is None,
                timeout=30,
                what=f"{name} deleted",
            )
    finally:
        operator.stop()
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    # Its deletionPolicy unreadable, "keep" kept its data: the claim and the Secrets survive it.
    core = k8s.CoreV1Api(api)
    wait_until(
        lambda: not k8s.AppsV1Api(api).list_namespaced_stateful_set(ns).items,
        what="the StatefulSet garbage-collected",
    )
    time.sleep(2)  # garbage collection would have taken the claim by now
    pvc = core.read_namespaced_persistent_volume_claim(claim, ns)
    assert not pvc.metadata.owner_references
    for suffix in ("keyfile", "admin", "operator", "benchmark"):
        secret = core.read_namespaced_secret(f"keep-{suffix}", ns)
        assert not secret.metadata.owner_references
    (retained,) = event_messages(api, ns, "keep", "Retained")
    assert "deletionPolicy 'Sometimes' cannot be read, so data is kept: 1 volume claim" in retained
    (kept,) = event_messages(api, ns, "broken-run", "DataKept")
    assert "the benchmark data is left as it is" in kept
