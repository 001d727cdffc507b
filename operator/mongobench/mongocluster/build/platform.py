"""Platform presets (storage class, zone spread) and detection of the platform from Nodes.

Preset storage classes, chosen as the names the platforms' CSI drivers are deployed with:

- eks: ``gp3`` - EBS gp3 volumes (3000 IOPS / 125 MB/s baseline regardless of size, unlike gp2
  whose IOPS scale with size and would make small benchmark volumes slow). EKS only ships a
  ``gp2`` class; ``gp3`` is the class the AWS EBS CSI driver docs and eksctl create.
- magnum: ``cinder`` - the Cinder CSI class OpenStack Magnum clusters are set up with.
- kind: ``standard`` - the local-path provisioner class kind installs as the default.

Zone spread defaults on only for eks, whose node groups span availability zones; Magnum clouds
often have one zone (``nova``) and kind has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec, Platform
from mongobench.mongocluster.build.placement import Scheduling

Provider = str  # "eks" | "magnum" | "kind" | "unknown"

INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
PROVIDER_ID_PREFIXES = {"aws://": "eks", "openstack://": "magnum", "kind://": "kind"}
# For nodes without spec.providerID (e.g. before the cloud controller has set it).
PROVIDER_LABEL_PREFIXES = {"eks.amazonaws.com/": "eks", "magnum.openstack.org/": "magnum"}


@dataclass(frozen=True)
class Preset:
    provider: Provider
    storage_class_name: str | None
    spread_across_zones: bool


PRESETS: dict[Provider, Preset] = {
    "eks": Preset("eks", "gp3", True),
    "magnum": Preset("magnum", "cinder", False),
    "kind": Preset("kind", "standard", False),
}
# Unknown platform: the cluster's default StorageClass and no zone spread.
GENERIC = Preset("unknown", None, False)


@dataclass(frozen=True)
class PlatformFacts:
    provider: Provider
    instance_types: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()

    def to_status(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "instanceTypes": list(self.instance_types),
            "zones": list(self.zones),
        }


def _node_provider(node: Mapping[str, Any]) -> Provider:
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    for prefix, provider in PROVIDER_ID_PREFIXES.items():
        if provider_id.startswith(prefix):
            return provider
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key in sorted(labels):
        for prefix, provider in PROVIDER_LABEL_PREFIXES.items():
            if key.startswith(prefix):
                return provider
    return "unknown"


def _first_label(node: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return next((str(labels[k]) for k in keys if labels.get(k)), None)


def detect(nodes: Iterable[Mapping[str, Any]]) -> PlatformFacts:
    """The platform of a list of Node objects (as dicts).

    A single provider only when every node agrees: a mixed or partly unrecognised fleet is
    "unknown", so no preset guesses a storage class that some nodes cannot attach.
    """
    nodes = list(nodes)
    providers = {_node_provider(n) for n in nodes}
    provider = providers.pop() if len(providers) == 1 else "unknown"
    types = {t for n in nodes if (t := _first_label(n, INSTANCE_TYPE_LABELS))}
    zones = {z for n in nodes if (z := _first_label(n, ZONE_LABELS))}
    return PlatformFacts(provider, tuple(sorted(types)), tuple(sorted(zones)))


def preset_for(platform: Platform, facts: PlatformFacts | None = None) -> Preset:
    """The preset named in the spec, or for ``auto`` the detected provider's (else generic)."""
    provider = platform if platform != "auto" else (facts.provider if facts else "unknown")
    return PRESETS.get(provider, GENERIC)


def storage_class(spec: MongoClusterSpec, preset: Preset) -> str | None:
    """spec.storage.storageClassName > the preset's class > None (the cluster default)."""
    return spec.storage.storage_class_name or preset.storage_class_name


def spread_across_zones(role: Scheduling, preset: Preset) -> bool:
    """The role's spreadAcrossZones (resolved from spec.placement), else the preset's."""
    explicit = role.spread_across_zones
    return preset.spread_across_zones if explicit is None else explicit
