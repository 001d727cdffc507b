"""A run's provenance, assembled (pure): what ran, so a result can be audited, rerun and compared
only with its like. Written to the archive as provenance.json; status keeps its summary
(mongobench_results.provenance.summary).

The facts are observed by `benchmarkrun.act.facts` (Kubernetes, MongoDB through mongobench.mongo,
Prometheus); this module only shapes them. Pods are gone once a run's Jobs are cleaned up, so
the containers seen at each upload are merged with those of the previous provenance.json.

Secrets: the specs hold Secret names only; command-line options are redacted by name (any
option whose name says password, secret or token), and then every string of the document that
contains one of the cluster's secret values has it replaced: a secret never reaches the archive
even where mongod reports it verbatim (argv).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mongobench.api import BenchmarkExperimentSpec, BenchmarkRunSpec
from mongobench.api.benchmarkexperiment import Order
from mongobench.api.benchmarkrun import Workload
from mongobench.api.schema import field_of
from mongobench_results.provenance import API_VERSION

REDACTED = "<redacted>"
_SECRET_NAME = re.compile(r"password|secret|token|passphrase", re.IGNORECASE)
# Reply fields that describe the exchange, not the server.
_REPLY_FIELDS = ("ok", "$clusterTime", "operationTime", "$gleStats", "lastCommittedOpTime")

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
_NODE_INFO = (
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "operatingSystem",
    "architecture",
)


@dataclass(frozen=True)
class ServerObservation:
    """What one mongod/mongos answered (None: the command failed, `errors` says why)."""

    host: str
    role: str  # replica | shard | config | mongos
    replica_set: str | None
    build_info: Mapping[str, Any] | None
    cmd_line_opts: Mapping[str, Any] | None
    server_status: Mapping[str, Any] | None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Facts:
    """Everything observed for one run's provenance."""

    run: Mapping[str, Any]  # the BenchmarkRun as stored (its spec resolved: defaults applied)
    cluster: Mapping[str, Any] | None  # the MongoCluster; None for an external database
    operator: Mapping[str, Any]
    kubernetes: Mapping[str, Any] | None  # GET /version
    pods: Sequence[tuple[str, Mapping[str, Any]]]  # (role: database | client, Pod)
    nodes: Sequence[Mapping[str, Any]]
    node_metrics: Mapping[str, Mapping[str, Any]]  # node -> node-exporter facts
    servers: Sequence[ServerObservation]
    fcv: str | None
    prometheus: Mapping[str, Any] | None
    seeds: Mapping[str, Any]
    previous: Mapping[str, Any] | None = None  # the provenance.json of the previous upload
    missing: Sequence[str] = ()  # what could not be observed, one line each
    secrets: Sequence[str] = field(default=(), repr=False)


# --- redaction --------------------------------------------------------------------------------


def redact_options(parsed: Any) -> Any:
    """getCmdLineOpts' `parsed` with every option named like a secret replaced (keyFile, a
    path, stays)."""
    if isinstance(parsed, Mapping):
        return {
            k: REDACTED if _SECRET_NAME.search(str(k)) else redact_options(v)
            for k, v in parsed.items()
        }
    if isinstance(parsed, list):
        return [redact_options(v) for v in parsed]
    return parsed


def redact_argv(argv: Sequence[str]) -> list[str]:
    """argv with the value of every secret-named option replaced (`--x=v`, `--x v`, and
    `--setParameter name=v`)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        text = str(arg)
        if hide_next:
            out.append(_redact_assignment(text))
            hide_next = False
            continue
        name, eq, _ = text.partition("=")
        if text.startswith("-") and eq:
            value = text[len(name) + 1 :]
            if _SECRET_NAME.search(name):
                out.append(f"{name}={REDACTED}")
            else:
                out.append(f"{name}={_redact_assignment(value)}")
            continue
        if text.startswith("-"):
            hide_next = bool(_SECRET_NAME.search(text)) or text.lstrip("-") == "setParameter"
        out.append(text)
    return out


def _redact_assignment(text: str) -> str:
    """`name=value` (a setParameter) with the value hidden when the name says secret; any other
    value hidden when it is a secret option's value (hide_next)."""
    name, eq, _ = text.partition("=")
    if eq:
        return f"{name}={REDACTED}" if _SECRET_NAME.search(name) else text
    return REDACTED if not text.startswith("-") else text


def scrub(obj: Any, secrets: Iterable[str]) -> Any:
    """Every occurrence of a secret value (4 characters or more) in any string, replaced."""
    values = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
    if not values:
        return obj

    def walk(o: Any) -> Any:
        if isinstance(o, str):
            for v in values:
                if v in o:
                    o = o.replace(v, REDACTED)
            return o
        if isinstance(o, Mapping):
            return {walk(k): walk(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return [walk(v) for v in o]
        return o

    return walk(obj)


# --- pieces -----------------------------------------------------------------------------------


def containers(pods: Iterable[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Every container of the pods as the kubelet reports it: image and imageID (digest)."""
    out: list[dict[str, Any]] = []
    for role, pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
            for c in status.get(key) or []:
                out.append(
                    {
                        "pod": meta.get("name"),
                        "role": role,
                        "node": node,
                        "container": c.get("name"),
                        "init": init,
                        "image": c.get("image"),
                        "imageID": c.get("imageID") or None,
                    }
                )
    return out


def merge_containers(
    previous: Iterable[Mapping[str, Any]], current: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The containers seen before (their pods may be gone) and now; now wins, except that a
    digest once reported is not forgotten by a pod that reports none (yet)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for c in previous:
        merged[(str(c.get("pod")), str(c.get("container")))] = dict(c)
    for c in current:
        key = (str(c.get("pod")), str(c.get("container")))
        before = merged.get(key, {})
        merged[key] = {**c, "imageID": c.get("imageID") or before.get("imageID")}
    return [merged[k] for k in sorted(merged)]


def node_facts(
    node: Mapping[str, Any], roles: Iterable[str], metrics: Mapping[str, Any] | None
) -> dict[str, Any]:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    labels = meta.get("labels") or {}
    info = status.get("nodeInfo") or {}
    pick = ("cpu", "memory", "pods")
    doc: dict[str, Any] = {
        "name": meta.get("name"),
        "roles": sorted(set(roles)),
        **{k: info.get(k) for k in _NODE_INFO},
        "capacity": {k: v for k, v in (status.get("capacity") or {}).items() if k in pick},
        "allocatable": {k: v for k, v in (status.get("allocatable") or {}).items() if k in pick},
        "instanceType": labels.get(INSTANCE_TYPE),
        "zone": labels.get(ZONE),
        "region": labels.get(REGION),
    }
    for key, value in (metrics or {}).items():  # present only where node-exporter has them
        doc[key] = value
    return doc


def info_by_node(
    nodes: Iterable[str],
    identity: Mapping[str, str],
    *,
    uname: Sequence[Mapping[str, Any]],
    cpu_info: Sequence[Mapping[str, Any]],
    os_info: Sequence[Mapping[str, Any]],
    huge_pages: Sequence[Mapping[str, Any]],
    label: str | None = None,
) -> dict[str, dict[str, Any]]:
    """node-exporter's info metrics (instant vectors) per Kubernetes node: the CPU model
    (node_cpu_info), the OS (node_os_info), the anonymous huge pages in use (the sign of
    transparent huge pages, node_memory_AnonHugePages_bytes). A series matches a node by
    `label` (mode "label") or, through node_uname_info's nodename, by its instance."""
    who: dict[str, list[str]] = {}  # identity -> nodes (aliases may map several to one host)
    for n in nodes:
        who.setdefault(identity.get(n, n), []).append(n)
    instance_of = {  # instance -> nodes, by node_uname_info's nodename
        str(m.get("instance")): who[str(m["nodename"])]
        for s in uname
        if (m := s.get("metric") or {}).get("nodename") in who
    }

    def nodes_of(m: Mapping[str, Any]) -> list[str]:
        if label is not None:
            return who.get(str(m.get(label)), [])
        return instance_of.get(str(m.get("instance")), [])

    out: dict[str, dict[str, Any]] = {}

    def put(m: Mapping[str, Any], key: str, value: Any) -> None:
        for n in nodes_of(m) if value not in (None, {}) else []:
            out.setdefault(n, {})[key] = value

    for s in cpu_info:
        put(s.get("metric") or {}, "cpuModel", (s.get("metric") or {}).get("model_name"))
    for s in os_info:
        m = s.get("metric") or {}
        put(m, "os", {k: m[k] for k in ("pretty_name", "id", "version_id") if k in m})
    for s in huge_pages:
        value = (s.get("value") or [None, None])[1]
        used = int(float(value)) if value is not None else None
        thp = {"anonHugePagesBytes": used, "inUse": used > 0} if used is not None else None
        put(s.get("metric") or {}, "transparentHugePages", thp)
    return out


def _reply(doc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if doc is None:
        return None
    return {k: v for k, v in doc.items() if k not in _REPLY_FIELDS}


def server_document(s: ServerObservation) -> dict[str, Any]:
    opts = s.cmd_line_opts or {}
    status = s.server_status or {}
    cache = ((status.get("wiredTiger") or {}).get("cache") or {}).get("maximum bytes configured")
    doc: dict[str, Any] = {
        "host": s.host,
        "role": s.role,
        "replicaSet": s.replica_set,
        "process": status.get("process"),
        "buildInfo": _reply(s.build_info),
        "cmdLineOpts": None
        if s.cmd_line_opts is None
        else {
            "argv": redact_argv([str(a) for a in opts.get("argv") or []]),
            "parsed": redact_options(opts.get("parsed") or {}),
        },
        "storageEngine": (status.get("storageEngine") or {}).get("name"),
        "cacheBytesInEffect": int(cache) if isinstance(cache, int | float) else None,
    }
    if s.errors:
        doc["errors"] = list(s.errors)
    return doc


def _configured_cache_gb(servers: Sequence[dict[str, Any]]) -> float | None:
    for s in servers:
        parsed = (s.get("cmdLineOpts") or {}).get("parsed") or {}
        engine = ((parsed.get("storage") or {}).get("wiredTiger") or {}).get("engineConfig") or {}
        value = engine.get("cacheSizeGB")
        if isinstance(value, int | float):
            return float(value)
    return None


def storage(cluster: Mapping[str, Any] | None, servers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The storage engine and the WiredTiger cache as the spec asks, as mongod was started
    (its options), and as in effect (serverStatus), per the first mongod that reports it."""
    spec_storage = ((cluster or {}).get("spec") or {}).get("storage") or {}
    mongods = [s for s in servers if s.get("process") != "mongos" and s.get("role") != "mongos"]
    in_effect = next(
        (s["cacheBytesInEffect"] for s in mongods if s.get("cacheBytesInEffect") is not None), None
    )
    return {
        "engine": next((s["storageEngine"] for s in mongods if s.get("storageEngine")), None),
        "cacheConfiguredGB": spec_storage.get("wiredTigerCacheSizeGB"),
        "cacheStartedWithGB": _configured_cache_gb(mongods),
        "cacheBytesInEffect": in_effect,
    }


def _specs(run: Mapping[str, Any], cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    def obj(o: Mapping[str, Any]) -> dict[str, Any]:
        meta = o.get("metadata") or {}
        return {
            "apiVersion": o.get("apiVersion"),
            "kind": o.get("kind"),
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "generation", "labels")
                if k in meta
            },
            "spec": o.get("spec") or {},
        }

    return {"benchmarkRun": obj(run), "mongoCluster": obj(cluster) if cluster else None}


# --- the document -----------------------------------------------------------------------------


def build(facts: Facts) -> dict[str, Any]:
    """provenance.json: deterministic for the same facts (canonical bytes, skipped re-uploads)."""
    meta = facts.run.get("metadata") or {}
    previous = facts.previous or {}
    seen = merge_containers(previous.get("containers") or [], containers(facts.pods))
    roles: dict[str, set[str]] = {}
    for c in seen:
        if c.get("node"):
            roles.setdefault(str(c["node"]), set()).add(str(c["role"]))
    nodes = [
        node_facts(n, roles.get(name, ()), facts.node_metrics.get(name))
        for n in sorted(facts.nodes, key=lambda n: str((n.get("metadata") or {}).get("name")))
        if (name := str((n.get("metadata") or {}).get("name")))
    ]
    known = {n["name"] for n in nodes}
    # A node seen before (a client's, since gone, or one not read again) keeps its facts, with
    # the roles seen on it since.
    nodes += [
        {**n, "roles": sorted({*(n.get("roles") or ()), *roles.get(str(n.get("name")), ())})}
        for n in previous.get("nodes") or []
        if n.get("name") not in known
    ]
    nodes.sort(key=lambda n: str(n.get("name")))
    servers = [server_document(s) for s in facts.servers] or list(previous.get("servers") or [])
    kubernetes = facts.kubernetes or previous.get("kubernetes")
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "run": {k: meta.get(k) for k in ("namespace", "name", "uid")},
        "specs": _specs(facts.run, facts.cluster),
        "operator": dict(facts.operator),
        "kubernetes": {
            k: kubernetes[k]
            for k in ("gitVersion", "gitCommit", "platform", "goVersion", "buildDate")
            if kubernetes and k in kubernetes
        }
        or None,
        "containers": seen,
        "servers": servers,
        "featureCompatibilityVersion": facts.fcv or previous.get("featureCompatibilityVersion"),
        "storage": storage(facts.cluster, servers),
        "nodes": nodes,
        "prometheus": dict(facts.prometheus) if facts.prometheus else None,
        "seeds": dict(facts.seeds),
        "missing": sorted(set(facts.missing)),
    }
    return dict(scrub(doc, facts.secrets))


def prometheus_window(
    steps: Iterable[Mapping[str, Any]], scrape_interval: float, url: str | None
) -> dict[str, Any] | None:
    """The Prometheus queries' window over the run (first step window's start to the last
    one's end) and the scrape interval they assume; None without Prometheus."""
    if not url:
        return None
    windows = [w for s in steps if (w := (s.get("cpu") or {}).get("window")) and w.get("start")]
    return {
        "scrapeIntervalSeconds": scrape_interval,
        "window": {
            "start": min(str(w["start"]) for w in windows),
            "end": max(str(w["end"]) for w in windows),
        }
        if windows
        else None,
        "stepWindows": len(windows),
    }


def seeds(run: Mapping[str, Any], experiment: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every seed the run used. The YCSB and Locust clients draw from unseeded generators unless
    a workload's properties name one (recorded as given); an experiment's randomized rounds
    have the seed its status records."""
    workloads: tuple[Workload, ...] = field_of(BenchmarkRunSpec, run.get("spec"), "workloads")
    ycsb: dict[str, Any] = {}
    for w in workloads:
        found = {k: v for k, v in w.properties.items() if "seed" in k.lower()}
        if found:
            ycsb[w.name] = found
    # The spec gives Locust no seed (its generators are unseeded): recorded as none.
    doc: dict[str, Any] = {"ycsb": ycsb or None, "locust": None}
    if experiment is not None:
        status = experiment.get("status") or {}
        order: Order = field_of(BenchmarkExperimentSpec, experiment.get("spec"), "order")
        doc["experiment"] = {
            "name": (experiment.get("metadata") or {}).get("name"),
            "order": order,
            "seed": status.get("seed"),
        }
    return doc
