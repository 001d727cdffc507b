"""The local plane's monitoring as kube-prometheus-stack runs it: the real Prometheus Operator, its
config reloader and Prometheus 3 with Kubernetes service discovery, against a `Plane`.

What runs (`start_monitoring`), all on loopback, binaries from hack/build-tools.sh:

- the Prometheus Operator (`KUBECONFIG`: it has no --kubeconfig flag), no webhooks;
- a `Prometheus` resource as kube-prometheus-stack (KUBE_PROMETHEUS_STACK_VERSION) configures its
  own by default: named `kube-prometheus-stack-prometheus`, selecting ServiceMonitors, PodMonitors,
  Probes, ScrapeConfigs and PrometheusRules labelled `release: kube-prometheus-stack` in every
  namespace; only its scrape interval is shortened (tests see series in seconds);
- node-exporter as kube-prometheus-stack's: a DaemonSet (KWOK runs its pods, one per fake node),
  its Service and its ServiceMonitor (job `node-exporter`), all served by the one real
  node-exporter process (Debian's, as localplane.prometheus);
- what the StatefulSet the operator generates would run, as processes: the operator's Secret
  `prometheus-<name>` (`prometheus.yaml.gz`) and rule ConfigMaps are copied to files by a
  polling thread (a kubelet's volume sync), the real config reloader renders the configuration
  (POD_NAME/SHARD as in the pod) and asks for a reload, and Prometheus 3 loads it.

Two things differ from a cluster, each in one place:

- **The reload goes through `local_config`** (the reloader's --reload-url is a loopback shim that
  rewrites the rendered file, then reloads Prometheus): every `kubernetes_sd_configs` block gets
  `kubeconfig_file:` (the plane's admin kubeconfig; a pod would use its ServiceAccount token at a
  fixed path), and rule files point at the folder the ConfigMaps are copied to.
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
  kubelet (localplane.executor) annotates the client pods it runs; `serve_pods` annotates others
  whose process a test runs itself (the operator's).
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import re
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

from localplane import procs
from localplane.net import free_port, wait_for_port
from localplane.plane import Plane
from localplane.prometheus import (
    Prometheus,
    has_node_sample,
    installed,
    node_exporter_command,
    prometheus_command,
)
from localplane.tools import binary, versions

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
# Container port names the harness serves (node-exporter's, the runner's and exporters' `metrics`).
SERVED_PORTS = ("http-metrics", "metrics")
ANNOTATION_PREFIX = "local.mongobench.io/scrape-"
# Where the operator's StatefulSet mounts the rule ConfigMaps (its generated rule_files).
_POD_RULES_DIR = "/etc/prometheus/rules/"
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
            "evaluationInterval": scrape_interval,
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


def node_exporter_objects(port: int) -> list[dict[str, Any]]:
    """kube-prometheus-stack's node-exporter DaemonSet, Service and ServiceMonitor, its pods
    pointed at the real node-exporter on loopback ``port``."""
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
                    "metadata": {
                        "labels": NODE_EXPORTER_LABELS,
                        "annotations": scrape_annotations({port_name: port}),
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "node-exporter",
                                # kube-prometheus-stack 67.11.0's (KWOK runs no image)
                                "image": "quay.io/prometheus/node-exporter:v1.8.2",
                                "ports": [{"name": port_name, "containerPort": container_port}],
                            }
                        ]
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


def local_config(rendered: str, kubeconfig: Path, rules_dir: Path) -> str:
    """The reloader's rendered configuration as this machine can load it (module docstring):
    each Kubernetes SD block reads the plane's kubeconfig, rule files the copied ConfigMaps."""
    config = yaml.safe_load(rendered) or {}
    for job in config.get("scrape_configs") or []:
        for sd in job.get("kubernetes_sd_configs") or []:
            sd["kubeconfig_file"] = str(kubeconfig)
    config["rule_files"] = [
        str(rules_dir / f.removeprefix(_POD_RULES_DIR)) if f.startswith(_POD_RULES_DIR) else f
        for f in config.get("rule_files") or []
    ]
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class Monitoring(Prometheus):
    """The running stack: a `Prometheus` (query, url) plus the operator's parts."""

    plane: Plane | None = None
    started_in: float = 0.0  # seconds from start to the operator ready and a first scrape
    errors: list[str] = field(default_factory=list)  # of the Secret sync thread
    _stop_event: threading.Event = field(default_factory=threading.Event, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)
    _shim: http.server.ThreadingHTTPServer | None = field(default=None, repr=False)

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
        if self._shim is not None:
            self._shim.shutdown()
            self._shim.server_close()
        for t in self._threads:
            t.join(timeout=10)
        super().stop()


def _reload_shim(server: Monitoring, rendered: Path, config: Path, rules: Path) -> int:
    """The reloader's --reload-url: local_config, then Prometheus's own reload."""
    assert server.plane is not None
    kubeconfig = server.plane.kubeconfig

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            try:
                tmp = config.with_name(f".{config.name}.tmp")
                tmp.write_text(local_config(rendered.read_text(), kubeconfig, rules))
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

    def __init__(self, core: k8s.CoreV1Api, secret_file: Path, rules: Path) -> None:
        self.core, self.secret_file, self.rules = core, secret_file, rules
        self.written: dict[Path, bytes] = {}

    def _write(self, path: Path, data: bytes) -> None:
        if self.written.get(path) != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
            self.written[path] = data

    def copy(self) -> None:
        try:
            secret = self.core.read_namespaced_secret(f"prometheus-{PROMETHEUS_NAME}", NAMESPACE)
        except k8s.ApiException as exc:
            if exc.status != 404:  # not generated yet
                raise
        else:
            if gz := (secret.data or {}).get("prometheus.yaml.gz"):
                self._write(self.secret_file, base64.b64decode(gz))
        maps = self.core.list_namespaced_config_map(
            NAMESPACE, label_selector=f"prometheus-name={PROMETHEUS_NAME}"
        )
        for cm in maps.items:
            for key, text in (cm.data or {}).items():
                self._write(self.rules / str(cm.metadata and cm.metadata.name) / key, text.encode())


def _sync_volumes(server: Monitoring, secret_file: Path, rules: Path, period: float) -> None:
    assert server.plane is not None
    api = server.plane.api_client()
    volumes = _Volumes(k8s.CoreV1Api(api), secret_file, rules)
    try:
        while not server._stop_event.wait(period):
            try:
                volumes.copy()
            except Exception as exc:
                server.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        api.close()  # type: ignore[no-untyped-call]


def start_monitoring(
    plane: Plane, workdir: Path, *, scrape_interval: str = "1s", timeout: float = 120
) -> Monitoring:
    """The stack against ``plane`` (whose Prometheus Operator CRDs are applied), returned once
    the operator's configuration is loaded and node-exporter's first scrape is queryable."""
    began = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    prom_port, exporter_port = free_port(), free_port()
    server = Monitoring(prom_port, exporter_port, workdir, [], plane=plane)
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
        exporter = installed("prometheus-node-exporter")
        spawn("node-exporter", node_exporter_command(exporter, exporter_port))
        spawn("prometheus", prometheus_command(str(binary("prometheus")), config, prom_port))
        spawn(
            "prometheus-operator",
            [
                str(binary("prometheus-operator")),
                "--kubelet-service=kube-system/kubelet",
                f"--web.listen-address=127.0.0.1:{free_port()}",
                "--log-level=warn",
            ],
            env={**os.environ, "KUBECONFIG": str(plane.kubeconfig)},
        )
        shim_port = _reload_shim(server, rendered, config, rules)
        sync = threading.Thread(
            target=_sync_volumes,
            args=(server, secret_file, rules, 0.5),
            name="volumes",
            daemon=True,
        )
        sync.start()
        server._threads.append(sync)
        objects = [prometheus_resource(scrape_interval), *node_exporter_objects(exporter_port)]
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
        _wait(
            server,
            lambda: has_node_sample(server, "node-exporter"),
            deadline,
            "node-exporter sample",
        )
    except BaseException:
        server.stop()
        raise
    server.started_in = time.monotonic() - began
    return server


def _wait(server: Monitoring, done: Callable[[], bool], deadline: float, what: str) -> None:
    while not done():
        for p in server.procs:
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
            check=False,
        )  # fmt: skip
        # What the operator generated: the garbage collector of a plane started before the
        # Prometheus CRD existed does not know its owner kind.
        plane.kubectl(
            "delete", "-n", NAMESPACE, "--ignore-not-found", "--wait=false",
            "statefulsets,secrets,configmaps,services", "-l", "managed-by=prometheus-operator",
            check=False,
        )  # fmt: skip
