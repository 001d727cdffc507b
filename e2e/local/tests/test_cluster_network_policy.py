"""Cluster tier: a MongoCluster's NetworkPolicies as the real apiserver admits and keeps them.

What is real: the kube-apiserver (the NetworkPolicy schema and validation, the CRD's schema of
spec.networkPolicy), the controller-manager's garbage collector, the operator process, the
benchmark Job's pods executed by the harness kubelet (runner and YCSB against FerretDB).
What is not here: enforcement. KWOK and the harness kubelet have no CNI, so nothing on this
plane drops a packet; that a pod from outside is refused while the run still works is the kind
suite's (e2e/suite/test_e2e_network_policy.py with Calico, where Docker exists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_benchmarkrun as bmr
from kubernetes import client as k8s

from localplane.executor import PodExecutor
from localplane.mongomodel import MongoModel
from localplane.operator import wait_until
from localplane.plane import Plane
from localplane.policies import LENIENT_VALIDITY

pytestmark = pytest.mark.cluster

ferretdb, model, executor = bmr.ferretdb, bmr.model, bmr.executor


def cluster_manifest(network_policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{bmr.GROUP}/{bmr.VERSION}",
        "kind": "MongoCluster",
        "metadata": {"name": "bc"},
        "spec": {
            "version": "7.0.14",
            "topology": {"replicaSet": {"members": 1}},
            "networkPolicy": network_policy,
        },
    }


def policy(api: k8s.ApiClient, namespace: str) -> Any:
    try:
        return k8s.NetworkingV1Api(api).read_namespaced_network_policy("bc-mongod", namespace)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def selects(selector: Any, labels: dict[str, str]) -> bool:
    wanted = selector.match_labels or {}
    return all(labels.get(k) == v for k, v in wanted.items()) and not selector.match_expressions


def test_policy_is_admitted_owned_follows_the_spec_admits_the_clients_and_goes_with_the_cluster(
    plane: Plane,
    namespace: str,
    kube_api: k8s.ApiClient,
    model: MongoModel,
    executor: PodExecutor,
    prometheus: str,
    tmp_path: Path,
) -> None:
    seen_pods: list[dict[str, str]] = []

    def record(pod: dict[str, Any]) -> bool:  # the executor's hook: every pod it takes on
        seen_pods.append(dict(pod["metadata"].get("labels") or {}))
        return False

    executor.delay_pods(record, 0)
    operator = bmr.start(plane, namespace, model, tmp_path / "operator.log", prometheus, kube_api)
    try:
        bmr.apply(plane, namespace, cluster_manifest({"enabled": True}))
        wait_until(
            lambda: (
                bmr.get(kube_api, namespace, "mongoclusters", "bc").get("status", {}).get("phase")
                == "Ready"
            ),
            timeout=60,
            what="cluster Ready",
        )
        admitted = policy(kube_api, namespace)
        assert admitted is not None, "no NetworkPolicy bc-mongod"
        owner = bmr.get(kube_api, namespace, "mongoclusters", "bc")
        (ref,) = admitted.metadata.owner_references
        assert (ref.kind, ref.uid, ref.controller) == (
            "MongoCluster",
            owner["metadata"]["uid"],
            True,
        )
        # The member pods are the ones it protects (their template, as the StatefulSet has it).
        sts = k8s.AppsV1Api(kube_api).read_namespaced_stateful_set("bc-rs0", namespace)
        member_labels = sts.spec.template.metadata.labels
        assert admitted.spec.pod_selector.match_labels.items() <= member_labels.items()
        (expr,) = admitted.spec.pod_selector.match_expressions
        assert member_labels[expr.key] in expr.values
        mongodb, metrics = admitted.spec.ingress
        assert [p.port for p in mongodb.ports] == [27017]
        assert [p.port for p in metrics.ports] == [9216]
        assert metrics._from[0].namespace_selector.match_labels == {
            "kubernetes.io/metadata.name": "monitoring"
        }

        # A run's client pods carry the labels of the policy's client peer (as admitted).
        run = bmr.run_manifest(
            "np",
            workloads=[{"name": "c"}],
            repetitions=1,
            clients={"parallelism": 1},
            validity=LENIENT_VALIDITY,
        )
        bmr.apply(plane, namespace, run)
        done = bmr.wait_run(kube_api, namespace, "np", ("Succeeded", "Failed"))
        assert done["status"]["phase"] == "Succeeded", done["status"].get("conditions")
        client_peers = [
            peer.pod_selector
            for peer in mongodb._from
            if peer.namespace_selector is None
            and "mongobench.io/client-of" in (peer.pod_selector.match_labels or {})
        ]
        (client_peer,) = client_peers
        clients = [labels for labels in seen_pods if "mongobench.io/run" in labels]
        assert clients, "the executor ran no client pod"
        assert all(selects(client_peer, labels) for labels in clients), clients
        # ...and the database pods are not taken for clients by it.
        assert not selects(client_peer, member_labels)

        # Updated with the spec: another scraper namespace.
        bmr.apply(
            plane,
            namespace,
            cluster_manifest(
                {"enabled": True, "scraperNamespaceLabels": {"team": "observability"}}
            ),
        )
        wait_until(
            lambda: (
                (p := policy(kube_api, namespace)) is not None
                and p.spec.ingress[1]._from[0].namespace_selector.match_labels
                == {"team": "observability"}
            ),
            timeout=30,
            what="policy updated with the scraper's namespace",
        )
        # Switched off: deleted; on again: back.
        bmr.apply(plane, namespace, cluster_manifest({"enabled": False}))
        wait_until(lambda: policy(kube_api, namespace) is None, timeout=30, what="policy deleted")
        bmr.apply(plane, namespace, cluster_manifest({"enabled": True}))
        wait_until(lambda: policy(kube_api, namespace) is not None, timeout=30, what="policy back")
        # Removed with the cluster (the garbage collector follows the owner reference).
        k8s.CustomObjectsApi(kube_api).delete_namespaced_custom_object(
            bmr.GROUP, bmr.VERSION, namespace, "mongoclusters", "bc"
        )
        wait_until(lambda: policy(kube_api, namespace) is None, timeout=60, what="policy collected")
    finally:
        operator.stop()
