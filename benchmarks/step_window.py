"""make bench-step-window: what each step reports next to total operations / measured window.

One BenchmarkRun (workloads a-d, 2 repetitions, 2 clients x 4 threads; YCSB against FerretDB,
executed for real by the harness kubelet) on the local plane. For every load and run step it
prints the throughput in status next to figures recomputed from the clients' own documents (read
back from their ConfigMaps): total operations / the span from the first client's first operation
to the last client's last (documents without operation timestamps: the process span), and the
sum of each client's own rate (what result/v1 reported). A benchmark that prints; no assertion.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from localplane.executor import pod_executor, rewrite_hosts
from localplane.ferretdb import running_ferretdb
from localplane.nodes import NodeSet
from localplane.operator import start_operator, wait_until
from localplane.plane import Plane
from localplane.tools import REPO

NS = "bench"


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def documents(plane: Plane, job: str) -> list[dict[str, Any]]:
    items = json.loads(plane.kubectl("get", "configmaps", "-n", NS, "-o", "json").stdout)["items"]
    parts: dict[str, dict[int, str]] = {}
    for cm in items:
        labels = cm["metadata"].get("labels") or {}
        owner = labels.get("mongobench.io/result-of", "")
        if owner.startswith(f"{job}-c"):
            parts.setdefault(owner, {})[int(labels["mongobench.io/part"])] = cm["data"][
                "result.json"
            ]
    return [json.loads("".join(p[i] for i in sorted(p))) for p in parts.values()]


def span(doc: dict[str, Any]) -> tuple[float, float, str]:
    window = doc.get("window")
    if window:
        return ts(window["start"]), ts(window["end"]), "operations"
    return ts(doc["startTime"]), ts(doc["endTime"]), "process"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-step-window-") as tmp:
        work = Path(tmp)
        plane = Plane.start(work / "plane", nodes=NodeSet(profile="kind", count=3))
        try:
            plane.apply(REPO / "crds")
            plane.kubectl("create", "namespace", NS)
            with (
                running_ferretdb(work / "ferretdb") as fdb,
                pod_executor(plane, NS, uri_rewrite=rewrite_hosts(f"{fdb.host}:{fdb.port}")),
            ):
                plane.kubectl(
                    "create", "secret", "generic", "ferretdb", "-n", NS,
                    f"--from-literal=uri={fdb.uri}",
                )  # fmt: skip
                operator = start_operator(plane.kubeconfig, [NS], work / "operator.log")
                try:
                    run = {
                        "apiVersion": "mongobench.io/v1alpha1",
                        "kind": "BenchmarkRun",
                        "metadata": {"name": "w"},
                        "spec": {
                            "uriSecretRef": {"name": "ferretdb", "key": "uri"},
                            "workloads": [{"name": w} for w in "abcd"],
                            "load": {"recordCount": 1000, "threads": 4},
                            "run": {"operationCount": 2000, "threads": 4},
                            "repetitions": 2,
                            "clients": {"parallelism": 2},
                            "cleanup": {"jobs": "Never"},
                        },
                    }
                    plane.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(run))

                    def done() -> dict[str, Any] | None:
                        obj = json.loads(
                            plane.kubectl("get", "benchmarkrun", "w", "-n", NS, "-o", "json").stdout
                        )
                        phase = obj.get("status", {}).get("phase")
                        return obj if phase in ("Succeeded", "Failed") else None

                    obj = wait_until(done, timeout=900, interval=1.0, what="run finished")
                    rows = []
                    for step in obj["status"]["steps"]:
                        if step["kind"] not in ("load", "run") or not step.get("result"):
                            continue
                        docs = documents(plane, step["job"])
                        spans = [span(d) for d in docs]
                        ops = sum(d["operationsTotal"] for d in docs)
                        window = max(e for _, e, _ in spans) - min(s for s, _, _ in spans)
                        starts = sorted(s for s, _, _ in spans)
                        rows.append(
                            (
                                step["label"],
                                step["result"]["throughput"],
                                ops / window,
                                sum(d["throughput"] for d in docs),
                                starts[-1] - starts[0],
                                spans[0][2],
                            )
                        )
                finally:
                    operator.stop()
        finally:
            plane.stop()
    print(f"bench-step-window: run {obj['status']['phase']} (a-d x 2, 2 clients x 4 threads)")
    print(
        f"  {'step':10} {'reported':>10} {'ops/window':>11} {'diff':>7} "
        f"{'sum of rates':>13} {'start skew':>11}  window from"
    )
    for label, reported, honest, summed, skew, source in rows:
        print(
            f"  {label:10} {reported:10.1f} {honest:11.1f} {100 * (reported / honest - 1):+6.2f}% "
            f"{summed:13.1f} {skew:10.3f}s  {source}"
        )
    return 0 if obj["status"]["phase"] == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
