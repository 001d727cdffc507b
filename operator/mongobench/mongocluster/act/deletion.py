"""Deleting a MongoCluster: never out from under a running benchmark, never data unasked, and
never dependent on a spec that parses (deletion reads only deletionPolicy).

deletionPolicy Delete: the StatefulSets' claim retention policy (whenDeleted: Delete) lets
garbage collection remove the volume claims with everything else.
deletionPolicy Retain: the claims stay (whenDeleted: Retain), and so do the credential Secrets
(their owner references are dropped here), so a cluster recreated on the same volumes can log in.
A deletionPolicy that cannot be read keeps the data: Secrets as with Retain, and the claims are
taken out of garbage collection's reach whatever their StatefulSet said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from mongobench.api import MongoClusterSpec, SpecError
from mongobench.api.benchmarkrun import cluster_of
from mongobench.api.mongocluster import DeletionPolicy
from mongobench.api.schema import field_of
from mongobench.k8s.api import NORMAL, WARNING, KubeApi
from mongobench.k8s.client import ApiError
from mongobench.k8s.conditions import (
    EVENT_IN_USE,
    EVENT_RETAINED,
    PHASE_DELETING,
    RUN_FAILED,
    RUN_SUCCEEDED,
)
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import credential_secret_names

TERMINAL_RUN_PHASES = (RUN_SUCCEEDED, RUN_FAILED)
MANAGED = f"{lbl.MANAGED_BY}=mongobench"


def deletion_policy(spec: Any) -> DeletionPolicy | None:
    """spec.deletionPolicy as stored (absent: the model's default, Retain); None if unreadable.
    Read alone: a spec refused for another field is still deleted as it asks."""
    if not isinstance(spec, Mapping):
        return None
    try:
        policy: DeletionPolicy = field_of(MongoClusterSpec, spec, "deletion_policy")
    except SpecError:
        return None
    return policy


def runs_using(kube: KubeApi, namespace: str, cluster: str) -> list[str]:
    runs = kube.list("BenchmarkRun", namespace)
    return sorted(
        r["metadata"]["name"]
        for r in runs
        if cluster_of(r.get("spec")) == cluster
        and (r.get("status") or {}).get("phase") not in TERMINAL_RUN_PHASES
    )


def finalize(kube: KubeApi, body: Mapping[str, Any]) -> None:
    meta = body["metadata"]
    namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
    active = runs_using(kube, namespace, name)
    if active:
        message = (
            f"deletion waits: BenchmarkRun {', '.join(active)} is using this cluster; "
            "it proceeds when the run ends or is deleted"
        )
        kube.event(body, WARNING, EVENT_IN_USE, message)
        raise kopf.TemporaryError(message, delay=10)
    try:
        kube.patch_status("MongoCluster", namespace, name, {"phase": PHASE_DELETING})
    except ApiError as exc:
        # A status the apiserver will not take (a spec stored before today's rules, on
        # Kubernetes before 1.33: kubernetes#129503) must not hold the deletion.
        if exc.status != 422:
            raise
    policy = deletion_policy(body.get("spec"))
    if policy == "Delete":
        return
    # Retain, or a policy that cannot be read: keep the data, whatever the StatefulSets were
    # last given (a spec refused since then never reached them).
    disown_secrets(kube, namespace, name, uid)
    claims = keep_claims(kube, namespace, uid)
    if policy == "Retain":
        kube.event(
            body,
            NORMAL,
            EVENT_RETAINED,
            f"{claims} volume claim(s) and the credential Secrets are kept "
            "(deletionPolicy: Retain)",
        )
        return
    spec = body.get("spec")  # the value as stored, quoted: it did not parse
    unreadable = (
        f"deletionPolicy {spec.get('deletionPolicy')!r}"
        if isinstance(spec, Mapping)
        else "the spec"
    )
    kube.event(
        body,
        WARNING,
        EVENT_RETAINED,
        f"{unreadable} cannot be read, so data is kept: {claims} volume claim(s) and the "
        "credential Secrets",
    )


def _owned(obj: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def disown_secrets(kube: KubeApi, namespace: str, cluster: str, owner_uid: str) -> None:
    """Take the credential Secrets the cluster owns out of garbage collection. By name, from
    the cluster's name alone: Secrets a spec referenced were never owned, so nothing changes
    for them (and the operator needs no right to list Secrets)."""
    for name in credential_secret_names(cluster):
        secret = kube.get("Secret", namespace, name)
        if secret is not None and _owned(secret, owner_uid):
            _disown(kube, "Secret", namespace, secret, {owner_uid})


def keep_claims(kube: KubeApi, namespace: str, owner_uid: str) -> int:
    """Keep every volume claim of the cluster's StatefulSets: their retention policy becomes
    Retain and the claims lose the StatefulSet owner reference the policy Delete gave them.
    Returns the number of claims kept."""
    statefulsets = [
        sts for sts in kube.list("StatefulSet", namespace, MANAGED) if _owned(sts, owner_uid)
    ]
    for sts in statefulsets:
        policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted") != "Retain":
            kube.patch(
                "StatefulSet",
                namespace,
                sts["metadata"]["name"],
                {"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}},
            )
    uids = {sts["metadata"]["uid"] for sts in statefulsets}
    prefixes = tuple(f"data-{sts['metadata']['name']}-" for sts in statefulsets)
    claims = [
        claim
        for claim in kube.list("PersistentVolumeClaim", namespace, MANAGED)
        if claim["metadata"]["name"].startswith(prefixes)
    ]
    for claim in claims:
        _disown(kube, "PersistentVolumeClaim", namespace, claim, uids)
    return len(claims)


def _disown(
    kube: KubeApi, kind: str, namespace: str, obj: Mapping[str, Any], owner_uids: set[str]
) -> None:
    refs = obj["metadata"].get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") not in owner_uids]
    if len(kept) != len(refs):
        kube.patch(
            kind,
            namespace,
            obj["metadata"]["name"],
            {"metadata": {"ownerReferences": kept or None}},
        )
