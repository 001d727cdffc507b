"""Unit tier: no two experiments or runs the repository ships archive into one place. Every
sample and study build as written, and every documented `kubectl apply` of one (each kube
context its own cluster: `kubectl --context magnum apply`, or a pipeline that edits the file
first), is read for `spec.archive`; two different objects, or one object applied through two
contexts, under the same bucket and prefix (or one prefix inside the other) would mix their runs
in one `mongobench compare s3://BUCKET/PREFIX` (issue 33: both contexts of the platforms sample
archived under platforms/eks, so the Magnum side's compare found nothing of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from localplane import doccommands as dc
from localplane.tools import REPO

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Placement:
    where: str  # the file or documented command it comes from
    context: str  # the kube context applied through ("" as written)
    kind: str
    name: str
    bucket: str
    prefix: str


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


# An archive naming no bucket goes to the operator's default one (the chart's archive.bucket):
# one bucket for every such object of one install, as the studies use it.
DEFAULT_BUCKET = "<the operator's default>"


def placements(where: str, context: str, text: str) -> list[Placement]:
    out = []
    for d in docs(text):
        archive = (d.get("spec") or {}).get("archive")
        if isinstance(archive, dict) and archive.get("enabled", True):
            kind, name = d["kind"], d["metadata"]["name"]
            prefix = (archive.get("prefix") or "").strip("/")
            bucket = archive.get("bucket") or DEFAULT_BUCKET
            out.append(Placement(where, context, kind, name, bucket, prefix))
    return out


def everything() -> list[Placement]:
    out = []
    for f in sorted((REPO / "manifests" / "samples").glob("*.yaml")):
        out += placements(str(f.relative_to(REPO)), "", f.read_text())
    for build in sorted((REPO / "manifests" / "studies").glob("*/*/kustomization.yaml")):
        text = dc.manifests_at(build.parent, kustomization=True)
        out += placements(str(build.parent.relative_to(REPO)), "", text)
    for a in dc.kubectl_applies(dc.snippets()):
        out += placements(a.snippet.where, a.context, dc.applied_manifests(a) or "")
    return out


def collisions(items: list[Placement]) -> list[str]:
    """Places two objects (or two contexts of one) share: the same bucket and prefix, or one
    prefix inside the other."""
    out = []
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if a.bucket != b.bucket:
                continue
            shared = a.prefix == b.prefix or f"{b.prefix}/".startswith(f"{a.prefix}/") or \
                f"{a.prefix}/".startswith(f"{b.prefix}/")  # fmt: skip
            other_object = (a.kind, a.name) != (b.kind, b.name)
            other_cluster = a.context and b.context and a.context != b.context
            if shared and (other_object or other_cluster):
                out.append(
                    f"{a.kind}/{a.name} ({a.where}, context {a.context or '-'}) and "
                    f"{b.kind}/{b.name} ({b.where}, context {b.context or '-'}) both archive "
                    f"under s3://{a.bucket}/{a.prefix} and s3://{b.bucket}/{b.prefix}"
                )
    return out


def test_no_two_shipped_experiments_or_contexts_archive_into_one_place() -> None:
    items = everything()
    assert not collisions(items), "\n".join(collisions(items))
    # The platforms sample, applied through both documented contexts, lands in two places.
    platforms = {(p.context, p.prefix) for p in items if p.name == "platforms" and p.context}
    assert platforms == {("eks", "platforms/eks"), ("magnum", "platforms/magnum")}
    # The studies name no bucket (runnable as shipped: S3 names are global), only a prefix each.
    studies = {p for p in items if p.where.startswith("manifests/studies/")}
    assert studies and {p.bucket for p in studies} == {DEFAULT_BUCKET}
    study1 = {(p.context, p.prefix) for p in studies if p.name == "aws-vs-openstack" and p.context}
    assert study1 == {
        ("eks", "studies/aws-vs-openstack/aws"),
        ("magnum", "studies/aws-vs-openstack/openstack"),
    }


def test_two_contexts_under_one_prefix_collide() -> None:
    # The platforms sample as issue 33 found it: the same file applied through both contexts.
    same = [Placement("s.yaml", c, "BenchmarkExperiment", "platforms", "b", "platforms/eks")
            for c in ("eks", "magnum")]  # fmt: skip
    assert len(collisions(same)) == 1
    nested = [Placement("a", "", "BenchmarkRun", "a", "b", "studies"),
              Placement("b", "", "BenchmarkRun", "b", "b", "studies/x")]  # fmt: skip
    assert len(collisions(nested)) == 1
    apart = [Placement("a", "", "BenchmarkRun", "a", "b", "studies/x"),
             Placement("b", "", "BenchmarkRun", "b", "b", "studies/xy")]  # fmt: skip
    assert collisions(apart) == []
