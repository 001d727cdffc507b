"""Growing member volumes: StatefulSet claim templates are immutable, so claims grow in place.

The StatefulSet keeps the template it was created with (provision pins it); each member's claim
is patched to the new size when its StorageClass allows expansion. When it does not, nothing is
changed and the StorageResized condition says why: no data is ever moved or deleted to resize.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mongobench.k8s import conditions as c
from mongobench.k8s.api import KubeApi
from mongobench.k8s.conditions import ConditionStatus
from mongobench.k8s.quantity import parse_quantity
from mongobench.mongocluster.act.provision import Desired
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.decide.status import WorkloadState


@dataclass(frozen=True)
class ResizeOutcome:
    status: ConditionStatus  # "True" when every claim asks for the wanted size
    reason: str
    message: str


def grow_claims(
    kube: KubeApi, d: Desired, statefulsets: Mapping[str, WorkloadState]
) -> ResizeOutcome:
    """Ask every member claim smaller than the spec for the spec's size. `statefulsets` as the
    sync observed them: while their claim templates ask at least the spec's size (the usual
    case: the size never grew), no claim can be smaller and none is read."""
    wanted = parse_quantity(d.spec.storage.size)
    if all(
        w.claim_storage is None or parse_quantity(w.claim_storage) >= wanted
        for w in statefulsets.values()
    ):
        return ResizeOutcome(c.TRUE, c.SIZE_MATCHES, f"claims request {d.spec.storage.size}")
    claims = kube.list(
        "PersistentVolumeClaim", d.layout.namespace, f"{lbl.CLUSTER}={d.layout.name}"
    )
    small = [c for c in claims if _requested(c) < wanted]
    if not small:
        return ResizeOutcome(c.TRUE, c.SIZE_MATCHES, f"claims request {d.spec.storage.size}")
    refused: list[str] = []
    grown: list[str] = []
    for claim in small:
        cls = claim["spec"].get("storageClassName")
        sc = (kube.get("StorageClass", None, cls) or {}) if cls else {}
        if not sc.get("allowVolumeExpansion"):
            refused.append(f"{claim['metadata']['name']} (class {cls or 'none'})")
            continue
        kube.patch(
            "PersistentVolumeClaim",
            d.layout.namespace,
            claim["metadata"]["name"],
            {"spec": {"resources": {"requests": {"storage": d.spec.storage.size}}}},
        )
        grown.append(claim["metadata"]["name"])
    if refused:
        return ResizeOutcome(
            c.FALSE,
            c.NOT_EXPANDABLE,
            f"the StorageClass does not allow volume expansion: {', '.join(refused)} keep their "
            f"size; grew {len(grown)} claim(s)",
        )
    return ResizeOutcome(
        c.TRUE, c.EXPANDING, f"asked {len(grown)} claim(s) for {d.spec.storage.size}"
    )


def _requested(claim: dict[str, Any]) -> float:
    return parse_quantity(claim["spec"]["resources"]["requests"]["storage"])
