"""Fake Nodes that look like the platforms the operator detects (kind, EKS, OpenStack Magnum).

KWOK plays their kubelet. What matters to the operator is what a real cloud's node controller
writes: `spec.providerID`, the well-known topology/instance-type labels and the platform's own
labels, and a realistic capacity so scheduling arithmetic (requests vs allocatable) means
something. IDs are derived from a hash of (profile, cluster, index): deterministic, no randomness.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

KUBELET_VERSION = "v1.32.2"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"

PROFILES = ("kind", "eks", "magnum")

_EKS_REGION = "us-east-1"
_EKS_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
_MAGNUM_REGION = "RegionOne"
_MAGNUM_ZONES = ("nova",)


@dataclass(frozen=True)
class NodeSet:
    """`count` nodes of one platform profile; names continue from `start` so sets can grow."""

    profile: str = "kind"
    count: int = 1
    start: int = 0
    # The platform's cluster name; None: "kind" for kind (its default), else "mongobench".
    cluster: str | None = None
    # None: the profile's default zones (kind: no zone label). Nodes go round-robin over them.
    zones: tuple[str, ...] | None = None
    instance_type: str | None = None
    cpu: str = "4"
    memory: str = "16Gi"
    pods: str = "110"
    ephemeral_storage: str = "100Gi"
    extra_labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"unknown node profile {self.profile!r}; one of {PROFILES}")

    def manifests(self) -> list[dict[str, Any]]:
        return [self._node(self.start + i) for i in range(self.count)]

    def next(self, count: int = 1, **changes: Any) -> NodeSet:
        """The set that follows this one (new names), e.g. to add nodes to a running plane."""
        fields = {**self.__dict__, "start": self.start + self.count, "count": count, **changes}
        return NodeSet(**fields)

    # -- one node --------------------------------------------------------------------------
    @property
    def cluster_name(self) -> str:
        return self.cluster or ("kind" if self.profile == "kind" else "mongobench")

    def _digest(self, index: int | None) -> bytes:
        key = f"{self.profile}/{self.cluster_name}/{index}"
        return hashlib.sha256(key.encode()).digest()

    def _zone(self, index: int) -> str | None:
        zones = self.zones
        if zones is None:
            zones = {"kind": (), "eks": _EKS_ZONES, "magnum": _MAGNUM_ZONES}[self.profile]
        return zones[index % len(zones)] if zones else None

    def _node(self, index: int) -> dict[str, Any]:
        digest = self._digest(index)
        zone = self._zone(index)
        ip = f"10.{digest[0] % 250}.{index // 250}.{10 + index % 240}"
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
        }
        internal_dns: str | None = None
        if self.profile == "kind":
            # kind names workers kind-worker, kind-worker2, kind-worker3, ...
            name = f"{self.cluster_name}-worker" + (str(index + 1) if index else "")
            provider_id = f"kind://docker/{self.cluster_name}/{name}"
            ip = f"172.18.0.{2 + index}"
            os_image = "Debian GNU/Linux 12 (bookworm)"
            runtime = "containerd://1.7.24"
            instance_type = self.instance_type
        elif self.profile == "eks":
            region = _EKS_REGION if zone is None else zone[:-1]
            name = f"ip-{ip.replace('.', '-')}.ec2.internal"
            instance_id = "i-0" + digest.hex()[:16]
            provider_id = f"aws:///{zone or region + 'a'}/{instance_id}"
            instance_type = self.instance_type or "m5.xlarge"
            nodegroup = f"{self.cluster_name}-ng-1"
            labels |= {
                "topology.kubernetes.io/region": region,
                "failure-domain.beta.kubernetes.io/region": region,
                "eks.amazonaws.com/nodegroup": nodegroup,
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
                "eks.amazonaws.com/nodegroup-image": "ami-0" + digest.hex()[16:32],
                "eks.amazonaws.com/sourceLaunchTemplateId": "lt-0" + digest.hex()[32:48],
                "k8s.io/cloud-provider-aws": digest.hex()[:32],
            }
            internal_dns = name
            os_image = "Amazon Linux 2023.6.20250203"
            runtime = "containerd://1.7.25"
        else:  # magnum
            # Magnum: <cluster>-<cluster hash>-node-<i>, one hash per cluster.
            name = f"{self.cluster_name}-{self._digest(None).hex()[:12]}-node-{index}"
            provider_id = f"openstack:///{uuid.UUID(bytes=digest[:16], version=4)}"
            instance_type = self.instance_type or "m1.xlarge"
            labels |= {
                "topology.kubernetes.io/region": _MAGNUM_REGION,
                "failure-domain.beta.kubernetes.io/region": _MAGNUM_REGION,
                "magnum.openstack.org/role": "worker",
                "magnum.openstack.org/nodegroup": "default-worker",
            }
            os_image = "Fedora CoreOS 38.20230806.3.0"
            runtime = "containerd://1.6.20"
        addresses = [{"type": "InternalIP", "address": ip}]
        if internal_dns:
            addresses.append({"type": "InternalDNS", "address": internal_dns})
        addresses.append({"type": "Hostname", "address": name})
        labels["kubernetes.io/hostname"] = name
        if zone is not None:
            labels["topology.kubernetes.io/zone"] = zone
            labels["failure-domain.beta.kubernetes.io/zone"] = zone
        if instance_type is not None:
            labels["node.kubernetes.io/instance-type"] = instance_type
            labels["beta.kubernetes.io/instance-type"] = instance_type
        labels |= self.extra_labels
        capacity = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
            "ephemeral-storage": self.ephemeral_storage,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                # Informative only: KWOK manages every node of a plane (--manage-all-nodes).
                "annotations": {
                    FAKE_NODE_ANNOTATION: "fake",
                    "node.alpha.kubernetes.io/ttl": "0",
                },
            },
            "spec": {"providerID": provider_id, "taints": [dict(t) for t in self.taints]},
            # Status is kept on create; KWOK's initialize stage preserves these fields.
            "status": {
                "capacity": capacity,
                "allocatable": _allocatable(capacity),
                "addresses": addresses,
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "osImage": os_image,
                    "kernelVersion": "6.1.0-31-amd64",
                    "containerRuntimeVersion": runtime,
                    "kubeletVersion": KUBELET_VERSION,
                    "kubeProxyVersion": KUBELET_VERSION,
                    "machineID": digest.hex()[:32],
                    "systemUUID": str(uuid.UUID(bytes=digest[16:32], version=4)),
                    "bootID": str(uuid.UUID(bytes=digest[8:24], version=4)),
                },
            },
        }


def _allocatable(capacity: dict[str, str]) -> dict[str, str]:
    """Capacity minus typical kube/system reservations (the numbers EKS' bootstrap uses)."""
    out = dict(capacity)
    if capacity["cpu"].isdigit():
        out["cpu"] = f"{int(capacity['cpu']) * 1000 - 80}m"
    if capacity["memory"].endswith("Gi"):
        out["memory"] = f"{int(capacity['memory'][:-2]) * 1024 - 1100}Mi"
    return out
