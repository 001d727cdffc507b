"""The local plane's monitoring as kube-prometheus-stack runs it: the real Prometheus Operator, its
config reloader and Prometheus 3 with Kubernetes service discovery, against a `Plane`.

What runs (`start_monitoring`), all on loopback, binaries from hack/build-tools.sh:

- the Prometheus Operator (`KUBECONFIG`: it has no --kubeconfig flag), no webhooks, its watches
  scoped as the chart scopes them (OPERATOR_SCOPE);
- a `Prometheus` resource as kube-prometheus-stack (KUBE_PROMETHEUS_STACK_VERSION) configures its
  own by default: named `kube-prometheus-stack-prometheus`, selecting ServiceMonitors, PodMonitors,
  Probes, ScrapeConfigs and PrometheusRules labelled `release: kube-prometheus-stack` in every
  namespace; only its scrape interval is shortened (tests see series in seconds), rules are
  evaluated at the operator's default 30 s;
- node-exporter as kube-prometheus-stack's: a DaemonSet (KWOK runs its pods, one per fake node),
  its Service and its ServiceMonitor (job `node-exporter`); for each of its pods the stack runs a
  real node-exporter (Debian's, as localplane.prometheus) as a kubelet would, in a UTS namespace
  named after the pod's node, with only the collectors the project reads
  (NODE_EXPORTER_COLLECTORS): `node_uname_info{nodename}` is the node's name, as on a cluster
  where every node is its own host, so the operator's default node mapping (`uname`) finds each
  fake node's series with no alias;
- kube-prometheus-stack's kubelet ServiceMonitor, its cAdvisor endpoint (job `kubelet`), over the
  `kubelet` Service the Prometheus Operator maintains (--kubelet-service): one target per Node,
  served by the stack from the containers the harness kubelets run (`kubelet_containers`);
- what the StatefulSet the operator generates would run, as processes: the operator's Secret
  `prometheus-<name>` (`prometheus.yaml.gz`) and rule ConfigMaps are copied to files by threads
  watching them (a kubelet's volume sync), the real config reloader renders the configuration
  (POD_NAME/SHARD as in the pod) and asks for a reload, and Prometheus 3 loads it.

Two things differ from a cluster, each in one place:

- **The reload goes through `local_config`** (the reloader's --reload-url is a loopback shim that
  rewrites the rendered file, then reloads Prometheus): every `kubernetes_sd_configs` block gets
  `kubeconfig_file:` (the plane's admin kubeconfig; a pod would use its ServiceAccount token at a
  fixed path), and rule files point at the folder the ConfigMaps are copied to. The kubelet job
  is the one place kubelet addresses change: its targets are Nodes (their InternalIP:10250,
  HTTPS with the pod's token), which no annotation can move, so two rules appended to its
  relabelling send every node's scrape to the stack's loopback cAdvisor endpoint, path
  `/nodes/<node>/metrics/cadvisor`, over plain HTTP (one fixed rule for all nodes: nodes added
  later need no reload). Its `node`, `instance` and `metrics_path` labels stay as on a cluster.
- **Scrape addresses.** KWOK gives pods 10.244.x addresses that do not exist on this machine,
  while the processes serving metrics (node-exporter, the harness kubelet's pods, ...) listen on
  loopback ports. The Prometheus resource's default scrape class, so the plane's own Prometheus
  configuration and not the project's monitors, rewrites `__address__` from a pod annotation the
  harness sets on the pods it serves, one per container port name (`scrape_annotations`):
  ``local.mongobench.io/scrape-<port name>: 127.0.0.1:<port>``. Before that, `instance` keeps the
  pod's own address, as a cluster's scrape gives it (kube-prometheus-stack's node-exporter
  series carry `instance="<pod IP>:9100"`, one per node). A target without the annotation keeps
  its pod address and is down, which /api/v1/targets shows. The port names are listed
  (SERVED_PORTS: relabelling cannot look an annotation up by a label's value). The harness
  kubelet (localplane.executor) annotates the client pods it runs, the stack its node-exporter
  pods; `serve_pods` annotates others whose process a test runs itself, and `operator_pod`
  stands a KWOK pod in for an operator run as a process, behind the chart's own Service and
  ServiceMonitor.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import watch

from localplane import cgroups, procs
from localplane.net import free_port, wait_for_port
from localplane.plane import Plane
from localplane.prometheus import (
    Prometheus,
    installed,
    node_exporter_command,
    prometheus_command,
)
from localplane.tools import REPO, binary, versions

RELEASE = "kube-prometheus-stack"
RELEASE_LABELS = {"release": RELEASE}
NAMESPACE = "monitoring"
PROMETHEUS_NAME = f"{RELEASE}-prometheus"
NODE_EXPORTER = f"{RELEASE}-prometheus-node-exporter"
# kube-prometheus-stack's node-exporter pods (its prometheus-node-exporter subchart), as the
# operator's default MONGOBENCH_NODE_EXPORTER_SELECTOR and _PORT find them.
NODE_EXPORTER_LABELS = {
    "app.kubernetes.io/name": "prometheus-node-exporter",
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/component": "metrics",
    "app.kubernetes.io/part-of": "prometheus-node-exporter",
    "jobLabel": "node-exporter",
    "release": RELEASE,
}
NODE_EXPORTER_PORT = ("http-metrics", 9100)
# kube-prometheus-stack's kubelet ServiceMonitor (job `kubelet`: the Service's k8s-app label).
KUBELET_MONITOR = f"{RELEASE}-kubelet"
KUBELET_JOB = f"serviceMonitor/{NAMESPACE}/{KUBELET_MONITOR}/"
# Where the stack's cAdvisor endpoint serves a node's containers (local_config points there).
CADVISOR_PATH = "/nodes/{node}/metrics/cadvisor"
# On the node-exporter Service: which pods are served where (a change makes Prometheus's
# endpoints discovery read the pods' new annotations; see serve_pods).
SERVED_ANNOTATION = "local.mongobench.io/served"
# Container port names the harness serves (node-exporter's, the runner's and exporters' `metrics`).
SERVED_PORTS = ("http-metrics", "metrics")
ANNOTATION_PREFIX = "local.mongobench.io/scrape-"
# Where the operator's StatefulSet mounts the rule ConfigMaps (its generated rule_files).
_POD_RULES_DIR = "/etc/prometheus/rules/"
# What the Prometheus Operator watches, as kube-prometheus-stack scopes it: the chart's default
# prometheusOperator.secretFieldSelector (no dockercfg, ServiceAccount token or Helm release
# Secrets), and its prometheus/alertmanager/thanosRulerInstanceNamespaces set to the release's
# namespace (the chart leaves them empty: every namespace). Monitors and rules are still found in
# every namespace (the Prometheus resource's selectors).
OPERATOR_SCOPE = (
    "--secret-field-selector=type!=kubernetes.io/dockercfg,"
    "type!=kubernetes.io/service-account-token,type!=helm.sh/release.v1",
    f"--prometheus-instance-namespaces={NAMESPACE}",
    f"--alertmanager-instance-namespaces={NAMESPACE}",
    f"--thanos-ruler-instance-namespaces={NAMESPACE}",
)
# node-exporter's collectors: only those whose series the project reads (the operator's telemetry
# profiles and run facts, the dashboards, the alerts): node_cpu_seconds_total and node_cpu_info
# (cpu), node_memory_* (meminfo), node_disk_* (diskstats), node_network_* (netdev),
# node_uname_info (uname), node_os_info (os). test_dashboards fails on a panel whose collector is
# left out (its answer is empty).
NODE_EXPORTER_COLLECTORS = (
    "--collector.disable-defaults",
    *(f"--collector.{c}" for c in ("cpu", "meminfo", "diskstats", "netdev", "uname", "os")),
)
# The operator's first rule ConfigMap (one folder each; the reloader watches a folder, not a tree).
RULE_FILES = f"prometheus-{PROMETHEUS_NAME}-rulefiles-0"


def scrape_annotations(ports: Mapping[str, int]) -> dict[str, str]:
    """The annotations that point a pod's named container ports at loopback ports."""
    return {f"{ANNOTATION_PREFIX}{name}": f"127.0.0.1:{port}" for name, port in ports.items()}


def serve_pods(
    plane: Plane,
    namespace: str,
    selector: str,
    ports: Mapping[str, int],
    services: Sequence[str] = (),
) -> None:
    """Annotate the pods ``selector`` finds (e.g. the operator's, run as a process) with where
    their ports are served. Prometheus's endpoints discovery (ServiceMonitors) reads a pod
    again only when its Endpoints or Service change, or its phase: ``services`` get the same
    annotations, so it does."""
    served = [f"{k}={v}" for k, v in scrape_annotations(ports).items()]
    plane.kubectl("annotate", "pods", "-n", namespace, "-l", selector, "--overwrite", *served)
    for service in services:
        plane.kubectl("annotate", "service", service, "-n", namespace, "--overwrite", *served)


def operator_objects(namespace: str, release: str = "mongobench") -> list[dict[str, Any]]:
    """What stands for an operator run as a process: the chart's own metrics Service and
    ServiceMonitor (`helm template`, scraped every second) and a pod they select, with the
    chart's selector labels and `metrics` port, for KWOK to run (serve_operator)."""
    rendered = subprocess.run(
        [
            str(binary("helm")), "template", release, str(REPO / "charts" / "mongobench"),
            "--namespace", namespace,
            "--show-only=templates/service.yaml", "--show-only=templates/servicemonitor.yaml",
            "--api-versions=monitoring.coreos.com/v1/ServiceMonitor",
            "--set=metrics.serviceMonitor.interval=1s",
        ],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    objects = [o for o in yaml.safe_load_all(rendered) if o]
    (service,) = [o for o in objects if o["kind"] == "Service"]
    (port,) = service["spec"]["ports"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{release}-operator",
            "namespace": namespace,
            "labels": service["spec"]["selector"],
        },
        "spec": {
            # Pod Security `restricted` admits it (the test namespaces enforce it).
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "operator",
                    "image": "ghcr.io/mongobench/operator:0.1.0",  # KWOK runs no image
                    "ports": [{"name": port["targetPort"], "containerPort": port["port"]}],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }
    return [*objects, pod]


def serve_operator(plane: Plane, namespace: str, port: int, release: str = "mongobench") -> None:
    """The operator process serving /metrics on loopback ``port`` scraped as the chart's would
    be (through its ServiceMonitor, job `<release>-metrics`): operator_objects applied (again:
    idempotent, e.g. after a restart on a new port) and served (serve_pods)."""
    objects = operator_objects(namespace, release)
    plane.kubectl(
        "apply", "--server-side", "--field-manager=localplane", "-f", "-",
        input="\n---\n".join(yaml.safe_dump(o) for o in objects),
    )  # fmt: skip
    (service,) = [o for o in objects if o["kind"] == "Service"]
    selector = ",".join(f"{k}={v}" for k, v in service["spec"]["selector"].items())
    serve_pods(plane, namespace, selector, {"metrics": port}, [service["metadata"]["name"]])


def _meta_annotation(port_name: str) -> str:
    key = f"{ANNOTATION_PREFIX}{port_name}"
    return "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def address_relabelings() -> list[dict[str, Any]]:
    """The default scrape class's relabelings (module docstring, "Scrape addresses")."""
    rules: list[dict[str, Any]] = [
        {"action": "replace", "sourceLabels": ["__address__"], "targetLabel": "instance"}
    ]
    for name in SERVED_PORTS:
        rules.append(
            {
                "action": "replace",
                "sourceLabels": [
                    "__meta_kubernetes_pod_container_port_name",
                    _meta_annotation(name),
                ],
                "regex": f"{re.escape(name)};(.+)",
                "targetLabel": "__address__",
                "replacement": "$1",
            }
        )
    return rules


def prometheus_resource(scrape_interval: str) -> dict[str, Any]:
    """The Prometheus resource, as kube-prometheus-stack's defaults make it."""
    everywhere: dict[str, Any] = {}
    selector = {"matchLabels": RELEASE_LABELS}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": PROMETHEUS_NAME, "namespace": NAMESPACE, "labels": RELEASE_LABELS},
        "spec": {
            "version": versions()["PROMETHEUS_VERSION"],
            "replicas": 1,
            "scrapeInterval": scrape_interval,
            # evaluationInterval: the Prometheus Operator's default (30 s), as the chart leaves it
            "serviceMonitorSelector": selector,
            "serviceMonitorNamespaceSelector": everywhere,
            "podMonitorSelector": selector,
            "podMonitorNamespaceSelector": everywhere,
            "probeSelector": selector,
            "probeNamespaceSelector": everywhere,
            "scrapeConfigSelector": selector,
            "scrapeConfigNamespaceSelector": everywhere,
            "ruleSelector": selector,
            "ruleNamespaceSelector": everywhere,
            "scrapeClasses": [
                {"name": "local-plane", "default": True, "relabelings": address_relabelings()}
            ],
        },
    }


def node_exporter_objects() -> list[dict[str, Any]]:
    """kube-prometheus-stack's node-exporter DaemonSet, Service and ServiceMonitor (the stack
    runs a node-exporter for each of its pods: _NodeExporters)."""
    name, (port_name, container_port) = NODE_EXPORTER, NODE_EXPORTER_PORT
    selector = {
        k: NODE_EXPORTER_LABELS[k] for k in ("app.kubernetes.io/name", "app.kubernetes.io/instance")
    }
    meta = {"name": name, "namespace": NAMESPACE, "labels": NODE_EXPORTER_LABELS}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": NODE_EXPORTER_LABELS},
                    "spec": {
                        # kube-prometheus-stack 67.11.0's: on every node, tainted or not
                        "tolerations": [{"effect": "NoSchedule", "operator": "Exists"}],
                        "containers": [
                            {
                                "name": "node-exporter",
                                # kube-prometheus-stack 67.11.0's (KWOK runs no image)
                                "image": "quay.io/prometheus/node-exporter:v1.8.2",
                                "ports": [{"name": port_name, "containerPort": container_port}],
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "selector": selector,
                "ports": [
                    {"name": port_name, "port": container_port, "targetPort": container_port}
                ],
            },
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": meta,
            "spec": {
                "jobLabel": "jobLabel",
                "selector": {"matchLabels": selector},
                "endpoints": [{"port": port_name, "scheme": "http"}],
            },
        },
    ]


# kube-prometheus-stack 67.11.0's kubelet.serviceMonitor.cAdvisorMetricRelabelings.
_CADVISOR_DROPS = (
    (["__name__"], "container_cpu_(cfs_throttled_seconds_total|load_average_10s|"
     "system_seconds_total|user_seconds_total)"),
    (["__name__"], "container_fs_(io_current|io_time_seconds_total|io_time_weighted_seconds_total|"
     "reads_merged_total|sector_reads_total|sector_writes_total|writes_merged_total)"),
    (["__name__"], "container_memory_(mapped_file|swap)"),
    (["__name__"], "container_(file_descriptors|tasks_state|threads_max)"),
    (["__name__"], "container_spec.*"),
    (["id", "pod"], ".+;"),
)  # fmt: skip


def kubelet_monitor() -> dict[str, Any]:
    """kube-prometheus-stack's kubelet ServiceMonitor with its cAdvisor endpoint, as the chart
    renders it by default (the kubelet's own /metrics and /metrics/probes endpoints left out:
    the harness kubelet serves neither)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": KUBELET_MONITOR,
            "namespace": NAMESPACE,
            "labels": {"app": KUBELET_MONITOR, **RELEASE_LABELS},
        },
        "spec": {
            "attachMetadata": {"node": False},
            "jobLabel": "k8s-app",
            "namespaceSelector": {"matchNames": ["kube-system"]},
            "selector": {
                "matchLabels": {"app.kubernetes.io/name": "kubelet", "k8s-app": "kubelet"}
            },
            "endpoints": [
                {
                    "port": "https-metrics",
                    "scheme": "https",
                    "path": "/metrics/cadvisor",
                    "honorLabels": True,
                    "honorTimestamps": True,
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "tlsConfig": {
                        "caFile": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
                        "insecureSkipVerify": True,
                    },
                    "metricRelabelings": [
                        {"action": "drop", "sourceLabels": labels, "regex": regex}
                        for labels, regex in _CADVISOR_DROPS
                    ],
                    "relabelings": [
                        {
                            "action": "replace",
                            "sourceLabels": ["__metrics_path__"],
                            "targetLabel": "metrics_path",
                        }
                    ],
                }
            ],
        },
    }


def local_config(rendered: str, kubeconfig: Path, rules_dir: Path, cadvisor: str = "") -> str:
    """The reloader's rendered configuration as this machine can load it (module docstring):
    each Kubernetes SD block reads the plane's kubeconfig, rule files the copied ConfigMaps,
    and the kubelet job scrapes the stack's cAdvisor endpoint at ``cadvisor`` (host:port)."""
    config = yaml.safe_load(rendered) or {}
    for job in config.get("scrape_configs") or []:
        for sd in job.get("kubernetes_sd_configs") or []:
            sd["kubeconfig_file"] = str(kubeconfig)
        if cadvisor and str(job.get("job_name", "")).startswith(KUBELET_JOB):
            job["scheme"] = "http"
            for key in ("authorization", "bearer_token_file", "tls_config"):
                job.pop(key, None)
            job.setdefault("relabel_configs", []).extend(
                [
                    {
                        "source_labels": ["__meta_kubernetes_endpoint_address_target_name"],
                        "regex": "(.+)",
                        "target_label": "__metrics_path__",
                        "replacement": CADVISOR_PATH.format(node="${1}"),
                    },
                    {"target_label": "__address__", "replacement": cadvisor},
                ]
            )
    config["rule_files"] = [
        str(rules_dir / f.removeprefix(_POD_RULES_DIR)) if f.startswith(_POD_RULES_DIR) else f
        for f in config.get("rule_files") or []
    ]
    return yaml.safe_dump(config, sort_keys=False)


# A harness kubelet's running containers: ((namespace, pod, container, node), cgroup) pairs.
ContainerSource = Callable[[], list[tuple[cgroups.ContainerKey, cgroups.ContainerCgroup]]]


@dataclass
class Monitoring(Prometheus):
    """The running stack: a `Prometheus` (query, url) plus the operator's parts."""

    plane: Plane | None = None
    interval: str = "1s"  # the Prometheus resource's scrapeInterval
    started_in: float = 0.0  # seconds from start to the operator ready and a first scrape
    errors: list[str] = field(default_factory=list)  # of the kubelet watches and the reload shim
    node_exporters: dict[str, int] = field(default_factory=dict)  # node -> its loopback port
    _stop_event: threading.Event = field(default_factory=threading.Event, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)
    _shim: http.server.ThreadingHTTPServer | None = field(default=None, repr=False)
    _cadvisor: http.server.ThreadingHTTPServer | None = field(default=None, repr=False)
    _containers: list[ContainerSource] = field(default_factory=list, repr=False)
    _streams: dict[str, Any] = field(default_factory=dict, repr=False)  # the kubelets' watches

    @contextmanager
    def kubelet_containers(self, source: ContainerSource) -> Iterator[None]:
        """While inside: the containers ``source()`` lists (e.g. a PodExecutor's
        running_containers) are in their nodes' kubelet cAdvisor series (job `kubelet`)."""
        self._containers.append(source)
        try:
            yield
        finally:
            self._containers.remove(source)

    @contextmanager
    def scrape_interval(self, interval: str, timeout: float = 90) -> Iterator[None]:
        """While inside: the stack scrapes every ``interval`` (the Prometheus resource's, as an
        installation's own), loaded before this returns; then back to what it was. For a test
        that needs another interval than the session stack's."""
        before = self.interval
        self._set_interval(interval, timeout)
        try:
            yield
        finally:
            self._set_interval(before, timeout)

    def _set_interval(self, interval: str, timeout: float) -> None:
        assert self.plane is not None
        patch = {"spec": {"scrapeInterval": interval}}
        self.plane.kubectl(
            "patch", "prometheus", PROMETHEUS_NAME, "-n", NAMESPACE, "--type=merge",
            "-p", json.dumps(patch),
        )  # fmt: skip
        _wait(
            self,
            lambda: self.loaded_config()["global"]["scrape_interval"] == interval,
            time.monotonic() + timeout,
            f"configuration scraping every {interval}",
        )
        self.interval = interval

    def loaded_config(self) -> dict[str, Any]:
        """The configuration Prometheus runs (/api/v1/status/config)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/status/config", timeout=5) as resp:
            config: dict[str, Any] = yaml.safe_load(json.load(resp)["data"]["yaml"])
        return config

    def cadvisor_path(self, path: str) -> str | None:
        """The stack's cAdvisor endpoint: CADVISOR_PATH of each node (local_config)."""
        prefix, suffix = CADVISOR_PATH.split("{node}")
        if not (path.startswith(prefix) and path.endswith(suffix)):
            return None
        return self.cadvisor_text(urllib.parse.unquote(path[len(prefix) : -len(suffix)]))

    def cadvisor_text(self, node: str) -> str:
        """What node ``node``'s kubelet serves at /metrics/cadvisor: its containers' series."""
        on_node = [c for source in list(self._containers) for c in source() if c[0][3] == node]
        return cgroups.cadvisor_text(on_node, node_label=False)

    def targets(self, state: str = "active") -> list[dict[str, Any]]:
        """/api/v1/targets: the active (or dropped) targets as Prometheus has them."""
        qs = urllib.parse.urlencode({"state": state})
        with urllib.request.urlopen(f"{self.url}/api/v1/targets?{qs}", timeout=5) as resp:
            data = json.load(resp)["data"]
        found: list[dict[str, Any]] = data[
            "activeTargets" if state == "active" else "droppedTargets"
        ]
        return found

    def scrape_pools(self) -> set[str]:
        """The scrape jobs of the loaded configuration (`serviceMonitor/<ns>/<name>/<i>`, ...)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/scrape_pools", timeout=5) as resp:
            return set(json.load(resp)["data"]["scrapePools"])

    def rule_groups(self) -> list[dict[str, Any]]:
        """/api/v1/rules: the rule groups loaded (from the PrometheusRules selected)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/rules", timeout=5) as resp:
            groups: list[dict[str, Any]] = json.load(resp)["data"]["groups"]
        return groups

    def rss_bytes(self) -> int:
        return procs.rss_bytes(self.procs)

    def stop(self) -> None:
        self._stop_event.set()
        for stream in list(self._streams.values()):  # the kubelets' watches, blocked in a read
            with contextlib.suppress(Exception):
                stream.shutdown()
        for http_server in (self._shim, self._cadvisor):
            if http_server is not None:
                http_server.shutdown()
                http_server.server_close()
        for t in self._threads:
            t.join(timeout=10)
        super().stop()


def _reload_shim(
    server: Monitoring, rendered: Path, config: Path, rules: Path, cadvisor: str
) -> int:
    """The reloader's --reload-url: local_config, then Prometheus's own reload."""
    assert server.plane is not None
    kubeconfig = server.plane.kubeconfig

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            try:
                tmp = config.with_name(f".{config.name}.tmp")
                tmp.write_text(local_config(rendered.read_text(), kubeconfig, rules, cadvisor))
                tmp.replace(config)
                request = urllib.request.Request(f"{server.url}/-/reload", method="POST")
                with urllib.request.urlopen(request, timeout=30) as resp:
                    code, body = resp.status, resp.read()
            except Exception as exc:  # the reloader retries, and logs what it was told
                code, body = 500, f"{type(exc).__name__}: {exc}".encode()
                server.errors.append(body.decode())
            self.send_response(code)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    shim = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server._shim = shim
    thread = threading.Thread(target=shim.serve_forever, name="reload-shim", daemon=True)
    thread.start()
    server._threads.append(thread)
    return int(shim.server_address[1])


class _Volumes:
    """Copies Secret `prometheus-<name>` and the rule ConfigMaps to files, as a kubelet updates
    a pod's volumes (atomic renames: the reloader never reads half a file)."""

    def __init__(self, secret_file: Path, rules: Path) -> None:
        self.secret_file, self.rules = secret_file, rules
        self.written: dict[Path, bytes] = {}

    def _write(self, path: Path, data: bytes) -> None:
        if self.written.get(path) != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
            self.written[path] = data

    def secret(self, secrets: list[Any]) -> None:
        """The operator's configuration Secret (none until it generates it)."""
        for secret in secrets:
            if gz := (secret.data or {}).get("prometheus.yaml.gz"):
                self._write(self.secret_file, base64.b64decode(gz))

    def rule_maps(self, maps: list[Any]) -> None:
        for cm in maps:
            for key, text in (cm.data or {}).items():
                self._write(self.rules / str(cm.metadata and cm.metadata.name) / key, text.encode())


def named_host(node: str, cmd: list[str]) -> list[str]:
    """``cmd`` in a UTS namespace whose host name is ``node`` (its uname's nodename): util-linux
    `unshare`, as root or in a user namespace of its own."""
    unshare = ["unshare", "--uts", *([] if os.geteuid() == 0 else ["--map-root-user"])]
    return [*unshare, "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh", node, *cmd]


class _NodeExporters:
    """A kubelet's share for the node-exporter DaemonSet: one real node-exporter per pod, as
    its node's host (named_host), the pod annotated with its loopback port; the process ends
    with its pod (e.g. its node deleted)."""

    def __init__(self, server: Monitoring, core: k8s.CoreV1Api) -> None:
        self.server, self.core = server, core
        self.exporter = installed("prometheus-node-exporter")
        self.served: dict[str, tuple[str, procs.Proc]] = {}  # pod uid -> (node, process)

    def sync(self, pods: list[Any]) -> None:
        """``pods``: the DaemonSet's pods as the API has them now."""
        live = {
            str(p.metadata.uid): p
            for p in pods
            if p.spec.node_name and p.metadata.deletion_timestamp is None
        }
        changed = False
        for uid, pod in live.items():
            if uid not in self.served:
                self._serve(uid, pod.metadata.name, pod.spec.node_name)
                changed = True
        for uid in set(self.served) - set(live):
            node, proc = self.served.pop(uid)
            procs.terminate([proc], self.server._children)
            self.server.procs.remove(proc)
            self.server.node_exporters.pop(node, None)
            changed = True
        if changed:
            served = ",".join(f"{n}={p}" for n, p in sorted(self.server.node_exporters.items()))
            body: Any = {"metadata": {"annotations": {SERVED_ANNOTATION: served}}}
            self.core.patch_namespaced_service(NODE_EXPORTER, NAMESPACE, body)

    def _serve(self, uid: str, pod: str, node: str) -> None:
        port, server = free_port(), self.server
        name = f"node-exporter-{node}"
        cmd = named_host(
            node, [*node_exporter_command(self.exporter, port), *NODE_EXPORTER_COLLECTORS]
        )
        proc, popen = procs.spawn(
            name, cmd, server.workdir / f"{name}.log", detached=False, cwd=server.workdir
        )
        server.procs.append(proc)
        server._children[proc.pid] = popen
        self.served[uid] = (node, proc)
        server.node_exporters[node] = port
        body: Any = {"metadata": {"annotations": scrape_annotations({NODE_EXPORTER_PORT[0]: port})}}
        self.core.patch_namespaced_pod(pod, NAMESPACE, body)


# A watch's server-side timeout: the watch ends cleanly and is opened again from the last
# resourceVersion (a stack stopping does not wait for it: Monitoring.stop shuts its socket).
WATCH_SECONDS = 300


class _Informer:
    """What a kubelet's informer does for one kind in the `monitoring` namespace: list, then
    watch from the list's resourceVersion, calling ``handle`` with every object the selectors
    find after the list and after each change; listed again when the watch expires (410) or
    fails. `run` ends when the stack stops."""

    def __init__(
        self,
        server: Monitoring,
        name: str,
        list_of: Callable[[k8s.CoreV1Api], Callable[..., Any]],
        handle: Callable[[k8s.CoreV1Api, list[Any]], None],
        selectors: dict[str, str],
    ) -> None:
        self.server, self.name, self.list_of, self.handle = server, name, list_of, handle
        self.selectors = selectors

    def run(self) -> None:
        server = self.server
        assert server.plane is not None
        api = server.plane.api_client()
        try:
            while not server._stop_event.is_set():
                try:
                    self._follow(k8s.CoreV1Api(api))
                except Exception as exc:
                    if server._stop_event.is_set():
                        break
                    # Expired (410): listed again at once; anything else after a second.
                    if not (isinstance(exc, k8s.ApiException) and exc.status == 410):
                        server.errors.append(f"{self.name}: {type(exc).__name__}: {exc}")
                        server._stop_event.wait(1)
        finally:
            server._streams.pop(self.name, None)
            api.close()  # type: ignore[no-untyped-call]

    def _follow(self, core: k8s.CoreV1Api) -> None:
        """List, then follow the objects until the watch fails or the stack stops."""
        server, listing = self.server, self.list_of(core)

        @functools.wraps(listing)  # watch.Watch reads the return type from its docstring
        def opened(*args: Any, **kwargs: Any) -> Any:
            resp = listing(*args, **kwargs)
            server._streams[self.name] = resp
            if server._stop_event.is_set():  # stop() may have run before the line above
                resp.shutdown()
            return resp

        listed = listing(NAMESPACE, **self.selectors)
        items = {str(o.metadata.uid): o for o in listed.items}
        self.handle(core, list(items.values()))
        version = listed.metadata.resource_version
        while not server._stop_event.is_set():
            stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                opened, NAMESPACE, resource_version=version,
                timeout_seconds=WATCH_SECONDS, **self.selectors,
            )  # fmt: skip
            for event in stream:
                obj = event["object"]
                version = obj.metadata.resource_version
                if event["type"] == "DELETED":
                    items.pop(str(obj.metadata.uid), None)
                elif event["type"] != "BOOKMARK":
                    items[str(obj.metadata.uid)] = obj
                self.handle(core, list(items.values()))


def _kubelets(server: Monitoring, secret_file: Path, rules: Path) -> list[threading.Thread]:
    """What the kubelets do for the stack, on watches: the Prometheus pod's volumes (the
    operator's Secret, the rule ConfigMaps), the node-exporters (the DaemonSet's pods)."""
    volumes = _Volumes(secret_file, rules)
    exporters: list[_NodeExporters] = []

    def pods(core: k8s.CoreV1Api, items: list[Any]) -> None:
        if not exporters:
            exporters.append(_NodeExporters(server, core))
        exporters[0].sync(items)

    exporter_name = NODE_EXPORTER_LABELS["app.kubernetes.io/name"]
    informers: list[tuple[str, Callable[..., Any], Callable[..., None], dict[str, str]]] = [
        (
            "secret",
            lambda core: core.list_namespaced_secret,
            lambda _, items: volumes.secret(items),
            {"field_selector": f"metadata.name=prometheus-{PROMETHEUS_NAME}"},
        ),
        (
            "rules",
            lambda core: core.list_namespaced_config_map,
            lambda _, items: volumes.rule_maps(items),
            {"label_selector": f"prometheus-name={PROMETHEUS_NAME}"},
        ),
        (
            "node-exporters",
            lambda core: core.list_namespaced_pod,
            pods,
            {"label_selector": f"app.kubernetes.io/name={exporter_name}"},
        ),
    ]
    threads = []
    for name, list_of, handle, selectors in informers:
        thread = threading.Thread(
            target=_Informer(server, name, list_of, handle, selectors).run,
            name=f"kubelet-{name}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    return threads


def _every_node_scraped(server: Monitoring) -> bool:
    """Whether each node-exporter pod's node has its node_uname_info, named after the node."""
    served = set(server.node_exporters)
    try:
        found = server.query('node_uname_info{job="node-exporter"}')
    except OSError:
        return False
    return bool(served) and served <= {r["metric"].get("nodename") for r in found}


def start_monitoring(
    plane: Plane, workdir: Path, *, scrape_interval: str = "1s", timeout: float = 120
) -> Monitoring:
    """The stack against ``plane`` (whose Prometheus Operator CRDs are applied), returned once
    the operator's configuration is loaded and every node's node-exporter (one per pod of the
    DaemonSet) has a first scrape queryable under its node's name."""
    began = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    prom_port = free_port()
    # node_exporter_port: none of its own (one per node: Monitoring.node_exporters)
    server = Monitoring(prom_port, 0, workdir, [], plane=plane, interval=scrape_interval)
    config, rendered = workdir / "prometheus.yml", workdir / "rendered" / "prometheus.env.yaml"
    secret_file, rules = workdir / "secret" / "prometheus.yaml.gz", workdir / "rules"
    for d in (rendered.parent, secret_file.parent, rules / RULE_FILES):
        d.mkdir(parents=True, exist_ok=True)
    # Until the reloader's first render: global settings only.
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": scrape_interval}}))

    def spawn(name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        proc, popen = procs.spawn(
            name, cmd, workdir / f"{name}.log", detached=False, env=env, cwd=workdir
        )
        server.procs.append(proc)
        server._children[proc.pid] = popen

    try:
        plane.kubectl("create", "namespace", NAMESPACE, check=False)  # kept if there already
        spawn("prometheus", prometheus_command(str(binary("prometheus")), config, prom_port))
        spawn(
            "prometheus-operator",
            [
                str(binary("prometheus-operator")),
                "--kubelet-service=kube-system/kubelet",
                *OPERATOR_SCOPE,
                f"--web.listen-address=127.0.0.1:{free_port()}",
                "--log-level=warn",
            ],
            env={**os.environ, "KUBECONFIG": str(plane.kubeconfig)},
        )
        server._cadvisor = cgroups.serve(server.cadvisor_path)
        cadvisor = f"127.0.0.1:{server._cadvisor.server_address[1]}"
        shim_port = _reload_shim(server, rendered, config, rules, cadvisor)
        server._threads.extend(_kubelets(server, secret_file, rules))
        objects = [
            prometheus_resource(scrape_interval),
            *node_exporter_objects(),
            kubelet_monitor(),
        ]
        plane.kubectl(
            "apply", "--server-side", "--field-manager=localplane", "-f", "-",
            input="\n---\n".join(yaml.safe_dump(o) for o in objects),
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        wait_for_port(prom_port, timeout=max(0.1, deadline - time.monotonic()))
        # The reloader watches a file that exists: the operator's first Secret, copied.
        _wait(server, secret_file.exists, deadline, "the operator's configuration Secret")
        spawn(
            "config-reloader",
            [
                str(binary("prometheus-config-reloader")),
                f"--config-file={secret_file}",
                f"--config-envsubst-file={rendered}",
                f"--watched-dir={rules / RULE_FILES}",
                f"--reload-url=http://127.0.0.1:{shim_port}/-/reload",
                f"--runtimeinfo-url={server.url}/api/v1/status/runtimeinfo",
                f"--listen-address=127.0.0.1:{free_port()}",
                "--watch-interval=10s",
                "--log-level=warn",
            ],
            env={**os.environ, "POD_NAME": f"prometheus-{PROMETHEUS_NAME}-0", "SHARD": "0"},
        )
        apps = k8s.AppsV1Api(server_api := plane.api_client())
        try:

            def every_node() -> bool:
                ds = apps.read_namespaced_daemon_set_status(NODE_EXPORTER, NAMESPACE).status
                desired = ds.desired_number_scheduled if ds is not None else 0
                return (
                    bool(desired)
                    and desired == len(server.node_exporters)
                    and (_every_node_scraped(server))
                )

            _wait(server, every_node, deadline, "node-exporter sample of every node")
        finally:
            server_api.close()  # type: ignore[no-untyped-call]
    except BaseException:
        server.stop()
        raise
    server.started_in = time.monotonic() - began
    return server


def _wait(server: Monitoring, done: Callable[[], bool], deadline: float, what: str) -> None:
    while not done():
        for p in list(server.procs):
            if not p.alive():
                raise RuntimeError(f"{p.name} exited\n{procs.tail(p.log)}")
        if time.monotonic() > deadline:
            logs = "\n".join(
                procs.tail(server.workdir / f"{name}.log", 10)
                for name in ("prometheus-operator", "config-reloader", "prometheus")
            )
            raise TimeoutError(f"no {what} in time: {server.errors[-3:]}\n{logs}")
        time.sleep(0.2)


@contextmanager
def running_monitoring(plane: Plane, workdir: Path, **kw: Any) -> Iterator[Monitoring]:
    """start_monitoring, stopped at exit with the objects it applied removed (the plane may be
    shared: the next stack starts from none)."""
    server = start_monitoring(plane, workdir, **kw)
    try:
        yield server
    finally:
        server.stop()
        plane.kubectl(
            "delete", "-n", NAMESPACE, "--ignore-not-found", "--wait=false",
            f"prometheus/{PROMETHEUS_NAME}", f"daemonset/{NODE_EXPORTER}",
            f"service/{NODE_EXPORTER}", f"servicemonitor/{NODE_EXPORTER}",
            f"servicemonitor/{KUBELET_MONITOR}",
            check=False,
        )  # fmt: skip
        # What the operator generated: the garbage collector of a plane started before the
        # Prometheus CRD existed does not know its owner kind.
        plane.kubectl(
            "delete", "-n", NAMESPACE, "--ignore-not-found", "--wait=false",
            "statefulsets,secrets,configmaps,services", "-l", "managed-by=prometheus-operator",
            check=False,
        )  # fmt: skip
