"""Per-step node CPU from Prometheus: what the studies got from dstat, without the arithmetic.

The PromQL lives in ``profiles/resources.yaml`` (a metric profile, like kube-burner's); this
module loads and renders it, runs it over one step's window with ``/api/v1/query_range`` and
summarises the CPU series (``benchmarkrun.telemetry.resources`` does disk, network and memory with
the same
profile and window). Rendering and summarising are pure; only :func:`query_range` does I/O.

Percentages are of all CPUs of a node: at each point the per-mode CPU-seconds are divided by
their total over every mode (which is the node's CPU count), so user+system+iowait+steal <= busy
<= 100 always holds. ``busy`` is 100 - idle, the figure dstat users quote as "CPU %" (it counts
iowait, steal, nice, irq and softirq as busy).

Node identity: results are keyed by Kubernetes node names. :class:`NodeMapping` says how such a
name finds its node-exporter series: by default through ``node_uname_info{nodename=...}`` (the
host name, which is the node name unless the kubelet overrides it), or through a label the
scrape config sets (``NodeMapping(mode="label", label="instance")`` for kube-prometheus, which
relabels ``instance`` to the node name). ``aliases`` map node names to identities that differ.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Literal

import yaml

SPLIT_MODES = ("user", "system", "iowait", "steal")
# Prometheus refuses query_range answers above 11,000 points per series.
MAX_POINTS = 11_000
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
# A matcher placeholder that rendered empty leaves a stray comma in its selector.
_EMPTY_MATCHER = (re.compile(r"\{\s*,\s*"), re.compile(r"\s*,\s*\}"))
# RE2's metacharacters; re.escape would also escape "-", which reads badly in a query.
_RE2_META = re.compile(r"[\\.+*?()|\[\]{}^$]")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

# node -> mode -> [(unix time, value)], as parsed from a query_range matrix.
Series = Mapping[str, Mapping[str, Sequence[tuple[float, float]]]]


class CpuUnavailable(Exception):
    """Prometheus could not be reached or refused a query; ``reason`` says which and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- the profile -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeMapping:
    """How a Kubernetes node name maps to node-exporter series (see the module docstring)."""

    mode: Literal["uname", "label"] = "uname"
    label: str = "instance"  # used by mode "label" only
    aliases: Mapping[str, str] = field(default_factory=dict)  # node name -> identity

    def __post_init__(self) -> None:
        if self.mode not in ("uname", "label"):
            raise ValueError(f"node mapping mode must be uname or label, not {self.mode!r}")
        if not _LABEL_NAME.match(self.label):
            raise ValueError(f"{self.label!r} is not a Prometheus label name")

    def identity(self, node: str) -> str:
        return self.aliases.get(node, node)


@dataclass(frozen=True)
class Query:
    name: str
    scope: Literal["node", "pod"]
    template: str


@dataclass(frozen=True)
class Figure:
    """One per-node (or per-pod) number of a step's resource profile: ``group.name``, the mean
    over the window's points and, with ``keep_max``, the largest point too."""

    group: str  # disk, network, memory, mongod
    name: str
    unit: str
    keep_max: bool
    query: Query


@dataclass(frozen=True)
class ResourceProfile:
    name: str
    # mapping mode -> {"nodeLabel", "selector", "join"} templates
    mappings: Mapping[str, Mapping[str, str]]
    queries: Mapping[str, Query]  # CPU (this module)
    figures: tuple[Figure, ...] = ()  # disk, network, memory (benchmarkrun.telemetry.resources)
    defines: Mapping[str, str] = field(default_factory=dict)  # shared PromQL fragments

    @classmethod
    def load(cls, text: str | None = None) -> ResourceProfile:
        """The profile shipped with the package, or one given as YAML text."""
        if text is None:
            text = resources.files(__package__).joinpath("profiles/resources.yaml").read_text()
        doc = yaml.safe_load(text)
        mappings = {
            mode: {k: str(m.get(k, "")) for k in ("nodeLabel", "selector", "join")}
            for mode, m in doc["nodeMappings"].items()
        }
        queries = {
            name: Query(name, q["scope"], str(q["query"])) for name, q in doc["queries"].items()
        }
        figures = tuple(
            Figure(
                group,
                name,
                str(f["unit"]),
                bool(f.get("max", False)),
                Query(f"{group}.{name}", f.get("scope", "node"), str(f["query"])),
            )
            for group, members in (doc.get("figures") or {}).items()
            for name, f in members.items()
        )
        for q in (*queries.values(), *(f.query for f in figures)):
            if q.scope not in ("node", "pod"):
                raise ValueError(f"query {q.name}: scope must be node or pod, not {q.scope!r}")
        defines = {k: str(v) for k, v in (doc.get("defines") or {}).items()}
        return cls(str(doc["name"]), mappings, queries, figures, defines)

    def render(
        self,
        name: str,
        *,
        mapping: NodeMapping,
        nodes: Iterable[str] = (),
        namespace: str = "",
        pods: Iterable[str] = (),
        range_seconds: float,
        node_names: Iterable[str] = (),
        job: str = "",
    ) -> str:
        """The PromQL of query ``name`` (or figure ``group.name``) with every placeholder filled
        in (pure)."""
        figures = {f.query.name: f.query for f in self.figures}
        query = self.queries[name] if name in self.queries else figures[name]
        m = self.mappings[mapping.mode]
        values = {
            **self.defines,
            "node_label": m["nodeLabel"],
            "node_selector": m["selector"],
            "node_join": m["join"],
            "label": mapping.label,
            "nodes": regex_alternation(mapping.identity(n) for n in nodes),
            "node_names": regex_alternation(node_names),
            "namespace": _string_literal_body(namespace),
            "pods": regex_alternation(pods),
            "range": _duration(range_seconds),
            "job_selector": f'job="{_string_literal_body(job)}"' if job else "",
        }
        return _fill(query.template, values)

    def node_label(self, mapping: NodeMapping) -> str:
        return _fill(self.mappings[mapping.mode]["nodeLabel"], {"label": mapping.label})


def _fill(template: str, values: Mapping[str, str]) -> str:
    # Mapping fragments hold placeholders themselves, hence a few passes.
    text = template
    for _ in range(3):
        names = set(_PLACEHOLDER.findall(text))
        if not names:
            text = _EMPTY_MATCHER[0].sub("{ ", _EMPTY_MATCHER[1].sub(" }", text))
            return " ".join(text.split())
        unknown = names - values.keys()
        if unknown:
            raise ValueError(f"unknown placeholders in resource profile: {sorted(unknown)}")
        text = _PLACEHOLDER.sub(lambda mo: values[mo.group(1)], text)
    raise ValueError("resource profile placeholders nest too deep")


def _string_literal_body(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def regex_alternation(names: Iterable[str]) -> str:
    """``a|b`` matching exactly these names, escaped for a double-quoted PromQL string."""
    return _string_literal_body("|".join(_RE2_META.sub(r"\\\g<0>", n) for n in sorted(set(names))))


def _duration(seconds: float) -> str:
    return f"{max(1, math.ceil(seconds))}s"


def rate_range(step_seconds: float, scrape_interval: float) -> float:
    """Grafana's $__rate_interval: long enough for two scrapes, no shorter than a step."""
    return max(step_seconds + scrape_interval, 4 * scrape_interval)


# --- pure summarising --------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeCpu:
    """Percent of all CPUs of one node over a window; ``max`` is the busiest point."""

    avg: float
    max: float
    user: float
    system: float
    iowait: float
    steal: float
    cpus: float  # CPU-seconds per second over all modes: the node's CPU count
    points: int

    def to_status(self) -> dict[str, Any]:
        return {
            "avg": round(self.avg, 1),
            "max": round(self.max, 1),
            **{m: round(getattr(self, m), 1) for m in SPLIT_MODES},
            "cpus": round(self.cpus),
            "points": self.points,  # at the window's step: the resolution the figures had
        }


@dataclass(frozen=True)
class GroupCpu:
    """Mean of the nodes' figures (``max``: the busiest node's busiest point)."""

    avg: float
    max: float
    user: float
    system: float
    iowait: float
    steal: float
    nodes: int

    def to_status(self) -> dict[str, Any]:
        return {
            "avg": round(self.avg, 1),
            "max": round(self.max, 1),
            **{m: round(getattr(self, m), 1) for m in SPLIT_MODES},
            "nodes": self.nodes,
        }


@dataclass(frozen=True)
class ContainerCpu:
    """CPU cores a mongod container used over the window (cAdvisor)."""

    avg_cores: float
    max_cores: float


def parse_matrix(result: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """A query_range matrix as {key label: {mode label or "": [(t, v), ...]}} (pure)."""
    out: dict[str, dict[str, Any]] = {}
    for item in result:
        metric = item.get("metric", {})
        name = metric.get(key)
        if name is None:
            continue
        points = [(float(t), float(v)) for t, v in item.get("values", [])]
        out.setdefault(name, {})[metric.get("mode", "")] = [
            (t, v) for t, v in points if math.isfinite(v)
        ]
    return out


def summarise_node(modes: Mapping[str, Sequence[tuple[float, float]]]) -> NodeCpu | None:
    """One node's per-mode series -> its window figures; None without idle data (pure)."""
    idle = dict(modes.get("idle", ()))
    by_mode = {m: dict(pts) for m, pts in modes.items()}
    busy: list[float] = []
    split: dict[str, list[float]] = {m: [] for m in SPLIT_MODES}
    totals: list[float] = []
    for t in sorted(idle):
        total = sum(pts[t] for pts in by_mode.values() if t in pts)
        if total <= 0:
            continue  # a counter reset or no CPUs: nothing to divide by
        totals.append(total)
        busy.append(100 * max(0.0, total - idle[t]) / total)
        for m in SPLIT_MODES:
            split[m].append(100 * max(0.0, by_mode.get(m, {}).get(t, 0.0)) / total)
    if not busy:
        return None
    return NodeCpu(
        avg=_mean(busy),
        max=max(busy),
        **{m: _mean(v) for m, v in split.items()},
        cpus=_mean(totals),
        points=len(busy),
    )


def summarise(series: Series) -> dict[str, NodeCpu]:
    """Per node {avg, max, user, system, iowait, steal} in percent of all its CPUs (pure)."""
    out: dict[str, NodeCpu] = {}
    for node, modes in series.items():
        summary = summarise_node(modes)
        if summary is not None:
            out[node] = summary
    return out


def group(nodes: Mapping[str, NodeCpu], members: Iterable[str]) -> GroupCpu | None:
    """The average node of a group (cluster or clients); None if none of them has data."""
    found = [nodes[n] for n in dict.fromkeys(members) if n in nodes]
    if not found:
        return None
    return GroupCpu(
        avg=_mean([n.avg for n in found]),
        max=max(n.max for n in found),
        **{m: _mean([getattr(n, m) for n in found]) for m in SPLIT_MODES},
        nodes=len(found),
    )


def summarise_containers(
    series: Mapping[str, Sequence[tuple[float, float]]],
) -> dict[str, ContainerCpu]:
    out: dict[str, ContainerCpu] = {}
    for pod, pts in series.items():
        values = [v for _, v in pts]
        if values:
            out[pod] = ContainerCpu(_mean(values), max(values))
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class CpuReport:
    start: datetime
    end: datetime
    step_seconds: float
    cluster_nodes: tuple[str, ...]
    client_nodes: tuple[str, ...]
    nodes: Mapping[str, NodeCpu]
    cluster: GroupCpu | None
    clients: GroupCpu | None
    # None when cAdvisor had no series at all: missing, not zero.
    containers: Mapping[str, ContainerCpu] | None
    missing: tuple[str, ...] = ()  # what was asked for and not found, for the condition message
    # The scrape interval behind the node figures (the run's finer one when it was scraped),
    # and the job of that finer scrape ("" for Prometheus' own).
    resolution_seconds: float | None = None
    job: str = ""

    def to_status(self) -> dict[str, Any]:
        """Figures only, no series: a few hundred bytes per node, fit for a CR status."""

        def role(n: str) -> str:
            both = n in self.cluster_nodes and n in self.client_nodes
            return "both" if both else "cluster" if n in self.cluster_nodes else "client"

        names = list(dict.fromkeys((*self.cluster_nodes, *self.client_nodes)))
        status: dict[str, Any] = {
            "window": {
                "start": iso_utc(self.start),
                "end": iso_utc(self.end),
                "stepSeconds": self.step_seconds,
            },
            "nodes": [
                {"name": n, "role": role(n), **self.nodes[n].to_status()}
                for n in names
                if n in self.nodes
            ],
            "resolutionSeconds": self.resolution_seconds,
            **({"job": self.job} if self.job else {}),
            "cluster": self.cluster.to_status() if self.cluster else None,
            "clients": self.clients.to_status() if self.clients else None,
            "mongod": None
            if self.containers is None
            else [
                {"pod": p, "avgCores": round(c.avg_cores, 3), "maxCores": round(c.max_cores, 3)}
                for p, c in sorted(self.containers.items())
            ],
        }
        if self.missing:
            status["missing"] = list(self.missing)
        return status


def iso_utc(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --- I/O ---------------------------------------------------------------------------------------


def _as_datetime(t: datetime | float | str) -> datetime:
    if isinstance(t, str):  # RFC 3339, as Job and step status carry them
        t = datetime.fromisoformat(t)
    if isinstance(t, datetime):
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return datetime.fromtimestamp(t, UTC)


def query_range(
    prom_url: str, promql: str, start: float, end: float, step: float, *, timeout: float = 5.0
) -> list[dict[str, Any]]:
    """``/api/v1/query_range``; the matrix result, or CpuUnavailable with the reason."""
    params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    return _prometheus(prom_url, "query_range", params, timeout)


def query_instant(prom_url: str, promql: str, *, timeout: float = 5.0) -> list[dict[str, Any]]:
    """``/api/v1/query`` as of now; the vector result, or CpuUnavailable with the reason."""
    return _prometheus(prom_url, "query", {"query": promql}, timeout)


def _prometheus(
    prom_url: str, endpoint: str, params: Mapping[str, str], timeout: float
) -> list[dict[str, Any]]:
    url = f"{prom_url.rstrip('/')}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
    if not url.startswith(("http://", "https://")):
        raise CpuUnavailable(f"Prometheus URL {prom_url!r} is not http(s)")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - scheme checked
            body = json.load(resp)
    except urllib.error.HTTPError as exc:
        # Prometheus answers bad queries with 400/422 and a JSON error: keep its words.
        try:
            detail = json.load(exc).get("error", "")
        except (ValueError, OSError):
            detail = ""
        raise CpuUnavailable(
            f"Prometheus at {prom_url} answered HTTP {exc.code}: {detail or exc.reason}"
        ) from exc
    except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CpuUnavailable(f"Prometheus at {prom_url} is unreachable: {reason}") from exc
    except ValueError as exc:
        raise CpuUnavailable(f"Prometheus at {prom_url} answered with non-JSON: {exc}") from exc
    if body.get("status") != "success":
        raise CpuUnavailable(f"Prometheus at {prom_url} refused the query: {body.get('error')}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@dataclass(frozen=True)
class Window:
    """A step's window as query_range asks it: points every ``step`` seconds from ``first`` to
    ``end``, each a rate over the ``rate_range`` seconds before it."""

    start: datetime
    end_time: datetime
    first: float
    end: float
    step: float
    rate_range: float


def step_window(
    start: datetime | float | str,
    end: datetime | float | str,
    step_seconds: float,
    scrape_interval: float,
) -> Window:
    """``step_seconds`` may go down to ``scrape_interval`` (finer adds no information)."""
    t0, t1 = _as_datetime(start), _as_datetime(end)
    s, e = t0.timestamp(), t1.timestamp()
    if e < s:
        raise ValueError(f"window ends before it starts: {t0} .. {t1}")
    # Step times (Job status, RFC 3339) have whole seconds: a short step may start and end in
    # the same second. Its CPU lies within that second.
    e = max(e, s + 1.0)
    step = max(step_seconds, scrape_interval, (e - s) / MAX_POINTS)
    rng = rate_range(step, scrape_interval)
    # Points are rates over the range before them: start one range in so none looks before
    # the window, unless the window is shorter than that (one point covers it all).
    first = s + rng
    if first > e:
        first, rng = e, max(e - s, 2 * scrape_interval)
    return Window(t0, t1, first, e, step, rng)


Points = Sequence[tuple[float, float]]


@dataclass(frozen=True)
class ContainerSeries:
    """The cAdvisor series of one step's window, each figure fetched once (``containerCpu``,
    ``containerMemory``) and shared by the mongod containers' CPU (here), their memory
    (``benchmarkrun.telemetry.resources``), every role's (``benchmarkrun.telemetry.roles``) and the
    noisy
    neighbours' (``benchmarkrun.telemetry.neighbours``). A figure without any series is None:
    missing,
    not zero."""

    # (node, namespace, pod, container) -> finite points; node is "" where the scrape config
    # gives none
    cpu: Mapping[tuple[str, str, str, str], Points] | None
    # (pod, container) -> finite points, of the run's own pods' role containers
    memory: Mapping[tuple[str, str], Points] | None

    def pod_cpu(self, namespace: str) -> dict[tuple[str, str], Points]:
        """(pod, container) -> CPU points of the containers in ``namespace``."""
        return {(p, c): pts for (_, ns, p, c), pts in (self.cpu or {}).items() if ns == namespace}


def _finite(values: Iterable[Sequence[Any]]) -> list[tuple[float, float]]:
    points = [(float(t), float(v)) for t, v in values]
    return [(t, v) for t, v in points if math.isfinite(v)]


def parse_containers(
    result: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> dict[tuple[str, ...], list[tuple[float, float]]]:
    """A query_range matrix by the given labels (absent ones as "") -> finite points (pure).
    Series without a pod or container label are not a container's and are left out."""
    out: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    for item in result:
        metric = item.get("metric") or {}
        if "pod" not in metric or "container" not in metric:
            continue
        out[tuple(str(metric.get(k, "")) for k in keys)] = _finite(item.get("values", []))
    return out


def query_containers(
    prom_url: str,
    window: Window,
    *,
    namespace: str,
    pods: Iterable[str],
    node_names: Iterable[str],
    mapping: NodeMapping,
    profile: ResourceProfile,
    timeout: float = 5.0,
) -> ContainerSeries:
    """The step's container series: one ``containerCpu`` query (the containers on
    ``node_names`` and the run's ``pods``) and one ``containerMemory`` (the run's pods).
    CpuUnavailable as for every query."""
    pods, node_names = sorted(set(pods)), sorted(set(node_names))
    cpu: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    memory: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    rng = window.rate_range
    if pods or node_names:
        promql = profile.render(
            "containerCpu",
            mapping=mapping,
            namespace=namespace,
            pods=pods,
            node_names=node_names,
            range_seconds=rng,
        )
        cpu = parse_containers(
            query_range(prom_url, promql, window.first, window.end, window.step, timeout=timeout),
            ("node", "namespace", "pod", "container"),
        )
    if pods:
        promql = profile.render(
            "containerMemory", mapping=mapping, namespace=namespace, pods=pods, range_seconds=rng
        )
        memory = parse_containers(
            query_range(prom_url, promql, window.first, window.end, window.step, timeout=timeout),
            ("pod", "container"),
        )
    return ContainerSeries(
        cpu={(k[0], k[1], k[2], k[3]): v for k, v in cpu.items()} or None,
        memory={(k[0], k[1]): v for k, v in memory.items()} or None,
    )


def node_series(
    prom_url: str,
    start: datetime | float | str,
    end: datetime | float | str,
    step_seconds: float,
    *,
    nodes: Sequence[str],
    scrape_interval: float = 15.0,
    mapping: NodeMapping | None = None,
    profile: ResourceProfile | None = None,
    timeout: float = 5.0,
    job: str = "",
) -> dict[str, Any]:
    """The per-node, per-mode CPU series behind a step's figures (the same query and window as
    `query_window`, ``job`` and ``scrape_interval`` those its status names), for the archive:
    {query, start, end, stepSeconds, nodes: {node: {mode: [[t, fraction], ...]}}}.
    CpuUnavailable as for `query_window`."""
    mapping = mapping or NodeMapping()
    profile = profile or ResourceProfile.load()
    w = step_window(start, end, step_seconds, scrape_interval)
    promql = profile.render(
        "nodeCpuByMode", mapping=mapping, nodes=nodes, range_seconds=w.rate_range, job=job
    )
    raw = parse_matrix(
        query_range(prom_url, promql, w.first, w.end, w.step, timeout=timeout),
        profile.node_label(mapping),
    )
    return {
        "query": promql,
        "start": iso_utc(w.start),
        "end": iso_utc(w.end_time),
        "stepSeconds": w.step,
        "nodes": {
            n: {mode: [list(p) for p in pts] for mode, pts in raw[mapping.identity(n)].items()}
            for n in nodes
            if mapping.identity(n) in raw
        },
    }


@dataclass(frozen=True, kw_only=True)
class WindowQuery:
    """One step's window as the CPU and resource queries ask Prometheus for it: where, when
    (see step_window), whose nodes and mongod pods, and how nodes are found. Keyword-only: two
    lists of node names are too easy to swap by position."""

    prom_url: str
    start: datetime | float | str
    end: datetime | float | str
    step_seconds: float
    cluster_nodes: Sequence[str]
    client_nodes: Sequence[str]
    namespace: str
    pods: Sequence[str]
    scrape_interval: float = 15.0
    mapping: NodeMapping | None = None
    profile: ResourceProfile | None = None
    timeout: float = 5.0

    def window(self) -> Window:
        return step_window(self.start, self.end, self.step_seconds, self.scrape_interval)

    @property
    def nodes(self) -> list[str]:
        """The cluster's and the clients' nodes, each once, in that order."""
        return list(dict.fromkeys((*self.cluster_nodes, *self.client_nodes)))


def query_window(
    q: WindowQuery, *, series: ContainerSeries | None = None, job: str = ""
) -> CpuReport:
    """CPU of one step's window (see step_window): per node, per group, per mongod container
    (from ``series`` when the step fetched them already, else fetched here). ``job`` selects
    the node series of a run's own finer scrape (``q.scrape_interval`` is then its interval).

    Raises CpuUnavailable when Prometheus cannot be reached or refuses a query; series that
    simply are not there (a node without node-exporter, no cAdvisor) go to ``missing`` instead.
    """
    mapping = q.mapping or NodeMapping()
    profile = q.profile or ResourceProfile.load()
    w = q.window()
    node_results, missing = _node_cpu(q, w, mapping, profile, job)
    containers: dict[str, ContainerCpu] | None = None
    if q.pods:
        if series is None:
            series = query_containers(
                q.prom_url,
                w,
                namespace=q.namespace,
                pods=q.pods,
                node_names=q.nodes,
                mapping=mapping,
                profile=profile,
                timeout=q.timeout,
            )
        containers, absent = _mongod_cpu(series, q.namespace, q.pods)
        missing += absent
    return CpuReport(
        start=w.start,
        end=w.end_time,
        step_seconds=w.step,
        cluster_nodes=tuple(q.cluster_nodes),
        client_nodes=tuple(q.client_nodes),
        nodes=node_results,
        cluster=group(node_results, q.cluster_nodes),
        clients=group(node_results, q.client_nodes),
        containers=containers,
        missing=tuple(missing),
        resolution_seconds=q.scrape_interval,
        job=job,
    )


def _node_cpu(
    q: WindowQuery, w: Window, mapping: NodeMapping, profile: ResourceProfile, job: str
) -> tuple[dict[str, NodeCpu], list[str]]:
    """Each node's CPU over the window, and what is missing of it."""
    nodes = q.nodes
    missing: list[str] = []
    node_results: dict[str, NodeCpu] = {}
    if not nodes:
        return node_results, missing
    promql = profile.render(
        "nodeCpuByMode", mapping=mapping, nodes=nodes, range_seconds=w.rate_range, job=job
    )
    raw = parse_matrix(
        query_range(q.prom_url, promql, w.first, w.end, w.step, timeout=q.timeout),
        profile.node_label(mapping),
    )
    by_identity = summarise(raw)
    for n in nodes:
        found = by_identity.get(mapping.identity(n))
        if found is None:
            missing.append(f"node {n}")
            continue
        node_results[n] = found
        # A mode node-exporter did not report would read as 0 %: say so instead.
        absent = [m for m in SPLIT_MODES if m not in raw.get(mapping.identity(n), {})]
        if absent:
            missing.append(f"node {n} modes {','.join(absent)}")
    return node_results, missing


def _mongod_cpu(
    series: ContainerSeries, namespace: str, pods: Sequence[str]
) -> tuple[dict[str, ContainerCpu] | None, list[str]]:
    """The mongod containers' CPU from the step's cAdvisor series (None: no such series at
    all), and what is missing of it."""
    if series.cpu is None:
        return None, ["mongod containers (no cAdvisor series)"]
    by_pod = series.pod_cpu(namespace)
    containers = summarise_containers(
        {p: by_pod[(p, "mongod")] for p in pods if (p, "mongod") in by_pod}
    )
    return containers, [f"mongod {p}" for p in pods if p not in containers]
