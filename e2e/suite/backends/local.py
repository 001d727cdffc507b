"""The `local` backend: the project's control plane on loopback, no container anywhere.

Real: kube-apiserver, etcd, controller-manager, scheduler (localplane.Plane, KWOK nodes labelled
like the kind recipe's workers), the operator as a `mongobench run` process watching the Env's
namespace, the benchmark clients' commands (runner + YCSB) executed by the harness kubelet,
the session's kube-prometheus-stack monitoring (localplane.monitoring: the real Prometheus
Operator; node-exporter per node, cAdvisor, and the operator through the chart's ServiceMonitor
over a KWOK pod standing for its process). Stand-ins: the
in-memory wire model (localplane.mongomodel) for every mongod and mongos, reached through the
operator's MONGOBENCH_HOST_MAP; FerretDB as the data path (client URIs are rewritten to it, and
the model's per-shard counts are FerretDB's real counts).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pymongo
from kubernetes import client as k8s

from backends.base import RESTRICTED, Backend, Env, http_json, namespace_name
from backends.manifests import (
    API_VERSION,
    CLIENT_NODES,
    DATABASE_NODES,
    GROUP,
    RESULT_PART_BYTES,
    ROLE_LABEL,
    VERSION,
    Manifest,
    mongocluster,
    replica_set,
)
from backends.mongo import MongoView
from localplane.executor import PodExecutor, pod_executor, rewrite_hosts
from localplane.ferretdb import FerretDB, running_ferretdb
from localplane.keyfiles import keyfile_from_pods
from localplane.mongomodel import MongoModel
from localplane.monitoring import Monitoring, serve_operator
from localplane.operator import OperatorProcess, start_operator, wait_until
from localplane.plane import Plane
from mongobench.api.mongocluster import MongoClusterSpec
from mongobench.mongocluster.build.layout import cluster_layout


class FerretCounts(Mapping[str, int]):
    """`namespace -> documents` read live from FerretDB: what the model's mongos reports as
    per-shard counts ($collStats) is what the clients really wrote."""

    def __init__(self, client: pymongo.MongoClient[dict[str, Any]]) -> None:
        self.client = client

    def __contains__(self, namespace: object) -> bool:
        database, _, collection = str(namespace).partition(".")
        return collection in self.client[database].list_collection_names()

    def __getitem__(self, namespace: str) -> int:
        if namespace not in self:
            raise KeyError(namespace)
        database, _, collection = namespace.partition(".")
        return int(self.client[database][collection].count_documents({}))

    def __iter__(self) -> Iterator[str]:
        for database in self.client.list_database_names():
            for collection in self.client[database].list_collection_names():
                yield f"{database}.{collection}"

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LocalEnv(Env):
    backend = "local"
    container_metrics = False  # node-exporter only: KWOK pods have no containers to measure

    def __init__(
        self,
        plane: Plane,
        namespace: str,
        model: MongoModel,
        ferretdb: FerretDB,
        prometheus: Monitoring,
        log: Path,
        operator_env: dict[str, str],
    ) -> None:
        self.plane = plane
        self.namespace = namespace
        self.api = plane.api_client()
        self.model = model
        self.ferretdb = ferretdb
        self._prometheus = prometheus
        self.log = log
        self._operator_env = operator_env
        self.operator: OperatorProcess | None = None
        self.executor: PodExecutor | None = None  # the harness kubelet, when clients run
        data = pymongo.MongoClient(ferretdb.uri)
        self._data = data
        self.mongo = MongoView(self.api, namespace, model.host_map.__getitem__, data=lambda _: data)

    def start_operator(self) -> None:
        self.operator = start_operator(
            self.plane.kubeconfig, [self.namespace], self.log, **self._operator_env
        )
        serve_operator(self.plane, self.namespace, self.operator.metrics_port)

    def client_failures(self) -> list[str]:
        runs = self.executor.runs if self.executor is not None else []
        return [
            f"{r.pod} exited {r.exit_code} ({r.reason}): {r.message}\n{r.output_tail[-2000:]}"
            for r in runs
            if r.exit_code != 0 and not r.injected
        ]

    def stop_operator(self) -> None:
        if self.operator is not None:
            self.operator.stop()

    def close(self) -> None:
        self.mongo.close()
        self._data.close()
        self.api.close()  # type: ignore[no-untyped-call]

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl(*args, input=input, check=check)

    def crash_operator(self) -> None:
        assert self.operator is not None
        self.operator.kill()  # SIGKILL: no graceful shutdown
        self.start_operator()

    def prometheus(self, endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
        return http_json(f"{self._prometheus.url}/api/v1/{endpoint}", params)

    def operator_log(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def refused_commands(self) -> list[str]:
        # The model records what it refused, whether or not the operator logged it.
        model = [f"the model refused {c}" for c in self.model.unauthorized]
        # ... and what no real server of its release would take (wire_rules: unknown commands
        # and fields), so every scenario holds the operator to MongoDB's definitions.
        model += [f"the model refused {r}" for r in self.model.refusals]
        return super().refused_commands() + model


class LocalBackend(Backend):
    name = "local"

    def __init__(self, plane: Plane, prometheus: Monitoring, workdir: Path) -> None:
        self.plane = plane
        self.prometheus = prometheus
        self.workdir = workdir
        # As the kind recipe (e2e/kind/kind-config.yaml): database workers, one clients worker.
        nodes = sorted(n.metadata.name for n in k8s.CoreV1Api(plane.api_client()).list_node().items)
        roles = [*[DATABASE_NODES] * (len(nodes) - 1), CLIENT_NODES]
        for node, role in zip(nodes, roles, strict=True):
            plane.kubectl("label", "node", node, "--overwrite", f"{ROLE_LABEL}={role[ROLE_LABEL]}")
        self._wait_for_garbage_collection()

    def _wait_for_garbage_collection(self, timeout: float = 90) -> None:
        """Until the garbage collector watches MongoClusters. It discovers new CRDs every 30 s,
        and dependents created before then outlive a deleted owner (kube-controller-manager
        never looks at them again), which a fresh plane's first scenario would meet. Proven
        the way a scenario relies on it: an owned ConfigMap goes with its deleted MongoCluster."""
        api = self.plane.api_client()
        core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
        namespace = namespace_name("gc-probe")
        body: Any = {"metadata": {"name": namespace}}
        core.create_namespace(body)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                owner = custom.create_namespaced_custom_object(
                    GROUP, VERSION, namespace, "mongoclusters",
                    mongocluster(f"probe{int(time.monotonic())}", replica_set(1)),
                )  # fmt: skip
                meta = owner["metadata"]
                ref = {"apiVersion": API_VERSION, "kind": "MongoCluster", "name": meta["name"],
                       "uid": meta["uid"]}  # fmt: skip
                cm: Any = {"metadata": {"name": meta["name"], "ownerReferences": [ref]}}
                core.create_namespaced_config_map(namespace, cm)
                custom.delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, "mongoclusters", meta["name"]
                )
                try:
                    wait_until(
                        lambda n=meta["name"]: (
                            n
                            not in {
                                c.metadata.name
                                for c in core.list_namespaced_config_map(namespace).items
                            }
                        ),
                        timeout=10,
                        what="the probe's ConfigMap collected",
                    )
                    return
                except TimeoutError:
                    continue  # not watched yet: a new owner after the next discovery
            raise TimeoutError(f"the garbage collector ignored MongoClusters for {timeout}s")
        finally:
            core.delete_namespace(namespace, propagation_policy="Background")
            api.close()  # type: ignore[no-untyped-call]

    @contextmanager
    def env(
        self, slug: str, *, clusters: Sequence[Manifest] = (), clients: bool = False
    ) -> Iterator[LocalEnv]:
        namespace = namespace_name(slug)
        api = self.plane.api_client()
        core = k8s.CoreV1Api(api)
        body: Any = {"metadata": {"name": namespace, "labels": RESTRICTED}}
        with ExitStack() as stack:
            stack.callback(api.close)
            core.create_namespace(body)
            # Background: the namespace controller finishes while later scenarios run.
            stack.callback(core.delete_namespace, namespace, propagation_policy="Background")
            model = stack.enter_context(
                MongoModel(
                    keyfile=keyfile_from_pods(api),
                    catch_up_seconds=0.2,
                    drain_calls=4,  # the drain takes a few passes, as chunks move
                )
            )
            self._serve(model, namespace, clusters)
            ferretdb = stack.enter_context(running_ferretdb())
            model.sharded.documents = FerretCounts(  # type: ignore[assignment]
                stack.enter_context(pymongo.MongoClient(ferretdb.uri))
            )
            executor = None
            if clients:
                rewrite = rewrite_hosts(f"{ferretdb.host}:{ferretdb.port}")
                executor = stack.enter_context(
                    pod_executor(self.plane, namespace, uri_rewrite=rewrite)
                )
            workdir = self.workdir / namespace
            workdir.mkdir(parents=True, exist_ok=True)
            env = LocalEnv(
                self.plane,
                namespace,
                model,
                ferretdb,
                self.prometheus,
                workdir / "operator.log",
                {
                    "MONGOBENCH_HOST_MAP": ",".join(f"{k}={v}" for k, v in model.host_map.items()),
                    "MONGOBENCH_PROMETHEUS_URL": self.prometheus.url,
                    "MONGOBENCH_PROMETHEUS_SCRAPE_INTERVAL": "1",
                    # As e2e/kind/values/mongobench.yaml: small result parts, so every client
                    # document spans several ConfigMaps and is reassembled.
                    "MONGOBENCH_RESULT_PART_BYTES": RESULT_PART_BYTES,
                },
            )
            env.executor = executor
            stack.callback(env.close)
            env.start_operator()
            stack.callback(env.stop_operator)
            yield env

    def collect_open(self) -> None:
        pass  # the operator's log and the plane's stay in pytest's temporary directories

    def close(self) -> None:
        pass  # the plane and Prometheus are the session's fixtures

    @staticmethod
    def _serve(model: MongoModel, namespace: str, clusters: Sequence[Manifest]) -> None:
        """A model peer for every member and mongos the clusters have at their largest; the
        model answers as binaries of the first cluster's version (serverStatus, the FCV and its
        command's form) with its cache size."""
        for manifest in clusters:
            spec = MongoClusterSpec.parse(manifest["spec"])
            layout = cluster_layout(manifest["metadata"]["name"], namespace, spec)
            for rs in layout.replica_sets:
                for host in rs.hosts:
                    # A Standalone's mongod runs without --replSet: the model answers as one.
                    (model.standalone if layout.standalone else model.member)(host)
            if layout.sharded:
                model.mongos(layout.mongos_host)
        if clusters:
            spec = MongoClusterSpec.parse(clusters[0]["spec"])
            model.server_version = spec.version
            model.fcv = ".".join(spec.version.split(".")[:2])  # a new deployment's FCV
            if spec.storage.wired_tiger_cache_size_gb:
                model.cache_bytes = int(spec.storage.wired_tiger_cache_size_gb * 2**30)
