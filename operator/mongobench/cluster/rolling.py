"""Rolling restarts after a version or resources change (StatefulSets use OnDelete), then the
featureCompatibilityVersion when the spec asks for one.

The StatefulSet controller only creates pods from the new template once the old pod is gone, so
the operator decides the order: secondaries one at a time, each back and caught up, the primary
stepped down and restarted last (mongobench.mongo.plan.next_rolling_step). One pod per pass;
the next pass runs when that pod is ready again (the set is not "ready" in between).
"""

from __future__ import annotations

from mongobench.cluster import labels as lbl
from mongobench.cluster.layout import ClusterLayout, ReplicaSetLayout
from mongobench.k8s import client as kube
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.model import Mongos

REVISION = "controller-revision-hash"


def stale_members(rs: ReplicaSetLayout) -> list[str]:
    """Member hosts whose pod still runs an older StatefulSet revision."""
    sts = kube.get("StatefulSet", rs.namespace, rs.name)
    if sts is None:
        return []
    revision = (sts.get("status") or {}).get("updateRevision")
    if not revision:
        return []
    pods = kube.list_objects("Pod", rs.namespace, f"{lbl.REPLSET}={rs.name}")
    stale = []
    for pod in pods:
        name = pod["metadata"]["name"]
        index = int(name.rsplit("-", 1)[1])
        if pod["metadata"].get("labels", {}).get(REVISION) != revision and index < rs.members:
            stale.append(rs.member_host(index))
    return sorted(stale)


def roll(admin: MongoAdmin, rs: ReplicaSetLayout) -> str | None:
    """Take the next step; None when no member needs a restart, else what is happening."""
    stale = stale_members(rs)
    if not stale:
        return None
    step = admin.rolling_step(rs.to_spec(), stale)
    if step.kind == "restart" and step.host:
        pod = step.host.split(".", 1)[0]
        kube.delete("Pod", rs.namespace, pod)
        return f"{rs.name}: {step.reason}"
    if step.kind == "done":
        return None
    return f"{rs.name}: {step.reason}"


def feature_compatibility(
    admin: MongoAdmin, layout: ClusterLayout, wanted: str
) -> tuple[str, bool]:
    """Set the cluster's FCV to `wanted` (through mongos, or the replica set's primary); call
    only once no member runs an old binary. Returns (the FCV now, whether this call changed it)."""
    target = Mongos((layout.mongos_host,)) if layout.sharded else layout.replica_sets[0].to_spec()
    changed = admin.ensure_feature_compatibility_version(target, wanted)
    return wanted, changed
