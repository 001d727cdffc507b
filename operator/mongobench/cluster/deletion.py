"""Deleting a MongoCluster: never out from under a running benchmark, never data unasked.

deletionPolicy Delete: the StatefulSets' claim retention policy (whenDeleted: Delete) lets
garbage collection remove the volume claims with everything else.
deletionPolicy Retain: the claims stay (whenDeleted: Retain), and so do the credential Secrets
(their owner references are dropped here), so a cluster recreated on the same volumes can log in.
"""

from __future__ import annotations

import kopf

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.cluster.layout import cluster_layout
from mongobench.k8s import client as kube

TERMINAL_RUN_PHASES = ("Succeeded", "Failed")


def runs_using(namespace: str, cluster: str) -> list[str]:
    runs = kube.list_objects("BenchmarkRun", namespace)
    return sorted(
        r["metadata"]["name"]
        for r in runs
        if (r.get("spec", {}).get("clusterRef") or {}).get("name") == cluster
        and (r.get("status") or {}).get("phase") not in TERMINAL_RUN_PHASES
    )


def finalize(body: kopf.Body) -> None:
    meta = body["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    active = runs_using(namespace, name)
    if active:
        message = (
            f"deletion waits: BenchmarkRun {', '.join(active)} is using this cluster; "
            "it proceeds when the run ends or is deleted"
        )
        kopf.warn(body, reason="InUse", message=message)
        raise kopf.TemporaryError(message, delay=10)
    kube.patch_status("MongoCluster", namespace, name, {"phase": "Deleting"})
    spec = MongoClusterSpec.parse(dict(body["spec"]))
    if spec.deletion_policy == "Retain":
        layout = cluster_layout(name, namespace, spec)
        for secret in (
            layout.keyfile_secret,
            layout.admin_secret,
            layout.operator_secret,
            layout.benchmark_secret,
            layout.exporter_secret,
        ):
            _disown(namespace, secret, meta["uid"])
        kopf.info(
            body,
            reason="Retained",
            message="volume claims and credential Secrets are kept (deletionPolicy: Retain)",
        )


def _disown(namespace: str, secret: str, owner_uid: str) -> None:
    obj = kube.get("Secret", namespace, secret)
    if obj is None:
        return
    refs = obj["metadata"].get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") != owner_uid]
    if len(kept) != len(refs):
        kube.request(
            "PATCH",
            kube.resource_path("Secret", namespace, secret),
            body={"metadata": {"ownerReferences": kept or None}},
            content_type="application/merge-patch+json",
        )
