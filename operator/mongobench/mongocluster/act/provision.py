"""Kubernetes side of a MongoCluster: make the desired objects exist, owned by the cluster.

I/O lives here, through the KubeApi it is given; everything it applies comes from the pure
builders (reconcile.py observes the workloads and MongoDB). Secrets
are created once and never overwritten (a retried or restarted reconcile finds them and keeps
them); everything else is server-side applied with the operator's field manager, so re-running
converges without duplicates.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import OperatorConfig
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError, owner_reference
from mongobench.mongocluster.act.rolling import observe_mongos_upgrade
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.generate import generate
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout, cluster_layout
from mongobench.mongocluster.build.mongos import set_image
from mongobench.mongocluster.build.objects import build_workload_objects
from mongobench.mongocluster.build.platform import PlatformFacts, Preset, detect, preset_for
from mongobench.mongocluster.build.secrets import build_secrets, connection_secret
from mongobench.mongocluster.decide.tls_roll import (
    effective_spec,
    recorded_mode,
    target_mode,
    template_mode,
)

PODMONITOR_API = ("monitoring.coreos.com/v1", "podmonitors")


@dataclass(frozen=True)
class Desired:
    """`spec`: what the pods are built from now; `wanted`: the spec as written, when the two
    differ (a roll onto TLS in progress: mongocluster.decide.tls_roll)."""

    spec: MongoClusterSpec
    layout: ClusterLayout
    preset: Preset
    facts: PlatformFacts
    wanted: MongoClusterSpec | None = None

    @property
    def target(self) -> MongoClusterSpec:
        """The spec as written (what the cluster converges to)."""
        return self.wanted or self.spec


def desired(
    kube: KubeApi,
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    detected: PlatformFacts | None = None,
) -> Desired:
    """Parse the spec (SpecError names the field) and pin the platform preset.

    The storage class is recorded in status the first time and reused: volume claim templates
    are immutable, so a later change of detected platform must not change it. Until then the
    nodes are read, unless `detected` says what a pass just read from them.
    """
    meta = body["metadata"]
    wanted = MongoClusterSpec.parse(dict(body["spec"]))
    layout = cluster_layout(meta["name"], meta["namespace"], wanted)
    spec = effective_spec(wanted, tls_mode_in_force(kube, layout, wanted, status))
    recorded = (status.get("platform") or {}).get("provider")
    if recorded and "storageClass" in (status.get("platform") or {}):
        facts = PlatformFacts(
            recorded,
            tuple(status["platform"].get("instanceTypes", ())),
            tuple(status["platform"].get("zones", ())),
        )
        preset = dataclasses.replace(
            preset_for(spec.platform, facts),
            storage_class_name=status["platform"]["storageClass"] or None,
        )
    else:
        facts = detected or detect(kube.list("Node", None))
        preset = preset_for(spec.platform, facts)
    return Desired(spec, layout, preset, facts, None if spec == wanted else wanted)


def tls_mode_in_force(
    kube: KubeApi, layout: ClusterLayout, wanted: MongoClusterSpec, status: Mapping[str, Any]
) -> str:
    """The --tlsMode the members' pod templates carry (tls_roll): as status.tls records it; for
    a cluster not created yet, the spec's; else (recorded by no sync yet) what the first
    StatefulSet's template says, read only when the spec or the status mention TLS."""
    recorded = recorded_mode(status)
    if recorded is not None:
        return recorded
    if not status.get("phase") or not (wanted.tls.enabled or status.get("tls")):
        return target_mode(wanted)
    first = layout.replica_sets[0]
    found = template_mode(kube.get("StatefulSet", layout.namespace, first.name), "mongod")
    return target_mode(wanted) if found is None else found


def platform_status(d: Desired) -> dict[str, Any]:
    return {
        **d.facts.to_status(),
        "storageClass": d.spec.storage.storage_class_name or d.preset.storage_class_name or "",
    }


def ensure_secrets(
    kube: KubeApi,
    d: Desired,
    owner: Mapping[str, Any],
    listed: list[dict[str, Any]] | None = None,
) -> None:
    """Create missing Secrets with fresh values; existing ones are never touched, except the
    connection Secret, which is derived (URI from the benchmark password and the topology).
    `listed`: the cluster's Secrets as just listed (list_cluster_secrets), else listed here."""
    ref = owner_reference(owner)
    values = generate()
    existing = decoded_by_name(list_cluster_secrets(kube, d.layout) if listed is None else listed)
    for manifest in build_secrets(d.spec, d.layout, values):
        name = manifest["metadata"]["name"]
        if name == d.layout.connection_secret or name in existing:
            continue
        manifest["metadata"]["ownerReferences"] = [ref]
        try:
            kube.create(manifest)
        except ApiError as exc:
            if exc.status != 409:  # 409: it exists, keep it as it is
                raise
    password = read_secrets(kube, d.layout, [d.layout.benchmark_secret], existing)[
        d.layout.benchmark_secret
    ]["password"]
    conn = connection_secret(d.spec, d.layout, password)
    conn["metadata"]["ownerReferences"] = [ref]
    kube.apply(conn)


def _decoded(secret: Mapping[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


def cluster_secrets(kube: KubeApi, layout: ClusterLayout) -> dict[str, dict[str, str]]:
    """The Secrets the operator created for the cluster (labelled with it), decoded, by name:
    one LIST where reading each would take a request apiece on every reconcile."""
    return decoded_by_name(list_cluster_secrets(kube, layout))


def list_cluster_secrets(kube: KubeApi, layout: ClusterLayout) -> list[dict[str, Any]]:
    """The Secrets labelled with the cluster, as the API lists them."""
    return kube.list("Secret", layout.namespace, f"{lbl.CLUSTER}={layout.name}")


def decoded_by_name(secrets: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    return {s["metadata"]["name"]: _decoded(s) for s in secrets}


def read_secrets(
    kube: KubeApi,
    layout: ClusterLayout,
    names: Iterable[str],
    listed: Mapping[str, dict[str, str]] | None = None,
) -> dict[str, dict[str, str]]:
    """The named Secrets' values: from the cluster's own (`listed`, else listed now), read one
    by one only for those the user named (spec.auth.*SecretName: not labelled with the
    cluster). LookupError names a Secret that does not exist."""
    listed = cluster_secrets(kube, layout) if listed is None else listed
    return {
        name: listed[name] if name in listed else read_secret(kube, layout.namespace, name)
        for name in names
    }


def read_secret(kube: KubeApi, namespace: str, name: str) -> dict[str, str]:
    return _decoded(get_secret(kube, namespace, name))


def get_secret(kube: KubeApi, namespace: str, name: str) -> Mapping[str, Any]:
    """The Secret as the API gives it; LookupError when it does not exist."""
    secret = kube.get("Secret", namespace, name)
    if secret is None:
        raise LookupError(f"Secret {namespace}/{name} does not exist")
    return secret


def delete_shard_objects(kube: KubeApi, layout: ClusterLayout, shard: ReplicaSetLayout) -> bool:
    """A removed shard's PodDisruptionBudget, headless Service and StatefulSet; True when the
    StatefulSet was still there. Call only once MongoDB no longer lists the shard: its members
    hold its data until drained. Volume claims follow the StatefulSet's retention policy
    (spec.deletionPolicy: Retain keeps them)."""
    kube.delete("PodDisruptionBudget", layout.namespace, layout.pdb_name(shard.name))
    kube.delete("Service", layout.namespace, shard.headless_service)
    return kube.delete("StatefulSet", layout.namespace, shard.name)


def switched_off_network_policy(body: Mapping[str, Any]) -> bool:
    """The spec names networkPolicy (the CRD sets no default) and it is not enabled."""
    section = (body.get("spec") or {}).get("networkPolicy")
    return section is not None and not section.get("enabled", False)


def apply_workloads(
    kube: KubeApi,
    d: Desired,
    owner: Mapping[str, Any],
    config: OperatorConfig,
    replicas: Mapping[str, int] | None = None,
) -> list[str]:
    """Server-side apply NetworkPolicies, Services, StatefulSets, mongos, PDBs and the
    PodMonitor; delete the NetworkPolicies the spec no longer wants.

    `replicas` overrides a StatefulSet's member count (scale-down waits until MongoDB has
    removed the member: see sync_plan.held_replicas). Returns the names of the kinds skipped,
    e.g. PodMonitor when its CRD is absent.
    """
    ref = owner_reference(owner)
    skipped: list[str] = []
    objects = build_workload_objects(
        d.spec, d.layout, d.preset, dict(config.monitor_labels), config.network_peers
    )
    if switched_off_network_policy(owner):
        # A policy left from before would keep refusing peers. Only when the spec names
        # networkPolicy: a cluster that never had one costs no DELETE per apply.
        for name in (d.layout.members_network_policy, d.layout.mongos_network_policy):
            kube.delete("NetworkPolicy", d.layout.namespace, name)
    for obj in objects:
        # The Prometheus Operator CRDs are detected on every apply, not assumed: they may be
        # installed after the operator started.
        if obj["kind"] == "PodMonitor" and not kube.served(*PODMONITOR_API):
            skipped.append("PodMonitor")
            continue
        if obj["kind"] == "StatefulSet":
            name = obj["metadata"]["name"]
            if replicas and name in replicas:
                obj["spec"]["replicas"] = replicas[name]
            existing = kube.get("StatefulSet", d.layout.namespace, name)
            if existing is not None:
                # Claim templates are immutable: keep the created ones; storage.py grows claims.
                obj["spec"]["volumeClaimTemplates"] = existing["spec"]["volumeClaimTemplates"]
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == d.layout.mongos:
            # mongos upgrades last: it keeps its image until every replica set runs the new one.
            set_image(obj, observe_mongos_upgrade(kube, d.layout, d.spec.image_ref).image)
        obj["metadata"]["ownerReferences"] = [ref]
        kube.apply(obj)
    return skipped
