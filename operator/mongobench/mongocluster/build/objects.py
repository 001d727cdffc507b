"""All desired objects of a MongoCluster, in apply order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.config import Peers
from mongobench.mongocluster.build.layout import ClusterLayout
from mongobench.mongocluster.build.mongos import build_mongos_deployment
from mongobench.mongocluster.build.networkpolicy import build_network_policies
from mongobench.mongocluster.build.pdb import build_pdbs
from mongobench.mongocluster.build.platform import Preset
from mongobench.mongocluster.build.podmonitor import build_pod_monitor
from mongobench.mongocluster.build.service import build_headless_service, build_mongos_service
from mongobench.mongocluster.build.statefulset import build_statefulset


def build_workload_objects(
    spec: MongoClusterSpec,
    layout: ClusterLayout,
    preset: Preset,
    monitor_labels: Mapping[str, str] | None = None,
    peers: Peers | None = None,
) -> list[dict[str, Any]]:
    """NetworkPolicies first (no pod runs a moment unprotected), Services before workloads
    (members resolve each other on start), config servers first.

    `monitor_labels`: the PodMonitor's labels when the spec names none (see podmonitor.py).
    `peers`: who the NetworkPolicies admit besides the cluster (default: the install's).
    """
    out: list[dict[str, Any]] = build_network_policies(spec, layout, peers or Peers())
    for rs in layout.replica_sets:
        out.append(build_headless_service(layout, rs))
        out.append(build_statefulset(spec, layout, rs, preset))
    if layout.sharded:
        out.append(build_mongos_service(layout))
        out.append(build_mongos_deployment(spec, layout, preset))
    out.extend(build_pdbs(layout))
    monitor = build_pod_monitor(spec, layout, monitor_labels)
    if monitor is not None:
        out.append(monitor)
    return out
