"""A step's cost (spec.cost): the prices as given (inline or the named ConfigMap), the nodes the
step's pods used (the cluster's, from the run's snapshot, and the step's client pods'; their
node.kubernetes.io/instance-type label) and its window. The arithmetic is the results
library's (mongobench_results.cost); this module only reads what it needs, and says in the
step's cost why a figure is missing rather than failing the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mongobench.api.benchmarkrun import BenchmarkRunSpec
from mongobench.k8s.api import KubeApi
from mongobench.k8s.client import ApiError
from mongobench_results import cost, records

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
JOB_NAME_LABEL = "job-name"  # set by the Job controller on its pods


def prices(kube: KubeApi, namespace: str, spec: BenchmarkRunSpec) -> cost.Prices | str:
    """The run's prices, or why there are none usable (a missing ConfigMap, a bad price)."""
    given = spec.cost
    assert given is not None
    data: dict[str, Any] = dict(given.prices)
    currency = given.currency
    if given.config_map_ref is not None:
        name = given.config_map_ref.name
        configmap = kube.get("ConfigMap", namespace, name)
        if configmap is None:
            return f"prices ConfigMap {namespace}/{name} does not exist"
        data = {**(configmap.get("data") or {}), **data}  # the spec's own prices win
    try:
        return cost.Prices.parse(data, currency)
    except ValueError as exc:
        return str(exc)


def step_instance_types(
    kube: KubeApi, namespace: str, job: str, snapshot: Mapping[str, Any] | None
) -> list[str | None]:
    """One instance type per node the step used: the cluster's nodes (as snapshotted at the
    start) and the nodes of the step's client pods, each node once."""
    nodes: dict[str, str | None] = {
        str(n["name"]): n.get("instanceType") for n in (snapshot or {}).get("nodes") or ()
    }
    for pod in kube.list("Pod", namespace, f"{JOB_NAME_LABEL}={job}"):
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node in nodes:
            continue
        try:
            found = kube.get("Node", None, node)
        except ApiError:
            found = None
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        nodes[node] = labels.get(INSTANCE_TYPE)
    return list(nodes.values())


def step_cost(
    given: cost.Prices | str, types: Sequence[str | None], entry: Mapping[str, Any]
) -> dict[str, Any]:
    """The step's `cost` entry from its window and operations."""
    if isinstance(given, str):
        return {"error": given}
    start = records.parse_time(entry.get("startTime"))
    end = records.parse_time(entry.get("completionTime"))
    seconds = (end - start).total_seconds() if start and end else 0.0
    operations = float((entry.get("result") or {}).get("operationsTotal") or 0)
    return cost.step_cost(given, types, seconds, operations).to_dict()


def status(steps: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """status.cost: per workload the cost per million operations of its measured runs (total
    cost over total operations), and of the whole run's steps; None without costs."""
    costed = [s for s in steps if isinstance(s.get("cost"), Mapping)]
    if not costed:
        return None
    currency = next((s["cost"].get("currency") for s in costed if "currency" in s["cost"]), None)
    out: dict[str, Any] = {"currency": currency}
    workloads = []
    for workload in dict.fromkeys(s.get("workload") for s in costed if s.get("kind") == "run"):
        mine = [
            s["cost"] for s in costed if s.get("kind") == "run" and s.get("workload") == workload
        ]
        per = cost.per_million(mine)
        item: dict[str, Any] = {"workload": workload, "steps": len(mine)}
        if per is not None:
            item["perMillionOperations"] = round(per, 6)
        workloads.append(item)
    out["workloads"] = workloads
    total = [s["cost"] for s in costed]
    if all(c.get("cost") is not None for c in total):
        out["total"] = round(sum(float(c["cost"]) for c in total), 6)
    errors = sorted({str(c["error"]) for c in total if c.get("error")})
    missing = sorted({m for c in total for m in c.get("missingPrices") or ()})
    if errors or missing:
        out["problems"] = errors + [f"no price for {m}" for m in missing]
    return out
