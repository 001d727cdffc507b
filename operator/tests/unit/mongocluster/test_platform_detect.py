"""Unit tier: the platform detected from Node objects (providerID prefixes, standard labels)."""

from __future__ import annotations

from typing import Any

import pytest

from mongobench.mongocluster.build.platform import PlatformFacts, detect

pytestmark = pytest.mark.unit


def node(
    provider_id: str | None, instance_type: str = "", zone: str = "", *, beta: bool = False
) -> dict[str, Any]:
    """A Node with the standard (or, with ``beta``, the deprecated) instance-type/zone labels."""
    type_key, zone_key = (
        ("beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/zone")
        if beta
        else ("node.kubernetes.io/instance-type", "topology.kubernetes.io/zone")
    )
    labels = {k: v for k, v in ((type_key, instance_type), (zone_key, zone)) if v}
    spec = {"providerID": provider_id} if provider_id else {}
    return {"metadata": {"name": "n", "labels": labels}, "spec": spec}


EKS = [
    node("aws:///eu-west-1a/i-0a", "m6i.xlarge", "eu-west-1a"),
    node("aws:///eu-west-1b/i-0b", "m6i.xlarge", "eu-west-1b"),
    node("aws:///eu-west-1a/i-0c", "c6i.2xlarge", "eu-west-1a"),
]
MAGNUM = [
    node("openstack:///5b0e1c2a-1", "m1.large", "nova"),
    node("openstack:///5b0e1c2a-2", "m1.large", "nova", beta=True),  # deprecated labels count
]
KIND = [node("kind://docker/kind/kind-control-plane"), node("kind://docker/kind/kind-worker")]


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (EKS, PlatformFacts("eks", ("c6i.2xlarge", "m6i.xlarge"), ("eu-west-1a", "eu-west-1b"))),
        (MAGNUM, PlatformFacts("magnum", ("m1.large",), ("nova",))),
        (KIND, PlatformFacts("kind")),
        # a mixed fleet gets no preset, but its facts are still reported
        (EKS[:1] + KIND, PlatformFacts("unknown", ("m6i.xlarge",), ("eu-west-1a",))),
        ([node("gce://proj/zone/vm"), node(None)], PlatformFacts("unknown")),
        ([], PlatformFacts("unknown")),
        # no providerID yet (cloud controller not done): provider labels decide
        ([{"metadata": {"labels": {"eks.amazonaws.com/nodegroup": "ng-1"}}}], PlatformFacts("eks")),
    ],
    ids=["eks", "magnum", "kind", "mixed", "unknown", "empty", "eks-by-label"],
)
def test_detect(nodes: list[dict[str, Any]], expected: PlatformFacts) -> None:
    assert detect(nodes) == expected


def test_status_shape() -> None:
    assert detect(EKS[:1]).to_status() == {
        "provider": "eks",
        "instanceTypes": ["m6i.xlarge"],
        "zones": ["eu-west-1a"],
    }
