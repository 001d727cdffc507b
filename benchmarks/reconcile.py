"""make bench-reconcile: how fast and how frugal the MongoCluster reconciler is, for a sharded
cluster of 3 shards x 3 members + 3 config servers + 2 mongos, on the local plane.

Prints:
  seconds from `kubectl apply` to every child object created (target < 1 s)
  seconds to Ready (pods by KWOK, MongoDB by the wire model: wiring steps included)
  API requests the operator issued per reconcile (handler invocation), from the apiserver's
    audit log, split into reads and writes
  API writes per minute while idle after Ready (target 0)

Counts come from the apiserver's audit log, filtered by the operator's user agents (kopf and the
kubernetes client), so the benchmark's own polling is not counted.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO
from mongobench.k8s.client import USER_AGENT

NS = "bench"
IDLE_SECONDS = int(os.environ.get("BENCH_IDLE_SECONDS", "60"))
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}


def operator_requests(audit_log: Path, since: float, until: float) -> list[dict[str, Any]]:
    out = []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        agent = event.get("userAgent", "")
        if not agent.startswith(("kopf/", USER_AGENT)):
            continue
        stamp = event["requestReceivedTimestamp"]
        t = time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        t += float("0." + re.sub(r"\D", "", stamp[20:26]) or 0)
        if since <= t <= until:
            out.append(event)
    return out


def reconciles(metrics: str) -> float:
    """Handler calls that did work: a child's event dropped unread (outcome "skipped") is not."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("mongobench_reconciles_total{")
        and 'kind="MongoCluster"' in line
        and 'outcome="skipped"' not in line
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-reconcile-") as tmp:
        work = Path(tmp)
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=4), audit=True)
        model = MongoModel(keyfile=keyfile_from_pods(plane.api_client()), catch_up_seconds=0.2)
        operator = None
        try:
            plane.apply(REPO / "crds")
            plane.kubectl("create", "namespace", NS)
            sets = {"b-cfg": 3, "b-shard0": 3, "b-shard1": 3, "b-shard2": 3}
            for rs, n in sets.items():
                for i in range(n):
                    model.member(f"{rs}-{i}.{rs}-hl.{NS}.svc.cluster.local:27017")
            model.mongos(f"b-mongos.{NS}.svc.cluster.local:27017")
            host_map = ",".join(f"{k}={v}" for k, v in model.host_map.items())
            operator = start_operator(
                plane.kubeconfig, [NS], work / "operator.log", MONGOBENCH_HOST_MAP=host_map
            )
            api = plane.api_client()
            api.user_agent = "mongobench-bench"
            apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
            custom = k8s.CustomObjectsApi(api)
            manifest = {
                "apiVersion": "mongobench.io/v1alpha1",
                "kind": "MongoCluster",
                "metadata": {"name": "b"},
                "spec": {
                    "version": "7.0.14",
                    "topology": {
                        "type": "Sharded",
                        "sharded": {
                            "shards": 3,
                            "membersPerShard": 3,
                            "configServers": 3,
                            "mongos": 2,
                        },
                    },
                },
            }
            time.sleep(2)  # let the operator finish its initial listing
            t0 = time.time()
            plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(manifest))

            def children() -> bool:
                sts = apps.list_namespaced_stateful_set(NS).items
                deps = apps.list_namespaced_deployment(NS).items
                svcs = core.list_namespaced_service(NS).items
                secrets = core.list_namespaced_secret(NS).items
                return len(sts) == 4 and len(deps) == 1 and len(svcs) == 5 and len(secrets) >= 5

            wait_until(children, timeout=60, interval=0.02, what="children")
            t_children = time.time() - t0

            def ready() -> bool:
                obj = custom.get_namespaced_custom_object(
                    "mongobench.io", "v1alpha1", NS, "mongoclusters", "b"
                )
                return (obj.get("status") or {}).get("phase") == "Ready"

            wait_until(ready, timeout=120, interval=0.1, what="Ready")
            t_ready = time.time() - t0
            time.sleep(3)  # trailing events of the last pods
            t_busy_end = time.time()
            busy = operator_requests(plane.audit_log, t0, t_busy_end)
            n_reconciles = reconciles(operator.metrics())

            time.sleep(IDLE_SECONDS)
            idle = operator_requests(plane.audit_log, t_busy_end, time.time())
            idle_writes = [e for e in idle if e["verb"] in WRITE_VERBS]
            writes = [e for e in busy if e["verb"] in WRITE_VERBS]

            print("bench-reconcile: 3 shards x 3 + 3 config servers + 2 mongos (KWOK, wire model)")
            print(f"  apply -> all children created     {t_children:6.2f} s   (target < 1 s)")
            print(f"  apply -> Ready                    {t_ready:6.2f} s")
            print(f"  operator API requests until Ready {len(busy):6d}     ({len(writes)} writes)")
            print(f"  reconciles (handler invocations)  {n_reconciles:6.0f}")
            print(f"  API requests per reconcile        {len(busy) / max(n_reconciles, 1):6.1f}")
            per_minute = 60 / IDLE_SECONDS
            idle_reads = len(idle) - len(idle_writes)
            idle_writes_pm = len(idle_writes) * per_minute
            print(f"  API writes per minute while idle  {idle_writes_pm:6.1f}   (target 0)")
            print(f"  API reads per minute while idle   {idle_reads * per_minute:6.1f}")
            for e in idle_writes[:10]:
                code = e.get("responseStatus", {}).get("code")
                agent = e["userAgent"].split(" ")[0]
                print(f"    idle write: {e['verb']} {e['requestURI']} -> {code} ({agent})")
                if os.environ.get("BENCH_VERBOSE"):
                    print(json.dumps(e.get("requestObject"))[:600], e["requestReceivedTimestamp"])
            return 0
        finally:
            if operator is not None:
                operator.stop()
            model.stop()
            plane.stop()


if __name__ == "__main__":
    sys.exit(main())
