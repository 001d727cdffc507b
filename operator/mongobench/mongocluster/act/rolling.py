"""Rolling restarts after a version or resources change (StatefulSets use OnDelete), then the
featureCompatibilityVersion when the spec asks for one.

Before a roll to another release series, the FCV MongoDB's upgrade procedure needs: the running
series (``before_series_change``, decided by versions.fcv_before_roll), so an FCV an earlier
upgrade left behind never meets binaries that refuse it.

The StatefulSet controller only creates pods from the new template once the old pod is gone, so
the operator decides the order: secondaries one at a time, each back and caught up, the primary
stepped down and restarted last (mongobench.mongo.plan.next_rolling_step). One pod per pass;
the next pass runs when that pod is ready again (the set is not "ready" in between).

mongos comes last: its Deployment keeps the image it runs until every replica set's members run
the new one (mongobench.mongocluster.build.mongos.mongos_upgrade), then rolls by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongobench.k8s.api import KubeApi
from mongobench.mongo.admin import MongoAdmin
from mongobench.mongo.model import FcvScope, Mongos, ReplicaSetSpec
from mongobench.mongo.versions import FcvStep, fcv_before_roll
from mongobench.mongocluster.build import labels as lbl
from mongobench.mongocluster.build.layout import ClusterLayout, ReplicaSetLayout
from mongobench.mongocluster.build.mongos import CONTAINER as MONGOS
from mongobench.mongocluster.build.mongos import MongosUpgrade, container_image, mongos_upgrade
from mongobench.mongocluster.decide.status import WorkloadState

REVISION = "controller-revision-hash"
# (a workload, the name of its database container) -> whether its pod template carries a change
Carries = Callable[[Mapping[str, Any], str], bool]


def stale_members(kube: KubeApi, rs: ReplicaSetLayout) -> list[str]:
    """Member hosts whose pod still runs an older StatefulSet revision."""
    sts = kube.get("StatefulSet", rs.namespace, rs.name)
    if sts is None:
        return []
    revision = (sts.get("status") or {}).get("updateRevision")
    if not revision:
        return []
    pods = kube.list("Pod", rs.namespace, f"{lbl.REPLSET}={rs.name}")
    stale = []
    for pod in pods:
        name = pod["metadata"]["name"]
        index = int(name.rsplit("-", 1)[1])
        if pod["metadata"].get("labels", {}).get(REVISION) != revision and index < rs.members:
            stale.append(rs.member_host(index))
    return sorted(stale)


def roll(
    kube: KubeApi, admin: MongoAdmin, rs: ReplicaSetLayout, observed: WorkloadState | None = None
) -> str | None:
    """Take the next step; None when no member needs a restart, else what is happening.

    `observed`: the StatefulSet as the sync listed it; when settled, nothing is stale and the
    pods are not listed (a Ready cluster's every sync would otherwise read them)."""
    if observed is not None and observed.settled:
        return None
    stale = stale_members(kube, rs)
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


def rolled(kube: KubeApi, layout: ClusterLayout, carries: Carries) -> bool:
    """Whether every pod of the cluster's StatefulSets (and mongos Deployment) was started from
    a template that `carries` what a change put there (a keyfile's digest, a --tlsMode), and is
    ready: the rolling restart that change started is over."""
    workloads = [("StatefulSet", rs.name, "mongod") for rs in layout.replica_sets]
    if layout.sharded:
        workloads.append(("Deployment", layout.mongos, MONGOS))
    for kind, name, container in workloads:
        workload = kube.get(kind, layout.namespace, name)
        if workload is None or not carries(workload, container):
            return False
        replicas = int(workload["spec"].get("replicas", 0))
        st = workload.get("status") or {}
        if kind == "StatefulSet" and not WorkloadState.of_statefulset(workload).settled:
            return False
        seen = int(st.get("observedGeneration", 0)) >= int(workload["metadata"]["generation"])
        counts = (st.get("updatedReplicas", 0), st.get("readyReplicas", 0), st.get("replicas"))
        if not seen or any(int(n or 0) != replicas for n in counts):
            return False
    return True


def runs_image(kube: KubeApi, rs: ReplicaSetLayout, image: str) -> bool:
    """Whether every member's pod is ready and its mongod runs `image`: the set has rolled."""
    pods = {
        pod["metadata"]["name"]: pod
        for pod in kube.list("Pod", rs.namespace, f"{lbl.REPLSET}={rs.name}")
    }
    for i in range(rs.members):
        pod = pods.get(rs.pod_name(i))
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return False
        if container_image(pod["spec"], "mongod") != image:
            return False
        conditions = (pod.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return False
    return True


def observe_mongos_upgrade(kube: KubeApi, layout: ClusterLayout, wanted: str) -> MongosUpgrade:
    """Where the mongos Deployment stands against the spec's image (sharded clusters only)."""
    dep = kube.get("Deployment", layout.namespace, layout.mongos)
    running = container_image(dep["spec"]["template"]["spec"], MONGOS) if dep else None
    # Pods are listed only while the routers run another image than the spec's.
    upgraded = running in (None, wanted) or all(
        runs_image(kube, rs, wanted) for rs in layout.replica_sets
    )
    return mongos_upgrade(wanted, dep, upgraded)


def fcv_target(layout: ClusterLayout) -> FcvScope | ReplicaSetSpec:
    """Where the cluster's FCV is read and set: the replica set's primary, or (sharded) read on
    every set's primary and set through mongos (mongos has no FCV of its own: FcvScope)."""
    if not layout.sharded:
        return layout.replica_sets[0].to_spec()
    return FcvScope(
        Mongos((layout.mongos_host,)), tuple(rs.to_spec() for rs in layout.replica_sets)
    )


def before_series_change(
    admin: MongoAdmin, layout: ClusterLayout, version: str, wanted_fcv: str | None
) -> tuple[FcvStep, str]:
    """Before a roll may replace the binaries: the FCV step MongoDB's upgrade procedure needs
    (versions.fcv_before_roll), done here when it is a raise. Returns (the step, the FCV now)."""
    target = fcv_target(layout)
    # The routers' binaries are the last to move: mid-roll they still run the old series.
    running = admin.running_version(target.routers if isinstance(target, FcvScope) else target)
    observed = admin.feature_compatibility_version(target)
    step = fcv_before_roll(
        running=running, target=version, observed_fcv=observed, wanted_fcv=wanted_fcv
    )
    if step.action == "raise" and step.fcv is not None:
        admin.ensure_feature_compatibility_version(target, step.fcv, binaries=running)
        return step, step.fcv
    return step, observed


def feature_compatibility(
    admin: MongoAdmin, layout: ClusterLayout, wanted: str, binaries: str
) -> tuple[str, bool]:
    """Set the cluster's FCV to `wanted` (through mongos, or the replica set's primary); call
    only once every member runs `binaries` (spec.version). Returns (the FCV now, whether this
    call changed it)."""
    changed = admin.ensure_feature_compatibility_version(
        fcv_target(layout), wanted, binaries=binaries
    )
    return wanted, changed
