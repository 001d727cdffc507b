"""`mongobench rerun ARCHIVE`: the manifests that recreate an archived run (pure).

From the run's provenance (provenance.json: the MongoCluster and BenchmarkRun specs as the
apiserver stored them, defaults applied) a MongoCluster and a BenchmarkRun with new names: the
run's clusterRef points at the new cluster; the images the kubelets ran are pinned by digest
(the cluster's mongod image, its exporter's, the clients'); everything else, seeds in workload
properties included, is kept as it was. A run archived before provenance existed is recreated
from run.json and cluster.json, without digests (`notes` says so).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RERUN_OF = "mongobench.io/rerun-of"  # annotation: the uid of the run recreated


@dataclass
class Rerun:
    objects: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def pinned(image: str, image_id: str | None) -> str | None:
    """`repository@sha256:...` from what a kubelet reported; None without a digest."""
    if not image_id or "@" not in image_id:
        return None
    digest = image_id.rpartition("@")[2]
    repository = image.partition("@")[0]
    name, _, tag = repository.rpartition(":")
    if name and "/" not in tag:  # a tag, not a registry port
        repository = name
    return f"{repository}@{digest}"


def _digest_of(containers: Sequence[Mapping[str, Any]], role: str, image: str) -> str | None:
    for c in containers:
        if c.get("role") == role and c.get("image") == image:
            found = pinned(image, c.get("imageID"))
            if found:
                return found
    return None


def _meta(obj: Mapping[str, Any], name: str, namespace: str | None, uid: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {"name": name, "annotations": {RERUN_OF: uid}}
    if namespace:
        out["namespace"] = namespace
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return out


def manifests(
    run: Mapping[str, Any],
    provenance: Mapping[str, Any] | None,
    cluster: Mapping[str, Any] | None,
    *,
    name: str | None = None,
    namespace: str | None = None,
) -> Rerun:
    """The objects that recreate `run` (run.json), from its provenance (or, lacking one, its
    cluster.json). `name`: the new run's (default `<name>-rerun`); the cluster gets
    `<name>-cluster`. `namespace`: set on both when given."""
    notes: list[str] = []
    meta = run.get("metadata") or {}
    uid = str(meta.get("uid") or "")
    new = name or f"{meta.get('name')}-rerun"
    specs = (provenance or {}).get("specs") or {}
    containers = list((provenance or {}).get("containers") or [])
    run_obj = specs.get("benchmarkRun") or run
    cluster_obj = specs.get("mongoCluster")
    if provenance is None:
        notes.append("no provenance.json in the archive: images are not pinned by digest")
        cluster_obj = (cluster or {}).get("mongoCluster")
    objects: list[dict[str, Any]] = []
    run_spec = copy.deepcopy(dict(run_obj.get("spec") or {}))
    if run_spec.get("clusterRef"):
        if not cluster_obj:
            raise ValueError("the archive holds no MongoCluster spec to recreate the target")
        cluster_name = f"{new}-cluster"
        cluster_spec = copy.deepcopy(dict(cluster_obj.get("spec") or {}))
        image = cluster_spec.get("image") or f"mongo:{cluster_spec.get('version')}"
        if (digest := _digest_of(containers, "database", image)) is not None:
            cluster_spec["image"] = digest
        elif provenance is not None:
            notes.append(f"no digest reported for {image}: the cluster's image is not pinned")
        monitoring = cluster_spec.get("monitoring") or {}
        exporter = monitoring.get("exporterImage")
        if exporter and (digest := _digest_of(containers, "database", exporter)) is not None:
            cluster_spec["monitoring"] = {**monitoring, "exporterImage": digest}
        objects.append(
            {
                "apiVersion": cluster_obj.get("apiVersion") or "mongobench.io/v1alpha1",
                "kind": "MongoCluster",
                "metadata": _meta(cluster_obj, cluster_name, namespace, uid),
                "spec": cluster_spec,
            }
        )
        run_spec["clusterRef"] = {**run_spec["clusterRef"], "name": cluster_name}
    clients = Counter(
        str(c.get("image"))
        for c in containers
        if c.get("role") == "client" and not c.get("init") and c.get("image")
    )
    client_image = run_spec.get("image") or (clients.most_common(1)[0][0] if clients else None)
    if client_image and (digest := _digest_of(containers, "client", client_image)) is not None:
        run_spec["image"] = digest
    elif provenance is not None:
        notes.append("no client image digest reported: the clients' image is not pinned")
    objects.append(
        {
            "apiVersion": run_obj.get("apiVersion") or "mongobench.io/v1alpha1",
            "kind": "BenchmarkRun",
            "metadata": _meta(run_obj, new, namespace, uid),
            "spec": run_spec,
        }
    )
    return Rerun(objects, notes)
